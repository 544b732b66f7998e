/* SPDX-License-Identifier: MIT */
/* registry_check_file: an offline, read-only check of a state file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "schema.h"
#include "store.h"

static int check_rows(struct store *s, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char msg[REG_ERR_MAX] = "";
	int rc =
	    sqlite3_prepare_v2(s->db,
			       "SELECT t.name, p.name, r.id, r.alloc, r.socket, r.version, r.kind,"
			       " r.probe, r.csi_name"
			       " FROM registrations r JOIN plugins p ON p.id = r.plugin_id"
			       " JOIN types t ON t.id = p.type_id ORDER BY r.id",
			       -1, &st, NULL);

	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading registrations", err, errlen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *c[9];
		enum reg_kind kind;
		enum reg_probe probe = REG_PROBE_DEFAULT;

		for (int i = 0; i < 9; i++)
			c[i] = (const char *)sqlite3_column_text(st, i);
		if ((rc = reg_validate_name("type", c[0], msg, sizeof(msg))) < 0 ||
		    (rc = reg_validate_name("name", c[1], msg, sizeof(msg))) < 0 ||
		    (rc = reg_validate_name("alloc", c[3], msg, sizeof(msg))) < 0 ||
		    (rc = reg_validate_socket_path("socket", c[4], msg, sizeof(msg))) < 0 ||
		    (rc = reg_validate_printable("version", c[5], msg, sizeof(msg))) < 0 ||
		    (rc = reg_kind_parse(c[6], &kind)) < 0 ||
		    (c[7] && *c[7] && (rc = reg_probe_parse(c[7], &probe)) < 0 &&
		     snprintf(msg, sizeof(msg), "probe `%s': must be one of none, connect, csi",
			      c[7]) > 0) ||
		    (rc = reg_validate_probe(probe, c[8], msg, sizeof(msg))) < 0) {
			if (rc == -EINVAL && !msg[0])
				snprintf(msg, sizeof(msg),
					 "kind `%s': must be one of controller, "
					 "node, monolith",
					 c[6] ? c[6] : "");
			rc =
			    plugfs_errf(err, errlen, -EIO, "state file `%s': registration %lld: %s",
					s->path, (long long)sqlite3_column_int64(st, 2), msg);
			goto out;
		}
		msg[0] = '\0';
	}
	if (rc != SQLITE_DONE) {
		rc = store_fail(s, rc, "reading registrations", err, errlen);
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	rc = sqlite3_prepare_v2(s->db, "SELECT reg_id, key, value FROM reg_options", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading options", err, errlen);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 1);

		if ((rc = reg_validate_name("option key", key, msg, sizeof(msg))) < 0 ||
		    (rc = reg_validate_printable("option value",
						 (const char *)sqlite3_column_text(st, 2), msg,
						 sizeof(msg))) < 0) {
			rc =
			    plugfs_errf(err, errlen, -EIO, "state file `%s': registration %lld: %s",
					s->path, (long long)sqlite3_column_int64(st, 0), msg);
			goto out;
		}
	}
	rc = rc == SQLITE_DONE ? 0 : store_fail(s, rc, "reading options", err, errlen);
out:
	sqlite3_finalize(st);
	return rc;
}

static int check_current(struct store *s, char *err, size_t errlen)
{
	int64_t n, meta_seq, max_seq;
	int rc;

	if ((rc = schema_check_tables(s, -EIO, err, errlen)) < 0)
		return rc;
	if ((rc = store_query_int(s, "SELECT count(*) FROM pragma_foreign_key_check", &n,
				  "checking foreign keys", err, errlen)) < 0)
		return rc;
	if (n)
		return plugfs_errf(err, errlen, -EIO,
				   "state file `%s': %lld rows point at rows that do not exist",
				   s->path, (long long)n);
	/* A plugins row without registrations is a plugin whose list
	 * emptied: kept for its id (store.h). */
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
		    "state file `%s': sequence counter %lld is below a stored seq %lld", s->path,
		    (long long)meta_seq, (long long)max_seq);
	return check_rows(s, err, errlen);
}

int registry_check_file(const char *db_path, char *err, size_t errlen)
{
	struct store s = {0};
	int64_t version;
	int rc;

	if (!db_path || !db_path[0])
		return plugfs_errf(err, errlen, -EINVAL, "state.path: missing");
	if (access(db_path, F_OK) < 0)
		return plugfs_errf(err, errlen, -errno, "state file `%s': %s", db_path,
				   strerror(errno));
	s.path = strdup(db_path);
	if (!s.path)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	/* On a private copy, brought to SCHEMA_VERSION as registry_open would
	 * (what the migration refuses, in its words), then the rows. */
	if ((rc = store_open_copy(&s, db_path, err, errlen)) < 0 ||
	    (rc = schema_version(&s, -EIO, &version, err, errlen)) < 0)
		goto out;
	if ((rc = schema_upgrade(&s, version, (int64_t)time(NULL), err, errlen)) < 0) {
		if (rc != -ENOMEM)
			rc = -EIO;
		goto out;
	}
	rc = check_current(&s, err, errlen);
out:
	store_close(&s);
	return rc;
}
