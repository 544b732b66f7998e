/* SPDX-License-Identifier: MIT */
#include "timefmt.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

int plugfs_format_time(int64_t t, int ms, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	long year;

	if ((int64_t)tt != t || !gmtime_r(&tt, &tm))
		goto invalid;
	year = (long)tm.tm_year + 1900;
	if (year < 0 || year > 9999)
		goto invalid;
	if (len == 0)
		return 0;
	if (ms >= 0 && ms <= 999)
		snprintf(buf, len, "%04ld-%02d-%02dT%02d:%02d:%02d.%03dZ", year, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
	else
		snprintf(buf, len, "%04ld-%02d-%02dT%02d:%02d:%02dZ", year, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return 0;
invalid:
	if (len > 0)
		snprintf(buf, len, "invalid");
	return -ERANGE;
}
