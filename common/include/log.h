/* SPDX-License-Identifier: MIT */
/* Leveled logging to stderr, one line per message, safe from any thread. */
#ifndef PLUGFS_LOG_H
#define PLUGFS_LOG_H

enum plugfs_log_level { PLOG_ERROR, PLOG_WARN, PLOG_INFO, PLOG_DEBUG };

void plog_set_level(enum plugfs_log_level l);
enum plugfs_log_level plog_get_level(void);
void plog(enum plugfs_log_level l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) plog(PLOG_ERROR, __VA_ARGS__)
#define log_warn(...) plog(PLOG_WARN, __VA_ARGS__)
#define log_info(...) plog(PLOG_INFO, __VA_ARGS__)
#define log_debug(...) plog(PLOG_DEBUG, __VA_ARGS__)

#endif
