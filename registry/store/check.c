/* SPDX-License-Identifier: MIT */
/*
 * The rows of a state file, checked by the rules of register: every open
 * (store_open) and `state check' (registry_check_file, check_file.c) run the
 * same store_check_rows, so the daemon never serves a row that `state check'
 * refuses, and both say the same words.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "store.h"
#include "strutil.h"

/* "state file `P': table `T', row ID: MSG" (what names the row further). */
static int row_error(struct store *s, const char *table, sqlite3_int64 id, const char *what,
		     const char *msg, char *err, size_t errlen)
{
	return plugfs_errf(err, errlen, -EIO, "state file `%s': table `%s', row %lld%s%s: %s",
			   s->path, table, (long long)id, what[0] ? " " : "", what, msg);
}

static const char *col(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

static int check_types(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char msg[REG_ERR_MAX] = "";
	int rc = sqlite3_prepare_v2(s->db, "SELECT id, name FROM types ORDER BY id", -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading types", err, errlen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (reg_validate_name("name", col(st, 1), msg, sizeof(msg)) < 0) {
			rc = row_error(s, "types", sqlite3_column_int64(st, 0), "", msg, err,
				       errlen);
			goto out;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : store_fail(s, rc, "reading types", err, errlen);
out:
	sqlite3_finalize(st);
	return rc;
}

/* Every plugins row, with or without registrations (a plugin whose list
 * emptied keeps its row for its id: valid, and served as an empty
 * directory a consumer may still hold). */
static int check_plugins(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char msg[REG_ERR_MAX] = "";
	int rc =
	    sqlite3_prepare_v2(s->db, "SELECT id, name FROM plugins ORDER BY id", -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading plugins", err, errlen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (reg_validate_name("name", col(st, 1), msg, sizeof(msg)) < 0) {
			rc = row_error(s, "plugins", sqlite3_column_int64(st, 0), "", msg, err,
				       errlen);
			goto out;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : store_fail(s, rc, "reading plugins", err, errlen);
out:
	sqlite3_finalize(st);
	return rc;
}

/* The (quoted) type and name of plugin id, for an error; "" when unread. */
static void plugin_names(struct store *s, sqlite3_int64 id, char *type, char *name, size_t len)
{
	sqlite3_stmt *st = NULL;

	type[0] = name[0] = '\0';
	if (sqlite3_prepare_v2(s->db,
			       "SELECT t.name, p.name FROM plugins p JOIN types t ON t.id = p.type_id"
			       " WHERE p.id = ?",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, id);
		if (sqlite3_step(st) == SQLITE_ROW) {
			plugfs_quote(type, len, col(st, 0));
			plugfs_quote(name, len, col(st, 1));
		}
	}
	sqlite3_finalize(st);
}

static int check_registrations(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char msg[REG_ERR_MAX] = "", who[3 * 128 + 8], q[3][128];
	/* The rows alone: their plugin's type and name are read only to
	 * name a bad row (every plugin_id has its row: the foreign key check
	 * ran first), not joined for each of them. */
	int rc = sqlite3_prepare_v2(s->db,
				    "SELECT r.plugin_id, NULL, r.id, r.alloc, r.socket, r.version,"
				    " r.kind, r.probe, r.csi_name, r.source FROM registrations r"
				    " ORDER BY r.id",
				    -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading registrations", err, errlen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		enum reg_kind kind;
		enum reg_probe probe = REG_PROBE_DEFAULT;

		/* type and name are their own tables' rows (checked there). */
		if ((rc = reg_validate_name("alloc", col(st, 3), msg, sizeof(msg))) < 0 ||
		    (rc = reg_validate_socket_path("socket", col(st, 4), msg, sizeof(msg))) < 0 ||
		    (rc = reg_validate_printable("version", col(st, 5), msg, sizeof(msg))) < 0 ||
		    (rc = reg_kind_parse(col(st, 6), &kind)) < 0 ||
		    (col(st, 7) && *col(st, 7) && (rc = reg_probe_parse(col(st, 7), &probe)) < 0 &&
		     snprintf(msg, sizeof(msg), "probe `%s': must be one of none, connect, csi",
			      plugfs_quote(q[0], sizeof(q[0]), col(st, 7))) > 0) ||
		    (rc = reg_validate_probe(probe, col(st, 8), msg, sizeof(msg))) < 0 ||
		    (rc = reg_validate_source(col(st, 9), msg, sizeof(msg))) < 0) {
			if (!msg[0])
				snprintf(msg, sizeof(msg),
					 "kind `%s': must be one of controller, node, monolith",
					 plugfs_quote(q[0], sizeof(q[0]), col(st, 6)));
			plugin_names(s, sqlite3_column_int64(st, 0), q[0], q[1], sizeof(q[0]));
			snprintf(who, sizeof(who), "(%s/%s %s)", q[0], q[1],
				 plugfs_quote(q[2], sizeof(q[2]), col(st, 3)));
			rc = row_error(s, "registrations", sqlite3_column_int64(st, 2), who, msg,
				       err, errlen);
			goto out;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : store_fail(s, rc, "reading registrations", err, errlen);
out:
	sqlite3_finalize(st);
	return rc;
}

static int check_options(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char msg[REG_ERR_MAX] = "", field[160], q[128], who[160];
	int rc = sqlite3_prepare_v2(s->db,
				    "SELECT reg_id, key, value FROM reg_options"
				    " ORDER BY reg_id, key",
				    -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading options", err, errlen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = col(st, 1);

		snprintf(field, sizeof(field), "option `%s' value",
			 plugfs_quote(q, sizeof(q), key));
		if ((rc = reg_validate_name("option key", key, msg, sizeof(msg))) < 0 ||
		    (rc = reg_validate_printable(field, col(st, 2), msg, sizeof(msg))) < 0) {
			snprintf(who, sizeof(who), "(key `%s' of registration %lld)", q,
				 (long long)sqlite3_column_int64(st, 0));
			rc = plugfs_errf(err, errlen, -EIO,
					 "state file `%s': table `reg_options', %s: %s", s->path,
					 who, msg);
			goto out;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : store_fail(s, rc, "reading options", err, errlen);
out:
	sqlite3_finalize(st);
	return rc;
}

/* The discovery's holds: a discovery's source, an allocation's name, and
 * integers for the rest (what registry_hold stores). */
static int check_holds(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char msg[REG_ERR_MAX] = "", q[2][128];
	int rc = sqlite3_prepare_v2(s->db,
				    "SELECT source, alloc, typeof(dev), typeof(ino), typeof(ctime_ns),"
				    " typeof(held_at) FROM holds ORDER BY source, alloc",
				    -1, &st, NULL);
	static const char *const ints[] = {"dev", "ino", "ctime_ns", "held_at"};

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading the holds", err, errlen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *src = col(st, 0);

		rc = reg_validate_hold(src, col(st, 1), msg, sizeof(msg));
		for (int i = 0; rc == 0 && i < 4; i++)
			if (!col(st, 2 + i) || strcmp(col(st, 2 + i), "integer") != 0)
				rc = plugfs_errf(msg, sizeof(msg), -EINVAL, "%s: must be an integer",
						 ints[i]);
		if (rc < 0) {
			rc = plugfs_errf(err, errlen, -EIO,
					 "state file `%s': table `holds', (source `%s' alloc `%s'): "
					 "%s",
					 s->path, plugfs_quote(q[0], sizeof(q[0]), src),
					 plugfs_quote(q[1], sizeof(q[1]), col(st, 1)), msg);
			goto out;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : store_fail(s, rc, "reading the holds", err, errlen);
out:
	sqlite3_finalize(st);
	return rc;
}

int store_check_rows(struct store *s, char *err, size_t errlen)
{
	int64_t n, meta_seq, max_seq;
	int rc;

	if ((rc = store_query_int(s, "SELECT count(*) FROM pragma_foreign_key_check", &n,
				  "checking foreign keys", err, errlen)) < 0)
		return rc;
	if (n)
		return plugfs_errf(err, errlen, -EIO,
				   "state file `%s': %lld rows point at rows that do not exist",
				   s->path, (long long)n);
	/* The next seq must be higher than every one given: a counter below
	 * a stored seq would give a new registration a place below it. */
	if ((rc = store_query_int(s,
				  "SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta"
				  " WHERE key = 'seq'), 0)",
				  &meta_seq, "reading the sequence counter", err, errlen)) < 0 ||
	    (rc = store_query_int(s,
				  "SELECT max(coalesce((SELECT max(seq) FROM registrations), 0),"
				  " coalesce((SELECT max(seq) FROM tombstones), 0))",
				  &max_seq, "reading the sequence counter", err, errlen)) < 0)
		return rc;
	if (meta_seq < max_seq)
		return plugfs_errf(
		    err, errlen, -EIO,
		    "state file `%s': table `meta', row `seq': sequence counter %lld "
		    "is below a stored seq %lld",
		    s->path, (long long)meta_seq, (long long)max_seq);
	if ((rc = check_types(s, err, errlen)) < 0 || (rc = check_plugins(s, err, errlen)) < 0 ||
	    (rc = check_registrations(s, err, errlen)) < 0 ||
	    (rc = check_options(s, err, errlen)) < 0)
		return rc;
	return check_holds(s, err, errlen);
}
