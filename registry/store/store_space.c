/* SPDX-License-Identifier: MIT */
/*
 * The upkeep of the state file's space: the checkpointer thread, which
 * also allocates the reserve for deregistrations again (store_reserve.c),
 * and the upkeep's start and stop (registry_start_upkeep in registry.h,
 * registry.c).
 *
 * The thread has its own SQLite connection on the state file, so that a
 * checkpoint never holds the registry mutex: the commits (the main
 * connection, under the commit lock) tell it through the WAL hook how
 * many frames the WAL holds, and it checkpoints by the policy of
 * registry.h.  Its own mutex (sp->mu) is taken by the hook under the
 * commit lock (a commit runs with the registry mutex released), never the
 * other way round: the thread lets go of sp->mu before it tries the commit
 * lock (only to allocate the reserve again, and by trylock).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "space.h"
#include "internal.h"
#include "store.h"
#include "thread.h"

#define DEFAULT_CHECKPOINT_BYTES (128u * 1024)
#define DEFAULT_IDLE_MS 1000u
#define DEFAULT_RESERVE_BYTES (256u * 1024)
#define RESERVE_RETRY_MS 1000u
#define BUSY_RETRY_MS 50u
/* The checkpointer's busy timeout: how long a RESTART or TRUNCATE waits
 * for a commit under way (or a reader) before it tries again later. */
#define CKPT_BUSY_MS 200
/* How long a commit that finds the WAL at its limit waits for a checkpoint. */
#define HOOK_WAIT_MS 1000

static const char *state_path(const struct store_space *sp)
{
	return sp->st->path;
}

/* ---- the checkpointer ------------------------------------------------- */

/* The WAL holds ckpt_frames the last checkpoint did not copy, or is at its
 * limit.  sp->mu held. */
static bool wal_wants_checkpoint(const struct store_space *sp)
{
	return sp->frames - sp->backfilled >= sp->ckpt_frames || sp->frames >= sp->limit_frames;
}

/* After every commit of the main connection (registry mutex held). */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct store_space *sp = arg;
	bool was_pending, was_dirty;

	(void)db;
	(void)name;
	pthread_mutex_lock(&sp->mu);
	was_pending = sp->pending;
	was_dirty = sp->dirty;
	/* Fewer frames than the last checkpoint copied: the WAL started again
	 * from its beginning. */
	if (frames < sp->backfilled)
		sp->backfilled = 0;
	sp->frames = frames;
	/* Counted from what the last checkpoint copied, not from the WAL's
	 * beginning: while commits stream, a checkpoint rarely ends before
	 * the next commit begins, so the WAL does not start again and its
	 * frames stay above ckpt_frames; counting from the beginning started
	 * a checkpoint (two fsyncs) after nearly every commit. */
	sp->pending = wal_wants_checkpoint(sp);
	sp->dirty = true;
	sp->commits++;
	sp->last_commit_ms = (uint64_t)plugfs_mono_ms();
	/* Woken only when it has something new to do: a checkpoint, or the
	 * idle timer to arm (a thread that sleeps with the timer armed sees
	 * the later commits when it wakes).  A wake-up after every commit cost
	 * a context switch per registration. */
	if ((sp->pending && !was_pending) || !was_dirty)
		pthread_cond_signal(&sp->cond);
	if (frames >= sp->limit_frames && !sp->last_fail) {
		/* The commits outrun the checkpoints (each begins while the one
		 * a commit asked for still runs, so the WAL never starts again):
		 * wait, for at most HOOK_WAIT_MS, until one begun after this
		 * commit has run to its end; the next commit then starts the
		 * WAL from its beginning.  (Not while checkpoints fail for a
		 * full disk or an I/O error: waiting would not help.) */
		uint64_t want = sp->begun + 1, end = (uint64_t)plugfs_mono_ms() + HOOK_WAIT_MS;

		while (sp->complete < want && !sp->stop)
			if (plugfs_cond_wait_until(&sp->done, &sp->mu, (int64_t)end) != 0)
				break;
	}
	pthread_mutex_unlock(&sp->mu);
	return SQLITE_OK;
}

static const char *mode_name(int mode)
{
	return mode == SQLITE_CHECKPOINT_PASSIVE   ? "passive"
	       : mode == SQLITE_CHECKPOINT_RESTART ? "restart"
						   : "truncate";
}

/* Runs one checkpoint with sp->mu released; true when it ran to its end
 * (every frame the WAL held is in the file).  Counts it, and logs a
 * failure once until the next success (busy is not one: a commit or a
 * reader was under way, it is tried again). */
