/* SPDX-License-Identifier: MIT */
/*
 * Opening the store: the file for writing, or a private in-memory copy of
 * it for a read-only open; the integrity check, the schema (schema.c), the
 * pragmas and the configured types.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "schema.h"
#include "store.h"

/* Reads the schema version and brings the file to SCHEMA_VERSION (along
 * the ladder of schema.c), or refuses it. */
static int check_schema(struct store *s, const struct store_open_options *o, char *err,
			size_t errlen)
{
	int64_t version;
	int rc;

	/* A migration writes: the integrity check's verdict first. */
	if ((rc = schema_version(s, -EINVAL, &version, err, errlen)) < 0 ||
	    (version != SCHEMA_VERSION && (rc = store_check_join(s, err, errlen)) < 0) ||
	    (rc = schema_upgrade(s, version, o->now, err, errlen)) < 0)
		return rc;
	return schema_check_tables(s, -EINVAL, err, errlen);
}

static int set_pragmas(struct store *s, const char *synchronous, char *err, size_t errlen)
{
	static const char *const sync_values[] = {"off", "normal", "full", "extra"};
	char sql[64];
	sqlite3_stmt *st = NULL;
	const char *mode;
	int64_t fk = 0;
	bool known = false;
	int rc;

	if (!synchronous)
		synchronous = "full";
	for (size_t i = 0; i < 4; i++)
		known |= strcmp(synchronous, sync_values[i]) == 0;
	if (!known)
		return plugfs_errf(err, errlen, -EINVAL,
				   "synchronous `%s': must be one of off, normal, full, extra",
				   synchronous);
	rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "switching to WAL", err, errlen);
	rc = sqlite3_step(st);
	mode = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
	if (!mode || (strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)) {
		rc = rc == SQLITE_ROW
			 ? plugfs_errf(err, errlen, -EIO,
				       "state file `%s': cannot use WAL (journal mode %s)", s->path,
				       mode ? mode : "?")
			 : store_fail(s, rc, "switching to WAL", err, errlen);
		sqlite3_finalize(st);
		return rc;
	}
	sqlite3_finalize(st);
	snprintf(sql, sizeof(sql), "PRAGMA synchronous = %s", synchronous);
	if ((rc = store_exec(s, sql, "setting synchronous", err, errlen)) < 0 ||
	    (rc = store_exec(s, "PRAGMA foreign_keys = ON", "enabling foreign keys", err, errlen)) <
		0 ||
	    (rc = store_query_int(s, "PRAGMA foreign_keys", &fk, "enabling foreign keys", err,
				  errlen)) < 0)
		return rc;
	/* Deleting a registration relies on ON DELETE CASCADE for its options. */
	if (fk != 1)
		return plugfs_errf(err, errlen, -EIO,
				   "state file `%s': this SQLite does not enforce foreign keys",
				   s->path);
	return 0;
}

/* Whether path is a WAL-mode database (header bytes 18 and 19 are 2) whose
 * -wal file does not exist: then no connection is open on it and the file
 * holds every commit. */
static bool wal_without_log(const char *path)
{
	unsigned char h[20];
	char *wal = NULL;
	bool log;
	FILE *f = fopen(path, "rb");

	if (!f)
		return false;
	if (fread(h, 1, sizeof(h), f) != sizeof(h) || h[18] != 2 || h[19] != 2) {
		fclose(f);
		return false;
	}
	fclose(f);
	if (asprintf(&wal, "%s-wal", path) < 0)
		return false;
	log = access(wal, F_OK) == 0;
	free(wal);
	return !log;
}

/*
 * Refuses a database file shorter than its header says: the page count at
 * offset 28 (valid when the "version-valid-for" number at 92 equals the
 * change counter at 24) times the page size at 16.  SQLite would read the
 * missing bytes as zeros and serve damaged rows without a word.  With a
 * -wal that is not empty the pages may be in the log (a checkpoint stopped
 * halfway), so the check is left to SQLite; the same with a -journal that is
 * not empty (a transaction that failed halfway on a failing disk, e.g. the
 * version-1 migration, whose rollback at the next open restores the pages
 * and the length).  Anything that is not an SQLite file of at least a header
 * is left to SQLite's own message too.
 */
