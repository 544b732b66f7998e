/* SPDX-License-Identifier: MIT */
/*
 * Leveled logging to stderr, one line per message, safe from any thread.
 *
 * On a terminal or a file a line is "<time> plugfs <level>: <message>".
 * When stderr is the journal (systemd sets $JOURNAL_STREAM to the device and
 * inode of the stream it gave the service, and stderr still is that
 * stream), a line is "<N><level>: <message>": journald takes the syslog
 * priority N from the prefix (error 3, warn 4, notice 5, info 6, debug 7)
 * and keeps its own timestamp, so none is written.
 */
#ifndef PLUGFS_LOG_H
#define PLUGFS_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* The levels [log] level chooses from, most severe first; a message is
 * written when its level is at most the chosen one. */
enum plugfs_log_level { PLOG_ERROR, PLOG_WARN, PLOG_INFO, PLOG_DEBUG };

/* A message level of its own, not a [log] level: something an operator
 * should see that is not wrong on plugfs's side (a client's bad request
 * refused).  Written at syslog priority notice when the level is info or
 * debug, like info. */
#define PLOG_NOTICE ((enum plugfs_log_level)(PLOG_DEBUG + 1))

void plog_set_level(enum plugfs_log_level l);
enum plugfs_log_level plog_get_level(void);
void plog(enum plugfs_log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Whether stderr is the journal: $JOURNAL_STREAM ("DEV:INO") names what
 * stderr is.  Decided on the first call (of this or of plog) and kept;
 * plog_detect_journal() decides again (after stderr or the environment
 * changed).
 */
bool plog_journal(void);
bool plog_detect_journal(void);

/* The syslog priority of a message level (3 for PLOG_ERROR ... 7 for
 * PLOG_DEBUG, 5 for PLOG_NOTICE). */
int plog_priority(enum plugfs_log_level l);

/*
 * Formats one log line of level l into buf (at most len bytes, NUL
 * included), newline-terminated: for the journal (journal true) or with
 * the time `when' (a string, ignored for the journal).  A message too long
 * for buf is cut, the newline kept.  Returns the length written.
 */
size_t plog_format(char *buf, size_t len, enum plugfs_log_level l, bool journal, const char *when,
		   const char *fmt, va_list ap) __attribute__((format(printf, 6, 0)));

#define log_error(...) plog(PLOG_ERROR, __VA_ARGS__)
#define log_warn(...) plog(PLOG_WARN, __VA_ARGS__)
#define log_notice(...) plog(PLOG_NOTICE, __VA_ARGS__)
#define log_info(...) plog(PLOG_INFO, __VA_ARGS__)
#define log_debug(...) plog(PLOG_DEBUG, __VA_ARGS__)

#endif
