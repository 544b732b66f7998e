/* SPDX-License-Identifier: MIT */
/* The SQLite store: open, check, migrate, load, and the mutation statements. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "schema.h"
#include "store.h"

static const char *const stmt_sql[ST_COUNT] = {
    [ST_INSERT_PLUGIN] = "INSERT INTO plugins(type_id, name) VALUES(?1, ?2)",
    [ST_DELETE_PLUGIN] = "DELETE FROM plugins WHERE id = ?1",
    [ST_GET_TOMBSTONE] =
	"SELECT seq, deleted_at FROM tombstones WHERE type = ?1 AND name = ?2 AND alloc = ?3",
    [ST_DELETE_TOMBSTONE] = "DELETE FROM tombstones WHERE type = ?1 AND name = ?2 AND alloc = ?3",
    [ST_PUT_TOMBSTONE] = "INSERT OR REPLACE INTO tombstones(type, name, alloc, seq, deleted_at)"
			 " VALUES(?1, ?2, ?3, ?4, ?5)",
    [ST_INSERT_REG] = "INSERT INTO registrations(plugin_id, alloc, socket, version, kind, seq,"
		      " registered_at, updated_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_UPDATE_REG] = "UPDATE registrations SET socket = ?2, version = ?3, kind = ?4,"
		      " updated_at = ?5 WHERE id = ?1",
    [ST_DELETE_REG] = "DELETE FROM registrations WHERE id = ?1",
    [ST_DELETE_OPTIONS] = "DELETE FROM reg_options WHERE reg_id = ?1",
    [ST_INSERT_OPTION] = "INSERT INTO reg_options(reg_id, key, value) VALUES(?1, ?2, ?3)",
    [ST_SET_SEQ] = "INSERT OR REPLACE INTO meta(key, value) VALUES('seq', ?1)",
    [ST_EXPIRE_TOMBSTONES] = "DELETE FROM tombstones WHERE deleted_at <= ?1",
};

int store_fail(struct store *s, int rc, const char *what, char *err, size_t errlen)
{
	return reg_errf(err, errlen, reg_sqlite_errno(rc), "state file `%s': %s: %s",
			s->path ? s->path : "?", what,
			s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

int store_exec(struct store *s, const char *sql, const char *what, char *err, size_t errlen)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);

	return rc == SQLITE_OK ? 0 : store_fail(s, rc, what, err, errlen);
}

/* The cached statement id, reset and with its bindings cleared. */
static int stmt(struct store *s, enum store_stmt id, sqlite3_stmt **out, char *err, size_t errlen)
{
	int rc;

	if (!s->stmts[id]) {
		rc = sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
					&s->stmts[id], NULL);
		if (rc != SQLITE_OK)
			return store_fail(s, rc, "preparing a statement", err, errlen);
	}
	sqlite3_reset(s->stmts[id]);
	sqlite3_clear_bindings(s->stmts[id]);
	*out = s->stmts[id];
	return 0;
}

/* Steps st to the end; 0 or -errno with the message of what. */
static int run(struct store *s, sqlite3_stmt *st, const char *what, char *err, size_t errlen)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE) {
		rc = store_fail(s, rc, what, err, errlen);
		sqlite3_reset(st);
		return rc;
	}
	sqlite3_reset(st);
	return 0;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
	sqlite3_bind_text(st, i, v ? v : "", -1, SQLITE_STATIC);
}

int store_begin(struct store *s, char *err, size_t errlen)
{
	/* A transaction still open here is one whose ROLLBACK failed (after
	 * a failed statement or COMMIT): nothing of it was applied to memory,
	 * so end it now rather than fail every mutation from here on. */
	store_rollback(s);
	if (!sqlite3_get_autocommit(s->db))
		return reg_errf(err, errlen, -EIO,
				"state file `%s': starting a transaction: the previous one cannot "
				"be rolled back: %s",
				s->path, sqlite3_errmsg(s->db));
	return store_exec(s, "BEGIN IMMEDIATE", "starting a transaction", err, errlen);
}

