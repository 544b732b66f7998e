/* SPDX-License-Identifier: MIT */
/*
 * The upkeep of the state file's space: the checkpointer thread and the
 * reserve for deregistrations (registry_start_upkeep in registry.h).
 *
 * The thread has its own SQLite connection on the state file, so that a
 * checkpoint never holds the registry mutex: the commits (the main
 * connection, under the registry mutex) tell it through the WAL hook how
 * many frames the WAL holds, and it checkpoints by the policy of
 * registry.h.  Its own mutex (sp->mu) is taken under the registry mutex by
 * the hook, never the other way round: the thread lets go of sp->mu before
 * it takes the registry mutex (only to allocate the reserve again).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "log.h"
#include "space.h"

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

enum reserve_state {
	RESERVE_NONE,	  /* no reserve (none asked for, or the filesystem cannot) */
	RESERVE_HELD,	  /* allocated */
	RESERVE_RELEASED, /* released for a deregistration */
	RESERVE_SHORT,	  /* cannot be allocated: the disk is full */
};

struct store_space {
	struct registry *r;
	sqlite3 *db; /* the checkpointer's connection */
	char *reserve_path;
	size_t reserve_bytes; /* 0: no reserve */
	int reserve_fd;	      /* -1: not open */
	/* Under the registry mutex: */
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
	bool dirty;	     /* a commit since the last TRUNCATE */
	bool reserve_wanted; /* allocate the reserve again */
	int frames;	     /* frames in the WAL after the last commit */
	uint64_t commits, last_commit_ms;
	uint64_t begun;	   /* checkpoints begun */
	uint64_t complete; /* the number (in begun) of the last that ran to its end */
	uint64_t passive, restart, truncate, failed;
	int last_fail; /* the SQLite code of the last failure logged, 0 after a success */
};

static uint64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static const char *state_path(const struct store_space *sp)
{
	return sp->r->st.path;
}

/* ---- the reserve (registry mutex held) ------------------------------- */

/* Opens (creating it) the reserve file: a regular file of ours, never
 * through a symlink.  0 or an errno; a file of the wrong kind is EEXIST. */
static int reserve_open(struct store_space *sp)
{
	struct stat st;
	int fd = open(sp->reserve_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno == ELOOP || errno == EISDIR || errno == ENXIO ? EEXIST : errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return EEXIST;
	}
	sp->reserve_fd = fd;
	return 0;
}

/* Allocates the reserve (again): RESERVE_HELD, or RESERVE_SHORT when the
 * disk lacks the space (nothing of it kept), or RESERVE_NONE with a
 * warning when the filesystem cannot hold one. */
static void reserve_fill(struct store_space *sp)
{
	enum reserve_state was = sp->reserve;
	int e = sp->reserve_fd < 0 ? reserve_open(sp) : 0;

	if (e == 0)
		e = posix_fallocate(sp->reserve_fd, 0, (off_t)sp->reserve_bytes);
	if (e == 0) {
		sp->reserve = RESERVE_HELD;
		if (was == RESERVE_RELEASED || was == RESERVE_SHORT)
			log_warn(
			    "state file `%s': the reserve `%s' (%zu bytes) is allocated again: "
			    "registrations are accepted",
			    state_path(sp), sp->reserve_path, sp->reserve_bytes);
		return;
	}
	if (sp->reserve_fd >= 0 && ftruncate(sp->reserve_fd, 0) < 0)
		e = errno;
	if (e == ENOSPC || e == EDQUOT) {
		if (was != RESERVE_RELEASED && was != RESERVE_SHORT)
			log_warn(
			    "state file `%s': cannot allocate the reserve `%s' (%zu bytes): %s "
			    "(%s): registrations are refused until that much space is free",
			    state_path(sp), sp->reserve_path, sp->reserve_bytes, strerrorname_np(e),
			    strerror(e));
		if (was != RESERVE_RELEASED)
			sp->reserve = RESERVE_SHORT;
		return;
	}
	log_warn("state file `%s': cannot allocate the reserve `%s': %s (%s): a full disk will "
		 "refuse deregistrations too",
		 state_path(sp), sp->reserve_path,
		 strerrorname_np(e) ? strerrorname_np(e) : "errno", strerror(e));
	sp->reserve = RESERVE_NONE;
}

