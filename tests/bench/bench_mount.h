/* SPDX-License-Identifier: MIT */
/*
 * What the benches that mount plugfs in-process share (bench_mount.c):
 * plugfs-bench (plugfs_bench.c) and plugfs-bench-liveness
 * (bench_liveness.c).  Every function here exits with a message that
 * starts with prog (the program's name) when it cannot do its work: a
 * bench has nothing to measure then.
 */
#ifndef PLUGFS_BENCH_MOUNT_H
#define PLUGFS_BENCH_MOUNT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "fs.h"
#include "registry.h"

/* A fresh directory <tmpfs>/<prefix>.XXXXXX in buf (len bytes), on the
 * first writable tmpfs of /dev/shm, /run and /tmp; bench_tmpdir_remove
 * removes it and everything in it. */
void bench_tmpdir(const char *prog, const char *prefix, char *buf, size_t len);
void bench_tmpdir_remove(const char *prog, const char *dir);

/* Whether root and /dev/fuse are there to mount; when not, says why on
 * stderr and *exit_code is what the bench exits with: 1 under CI=true
 * (never a skip in CI), else 77 (skip). */
bool bench_fuse_usable(const char *prog, int *exit_code);

/* A listening Unix socket at path (a stale file there is removed first),
 * backlog 4096, with SOCK_CLOEXEC and the extra socket() flags. */
int bench_listen(const char *prog, const char *path, int flags);

/* The registry of state file dir/state.db, types csi-controller and
 * csi-node, a tombstone TTL of a day, synchronous as given. */
struct registry *bench_open_registry(const char *prog, const char *dir, const char *synchronous);
/* Registers type/name alloc at sock: 0, or -1 with a message. */
int bench_register(const char *prog, struct registry *r, const char *type, const char *name,
		   const char *alloc, const char *sock);

/* An in-process mount, as `plugfs mount' runs it: fs_mount of r at
 * fo->mountpoint and fs_run on a thread of its own; returns once readlink
 * of link (a csi.sock in the mount) answers. */
struct bench_mount {
	struct plugfs_fs *fs;
	pthread_t loop;
};
void bench_mount_start(const char *prog, struct registry *r, const struct fs_options *fo,
		       const char *link, struct bench_mount *m);
/* Ends the loop, waits for it and unmounts. */
void bench_mount_stop(struct bench_mount *m);

#endif