static int check_length(const char *path, char *err, size_t errlen)
{
	static const char magic[16] = "SQLite format 3";
	unsigned char h[100];
	struct stat st, wst;
	char *wal = NULL;
	uint64_t page, pages;
	bool log_used;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(h) ||
	    pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h) || memcmp(h, magic, 16) != 0 ||
	    memcmp(h + 24, h + 92, 4) != 0)
		goto out;
	/* The file format's write and read versions: 1 (rollback journal) or
	 * 2 (WAL).  With a larger write version SQLite opens the file
	 * read-only (a copy checks as good, the mount cannot write it), with a
	 * larger read version not at all: refused alike, before SQLite opens
	 * it (and leaves a -wal of its own). */
	if (h[18] < 1 || h[18] > 2 || h[19] < 1 || h[19] > 2) {
		rc = plugfs_errf(err, errlen, -EIO,
				 "state file `%s': damaged header: file format versions %u (write, "
				 "byte 18) and %u (read, byte 19), where SQLite writes 1 or 2; "
				 "restore it from a backup",
				 path, h[18], h[19]);
		goto out;
	}
	page = (uint64_t)h[16] << 8 | h[17];
	if (page == 1)
		page = 65536;
	pages = (uint64_t)h[28] << 24 | (uint64_t)h[29] << 16 | (uint64_t)h[30] << 8 | h[31];
	if (pages == 0 || (uint64_t)st.st_size >= pages * page)
		goto out;
	if (asprintf(&wal, "%s-wal", path) < 0) {
		wal = NULL;
		goto out;
	}
	log_used = stat(wal, &wst) == 0 && wst.st_size > 0;
	free(wal);
	wal = NULL;
	if (!log_used && asprintf(&wal, "%s-journal", path) >= 0)
		log_used = stat(wal, &wst) == 0 && wst.st_size > 0;
	if (!log_used)
		rc = plugfs_errf(err, errlen, -EIO,
				 "state file `%s': truncated: %lld bytes, but its header counts "
				 "%llu pages of %llu bytes (%llu bytes); restore it from a backup",
				 path, (long long)st.st_size, (unsigned long long)pages,
				 (unsigned long long)page, (unsigned long long)(pages * page));
out:
	free(wal);
	close(fd);
	return rc;
}

/* "file:" URI of path for a read-only open ('?', '#' and '%' escaped).  A
 * read-only connection on a WAL database creates the -shm and -wal files
 * when they are missing and leaves them behind; when there is no -wal, the
 * database file is complete and opening it immutable reads it without
 * them.  (While a daemon has the file open its -wal exists, and the shared
 * -shm is used as usual.) */
static char *read_only_uri(const char *path)
{
	bool immutable = wal_without_log(path);
	size_t len = strlen(path), n = 0;
	char *u = malloc(3 * len + 32);

	if (!u)
		return NULL;
	n += (size_t)sprintf(u, "file:%s", path[0] == '/' ? "//" : "");
	for (const char *p = path; *p; p++) {
		if (*p == '?' || *p == '#' || *p == '%')
			n += (size_t)sprintf(u + n, "%%%02X", (unsigned char)*p);
		else
			u[n++] = *p;
	}
	sprintf(u + n, "?mode=ro%s", immutable ? "&immutable=1" : "");
	return u;
}