static bool checkpoint(struct store_space *sp, int mode)
{
	int log = -1, done = -1, rc;
	uint64_t n = ++sp->begun;
	bool complete;

	pthread_mutex_unlock(&sp->mu);
	rc = sqlite3_wal_checkpoint_v2(sp->db, NULL, mode, &log, &done);
	pthread_mutex_lock(&sp->mu);
	complete =
	    rc == SQLITE_OK && (mode == SQLITE_CHECKPOINT_TRUNCATE || (log >= 0 && log == done));
	if (rc == SQLITE_OK)
		sp->backfilled = mode == SQLITE_CHECKPOINT_TRUNCATE ? 0 : done > 0 ? done : 0;
	if (complete) {
		sp->complete = n;
		pthread_cond_broadcast(&sp->done);
	}
	if (rc == SQLITE_OK) {
		if (mode == SQLITE_CHECKPOINT_PASSIVE)
			sp->passive++;
		else if (mode == SQLITE_CHECKPOINT_RESTART)
			sp->restart++;
		else
			sp->truncate++;
		sp->last_fail = 0;
		return complete;
	}
	sp->failed++;
	if ((rc & 0xff) != SQLITE_BUSY && sp->last_fail != rc) {
		sp->last_fail = rc;
		log_warn("state file `%s': %s checkpoint failed: %s (the commits stay in the WAL; "
			 "tried again)",
			 state_path(sp), mode_name(mode), sqlite3_errmsg(sp->db));
	}
	return false;
}

