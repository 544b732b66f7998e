/* SPDX-License-Identifier: MIT */
/*
 * The start's integrity check, run beside the load (store.h,
 * store_check_start).  PRAGMA integrity_check reads every page and compares
 * every index with its table: at 100,000 registrations it costs about as
 * much as the rows' check and the load together, so it runs on a
 * connection and a thread of its own while the opening thread checks and
 * loads the rows, and store_check_join waits for its verdict before anything
 * writes the file (a migration, the WAL, the types: store_open_finish).  A
 * refused file is left as it was, and its refusal names the integrity
 * check when that failed, whatever else the load met on the damaged file.
 * Also the checks on the caller's own connection (store_quick_check,
 * store_integrity_check: store_open_copy, `state check').
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "store.h"

struct store_check {
	pthread_t th;
	char *path;
	int rc;
	char err[512];
};

/* PRAGMA integrity_check on db: 0 when the answer is "ok". */
int store_run_check(sqlite3 *db, const char *path, const char *pragma, char *err,
		    size_t errlen)
{
	sqlite3_stmt *st = NULL;
	const char *msg;
	int rc = sqlite3_prepare_v2(db, pragma, -1, &st, NULL);

	if (rc != SQLITE_OK) {
		rc = plugfs_errf(err, errlen, -EIO, "state file `%s': integrity check failed: %s",
				 path, sqlite3_errmsg(db));
		goto out;
	}
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		rc = plugfs_errf(err, errlen, -EIO, "state file `%s': integrity check failed: %s",
				 path, sqlite3_errmsg(db));
		goto out;
	}
	msg = (const char *)sqlite3_column_text(st, 0);
	if (!msg || strcmp(msg, "ok") != 0) {
		rc = plugfs_errf(err, errlen, -EIO, "state file `%s': integrity check failed: %s",
				 path, msg ? msg : "no answer");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

int store_quick_check(struct store *s, char *err, size_t errlen)
{
	return store_run_check(s->db, s->path, "PRAGMA quick_check", err, errlen);
}

int store_integrity_check(struct store *s, char *err, size_t errlen)
{
	return store_run_check(s->db, s->path, "PRAGMA integrity_check", err, errlen);
}

/* The check's thread, on a connection of its own.  Opened read-write
 * (never created), because on a read-only connection integrity_check
 * skips the CHECK constraints; it runs nothing but the check, so it never
 * writes, and with no checkpoint on close (the opening thread's connection
 * is open anyway) it leaves a -wal as it was. */
static void *check_main(void *arg)
{
	struct store_check *c = arg;
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(c->path, &db, SQLITE_OPEN_READWRITE, NULL);

	if (rc != SQLITE_OK) {
		c->rc = plugfs_errf(c->err, sizeof(c->err), -EIO,
				    "state file `%s': integrity check failed: %s", c->path,
				    db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto out;
	}
	sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	sqlite3_busy_timeout(db, 5000);
	c->rc = store_run_check(db, c->path, "PRAGMA integrity_check", c->err, sizeof(c->err));
out:
	sqlite3_close(db);
	return NULL;
}

int store_check_start(struct store *s, char *err, size_t errlen)
{
	struct store_check *c = calloc(1, sizeof(*c));

	if (!c || !(c->path = strdup(s->path))) {
		free(c);
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	}
	if (pthread_create(&c->th, NULL, check_main, c) != 0) {
		/* No thread: the check runs here, before anything else. */
		int rc = store_integrity_check(s, err, errlen);

		free(c->path);
		free(c);
		return rc;
	}
	s->check = c;
	return 0;
}

int store_check_join(struct store *s, char *err, size_t errlen)
{
	struct store_check *c = s->check;
	int rc;

	if (!c)
		return 0;
	pthread_join(c->th, NULL);
	s->check = NULL;
	rc = c->rc;
	if (rc < 0)
		plugfs_errf(err, errlen, rc, "%s", c->err);
	free(c->path);
	free(c);
	return rc;
}

int store_check_settle(struct store *s, int rc, char *err, size_t errlen)
{
	char msg[512];
	int crc = store_check_join(s, msg, sizeof(msg));

	if (crc < 0)
		return plugfs_errf(err, errlen, crc, "%s", msg);
	return rc;
}
