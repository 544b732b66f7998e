/* SPDX-License-Identifier: MIT */
/* Helpers shared by the files of control/: error messages and the clock. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "control_internal.h"

void ctl_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int64_t ctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