static void wait_until_ms(struct store_space *sp, uint64_t at)
{
	if (at == UINT64_MAX)
		pthread_cond_wait(&sp->cond, &sp->mu);
	else
		plugfs_cond_wait_until(&sp->cond, &sp->mu, (int64_t)at);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void *space_main(void *arg)
{
	struct store_space *sp = arg;
	uint64_t retry_at = 0, reserve_at = 0;

	pthread_mutex_lock(&sp->mu);
	while (!sp->stop) {
		uint64_t now = (uint64_t)plugfs_mono_ms(), wake = UINT64_MAX, seen = sp->commits;

		if (sp->pending && now >= retry_at) {
			int frames = sp->frames;
			int mode = frames >= sp->limit_frames ? SQLITE_CHECKPOINT_RESTART
							      : SQLITE_CHECKPOINT_PASSIVE;

			/* The commits that came meanwhile count from what it copied. */
			if (checkpoint(sp, mode) && sp->commits == seen) {
				sp->pending = false;
				continue;
			}
			sp->pending = wal_wants_checkpoint(sp);
			if (sp->pending && sp->commits == seen) /* blocked or failed: not at once */
				retry_at = (uint64_t)plugfs_mono_ms() +
					   (sp->last_fail ? sp->idle_ms : BUSY_RETRY_MS);
			continue;
		}
		if (sp->pending)
			wake = retry_at;
		if (sp->dirty) {
			uint64_t at = sp->last_commit_ms + sp->idle_ms;

			if (at < retry_at)
				at = retry_at;
			if (now >= at) {
				if (checkpoint(sp, SQLITE_CHECKPOINT_TRUNCATE)) {
					if (sp->commits == seen)
						sp->dirty = sp->pending = false;
				} else {
					retry_at = (uint64_t)plugfs_mono_ms() + sp->idle_ms;
				}
				continue;
			}
			wake = min_u64(wake, at);
		}
		if (sp->reserve_wanted) {
			if (now >= reserve_at) {
				bool held;

				pthread_mutex_unlock(&sp->mu);
				/* Never waits for the commits' lock: a commit
				 * holding it may be waiting for a checkpoint. */
				held = false;
				if (!space_commits_trylock(sp)) {
					pthread_mutex_lock(&sp->mu);
					reserve_at = (uint64_t)plugfs_mono_ms() + BUSY_RETRY_MS;
					continue;
				}
				reserve_fill(sp);
				held =
				    sp->reserve != RESERVE_RELEASED && sp->reserve != RESERVE_SHORT;
				space_commits_unlock(sp);
				pthread_mutex_lock(&sp->mu);
				reserve_at = (uint64_t)plugfs_mono_ms() + RESERVE_RETRY_MS;
				if (held)
					sp->reserve_wanted = false;
				continue;
			}
			wake = min_u64(wake, reserve_at);
		}
		wait_until_ms(sp, wake);
	}
	pthread_mutex_unlock(&sp->mu);
	return NULL;
}

/* ---- start, stop, figures --------------------------------------------- */

static void space_free(struct store_space *sp)
{
	if (!sp)
		return;
	if (sp->db)
		sqlite3_close(sp->db);
	if (sp->reserve_fd >= 0)
		close(sp->reserve_fd);
	free(sp->reserve_path);
	pthread_cond_destroy(&sp->cond);
	pthread_cond_destroy(&sp->done);
	pthread_mutex_destroy(&sp->mu);
	free(sp);
}

static int frames_of(size_t bytes, int64_t page)
{
	size_t n = bytes / ((size_t)page + 24);

	return n < 1 ? 1 : n > INT32_MAX ? INT32_MAX : (int)n;
}

int space_start(struct store *st, pthread_mutex_t *commit_lock, const struct registry_upkeep *o,
		struct store_space **out, char *err, size_t errlen)
{
	const struct registry_upkeep none = {0};
	struct store_space *sp = NULL;
	size_t ckpt_bytes, limit_bytes;
	int64_t page = 0;
	char sql[64];
	int rc, e;

	if (!o)
		o = &none;
	ckpt_bytes = o->checkpoint_bytes ? o->checkpoint_bytes : DEFAULT_CHECKPOINT_BYTES;
	limit_bytes = o->wal_limit_bytes ? o->wal_limit_bytes : 4 * ckpt_bytes;
	if (limit_bytes < ckpt_bytes)
		return plugfs_errf(
		    err, errlen, -EINVAL,
		    "upkeep: wal_limit_bytes %zu: must be at least checkpoint_bytes %zu",
		    limit_bytes, ckpt_bytes);
	if ((rc = store_query_int(st, "PRAGMA page_size", &page, "reading the page size", err,
				  errlen)) < 0)
		return rc;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	sp->st = st;
	sp->commit_lock = commit_lock;
	sp->reserve_fd = -1;
	sp->ckpt_frames = frames_of(ckpt_bytes, page);
	sp->limit_frames = frames_of(limit_bytes, page);
	sp->idle_ms = o->idle_ms ? o->idle_ms : DEFAULT_IDLE_MS;
	sp->reserve_bytes = o->reserve_bytes == SIZE_MAX ? 0
			    : o->reserve_bytes		 ? o->reserve_bytes
							 : DEFAULT_RESERVE_BYTES;
	/* A WAL left by an earlier run is checkpointed soon. */
	sp->pending = sp->dirty = true;
	sp->last_commit_ms = (uint64_t)plugfs_mono_ms();
	pthread_mutex_init(&sp->mu, NULL);
	plugfs_cond_init_mono(&sp->cond);
	plugfs_cond_init_mono(&sp->done);
	if (asprintf(&sp->reserve_path, "%s-reserve", st->path) < 0) {
		sp->reserve_path = NULL;
		rc = plugfs_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	rc = sqlite3_open_v2(st->path, &sp->db, SQLITE_OPEN_READWRITE, NULL);
	if (rc != SQLITE_OK) {
		rc = plugfs_errf(err, errlen, reg_sqlite_errno(rc),
				 "state file `%s': opening the checkpointer's connection: %s",
				 st->path, sp->db ? sqlite3_errmsg(sp->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_extended_result_codes(sp->db, 1);
	sqlite3_busy_timeout(sp->db, CKPT_BUSY_MS);
	/* A connection that has read nothing does not know the file is in
	 * WAL mode: its checkpoints would do nothing and say SQLITE_OK. */
	rc = sqlite3_exec(sp->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		rc = plugfs_errf(
		    err, errlen, reg_sqlite_errno(rc),
		    "state file `%s': reading it through the checkpointer's connection: "
		    "%s",
		    st->path, sqlite3_errmsg(sp->db));
		goto fail;
	}
	if (sp->reserve_bytes) {
		if ((e = reserve_open(sp)) == EEXIST) {
			rc = plugfs_errf(err, errlen, -EEXIST,
					 "state file `%s': its reserve `%s' is not a regular file "
					 "owned by uid %d (move it away)",
					 st->path, sp->reserve_path, (int)geteuid());
			goto fail;
		}
		reserve_fill(sp); /* opens it when reserve_open could not */
		sp->reserve_wanted =
		    sp->reserve == RESERVE_SHORT || sp->reserve == RESERVE_RELEASED;
	}
	snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %zu", limit_bytes);
	if ((rc = store_query_int(st, sql, &page, "setting journal_size_limit", err, errlen)) < 0)
		goto fail;
	e = plugfs_thread_start(&sp->thread, NULL, space_main, sp);
	if (e != 0) {
		rc = plugfs_errf(err, errlen, e, "cannot start the checkpointer thread: %s",
				 strerror(-e));
		goto fail;
	}
	sp->started = true;
	/* The commits tell the thread; SQLite's own checkpoint is off. */
	sqlite3_wal_hook(st->db, wal_hook, sp);
	*out = sp;
	return 0;
fail:
	space_free(sp);
	return rc;
}

void space_unhook(struct store_space *sp)
{
	if (sp)
		sqlite3_wal_autocheckpoint(sp->st->db, 1000); /* replaces wal_hook */
}

void space_stop(struct store_space *sp)
{
	if (!sp)
		return;
	pthread_mutex_lock(&sp->mu);
	sp->stop = true;
	pthread_cond_signal(&sp->cond);
	pthread_cond_broadcast(&sp->done);
	pthread_mutex_unlock(&sp->mu);
	if (sp->started)
		pthread_join(sp->thread, NULL);
	space_free(sp);
}

void space_stats(struct store_space *sp, struct registry_upkeep_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!sp)
		return;
	out->running = true;
	out->reserve_held = __atomic_load_n(&sp->reserve, __ATOMIC_RELAXED) == RESERVE_HELD;
	out->reserve_released = sp->reserve_released;
	pthread_mutex_lock(&sp->mu);
	out->passive = sp->passive;
	out->restart = sp->restart;
	out->truncate = sp->truncate;
	out->failed = sp->failed;
	pthread_mutex_unlock(&sp->mu);
}