int store_commit(struct store *s, char *err, size_t errlen)
{
	int rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);

	if (rc == SQLITE_OK)
		return 0;
	rc = store_fail(s, rc, "committing", err, errlen);
	/* A failed COMMIT may leave the transaction open (SQLITE_BUSY) or
	 * already rolled back; either way end it. */
	store_rollback(s);
	return rc;
}

void store_rollback(struct store *s)
{
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Runs a one-value query; *out receives column 0 as an integer (0 for no
 * row). */
int store_query_int(struct store *s, const char *sql, int64_t *out, const char *what, char *err,
		    size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, what, err, errlen);
	*out = 0;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
		rc = SQLITE_DONE;
	}
	if (rc != SQLITE_DONE)
		rc = store_fail(s, rc, what, err, errlen);
	else
		rc = 0;
	sqlite3_finalize(st);
	return rc;
}

int store_quick_check(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	const char *msg;
	int rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check", -1, &st, NULL);

	if (rc != SQLITE_OK) {
		rc = reg_errf(err, errlen, -EIO, "state file `%s': integrity check failed: %s",
			      s->path, sqlite3_errmsg(s->db));
		goto out;
	}
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		rc = reg_errf(err, errlen, -EIO, "state file `%s': integrity check failed: %s",
			      s->path, sqlite3_errmsg(s->db));
		goto out;
	}
	msg = (const char *)sqlite3_column_text(st, 0);
	if (!msg || strcmp(msg, "ok") != 0) {
		rc = reg_errf(err, errlen, -EIO, "state file `%s': integrity check failed: %s",
			      s->path, msg ? msg : "no answer");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

int store_table_exists(struct store *s, const char *name, bool *exists, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(
	    s->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading the schema", err, errlen);
	bind_text(st, 1, name);
	rc = sqlite3_step(st);
	*exists = rc == SQLITE_ROW;
	rc = (rc == SQLITE_ROW || rc == SQLITE_DONE)
		 ? 0
		 : store_fail(s, rc, "reading the schema", err, errlen);
	sqlite3_finalize(st);
	return rc;
}

int store_ensure_type(struct store *s, const char *name, int64_t *id, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO types(name) VALUES(?1)", -1, &st,
				    NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "storing a type", err, errlen);
	bind_text(st, 1, name);
	rc = run(s, st, "storing a type", err, errlen);
	sqlite3_finalize(st);
	st = NULL;
	if (rc < 0)
		return rc;
	rc = sqlite3_prepare_v2(s->db, "SELECT id FROM types WHERE name = ?1", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading a type", err, errlen);
	bind_text(st, 1, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(st, 0);
		rc = 0;
	} else {
		rc = store_fail(s, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc, "reading a type", err,
				errlen);
	}
	sqlite3_finalize(st);
	return rc;
}

/* Copies src's main database over dst's with the backup API; an SQLite
 * result code. */
static int backup_db(sqlite3 *dst, sqlite3 *src)
{
	sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
	int rc;

	if (!b)
		return sqlite3_errcode(dst);
	rc = sqlite3_backup_step(b, -1);
	sqlite3_backup_finish(b);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int store_backup_to(struct store *s, const char *dest, char *err, size_t errlen)
{
	sqlite3 *d = NULL;
	int rc = sqlite3_open_v2(dest, &d, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);

	if (rc == SQLITE_OK)
		rc = backup_db(d, s->db);
	if (rc != SQLITE_OK)
		rc = reg_errf(err, errlen, reg_sqlite_errno(rc),
			      "state file `%s': backing up to `%s': %s", s->path, dest,
			      d ? sqlite3_errmsg(d) : sqlite3_errstr(rc));
	sqlite3_close(d);
	return rc;
}

/* Reads the schema version and brings the file to SCHEMA_VERSION (along
 * the ladder of schema.c), or refuses it. */
static int check_schema(struct store *s, const struct store_open_options *o, char *err,
			size_t errlen)
{
	int64_t version;
	int rc;

	if ((rc = schema_version(s, -EINVAL, &version, err, errlen)) < 0 ||
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
		return reg_errf(err, errlen, -EINVAL,
				"synchronous `%s': must be one of off, normal, full, extra",
				synchronous);
	rc = sqlite3_prepare_v2(s->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "switching to WAL", err, errlen);
	rc = sqlite3_step(st);
	mode = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
	if (!mode || (strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)) {
		rc = rc == SQLITE_ROW
			 ? reg_errf(err, errlen, -EIO,
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
		return reg_errf(err, errlen, -EIO,
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
		bind_text(st, 1, o->types[i]);
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
			return reg_errf(err, errlen, -errno,
					"state file `%s': %s (a read-only open does not create it)",
					path, strerror(errno));
		uri = read_only_uri(path);
		if (!uri)
			return reg_errf(err, errlen, -ENOMEM, "out of memory");
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
	int rc;

	if ((rc = store_open_db_read_only(&file, path, err, errlen)) < 0 ||
	    (rc = store_quick_check(&file, err, errlen)) < 0)
		goto out;
	rc = sqlite3_open_v2(":memory:", &s->db, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK)
		rc = backup_db(s->db, file.db);
	if (rc != SQLITE_OK) {
		rc = reg_errf(err, errlen, reg_sqlite_errno(rc),
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
	int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "cannot open", err, errlen);
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, 5000);
	if (sqlite3_db_readonly(s->db, "main") == 1)
		return reg_errf(err, errlen, -EROFS,
				"state file `%s': opened read-only; plugfs needs "
				"to write it",
				path);
	return store_quick_check(s, err, errlen);
}

int store_open(struct store *s, const char *path, const struct store_open_options *o,
	       int64_t *type_ids, char *err, size_t errlen)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->path = strdup(path);
	if (!s->path)
		return reg_errf(err, errlen, -ENOMEM, "out of memory");
	if ((rc = o->read_only ? store_open_copy(s, path, err, errlen)
			       : open_file(s, path, err, errlen)) < 0)
		goto fail;
	/* WAL before the schema check would change a version-1 file before
	 * its backup; the backup API copies it as it is. */
	if ((rc = check_schema(s, o, err, errlen)) < 0 ||
	    (rc = set_pragmas(s, o->synchronous, err, errlen)) < 0 ||
	    (rc = open_types(s, o, type_ids, err, errlen)) < 0)
		goto fail;
	return 0;
fail:
	store_close(s);
	return rc;
}

void store_close(struct store *s)
{
	for (size_t i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(s->stmts[i]);
	if (s->db)
		sqlite3_close(s->db);
	free(s->path);
	memset(s, 0, sizeof(*s));
}

int store_last_seq(struct store *s, int64_t *seq, char *err, size_t errlen)
{
	return store_query_int(
	    s,
	    "SELECT max(coalesce((SELECT CAST(value AS INTEGER) FROM meta"
	    " WHERE key = 'seq'), 0), coalesce((SELECT max(seq) FROM registrations), 0),"
	    " coalesce((SELECT max(seq) FROM tombstones), 0))",
	    seq, "reading the sequence counter", err, errlen);
}

static char *col_strdup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? strdup((const char *)t) : NULL;
}

static int load_options(struct store *s, sqlite3_stmt *st, struct registration *r, char *err,
			size_t errlen)
{
	size_t cap = 0;
	int rc;

	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, r->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct reg_option *o;

		if (r->n_options == cap) {
			size_t ncap = cap ? cap * 2 : 4;

			o = realloc(r->options, ncap * sizeof(*o));
			if (!o)
				return reg_errf(err, errlen, -ENOMEM, "out of memory");
			r->options = o;
			cap = ncap;
		}
		o = &r->options[r->n_options];
		o->key = col_strdup(st, 0);
		o->value = col_strdup(st, 1);
		r->n_options++;
		if (!o->key || !o->value)
			return reg_errf(err, errlen, -ENOMEM, "out of memory");
	}
	if (rc != SQLITE_DONE)
		return store_fail(s, rc, "loading options", err, errlen);
	return 0;
}

int store_load(struct store *s, const char *const *types, size_t n_types, store_load_fn fn,
	       void *arg, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL, *opt = NULL;
	struct registration r;
	int rc;

	memset(&r, 0, sizeof(r));
	rc = sqlite3_prepare_v2(s->db,
				"SELECT t.name, p.id, p.name, r.id, r.alloc, r.socket, r.version,"
				" r.kind, r.seq, r.registered_at, r.updated_at"
				" FROM registrations r JOIN plugins p ON p.id = r.plugin_id"
				" JOIN types t ON t.id = p.type_id ORDER BY p.id, r.seq DESC",
				-1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db,
					"SELECT key, value FROM reg_options WHERE reg_id = ?1"
					" ORDER BY key",
					-1, &opt, NULL);
	if (rc != SQLITE_OK) {
		rc = store_fail(s, rc, "loading", err, errlen);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *type = (const char *)sqlite3_column_text(st, 0);
		const char *kind = (const char *)sqlite3_column_text(st, 7);
		size_t ti;

		for (ti = 0; ti < n_types; ti++)
			if (type && strcmp(type, types[ti]) == 0)
				break;
		if (ti == n_types)
			continue; /* a type no longer configured: kept, not served */
		memset(&r, 0, sizeof(r));
		r.id = sqlite3_column_int64(st, 3);
		r.type = strdup(type);
		r.name = col_strdup(st, 2);
		r.alloc = col_strdup(st, 4);
		r.socket = col_strdup(st, 5);
		r.version = col_strdup(st, 6);
		r.seq = sqlite3_column_int64(st, 8);
		r.registered_at = sqlite3_column_int64(st, 9);
		r.updated_at = sqlite3_column_int64(st, 10);
		if (!r.type || !r.name || !r.alloc || !r.socket || !r.version) {
			rc = reg_errf(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
		if (reg_kind_parse(kind, &r.kind) < 0) {
			rc = reg_errf(err, errlen, -EIO,
				      "state file `%s': registration %lld has unknown kind `%s'",
				      s->path, (long long)r.id, kind ? kind : "");
			goto out;
		}
		if ((rc = load_options(s, opt, &r, err, errlen)) < 0)
			goto out;
		if ((rc = fn(arg, ti, sqlite3_column_int64(st, 1), &r, err, errlen)) < 0)
			goto out;
		memset(&r, 0, sizeof(r)); /* now owned by fn */
	}
	rc = rc == SQLITE_DONE ? 0 : store_fail(s, rc, "loading", err, errlen);
out:
	registration_free_contents(&r);
	sqlite3_finalize(st);
	sqlite3_finalize(opt);
	return rc;
}

int store_insert_plugin(struct store *s, int64_t type_id, const char *name, int64_t *id, char *err,
			size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = stmt(s, ST_INSERT_PLUGIN, &st, err, errlen);

	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, type_id);
	bind_text(st, 2, name);
	if ((rc = run(s, st, "storing a plugin", err, errlen)) < 0)
		return rc;
	*id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

int store_delete_plugin(struct store *s, int64_t id, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = stmt(s, ST_DELETE_PLUGIN, &st, err, errlen);

	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, id);
	return run(s, st, "deleting a plugin", err, errlen);
}

static void bind_tomb_key(sqlite3_stmt *st, const char *type, const char *name, const char *alloc)
{
	bind_text(st, 1, type);
	bind_text(st, 2, name);
	bind_text(st, 3, alloc);
}

int store_take_tombstone(struct store *s, const char *type, const char *name, const char *alloc,
			 int64_t cutoff, int64_t *seq, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = stmt(s, ST_GET_TOMBSTONE, &st, err, errlen);
	bool found = false;

	*seq = 0;
	if (rc < 0)
		return rc;
	bind_tomb_key(st, type, name, alloc);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		found = true;
		if (sqlite3_column_int64(st, 1) > cutoff)
			*seq = sqlite3_column_int64(st, 0);
		rc = SQLITE_DONE;
	}
	if (rc != SQLITE_DONE) {
		rc = store_fail(s, rc, "reading a tombstone", err, errlen);
		sqlite3_reset(st);
		return rc;
	}
	sqlite3_reset(st);
	if (!found)
		return 0;
	if ((rc = stmt(s, ST_DELETE_TOMBSTONE, &st, err, errlen)) < 0)
		return rc;
	bind_tomb_key(st, type, name, alloc);
	return run(s, st, "deleting a tombstone", err, errlen);
}

static int insert_options(struct store *s, const struct registration *r, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc;

	for (size_t i = 0; i < r->n_options; i++) {
		if ((rc = stmt(s, ST_INSERT_OPTION, &st, err, errlen)) < 0)
			return rc;
		sqlite3_bind_int64(st, 1, r->id);
		bind_text(st, 2, r->options[i].key);
		bind_text(st, 3, r->options[i].value);
		if ((rc = run(s, st, "storing an option", err, errlen)) < 0)
			return rc;
	}
	return 0;
}

int store_insert_reg(struct store *s, int64_t plugin_id, struct registration *r, char *err,
		     size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = stmt(s, ST_INSERT_REG, &st, err, errlen);

	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, plugin_id);
	bind_text(st, 2, r->alloc);
	bind_text(st, 3, r->socket);
	bind_text(st, 4, r->version);
	bind_text(st, 5, reg_kind_name(r->kind));
	sqlite3_bind_int64(st, 6, r->seq);
	sqlite3_bind_int64(st, 7, r->registered_at);
	sqlite3_bind_int64(st, 8, r->updated_at);
	if ((rc = run(s, st, "storing a registration", err, errlen)) < 0)
		return rc;
	r->id = sqlite3_last_insert_rowid(s->db);
	return insert_options(s, r, err, errlen);
}

int store_update_reg(struct store *s, const struct registration *r, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = stmt(s, ST_UPDATE_REG, &st, err, errlen);

	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, r->id);
	bind_text(st, 2, r->socket);
	bind_text(st, 3, r->version);
	bind_text(st, 4, reg_kind_name(r->kind));
	sqlite3_bind_int64(st, 5, r->updated_at);
	if ((rc = run(s, st, "updating a registration", err, errlen)) < 0)
		return rc;
	if ((rc = stmt(s, ST_DELETE_OPTIONS, &st, err, errlen)) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, r->id);
	if ((rc = run(s, st, "updating options", err, errlen)) < 0)
		return rc;
	return insert_options(s, r, err, errlen);
}

int store_delete_reg(struct store *s, const struct registration *r, int64_t now, char *err,
		     size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc;

	/* Its options go with it: ON DELETE CASCADE (foreign keys are on,
	 * set_pragmas checks). */
	if ((rc = stmt(s, ST_DELETE_REG, &st, err, errlen)) < 0)
		return rc;
	sqlite3_bind_int64(st, 1, r->id);
	if ((rc = run(s, st, "deleting a registration", err, errlen)) < 0)
		return rc;
	if ((rc = stmt(s, ST_PUT_TOMBSTONE, &st, err, errlen)) < 0)
		return rc;
	bind_tomb_key(st, r->type, r->name, r->alloc);
	sqlite3_bind_int64(st, 4, r->seq);
	sqlite3_bind_int64(st, 5, now);
	return run(s, st, "storing a tombstone", err, errlen);
}

int store_set_seq(struct store *s, int64_t seq, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = stmt(s, ST_SET_SEQ, &st, err, errlen);

	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, seq);
	return run(s, st, "storing the sequence counter", err, errlen);
}

int store_expire_tombstones(struct store *s, int64_t cutoff, int64_t *n, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = stmt(s, ST_EXPIRE_TOMBSTONES, &st, err, errlen);

	if (rc < 0)
		return rc;
	sqlite3_bind_int64(st, 1, cutoff);
	if ((rc = run(s, st, "expiring tombstones", err, errlen)) < 0)
		return rc;
	*n = sqlite3_changes64(s->db);
	return 0;
}
