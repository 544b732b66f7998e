/* SPDX-License-Identifier: MIT */
#include "err.h"

#include <stdio.h>

void plugfs_vseterr(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (!err || errlen == 0)
		return;
	if (vsnprintf(err, errlen, fmt, ap) < 0)
		err[0] = '\0';
}

void plugfs_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	plugfs_vseterr(err, errlen, fmt, ap);
	va_end(ap);
}

int plugfs_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	plugfs_vseterr(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}
