/* SPDX-License-Identifier: MIT */
/*
 * The watcher (private to probe/): what the kernel says the moment a
 * registration's listener exits or its socket file comes or goes, so that
 * the registration is probed at once instead of at the next round.  It
 * knows nothing of the registry: a registration is a key (its persisted
 * id) and a socket path; an event is a hint handed to a callback, which
 * probes (docs/design.md, "Semantics": an event never decides alone).
 *
 * Two threads of its own.  The loop owns every watched descriptor: one
 * epoll set over the inotify fd, the pidfds and an eventfd that wakes it,
 * and dispatches each readable one to a small callback that never blocks
 * (reads the inotify fd, closes a pidfd, queues).  The adder makes the
 * inotify_add_watch calls, which resolve a path and so can block on a hung
 * filesystem (as a connect() can: probe/connector.h): a stuck directory
 * delays the watches of the directories queued after it, never an event.
 *
 * Directories are watched once however many sockets they hold (a table by
 * path, one by watch descriptor).  A socket whose directory does not exist
 * yet is watched from its nearest existing ancestor, for the creation of
 * the next component of its path, and the watch moves down as the
 * directories appear: a missing socket costs no probe until it appears.
 * Nothing under `exclude' (the daemon's own mount) is ever watched, nor
 * anything whose path leads into `own' (the same mount, reached through a
 * symlink or a bind mount).
 *
 * One mutex (w->mu) guards the tables; it is taken alone, never across a
 * system call that can block, and never while a callback runs, so a
 * callback may call back into the watcher.  The public functions may be
 * called from any thread, also under the registry mutex (an event callback
 * of the registry): they only queue or do system calls that do not block
 * (pidfd_open, epoll_ctl, close, inotify_rm_watch).
 */
#ifndef PLUGFS_PROBE_WATCH_H
#define PLUGFS_PROBE_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What an event says (the callback's `what'). */
#define WATCH_EV_EXIT 1u   /* the process listening on the socket exited */
#define WATCH_EV_SOCKET 2u /* the socket's name changed in its directory
			      (created, removed, replaced) or the directory
			      went; or it exists when its watch began */

/* Runs on the loop or the adder thread, no watcher lock held; must not
 * block (queue a probe). */
typedef void (*watch_event_fn)(void *arg, int64_t key, unsigned what);

struct plugfs_own_mount;

struct watch_options {
	const char *exclude; /* NULL, or a directory not to watch anything under */
	/* NULL, or the daemon's own mount (fsutil.h; the watcher takes a
	 * reference): a socket whose path leads there, through a symlink or
	 * a bind mount, is not watched (the adder resolves it first). */
	struct plugfs_own_mount *own;
	unsigned fd_reserve;  /* descriptors to leave free below RLIMIT_NOFILE:
				 no pidfd is opened past that */
	unsigned max_watches; /* test knob: at most this many directories
				 (0: the kernel's fs.inotify.max_user_watches) */
	bool no_pidfd;	      /* test knob: pidfd_open fails (EPERM) */
	watch_event_fn event;
	void *arg;
};

struct watch;

/* Starts the loop and the adder.  0, or -errno with err (no inotify
 * instance left, no thread). */
int watch_start(const struct watch_options *o, struct watch **out, char *err, size_t errlen);
/* Stops both threads, closes every descriptor and frees w (NULL: no-op).
 * No callback runs after it returned.  An adder still in a path lookup
 * (a hung filesystem) is not waited for: it frees w when it returns (or
 * ends with the process). */
void watch_stop(struct watch *w);

/* Watches the socket of registration key; socket is a reference-counted
 * text (rcstr.h), of which the watcher takes a reference of its own.  A
 * key already watched with another socket is watched anew (its pidfd
 * closed).  The directory's watch is added later, on the adder.  0 or
 * -ENOMEM. */
int watch_add(struct watch *w, int64_t key, char *socket);
/* Forgets key (its pidfd closed, its directory's watch removed with the
 * last socket in it).  Unknown keys are ignored. */
void watch_remove(struct watch *w, int64_t key);

/*
 * pid called listen() on key's socket (SO_PEERCRED of a probe's
 * connection): watches that process with a pidfd.  Returns 1 when a pidfd
 * was opened (the caller probes again: a pid gone and reused before
 * pidfd_open names another process, and the probe then fails or names
 * another pid), 0 when key has a pidfd of pid already, or -errno and none:
 * -ENOENT key not watched, -ESRCH pid gone, -EMFILE descriptors short
 * (the reserve), -EPERM, -ENOSYS (an old kernel) and any other of
 * pidfd_open's.  pid <= 0 closes key's pidfd (returns 0).
 */
int watch_set_pid(struct watch *w, int64_t key, pid_t pid);

/* What is watched of key, a mask: */
#define WATCH_HAS_PIDFD 1u /* a pidfd of its listener, not exited */
#define WATCH_HAS_DIR 2u   /* its socket's name is watched (in its directory,
			      or its path's from an ancestor) */
#define WATCH_PID_REFUSED 4u /* watch_set_pid failed since its socket last
				changed or its pidfd last fired: not asked again */
/* Its pidfd is the socket's listener: watch_sure_pid since it was opened. */
#define WATCH_PID_SURE 8u
unsigned watch_of(struct watch *w, int64_t key);

/*
 * A probe's connection, made after key's pidfd was opened, named pid as its
 * listener, alive (SO_PEERPIDFD, probe.h's pid_sure): when key's pidfd is
 * of pid, it is that listener (a process alive with pid at the probe that
 * listened before the pidfd was opened had pid throughout), and watch_of
 * says WATCH_PID_SURE until the pidfd is closed.  1 when so marked, 0 when
 * key's pidfd is not of pid (or none), -ENOENT key not watched.
 */
int watch_sure_pid(struct watch *w, int64_t key, pid_t pid);

/* A reference to key's socket (rcstr_unref it), NULL when not watched. */
char *watch_socket(struct watch *w, int64_t key);

struct watch_counts {
	size_t pidfd;	/* registrations with a pidfd */
	size_t inotify; /* with a directory's watch and no pidfd */
	size_t poll;	/* with neither: the rounds alone see them */
	size_t dirs;	/* inotify watches */
	uint64_t events; /* dispatched since the start */
	/* Fallbacks, since the start: a pidfd refused (ENOSYS, EPERM, a pid
	 * gone), the watch limit reached, descriptors short. */
	uint64_t no_pidfd, watch_limit, fds_short;
};
void watch_counts(struct watch *w, struct watch_counts *out);

/* Tests: waits until the adder has nothing queued and the loop has read
 * everything the kernel had for it when the call began.  0 or -ETIMEDOUT
 * after timeout_ms. */
int watch_settle(struct watch *w, unsigned timeout_ms);

#endif
