/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "timefmt.h"

static _Atomic int level = PLOG_INFO;

void plog_set_level(enum plugfs_log_level l)
{
	atomic_store(&level, (int)l);
}

enum plugfs_log_level plog_get_level(void)
{
	return (enum plugfs_log_level)atomic_load(&level);
}

void plog(enum plugfs_log_level l, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	char line[2048];
	char when[PLUGFS_TIME_LEN];
	struct timespec ts;
	va_list ap;
	int n;

	if ((int)l > atomic_load(&level))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	plugfs_format_time(ts.tv_sec, (int)(ts.tv_nsec / 1000000), when, sizeof(when));
	n = snprintf(line, sizeof(line), "%s plugfs %s: ", when, names[l]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	/* One write per line so lines of different threads do not interleave. */
	strcat(line, "\n");
	fputs(line, stderr);
}