/* The ids of the configured types; 0 for a type absent from the file. */
static int read_type_ids(struct store *s, const struct store_open_options *o, int64_t *type_ids,
			 char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc;

	for (size_t i = 0; i < o->n_types; i++)
		type_ids[i] = 0;
	rc = sqlite3_prepare_v2(s->db, "SELECT id FROM types WHERE name = ?1", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading a type", err, errlen);
	for (size_t i = 0; i < o->n_types; i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, o->types[i], -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			type_ids[i] = sqlite3_column_int64(st, 0);
		else if (rc != SQLITE_DONE) {
			rc = store_fail(s, rc, "reading a type", err, errlen);
			goto out;
		}
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

int store_open_db_read_only(struct store *s, const char *path, char *err, size_t errlen)
{
	char *uri = NULL;
	int rc;

	if (strcmp(path, ":memory:") == 0) {
		rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READONLY, NULL);
	} else {
		if (access(path, F_OK) < 0)
			return plugfs_errf(
			    err, errlen, -errno,
			    "state file `%s': %s (a read-only open does not create it)", path,
			    strerror(errno));
		if ((rc = check_length(path, err, errlen)) < 0)
			return rc;
		uri = read_only_uri(path);
		if (!uri)
			return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
		rc = sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
		free(uri);
	}
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "cannot open", err, errlen);
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, 5000);
	return store_exec(s, "PRAGMA query_only = 1", "opening read-only", err, errlen);
}

int store_open_copy(struct store *s, const char *path, char *err, size_t errlen)
{
	struct store file = {.path = s->path};
	char *hot_dir = NULL;
	int rc;

	if ((rc = store_open_db_read_only(&file, path, err, errlen)) < 0)
		goto out;
	/* A hot journal: what the next writable open will see is the file
	 * rolled back, read from a rolled-back copy (store_hot.c). */
	if (sqlite3_exec(file.db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) ==
	    SQLITE_READONLY_ROLLBACK) {
		sqlite3_close(file.db);
		file.db = NULL;
		if ((rc = store_hot_copy_open(&file, path, &hot_dir, err, errlen)) < 0)
			goto out;
		s->rolled_back = true;
	}
	if ((rc = store_quick_check(&file, err, errlen)) < 0)
		goto out;
	rc = sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK)
		rc = store_backup_db(s->db, file.db);
	if (rc != SQLITE_OK) {
		rc = plugfs_errf(err, errlen, reg_sqlite_errno(rc),
				 "state file `%s': copying into memory: %s", path,
				 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		goto out;
	}
	sqlite3_extended_result_codes(s->db, 1);
	s->copy = true;
	rc = 0;
out:
	if (file.db)
		sqlite3_close(file.db);
	store_hot_copy_remove(hot_dir);
	free(hot_dir);
	return rc;
}

/* The configured types and their ids: created when missing, except in a
 * read-only open, which leaves the copy as the file is (0 for a type the
 * file does not have). */
static int open_types(struct store *s, const struct store_open_options *o, int64_t *type_ids,
		      char *err, size_t errlen)
{
	int rc;

	if (o->read_only)
		return read_type_ids(s, o, type_ids, err, errlen);
	if ((rc = store_begin(s, err, errlen)) < 0)
		return rc;
	for (size_t i = 0; i < o->n_types; i++) {
		if ((rc = store_ensure_type(s, o->types[i], &type_ids[i], err, errlen)) < 0) {
			store_rollback(s);
			return rc;
		}
	}
	return store_commit(s, err, errlen);
}

