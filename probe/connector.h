/* SPDX-License-Identifier: MIT */
/*
 * The connector threads: where a probe's connect() runs (private to probe/).
 *
 * connect() to a Unix socket resolves its path in the kernel, and a path on
 * a hung filesystem (a FUSE daemon that stopped answering, a dead NFS
 * server) blocks that lookup, non-blocking socket or not.  So no probe
 * calls connect() on its own thread: it hands the path to a connector
 * thread and waits for the outcome with its own deadline.  One connector
 * runs the connects of a round one after the other while it keeps up; one
 * stuck in a lookup for CONNECTOR_STUCK_MS holds only itself, and another
 * is started for the rest (at most CONNECTOR_MAX_THREADS).  A
 * path whose previous connect is still stuck is not tried again until that
 * one returns (it fails at once with "timeout"), so one hung filesystem
 * holds at most one thread per socket on it.
 *
 * Threads start on demand, detached, with small stacks, and end after
 * CONNECTOR_IDLE_MS without work.  The pool is process-wide and needs no
 * set-up.  A thread blocked in the kernel for good ends with the process.
 */
#ifndef PLUGFS_PROBE_CONNECTOR_H
#define PLUGFS_PROBE_CONNECTOR_H

#include <stdbool.h>
#include <stddef.h>

#define CONNECTOR_MAX_THREADS 256
#define CONNECTOR_IDLE_MS 5000
#define CONNECTOR_STUCK_MS 20

struct connector_batch;

/*
 * A batch: the connects of one caller, signalled through one eventfd
 * (connector_batch_fd) that turns readable when any of them returned.
 * NULL on ENOMEM or when no eventfd could be made (errno set).
 */
struct connector_batch *connector_batch_new(void);
int connector_batch_fd(const struct connector_batch *b);

/*
 * Starts the connect of path (a socket(AF_UNIX, SOCK_STREAM|SOCK_NONBLOCK)
 * and a connect() to it on a connector thread) as job `slot' of the batch
 * (slot < the batch's capacity, CONNECTOR_BATCH_SLOTS; one job per slot at
 * a time).  Returns 0, or -errno when it could not be queued: -ENAMETOOLONG,
 * -ETIMEDOUT when the previous connect of this path is still stuck,
 * -EAGAIN when no thread could be started at all, -ENOMEM.  A job waits
 * in the queue while every thread is taken: the caller's deadline bounds
 * it.
 */
#define CONNECTOR_BATCH_SLOTS 256
int connector_start(struct connector_batch *b, unsigned slot, const char *path);
/* connector_start of n jobs under one lock (one wake-up of a connector
 * for all of them): job i is path[i] in slot[i]; its outcome in rc[i]. */
void connector_start_many(struct connector_batch *b, const unsigned *slot,
			  const char *const *path, size_t n, int *rc);

/*
 * After the batch's fd was readable (or at any time): the next job that
 * returned, in *slot, with its socket in *fd (connected, or with the
 * connect in progress when *err is EINPROGRESS; owned by the caller) or
 * -1 and the connect's errno in *err (EAGAIN: a full backlog).  Returns
 * false when no returned job is left; it also clears the eventfd then.
 */
bool connector_next(struct connector_batch *b, unsigned *slot, int *fd, int *err);

/* Starts a thread for the queue when every thread is stuck: a caller
 * with jobs out calls it at least every CONNECTOR_STUCK_MS. */
void connector_kick(void);

/* Gives up job `slot' (its deadline passed): its thread, when it returns,
 * closes the socket. */
void connector_abandon(struct connector_batch *b, unsigned slot);

/* Abandons every job still out and frees the batch. */
void connector_batch_free(struct connector_batch *b);

struct plugfs_own_mount;
/* The daemon's own mount (fsutil.h), whose paths no connect looks up: a
 * job whose path leads under it fails at once with EXDEV (its connector
 * resolves the path's names first and stops before the mount).  Takes a
 * reference of its own (NULL: none, the reference dropped). */
void connector_set_own_mount(struct plugfs_own_mount *m);
/* A reference to it (the caller unrefs), NULL when none was set. */
struct plugfs_own_mount *connector_own_mount(void);

/* For tests: threads alive, and of them, those running a connect. */
void connector_counts(unsigned *threads, unsigned *busy);

#endif
