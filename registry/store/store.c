/* SPDX-License-Identifier: MIT */
/* The SQLite store: transactions, the load, and the statements of each
 * mutation (store_open.c opens it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "array.h"
#include "clock.h"
#include "store.h"

static const char *const stmt_sql[ST_COUNT] = {
    [ST_INSERT_PLUGIN] = "INSERT INTO plugins(type_id, name) VALUES(?1, ?2)",
    [ST_GET_TOMBSTONE] =
	"SELECT seq, deleted_at FROM tombstones WHERE type = ?1 AND name = ?2 AND alloc = ?3",
    [ST_DELETE_TOMBSTONE] = "DELETE FROM tombstones WHERE type = ?1 AND name = ?2 AND alloc = ?3",
    [ST_PUT_TOMBSTONE] = "INSERT OR REPLACE INTO tombstones(type, name, alloc, seq, deleted_at)"
			 " VALUES(?1, ?2, ?3, ?4, ?5)",
    [ST_INSERT_REG] = "INSERT INTO registrations(plugin_id, alloc, socket, version, kind, seq,"
		      " registered_at, updated_at) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_INSERT_REG_PROBE] =
	"INSERT INTO registrations(plugin_id, alloc, socket, version, kind, seq, registered_at,"
	" updated_at, probe, csi_name, source)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [ST_UPDATE_REG] = "UPDATE registrations SET socket = ?2, version = ?3, kind = ?4,"
		      " updated_at = ?5, probe = ?6, csi_name = ?7, source = ?8 WHERE id = ?1",
    [ST_DELETE_REG] = "DELETE FROM registrations WHERE id = ?1",
    [ST_DELETE_OPTIONS] = "DELETE FROM reg_options WHERE reg_id = ?1",
    [ST_INSERT_OPTION] = "INSERT INTO reg_options(reg_id, key, value) VALUES(?1, ?2, ?3)",
    [ST_SET_SEQ] = "INSERT OR REPLACE INTO meta(key, value) VALUES('seq', ?1)",
    [ST_EXPIRE_TOMBSTONES] = "DELETE FROM tombstones WHERE deleted_at <= ?1",
    [ST_PUT_HOLD] = "INSERT OR REPLACE INTO holds(source, alloc, dev, ino, ctime_ns, held_at)"
		    " VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_DROP_HOLD] = "DELETE FROM holds WHERE source = ?1 AND alloc = ?2",
};

/*
 * The errno behind a failure of the file itself (a full disk, an I/O error,
 * a file that cannot be opened or written), 0 for the others.  SQLite keeps
 * the system's errno only for I/O and open errors; a full disk is ENOSPC.
 */
static int file_errno(struct store *s, int rc)
{
	int sys = 0;

	switch (rc & 0xff) {
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		sys = s->db ? sqlite3_system_errno(s->db) : 0;
		return sys > 0 ? sys : -reg_sqlite_errno(rc);
	case SQLITE_FULL:
	case SQLITE_READONLY:
		return -reg_sqlite_errno(rc);
	default:
		return 0;
	}
}

int store_fail(struct store *s, int rc, const char *what, char *err, size_t errlen)
{
	const char *msg = s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc);
	int e = file_errno(s, rc);
	const char *name = e ? strerrorname_np(e) : NULL;

	if (!e)
		return plugfs_errf(err, errlen, reg_sqlite_errno(rc), "state file `%s': %s: %s",
				   s->path ? s->path : "?", what, msg);
	return plugfs_errf(err, errlen, reg_sqlite_errno(rc), "state file `%s': %s: %s (%s: %s)",
			   s->path ? s->path : "?", what, msg, name ? name : "errno", strerror(e));
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
		return plugfs_errf(
		    err, errlen, -EIO,
		    "state file `%s': starting a transaction: the previous one cannot "
		    "be rolled back: %s",
		    s->path, sqlite3_errmsg(s->db));
	return store_exec(s, "BEGIN IMMEDIATE", "starting a transaction", err, errlen);
}

const double reg_commit_bounds[REG_COMMIT_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
						      0.01,   0.025,   0.05,   0.1,   0.5,    1};