/* Opens path for writing, refusing a file that can only be read. */
static int open_file(struct store *s, const char *path, char *err, size_t errlen)
{
	int64_t pages = 0;
	int rc;

	char *wal = NULL;

	s->created = access(path, F_OK) < 0 && errno == ENOENT;
	if (asprintf(&wal, "%s-wal", path) < 0)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	s->had_wal = access(wal, F_OK) == 0;
	free(wal);
	if ((rc = check_length(path, err, errlen)) < 0)
		return rc;
	rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "cannot open", err, errlen);
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, 5000);
	if (sqlite3_db_readonly(s->db, "main") == 1)
		return plugfs_errf(err, errlen, -EROFS,
				   "state file `%s': opened read-only; plugfs needs "
				   "to write it",
				   path);
	/* After the check (an empty file reads as empty without fixing its
	 * page size), a new (or 0-byte) file gets pages of 1 KiB, not SQLite's 4 KiB: a
	 * registration changes some nine pages (a leaf of each table and
	 * index it touches), each a whole frame in the WAL, so small pages
	 * write a quarter of the bytes.  An existing file keeps its size. */
	/* integrity_check, not quick_check: an index that does not match
	 * its table is refused as `state check' refuses it, before the
	 * daemon writes through it.  On a file with pages it runs beside the
	 * rows' check and load (store_check.c), and store_check_join takes its
	 * verdict before the first write; the page count is read first, so
	 * this connection has opened the file (and a WAL's -shm) before the
	 * check's connection does. */
	if ((rc = store_query_int(s, "PRAGMA page_count", &pages, "reading the page count", err,
				  errlen)) < 0) {
		/* A file SQLite cannot read: in the integrity check's words. */
		char msg[512];

		return store_integrity_check(s, msg, sizeof(msg)) < 0
			   ? plugfs_errf(err, errlen, -EIO, "%s", msg)
			   : rc;
	}
	if (pages > 0)
		return store_check_start(s, err, errlen);
	if ((rc = store_integrity_check(s, err, errlen)) < 0 ||
	    (rc = store_exec(s, "PRAGMA page_size = " STORE_NEW_PAGE_SIZE,
			     "setting the page size", err, errlen)) < 0)
		return rc;
	return 0;
}

int store_open(struct store *s, const char *path, const struct store_open_options *o, char *err,
	       size_t errlen)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->path = strdup(path);
	if (!s->path)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	if ((rc = o->read_only ? store_open_copy(s, path, err, errlen)
			       : open_file(s, path, err, errlen)) < 0)
		goto fail;
	/* WAL before the schema check would change a version-1 file before
	 * its backup; the backup API copies it as it is.  The rows are checked
	 * (and loaded, by the caller) before anything else writes (WAL, types):
	 * a refused file is left as it was. */
	if ((rc = check_schema(s, o, err, errlen)) < 0 ||
	    (rc = store_check_rows(s, err, errlen)) < 0)
		goto fail;
	return 0;
fail:
	rc = store_check_settle(s, rc, err, errlen);
	store_abandon(s);
	return rc;
}

int store_open_finish(struct store *s, const struct store_open_options *o, int64_t *type_ids,
		      char *err, size_t errlen)
{
	int rc;

	/* The first write: after the integrity check's verdict. */
	if ((rc = store_check_join(s, err, errlen)) < 0 ||
	    (rc = set_pragmas(s, o->synchronous, err, errlen)) < 0 ||
	    (rc = open_types(s, o, type_ids, err, errlen)) < 0)
		return rc;
	s->created = false;
	return 0;
}

void store_abandon(struct store *s)
{
	bool created = s->created && !s->copy;
	char *path = s->path ? strdup(s->path) : NULL;
	char msg[512];

	(void)store_check_join(s, msg, sizeof(msg)); /* its connection closed first */
	/* Closing the last connection of a WAL database checkpoints the -wal
	 * into the file and deletes it: for a file we refuse, a -wal that was
	 * there before may be another database's (or the only copy of commits
	 * we could not read).  Close without a checkpoint and keep it.  (A -wal
	 * this open created holds nothing: the usual close removes it.) */
	if (s->db && !s->copy && s->had_wal) {
		int persist = 1;

		sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
		sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
	}
	store_close(s);
	/* A file this open created holds nothing: the refusal leaves none. */
	if (created && path)
		store_remove_files(path);
	free(path);
}

void store_close(struct store *s)
{
	char msg[512];

	(void)store_check_join(s, msg, sizeof(msg));
	for (size_t i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(s->stmts[i]);
	if (s->db)
		sqlite3_close(s->db);
	free(s->path);
	memset(s, 0, sizeof(*s));
}
