/* SPDX-License-Identifier: MIT */
/*
 * plugfs filesystem: the read-only FUSE (low-level API) view of a registry,
 * laid out as docs/design.md "The filesystem" draws it.  Handlers answer from
 * an in-memory view kept current by registry events; kernel invalidations go
 * through one notifier thread, never from a handler.
 *
 * Delivery guarantee: the registry event callback waits until the notifier
 * has handed the invalidations of that change to the kernel, so when a
 * registry mutation returns (and the control server says `ok'), the next
 * readlink or lookup through the mount sees the new state.  The wait happens
 * in the thread that mutates the registry, never in a FUSE handler.
 *
 * Inode numbers: root 1, plugins/ 2, then persisted id * 8 + tag: types.id
 * (type directory, tag 0), plugins.id (plugin directory 1, <socket_name> 2,
 * allocs/ 3, info 4), registration id (allocs/<alloc> 5).
 *
 * info: one line per registration, active first, fields separated by one
 * space: alloc socket version kind registered_at, version "-" when none,
 * registered_at in RFC 3339 UTC (2026-11-30T09:32:13Z).
 */
#ifndef PLUGFS_FS_H
#define PLUGFS_FS_H

#include <stdbool.h>
#include <stddef.h>

struct registry;
struct plugfs_fs;

/*
 * What a daemon hands to the next one so that the mount outlives it
 * (fs/resume.c): the /dev/fuse fd, a memfd with the connection's FUSE_INIT
 * request, and the caller's control socket (fs only carries it).  -1 when
 * none.
 */
struct fs_handover {
	int fuse_fd;
	int init_fd;
	int control_fd;
};

/* Names the handed-over fds across an exec: "fuse=N,init=M[,control=K]". */
#define FS_RESUME_ENV "PLUGFS_RESUME_FDS"

/* Reads $PLUGFS_RESUME_FDS into h and removes it from the environment.  1
 * when it names open fds, 0 when unset (h all -1), -EINVAL when malformed. */
int fs_handover_from_env(struct fs_handover *h);
/* Clears close-on-exec on h's fds and sets $PLUGFS_RESUME_FDS; 0 or -errno. */
int fs_handover_to_env(const struct fs_handover *h);

struct fs_options {
	const char *mountpoint;	 /* created (0755, with parents) when missing */
	const char *socket_name; /* name of the active symlink, e.g. csi.sock */
	bool allow_other;
	double cache_timeout; /* seconds, for entries and attributes */
	bool debug;	      /* libfuse debug output */
	/* Called once, from the request loop, when the kernel's FUSE_INIT has
	 * been handled (requests are served from then on).  It must not block
	 * and must not touch the mount.  May be NULL. */
	void (*on_ready)(void *arg);
	void *on_ready_arg;
	/* Non-NULL: resume the connection handed over by a previous process
	 * (fuse_fd, init_fd; fs owns them from then on) instead of mounting.
	 * Nothing then touches the mountpoint before fs_run serves it. */
	const struct fs_handover *resume;
	/* For measurement only (plugfs-bench prints what each costs); the
	 * daemon leaves them false: no default_permissions mount option, no
	 * FUSE_CAP_CACHE_SYMLINKS, no kernel cache of directory listings. */
	bool no_default_permissions, no_cache_symlinks, no_dir_cache;
};

/*
 * Builds the view from the registry, subscribes to its events, recovers a
 * stale mount (ENOTCONN) or a hung plugfs mount at the mountpoint, refuses a
 * live plugfs mount there, forks the guard process (fs/guard.c) and mounts.
 * Call it from the thread that then calls fs_run and that lives until the
 * process exits (the main thread).  0 or -errno with a message in err.
 */
int fs_mount(struct registry *reg, const struct fs_options *opts, struct plugfs_fs **out, char *err,
	     size_t errlen);

