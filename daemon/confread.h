/* SPDX-License-Identifier: MIT */
/* The daemon's reading of its config file, bounded in time (confread.c). */
#ifndef PLUGFS_DAEMON_CONFREAD_H
#define PLUGFS_DAEMON_CONFREAD_H

#include <stddef.h>

#include "config.h"

/* How long the daemon waits for its config file to be read (the start, a
 * reload): a third of the shipped unit's WatchdogSec= at most, so that a
 * reload on the housekeeping thread never costs a watchdog ping. */
#define DAEMON_CONFIG_READ_MS 2000

/*
 * config_resolve(path, ...) on a reader thread of its own, waited for at
 * most timeout_ms: 0 and *cfg (the caller's to config_free), or -errno with
 * err: config_resolve's own, -ETIMEDOUT when the reader did not return in
 * time (it is abandoned and frees what it reads when it returns), -EBUSY
 * while an abandoned reader is still out (no second one is started).  No
 * lock is held meanwhile; any thread may call it.
 */
int daemon_config_read(const char *path, unsigned timeout_ms, struct plugfs_config *cfg,
		       char *err, size_t errlen);

#endif
