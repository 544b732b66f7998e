/* SPDX-License-Identifier: MIT */
/*
 * Private to daemon/: the discovery (discover.c).  The [discover.NAME]
 * sections' roots watched with inotify (each root and each allocation
 * directory below it) on a thread of its own, the sockets that appear
 * identified by their plugins (probe_csi_identify, on worker threads,
 * asked again with back-off until they answer) and registered through the
 * registry like any other registration (source discover.NAME); a socket
 * or a directory that goes is deregistered, and so is a registration dead
 * longer than its section's forget_after.  docs/design.md, "Discovery".
 */
#ifndef PLUGFS_DISCOVER_H
#define PLUGFS_DISCOVER_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "registry.h"

/* Identification workers: plugins asked at once, batches in flight. */
#define DISCOVER_WORKERS 4
/* A plugin that does not answer yet is asked again after 200 ms, then
 * twice as long each time, up to 10 s. */
#define DISCOVER_RETRY_MIN_MS 200
#define DISCOVER_RETRY_MAX_MS 10000
/* The directories without an inotify watch (the watch limit) are rescanned
 * this often. */
#define DISCOVER_UNWATCHED_RESCAN_MS 2000

struct plugfs_own_mount;

struct discover_options {
	struct registry *reg;
	/* The daemon's own mount (a reference is taken; NULL: none): no root
	 * on the way into it is opened (discover_open_root). */
	struct plugfs_own_mount *own;
	const char *const *types; /* [registry] types (copied) */
	size_t n_types;
	unsigned timeout_ms;  /* an identification's ([probe] timeout) */
	unsigned max_watches; /* test knob: inotify watches at most (0: the kernel's) */
};

struct discover;

/*
 * Starts the discovery of the sections secs[0..n) (copied): each root
 * watched and scanned, the registrations of a discover.NAME source already
 * in the registry reconciled with what the roots hold (one whose socket is
 * gone, or whose section is gone, deregistered; one whose socket is there
 * kept in its place), the sockets found identified (one call, bounded by
 * timeout_ms) and registered oldest first (by ctime), those that do not
 * answer left to the thread; then the thread and its workers start.
 * Returns when that is done: the caller reports ready after.  0 with
 * *out, or -errno with err (an inotify instance, a thread, memory; a root
 * that fails its trust check is logged and rescanned, not an error: the
 * caller checked them).
 */
int discover_start(const struct discover_options *o, const struct plugfs_discover *secs, size_t n,
		   struct discover **out, char *err, size_t errlen);

/* The sections are now secs[0..n) (copied): one removed has its
 * registrations deregistered, one added is scanned and registered as at
 * start, one changed is both (one whose forget_after alone changed keeps
 * its registrations).  Applied by the thread, soon after.  0 or -ENOMEM.
 * Any thread (the reload's, under reload_lock). */
int discover_reload(struct discover *d, const struct plugfs_discover *secs, size_t n);

/* Stops the thread and its workers (an identification under way ends
 * within 50 ms) and frees d.  NULL: nothing. */
void discover_stop(struct discover *d);

/* What the discovery does, for metrics: atomics, any thread; zero for
 * d NULL. */
struct discover_stats {
	uint64_t watches;		   /* inotify watches held (roots and directories) */
	uint64_t unwatched;		   /* directories rescanned every 2 s instead */
	uint64_t rescans;		   /* scans of a root or of names in it */
	uint64_t mount_changes;		   /* changes of the mount table seen */
	uint64_t registered, deregistered; /* by the discovery */
	uint64_t identify_failed;	   /* identifications not answered (asked again) */
};
void discover_stats(struct discover *d, struct discover_stats *out);

#endif