/*
 * Serves requests until fs_exit() is called or a SIGTERM/SIGINT arrives
 * (handlers installed by fs_mount; SIGHUP is left to the caller).  Returns 0
 * on a clean stop, FS_RUN_HANDOVER after fs_request_handover, -errno on
 * failure.
 */
#define FS_RUN_HANDOVER 1
int fs_run(struct plugfs_fs *fs);

/*
 * After fs_run returned FS_RUN_HANDOVER: takes the connection out of fs
 * (the caller owns h->fuse_fd and h->init_fd, both close-on-exec), so that
 * fs_destroy then frees everything without unmounting.  0, or -ENOTCONN when
 * there is nothing to hand over (then fs_destroy unmounts as usual).
 */
int fs_handover(struct plugfs_fs *fs, struct fs_handover *h);

/* The connection's /dev/fuse fd and its FUSE_INIT memfd (owned by fs; -1
 * when not known yet: the INIT is saved before the init callback runs), e.g.
 * to hand copies to systemd's file descriptor store. */
void fs_connection_fds(struct plugfs_fs *fs, int *fuse_fd, int *init_fd);

/* Asks fs_run to return; async-signal-safe. */
void fs_exit(struct plugfs_fs *fs);

/*
 * Asks fs_run to return FS_RUN_HANDOVER: the loop stops reading at a request
 * boundary and finishes what it has read; the rest waits in the kernel for
 * the next process.  Call it once nothing can queue kernel invalidations any
 * more (no registry mutation runs), from any thread.  0, or -EAGAIN before
 * the connection's FUSE_INIT was saved (nothing to hand over yet).
 */
int fs_request_handover(struct plugfs_fs *fs);

/* Unmounts (when still mounted), unsubscribes and frees. */
void fs_destroy(struct plugfs_fs *fs);

/* Updates what can change without a remount (the cache timeout). */
void fs_set_cache_timeout(struct plugfs_fs *fs, double seconds);

/* Whether fs serves a connection handed over by a previous process (false:
 * it mounted afresh, also when the handed-over mount was gone). */
bool fs_resumed(const struct plugfs_fs *fs);

/*
 * For the watchdog: true when requests were served since the last call, or
 * none waits in the kernel (an idle loop is a healthy one); false when
 * requests wait and none was served: the loop is hung.  Reads fusectl's
 * `waiting' count, never the mount.  Call from one thread.
 */
bool fs_loop_progress(struct plugfs_fs *fs);

/* Number of FUSE requests served so far (for the benchmark and status). */
unsigned long long fs_requests_served(struct plugfs_fs *fs);

/* The requests answered with an error so far, for metrics: counts[i] for
 * the errno named names[i] ("ENOENT": a node that is gone; "EROFS",
 * "ENODATA": an extended attribute that is not there, "ENOMEM"), and a last
 * entry "other".  A lookup of a missing name is no error: it is answered
 * with a negative entry the kernel caches.  Fills at most max entries; returns how many there are.
 */
#define FS_N_COUNTED_ERRNOS 4
size_t fs_error_counts(struct plugfs_fs *fs, const char **names, unsigned long long *counts,
		       size_t max);

enum fs_release {
	FS_RELEASE_IF_DEAD, /* only a mount whose connection is gone (ENOTCONN) */
	FS_RELEASE,	    /* detach it */
	FS_RELEASE_ABORT,   /* abort its FUSE connection, then detach it */
};
/*
 * Detaches the plugfs mount at mountpoint, when there is one, after its
 * daemon stopped (`plugfs stop-post').  The mount is found in
 * /proc/self/mountinfo; FS_RELEASE_IF_DEAD asks it for statfs from a child
 * process (bounded), nothing else touches it.  1 when detached, 0 when no
 * plugfs mount is there (or it is alive and FS_RELEASE_IF_DEAD), -errno with
 * a message in err.
 */
int fs_release_mount(const char *mountpoint, enum fs_release how, char *err, size_t errlen);

#endif