bool space_release_reserve(struct store_space *sp)
{
	if (!sp || sp->reserve != RESERVE_HELD)
		return false;
	if (ftruncate(sp->reserve_fd, 0) < 0)
		return false;
	sp->reserve = RESERVE_RELEASED;
	sp->reserve_released++;
	log_warn("state file `%s': the disk is full: released the reserve `%s' (%zu bytes) for a "
		 "deregistration; registrations are refused until it can be allocated again",
		 state_path(sp), sp->reserve_path, sp->reserve_bytes);
	pthread_mutex_lock(&sp->mu);
	sp->reserve_wanted = true;
	pthread_cond_signal(&sp->cond);
	pthread_mutex_unlock(&sp->mu);
	return true;
}

int space_check_room(struct store_space *sp, const char *what, char *err, size_t errlen)
{
	if (!sp || (sp->reserve != RESERVE_RELEASED && sp->reserve != RESERVE_SHORT))
		return 0;
	return plugfs_errf(err, errlen, -ENOSPC,
			   "state file `%s': %s: the disk is full: the reserve `%s' (%zu bytes) "
			   "that keeps deregistrations possible %s (ENOSPC: %s); registrations "
			   "resume once that much space is free",
			   state_path(sp), what, sp->reserve_path, sp->reserve_bytes,
			   sp->reserve == RESERVE_RELEASED ? "was released for a deregistration"
							   : "cannot be allocated",
			   strerror(ENOSPC));
}

/* ---- the checkpointer ------------------------------------------------- */

