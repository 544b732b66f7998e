/* SPDX-License-Identifier: MIT */
/* Helpers shared by the files of control/: the clock. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "control_internal.h"

int64_t ctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
