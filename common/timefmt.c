/* SPDX-License-Identifier: MIT */
#include "timefmt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Writes v as exactly width decimal digits at p (v < 10^width). */
static char *digits(char *p, long v, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		p[i] = (char)('0' + v % 10);
		v /= 10;
	}
	return p + width;
}

int plugfs_format_time(int64_t t, int ms, char *buf, size_t len)
{
	char out[PLUGFS_TIME_LEN], *p = out;
	time_t tt = (time_t)t;
	struct tm tm;
	long year;
	size_t n;

	if ((int64_t)tt != t || !gmtime_r(&tt, &tm))
		goto invalid;
	year = (long)tm.tm_year + 1900;
	if (year < 0 || year > 9999)
		goto invalid;
	if (len == 0)
		return 0;
	/* By hand, not snprintf: a registration formats four of these (its
	 * two log lines, its two times in the answer), and snprintf's seven
	 * conversions were a few per cent of a registration's CPU. */
	p = digits(p, year, 4);
	*p++ = '-';
	p = digits(p, tm.tm_mon + 1, 2);
	*p++ = '-';
	p = digits(p, tm.tm_mday, 2);
	*p++ = 'T';
	p = digits(p, tm.tm_hour, 2);
	*p++ = ':';
	p = digits(p, tm.tm_min, 2);
	*p++ = ':';
	p = digits(p, tm.tm_sec, 2);
	if (ms >= 0 && ms <= 999) {
		*p++ = '.';
		p = digits(p, ms, 3);
	}
	*p++ = 'Z';
	n = (size_t)(p - out);
	if (n > len - 1)
		n = len - 1;
	memcpy(buf, out, n);
	buf[n] = '\0';
	return 0;
invalid:
	if (len > 0)
		snprintf(buf, len, "invalid");
	return -ERANGE;
}
