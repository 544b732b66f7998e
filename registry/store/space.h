/* SPDX-License-Identifier: MIT */
/*
 * The upkeep of the state file's space (store_space.c, store_reserve.c),
 * private to registry/: the checkpointer thread and the reserve for
 * deregistrations (registry_start_upkeep in registry.h says what they
 * do).  Every function here but space_stop expects the registry mutex
 * held; sp may be NULL (no upkeep: they do nothing).  It knows the store
 * (store.h) and the commits' lock, not the registry object (core.h).
 */
#ifndef PLUGFS_REGISTRY_SPACE_H
#define PLUGFS_REGISTRY_SPACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "registry.h"

struct store;
struct store_space;

/* Starts the upkeep of st, the registry's store (a file opened for
 * writing), whose commits hold *commit_lock (the registry's commit_mu);
 * *out gets it.  See registry_start_upkeep. */
int space_start(struct store *st, pthread_mutex_t *commit_lock, const struct registry_upkeep *o,
		struct store_space **out, char *err, size_t errlen);
/* The commits stop telling the thread: SQLite's own checkpoints again
 * (the registry mutex held, as for every commit). */
void space_unhook(struct store_space *sp);
/* Stops the thread, closes its connection and the reserve (kept on disk
 * for the next start) and frees sp (after space_unhook; the registry
 * mutex not held). */
void space_stop(struct store_space *sp);

/* A deregistration failed for a full disk: releases the reserve.  True
 * when it released space (the caller commits once more), false when
 * there is none to release. */
bool space_release_reserve(struct store_space *sp);

/* Before a mutation that adds rows: -ENOSPC with a message naming the
 * state file, what and the reserve while the reserve is released or
 * cannot be allocated; else 0. */
int space_check_room(struct store_space *sp, const char *what, char *err, size_t errlen);

void space_stats(struct store_space *sp, struct registry_upkeep_stats *out);

/* ---- shared by store_space.c and store_reserve.c ---- */

enum reserve_state {
	RESERVE_NONE,	  /* no reserve (none asked for, or the filesystem cannot) */
	RESERVE_HELD,	  /* allocated */
	RESERVE_RELEASED, /* released for a deregistration */
	RESERVE_SHORT,	  /* cannot be allocated: the disk is full */
};

struct store_space {
	struct store *st;	      /* the registry's store: its path, its WAL hook */
	pthread_mutex_t *commit_lock; /* the registry's commit lock (commit_mu) */
	sqlite3 *db;		      /* the checkpointer's connection */
	char *reserve_path;
	size_t reserve_bytes; /* 0: no reserve */
	int reserve_fd;	      /* -1: not open */
	/* Under the commits' lock (space_commits_trylock): */
	enum reserve_state reserve;
	uint64_t reserve_released;
	int ckpt_frames, limit_frames;
	unsigned idle_ms;
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* to the thread: a commit, a stop, the reserve */
	pthread_cond_t done; /* from the thread: a checkpoint ended */
	/* Under mu: */
	bool stop;
	bool pending;	     /* the WAL holds ckpt_frames not yet checkpointed */
	/* Frames of the WAL the last checkpoint copied into the file (its
	 * pnCkpt); 0 once the WAL started again from its beginning. */
	int backfilled;
	bool dirty;	     /* a commit since the last TRUNCATE */
	bool reserve_wanted; /* allocate the reserve again */
	int frames;	     /* frames in the WAL after the last commit */
	uint64_t commits, last_commit_ms;
	uint64_t begun;	   /* checkpoints begun */
	uint64_t complete; /* the number (in begun) of the last that ran to its end */
	uint64_t passive, restart, truncate, failed;
	int last_fail; /* the SQLite code of the last failure logged, 0 after a success */
};

/* The lock every commit of a mutation holds (the registry mutex), taken
 * without waiting by the checkpointer to allocate the reserve again: true
 * when taken. */
bool space_commits_trylock(struct store_space *sp);
void space_commits_unlock(struct store_space *sp);

/* Opens (creating it) the reserve file: a regular file of ours, never
 * through a symlink.  0 or an errno; a file of the wrong kind is EEXIST.
 * Registry mutex held. */
int reserve_open(struct store_space *sp);
/* Allocates the reserve (again): RESERVE_HELD, or RESERVE_SHORT when the
 * disk lacks the space (nothing of it kept), or RESERVE_NONE with a
 * warning when the filesystem cannot hold one.  The commits' lock held. */
void reserve_fill(struct store_space *sp);

#endif
