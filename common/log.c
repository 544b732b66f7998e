/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "timefmt.h"

static _Atomic int level = PLOG_INFO;
/* -1: not decided yet, else whether stderr is the journal. */
static _Atomic int journal = -1;

/* By message level: its name, the [log] level that shows it, its syslog
 * priority. */
static const struct {
	const char *name;
	enum plugfs_log_level shown_at;
	int priority;
} levels[] = {
    [PLOG_ERROR] = {"error", PLOG_ERROR, 3},  [PLOG_WARN] = {"warn", PLOG_WARN, 4},
    [PLOG_INFO] = {"info", PLOG_INFO, 6},     [PLOG_DEBUG] = {"debug", PLOG_DEBUG, 7},
    [PLOG_NOTICE] = {"notice", PLOG_INFO, 5},
};

static unsigned level_index(enum plugfs_log_level l)
{
	return (unsigned)l < sizeof(levels) / sizeof(levels[0]) ? (unsigned)l : PLOG_ERROR;
}

void plog_set_level(enum plugfs_log_level l)
{
	atomic_store(&level, (int)l);
}

enum plugfs_log_level plog_get_level(void)
{
	return (enum plugfs_log_level)atomic_load(&level);
}

int plog_priority(enum plugfs_log_level l)
{
	return levels[level_index(l)].priority;
}

bool plog_detect_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char *end;
	bool is = false;

	if (env && *env) {
		dev = strtoull(env, &end, 10);
		if (*end == ':') {
			ino = strtoull(end + 1, &end, 10);
			is = *end == '\0' && fstat(STDERR_FILENO, &st) == 0 &&
			     (unsigned long long)st.st_dev == dev &&
			     (unsigned long long)st.st_ino == ino;
		}
	}
	atomic_store(&journal, is ? 1 : 0);
	return is;
}

bool plog_journal(void)
{
	int j = atomic_load(&journal);

	/* Two threads may both decide: they find the same. */
	return j < 0 ? plog_detect_journal() : j == 1;
}

size_t plog_format(char *buf, size_t len, enum plugfs_log_level l, bool to_journal,
		   const char *when, const char *fmt, va_list ap)
{
	unsigned i = level_index(l);
	int n;

	if (len < 2) {
		if (len)
			buf[0] = '\0';
		return 0;
	}
	if (to_journal)
		n = snprintf(buf, len, "<%d>%s: ", levels[i].priority, levels[i].name);
	else
		n = snprintf(buf, len, "%s plugfs %s: ", when, levels[i].name);
	if (n < 0)
		n = 0;
	if ((size_t)n > len - 2)
		n = (int)(len - 2);
	/* One byte kept for the newline. */
	n += vsnprintf(buf + n, len - (size_t)n - 1, fmt, ap);
	if (n < 0 || (size_t)n > len - 2)
		n = (int)(len - 2);
	/* One message, one line (journald would give the rest priority 6). */
	for (char *c = buf; c < buf + n; c++)
		if (*c == '\n')
			*c = ' ';
	buf[n] = '\n';
	buf[n + 1] = '\0';
	return (size_t)n + 1;
}

void plog(enum plugfs_log_level l, const char *fmt, ...)
{
	char line[2048];
	char when[PLUGFS_TIME_LEN] = "";
	bool to_journal = plog_journal();
	struct timespec ts;
	va_list ap;

	if ((int)levels[level_index(l)].shown_at > atomic_load(&level))
		return;
	if (!to_journal) {
		clock_gettime(CLOCK_REALTIME, &ts);
		plugfs_format_time(ts.tv_sec, (int)(ts.tv_nsec / 1000000), when, sizeof(when));
	}
	va_start(ap, fmt);
	plog_format(line, sizeof(line), l, to_journal, when, fmt, ap);
	va_end(ap);
	/* One write per line so lines of different threads do not interleave. */
	fputs(line, stderr);
}