int store_commit(struct store *s, char *err, size_t errlen)
{
	double t0 = (double)plugfs_mono_ns() / 1e9, took;
	int rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	size_t b = 0;

	if (rc == SQLITE_OK) {
		took = (double)plugfs_mono_ns() / 1e9 - t0;
		while (b < REG_COMMIT_BUCKETS && took > reg_commit_bounds[b])
			b++;
		s->commits.counts[b]++;
		s->commits.sum_seconds += took;
		return 0;
	}
	s->commits.failed++;
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

int store_table_exists(struct store *s, const char *name, bool *exists, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(
	    s->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading the schema", err, errlen);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
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

int store_last_seq(struct store *s, int64_t *seq, char *err, size_t errlen)
{
	return store_query_int(
	    s,
	    "SELECT max(coalesce((SELECT CAST(value AS INTEGER) FROM meta"
	    " WHERE key = 'seq'), 0), coalesce((SELECT max(seq) FROM registrations), 0),"
	    " coalesce((SELECT max(seq) FROM tombstones), 0))",
	    seq, "reading the sequence counter", err, errlen);
}

static const char *col_text_or_empty(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? (const char *)t : "";
}

/* The configured type named by column col of st: its index, or n_types. */
static size_t type_index(sqlite3_stmt *st, int col, const char *const *types, size_t n_types)
{
	const char *type = (const char *)sqlite3_column_text(st, col);
	size_t ti;

	for (ti = 0; ti < n_types; ti++)
		if (type && strcmp(type, types[ti]) == 0)
			break;
	return ti;
}

/* Every option, registration by registration, to opt_fn. */
static int load_options(struct store *s, const char *const *types, size_t n_types,
			store_load_opt_fn fn, void *arg, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db,
				    "SELECT t.name, p.name, r.alloc, o.key, o.value"
				    " FROM reg_options o JOIN registrations r ON r.id = o.reg_id"
				    " JOIN plugins p ON p.id = r.plugin_id"
				    " JOIN types t ON t.id = p.type_id ORDER BY o.reg_id, o.key",
				    -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "loading options", err, errlen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t ti = type_index(st, 0, types, n_types);
		const char *name = (const char *)sqlite3_column_text(st, 1);
		const char *alloc = (const char *)sqlite3_column_text(st, 2);
		const char *key = (const char *)sqlite3_column_text(st, 3);
		const char *value = (const char *)sqlite3_column_text(st, 4);

		if (ti == n_types || !name || !alloc || !key || !value)
			continue; /* a type no longer configured: kept, not served */
		if ((rc = fn(arg, types[ti], name, alloc, key, value, err, errlen)) < 0)
			goto out;
	}
	rc = rc == SQLITE_DONE ? 0 : store_fail(s, rc, "loading options", err, errlen);
out:
	sqlite3_finalize(st);
	return rc;
}

int store_load(struct store *s, const char *const *types, size_t n_types, store_load_fn fn,
	       store_load_empty_fn empty_fn, store_load_opt_fn opt_fn, void *arg, char *err,
	       size_t errlen)
{
	sqlite3_stmt *st = NULL;
	struct registration r;
	int rc;

	memset(&r, 0, sizeof(r));
	/* Every plugin, with its registrations or one row of NULLs. */
	rc = sqlite3_prepare_v2(s->db,
				"SELECT t.name, p.id, p.name, r.id, r.alloc, r.socket, r.version,"
				" r.kind, r.seq, r.registered_at, r.updated_at, r.probe,"
				" r.csi_name, r.source"
				" FROM plugins p JOIN types t ON t.id = p.type_id"
				" LEFT JOIN registrations r ON r.plugin_id = p.id"
				" ORDER BY p.id",
				-1, &st, NULL);
	if (rc != SQLITE_OK) {
		rc = store_fail(s, rc, "loading", err, errlen);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t ti = type_index(st, 0, types, n_types);
		const char *kind = (const char *)sqlite3_column_text(st, 7);

		if (ti == n_types)
			continue; /* a type no longer configured: kept, not served */
		if (sqlite3_column_type(st, 3) == SQLITE_NULL) {
			const char *name = (const char *)sqlite3_column_text(st, 2);

			if (name && (rc = empty_fn(arg, ti, sqlite3_column_int64(st, 1), types[ti],
						   name, err, errlen)) < 0)
				goto out;
			continue;
		}
		memset(&r, 0, sizeof(r));
		r.id = sqlite3_column_int64(st, 3);
		r.seq = sqlite3_column_int64(st, 8);
		r.registered_at = sqlite3_column_int64(st, 9);
		r.updated_at = sqlite3_column_int64(st, 10);
		if (reg_kind_parse(kind, &r.kind) < 0) {
			rc = plugfs_errf(err, errlen, -EIO,
					 "state file `%s': registration %lld has unknown kind `%s'",
					 s->path, (long long)r.id, kind ? kind : "");
			goto out;
		}
		if (*col_text_or_empty(st, 11) &&
		    reg_probe_parse(col_text_or_empty(st, 11), &r.probe) < 0) {
			rc =
			    plugfs_errf(err, errlen, -EIO,
					"state file `%s': registration %lld has unknown probe `%s'",
					s->path, (long long)r.id, col_text_or_empty(st, 11));
			goto out;
		}
		{
			/* The columns' texts, borrowed until the next step:
			 * registration_copy makes them the registration's. */
			struct registration b = r;

			b.type = (char *)types[ti];
			b.name = (char *)col_text_or_empty(st, 2);
			b.alloc = (char *)col_text_or_empty(st, 4);
			b.socket = (char *)col_text_or_empty(st, 5);
			b.version = (char *)col_text_or_empty(st, 6);
			b.csi_name = (char *)col_text_or_empty(st, 12);
			b.source = (char *)col_text_or_empty(st, 13);
			if (registration_copy(&b, &r) < 0) {
				rc = plugfs_errf(err, errlen, -ENOMEM, "out of memory");
				goto out;
			}
		}
		if ((rc = fn(arg, ti, sqlite3_column_int64(st, 1), &r, err, errlen)) < 0)
			goto out;
		memset(&r, 0, sizeof(r)); /* now owned by fn */
	}
	if (rc != SQLITE_DONE) {
		rc = store_fail(s, rc, "loading", err, errlen);
		goto out;
	}
	rc = load_options(s, types, n_types, opt_fn, arg, err, errlen);
out:
	registration_free_contents(&r);
	sqlite3_finalize(st);
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
	/* Without the probe and source columns when they keep their
	 * defaults, so that the version-1 migration, which stores into
	 * version-2 tables, can use it too. */
	bool probe = r->probe != REG_PROBE_DEFAULT || (r->csi_name && *r->csi_name) ||
		     (r->source && *r->source);
	int rc = stmt(s, probe ? ST_INSERT_REG_PROBE : ST_INSERT_REG, &st, err, errlen);

	if (rc < 0)
		return rc;
	if (probe) {
		bind_text(st, 9, reg_probe_name(r->probe) ? reg_probe_name(r->probe) : "");
		bind_text(st, 10, r->csi_name ? r->csi_name : "");
		bind_text(st, 11, r->source ? r->source : "");
	}
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
	bind_text(st, 6, reg_probe_name(r->probe) ? reg_probe_name(r->probe) : "");
	bind_text(st, 7, r->csi_name ? r->csi_name : "");
	bind_text(st, 8, r->source ? r->source : "");
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

int store_put_hold(struct store *s, const struct reg_hold *h, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = stmt(s, ST_PUT_HOLD, &st, err, errlen);

	if (rc < 0)
		return rc;
	bind_text(st, 1, h->source);
	bind_text(st, 2, h->alloc);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)h->dev);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)h->ino);
	sqlite3_bind_int64(st, 5, h->ctime_ns);
	sqlite3_bind_int64(st, 6, h->held_at);
	return run(s, st, "storing a hold", err, errlen);
}