/* After every commit of the main connection (registry mutex held). */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct store_space *sp = arg;

	(void)db;
	(void)name;
	pthread_mutex_lock(&sp->mu);
	sp->frames = frames;
	sp->pending = frames >= sp->ckpt_frames;
	sp->dirty = true;
	sp->commits++;
	sp->last_commit_ms = mono_ms();
	pthread_cond_signal(&sp->cond);
	if (frames >= sp->limit_frames && !sp->last_fail) {
		/* The commits outrun the checkpoints (each begins while the one
		 * a commit asked for still runs, so the WAL never starts again):
		 * wait, for at most HOOK_WAIT_MS, until one begun after this
		 * commit has run to its end; the next commit then starts the
		 * WAL from its beginning.  (Not while checkpoints fail for a
		 * full disk or an I/O error: waiting would not help.) */
		uint64_t want = sp->begun + 1, end = mono_ms() + HOOK_WAIT_MS;
		struct timespec ts = {.tv_sec = (time_t)(end / 1000),
				      .tv_nsec = (long)(end % 1000) * 1000000L};

		while (sp->complete < want && !sp->stop)
			if (pthread_cond_timedwait(&sp->done, &sp->mu, &ts) != 0)
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
	struct timespec ts;

	if (at == UINT64_MAX) {
		pthread_cond_wait(&sp->cond, &sp->mu);
		return;
	}
	ts.tv_sec = (time_t)(at / 1000);
	ts.tv_nsec = (long)(at % 1000) * 1000000L;
	pthread_cond_timedwait(&sp->cond, &sp->mu, &ts);
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
		uint64_t now = mono_ms(), wake = UINT64_MAX, seen = sp->commits;

		if (sp->pending && now >= retry_at) {
			int frames = sp->frames;
			int mode = frames >= sp->limit_frames ? SQLITE_CHECKPOINT_RESTART
							      : SQLITE_CHECKPOINT_PASSIVE;

			if (checkpoint(sp, mode) && sp->commits == seen)
				sp->pending = false;
			else if (sp->commits == seen) /* blocked or failed: not at once */
				retry_at =
				    mono_ms() + (sp->last_fail ? sp->idle_ms : BUSY_RETRY_MS);
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
					retry_at = mono_ms() + sp->idle_ms;
				}
				continue;
			}
			wake = min_u64(wake, at);
		}
		if (sp->reserve_wanted) {
			if (now >= reserve_at) {
				bool held;

				pthread_mutex_unlock(&sp->mu);
				/* Never waits for the registry mutex: a commit
				 * holding it may be waiting for a checkpoint. */
				held = false;
				if (pthread_mutex_trylock(&sp->r->mu) != 0) {
					pthread_mutex_lock(&sp->mu);
					reserve_at = mono_ms() + BUSY_RETRY_MS;
					continue;
				}
				reserve_fill(sp);
				held =
				    sp->reserve != RESERVE_RELEASED && sp->reserve != RESERVE_SHORT;
				unlock(sp->r);
				pthread_mutex_lock(&sp->mu);
				reserve_at = mono_ms() + RESERVE_RETRY_MS;
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

int space_start(struct registry *r, const struct registry_upkeep *o, char *err, size_t errlen)
{
	const struct registry_upkeep none = {0};
	struct store_space *sp = NULL;
	pthread_condattr_t ca;
	sigset_t all, old;
	size_t ckpt_bytes, limit_bytes;
	int64_t page = 0;
	char sql[64];
	int rc, e;

	if (!o)
		o = &none;
	if (r->space)
		return plugfs_errf(err, errlen, -EALREADY, "state file `%s': upkeep already runs",
				   r->st.path);
	if (r->read_only || r->st.copy || strcmp(r->st.path, ":memory:") == 0)
		return plugfs_errf(err, errlen, -EINVAL,
				   "state file `%s': no upkeep for a registry that is not a file "
				   "opened for writing",
				   r->st.path);
	ckpt_bytes = o->checkpoint_bytes ? o->checkpoint_bytes : DEFAULT_CHECKPOINT_BYTES;
	limit_bytes = o->wal_limit_bytes ? o->wal_limit_bytes : 4 * ckpt_bytes;
	if (limit_bytes < ckpt_bytes)
		return plugfs_errf(
		    err, errlen, -EINVAL,
		    "upkeep: wal_limit_bytes %zu: must be at least checkpoint_bytes %zu",
		    limit_bytes, ckpt_bytes);
	if ((rc = store_query_int(&r->st, "PRAGMA page_size", &page, "reading the page size", err,
				  errlen)) < 0)
		return rc;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	sp->r = r;
	sp->reserve_fd = -1;
	sp->ckpt_frames = frames_of(ckpt_bytes, page);
	sp->limit_frames = frames_of(limit_bytes, page);
	sp->idle_ms = o->idle_ms ? o->idle_ms : DEFAULT_IDLE_MS;
	sp->reserve_bytes = o->reserve_bytes == SIZE_MAX ? 0
			    : o->reserve_bytes		 ? o->reserve_bytes
							 : DEFAULT_RESERVE_BYTES;
	/* A WAL left by an earlier run is checkpointed soon. */
	sp->pending = sp->dirty = true;
	sp->last_commit_ms = mono_ms();
	pthread_mutex_init(&sp->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sp->cond, &ca);
	pthread_cond_init(&sp->done, &ca);
	pthread_condattr_destroy(&ca);
	if (asprintf(&sp->reserve_path, "%s-reserve", r->st.path) < 0) {
		sp->reserve_path = NULL;
		rc = plugfs_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	rc = sqlite3_open_v2(r->st.path, &sp->db, SQLITE_OPEN_READWRITE, NULL);
	if (rc != SQLITE_OK) {
		rc = plugfs_errf(err, errlen, reg_sqlite_errno(rc),
				 "state file `%s': opening the checkpointer's connection: %s",
				 r->st.path, sp->db ? sqlite3_errmsg(sp->db) : sqlite3_errstr(rc));
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
		    r->st.path, sqlite3_errmsg(sp->db));
		goto fail;
	}
	if (sp->reserve_bytes) {
		if ((e = reserve_open(sp)) == EEXIST) {
			rc = plugfs_errf(err, errlen, -EEXIST,
					 "state file `%s': its reserve `%s' is not a regular file "
					 "owned by uid %d (move it away)",
					 r->st.path, sp->reserve_path, (int)geteuid());
			goto fail;
		}
		reserve_fill(sp); /* opens it when reserve_open could not */
		sp->reserve_wanted =
		    sp->reserve == RESERVE_SHORT || sp->reserve == RESERVE_RELEASED;
	}
	snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %zu", limit_bytes);
	if ((rc = store_query_int(&r->st, sql, &page, "setting journal_size_limit", err, errlen)) <
	    0)
		goto fail;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&sp->thread, NULL, space_main, sp);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		rc = plugfs_errf(err, errlen, -e, "cannot start the checkpointer thread: %s",
				 strerror(e));
		goto fail;
	}
	sp->started = true;
	/* The commits tell the thread; SQLite's own checkpoint is off. */
	sqlite3_wal_hook(r->st.db, wal_hook, sp);
	r->space = sp;
	return 0;
fail:
	space_free(sp);
	return rc;
}

void space_stop(struct registry *r)
{
	struct store_space *sp = r->space;

	if (!sp)
		return;
	lock(r);
	sqlite3_wal_autocheckpoint(r->st.db, 1000); /* replaces wal_hook */
	r->space = NULL;
	unlock(r);
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
	out->reserve_held = sp->reserve == RESERVE_HELD;
	out->reserve_released = sp->reserve_released;
	pthread_mutex_lock(&sp->mu);
	out->passive = sp->passive;
	out->restart = sp->restart;
	out->truncate = sp->truncate;
	out->failed = sp->failed;
	pthread_mutex_unlock(&sp->mu);
}