int store_drop_hold(struct store *s, const char *source, const char *alloc, char *err,
		    size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = stmt(s, ST_DROP_HOLD, &st, err, errlen);

	if (rc < 0)
		return rc;
	bind_text(st, 1, source);
	bind_text(st, 2, alloc);
	return run(s, st, "deleting a hold", err, errlen);
}

int store_read_holds(struct store *s, store_hold_fn fn, void *arg, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db,
				    "SELECT source, alloc, dev, ino, ctime_ns, held_at FROM holds"
				    " ORDER BY source, alloc",
				    -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading the holds", err, errlen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct reg_hold h = {
		    .source = (const char *)sqlite3_column_text(st, 0),
		    .alloc = (const char *)sqlite3_column_text(st, 1),
		    .dev = (uint64_t)sqlite3_column_int64(st, 2),
		    .ino = (uint64_t)sqlite3_column_int64(st, 3),
		    .ctime_ns = sqlite3_column_int64(st, 4),
		    .held_at = sqlite3_column_int64(st, 5),
		};

		if (!h.source || !h.alloc) { /* NOT NULL columns: only out of memory */
			rc = plugfs_errf(err, errlen, -ENOMEM, "state file `%s': reading the holds: "
					 "out of memory", s->path);
			goto out;
		}
		if ((rc = fn(arg, &h, err, errlen)) < 0)
			goto out;
	}
	rc = rc == SQLITE_DONE ? 0 : store_fail(s, rc, "reading the holds", err, errlen);
out:
	sqlite3_finalize(st);
	return rc;
}
