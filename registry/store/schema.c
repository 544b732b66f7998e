/* SPDX-License-Identifier: MIT */
/*
 * Schema versions and the migration ladder.  Each step brings a file from
 * one version to the next; a new file climbs from 0.  Adding version N+1
 * means: one step {N, N+1, vN_to_vN1} at the end of migrations[], and
 * SCHEMA_VERSION = N+1.
 *
 * Version 5 (the tables of store.h): version 4 and the discovery's holds
 *   (an allocation deregistered by hand or forgotten, its socket's device,
 *   inode and change time: not registered again until another socket is
 *   there).
 * Version 4: version 3 and each registration's source ('' = the control
 *   socket, 'discover.NAME': found by discovery).
 * Version 3: version 2 and each registration's probe override (probe,
 *   csi_name).
 * Version 2: the registry in rows.
 * Version 1: the singleton layout of earlier registries, a table
 *   kv(key TEXT PRIMARY KEY, value TEXT) whose row `dynamic_plugin_registry'
 *   holds the legacy JSON {"Plugins": {type: {name: PluginInfo}}}.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "schema.h"

#define REG_LEGACY_KV_KEY "dynamic_plugin_registry"

static const char v2_sql[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value);"
    "CREATE TABLE types(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE);"
    "CREATE TABLE plugins(id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " type_id INTEGER NOT NULL REFERENCES types(id), name TEXT NOT NULL,"
    " UNIQUE(type_id, name));"
    "CREATE TABLE registrations(id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " plugin_id INTEGER NOT NULL REFERENCES plugins(id) ON DELETE CASCADE,"
    " alloc TEXT NOT NULL, socket TEXT NOT NULL, version TEXT NOT NULL DEFAULT '',"
    " kind TEXT NOT NULL CHECK (kind IN ('controller', 'node', 'monolith')),"
    " seq INTEGER NOT NULL UNIQUE, registered_at INTEGER NOT NULL,"
    " updated_at INTEGER NOT NULL, UNIQUE(plugin_id, alloc));"
    "CREATE INDEX registrations_alloc ON registrations(alloc);"
    "CREATE TABLE reg_options(reg_id INTEGER NOT NULL REFERENCES registrations(id)"
    " ON DELETE CASCADE, key TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY(reg_id, key)) WITHOUT ROWID;"
    "CREATE TABLE tombstones(type TEXT NOT NULL, name TEXT NOT NULL, alloc TEXT NOT NULL,"
    " seq INTEGER NOT NULL, deleted_at INTEGER NOT NULL,"
    " PRIMARY KEY(type, name, alloc)) WITHOUT ROWID;"
    "CREATE INDEX tombstones_deleted ON tombstones(deleted_at);";

/* Version 3: a registration's own probe mode ('' = its type's) and the
 * CSI plugin name its csi probe expects ('' = none). */
static const char v3_sql[] =
    "ALTER TABLE registrations ADD COLUMN probe TEXT NOT NULL DEFAULT ''"
    " CHECK (probe IN ('', 'none', 'connect', 'csi'));"
    "ALTER TABLE registrations ADD COLUMN csi_name TEXT NOT NULL DEFAULT '';";

/* Version 4: where a registration came from ('' = the control socket). */
static const char v4_sql[] =
    "ALTER TABLE registrations ADD COLUMN source TEXT NOT NULL DEFAULT '';";

/* Version 5: the discovery's holds, one per (source, allocation): the
 * device, inode and change time (ns since the epoch) of the socket it
 * holds back, as the signed 64-bit integers SQLite stores (the bits of
 * dev_t and ino_t). */
static const char v5_sql[] =
    "CREATE TABLE holds(source TEXT NOT NULL, alloc TEXT NOT NULL, dev INTEGER NOT NULL,"
    " ino INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, held_at INTEGER NOT NULL,"
    " PRIMARY KEY(source, alloc)) WITHOUT ROWID;";

/* A new file: the tables of version 2. */
static int v0_to_v2(struct store *s, int64_t now, char *err, size_t errlen)
{
	(void)now;
	return store_exec(s, v2_sql, "creating the schema", err, errlen);
}

int schema_read_legacy_json(struct store *s, char **json, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, "SELECT value FROM kv WHERE key = ?1", -1, &st, NULL);

	*json = NULL;
	if (rc != SQLITE_OK)
		return store_fail(s, rc, "reading the version 1 `kv' table", err, errlen);
	sqlite3_bind_text(st, 1, REG_LEGACY_KV_KEY, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*json = strdup((const char *)sqlite3_column_text(st, 0));
		rc = *json ? 0 : plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	} else if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
		rc = 0; /* no registry saved yet: an empty one */
	} else {
		rc = store_fail(s, rc, "reading the version 1 `kv' table", err, errlen);
	}
	sqlite3_finalize(st);
	return rc;
}

/* Stores the legacy entries as version-2 rows: one plugin and one
 * registration each, seq 1, 2, ... in document order, registered at now. */
static int store_entries(struct store *s, struct legacy_entry *e, size_t n, int64_t now, char *err,
			 size_t errlen)
{
	char msg[REG_ERR_MAX];
	int64_t seq = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		struct registration r = {
		    .alloc = e[i].alloc,
		    .socket = e[i].socket,
		    .version = e[i].version ? e[i].version : (char *)"",
		    .kind = e[i].kind ? e[i].kind : reg_kind_for_type(e[i].type),
		    .options = e[i].options,
		    .n_options = e[i].n_options,
		    .seq = ++seq,
		    .registered_at = now,
		    .updated_at = now,
		};
		int64_t type_id, plugin_id;

		/* Any valid type: those not configured are kept, not served. */
		if ((rc = legacy_validate(&e[i], NULL, 0, NULL, 0, NULL, msg, sizeof(msg))) < 0)
			return plugfs_errf(err, errlen, rc,
					   "state file `%s': cannot migrate version 1: %s", s->path,
					   msg);
		if ((rc = store_ensure_type(s, e[i].type, &type_id, err, errlen)) < 0 ||
		    (rc = store_insert_plugin(s, type_id, e[i].name, &plugin_id, err, errlen)) <
			0 ||
		    (rc = store_insert_reg(s, plugin_id, &r, err, errlen)) < 0)
			return rc;
	}
	if (seq > 0)
		rc = store_set_seq(s, seq, err, errlen);
	return rc;
}

static int v2_to_v3(struct store *s, int64_t now, char *err, size_t errlen)
{
	(void)now;
	return store_exec(s, v3_sql, "adding the probe columns", err, errlen);
}

static int v3_to_v4(struct store *s, int64_t now, char *err, size_t errlen)
{
	(void)now;
	return store_exec(s, v4_sql, "adding the source column", err, errlen);
}

static int v4_to_v5(struct store *s, int64_t now, char *err, size_t errlen)
{
	(void)now;
	return store_exec(s, v5_sql, "adding the holds table", err, errlen);
}

/* The legacy document into version-2 rows; the `kv' table is dropped (the
 * backup keeps it). */
static int v1_to_v2(struct store *s, int64_t now, char *err, size_t errlen)
{
	struct legacy_entry *e = NULL;
	char msg[REG_ERR_MAX];
	char *json = NULL;
	size_t n = 0;
	int rc;

	if ((rc = schema_read_legacy_json(s, &json, err, errlen)) < 0)
		goto out;
	if (json && (rc = legacy_parse(s->db, json, &e, &n, msg, sizeof(msg))) < 0) {
		rc = plugfs_errf(err, errlen, rc, "state file `%s': cannot migrate version 1: %s",
				 s->path, msg);
		goto out;
	}
	if ((rc = store_exec(s, v2_sql, "creating the schema", err, errlen)) < 0 ||
	    (rc = store_entries(s, e, n, now, err, errlen)) < 0 ||
	    (rc = store_exec(s, "DROP TABLE kv", "dropping the version 1 `kv' table", err,
			     errlen)) < 0)
		goto out;
out:
	legacy_free(e, n);
	free(json);
	return rc;
}

struct migration {
	int64_t from, to;
	int (*up)(struct store *s, int64_t now, char *err, size_t errlen);
};

/* The ladder: every version climbs to SCHEMA_VERSION one step at a time. */
static const struct migration migrations[] = {
    {0, 2, v0_to_v2},
    {1, 2, v1_to_v2},
    {2, 3, v2_to_v3},
    {3, 4, v3_to_v4},
    {4, 5, v4_to_v5},
};

static const struct migration *step_from(int64_t version)
{
	for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]); i++)
		if (migrations[i].from == version)
			return &migrations[i];
	return NULL;
}

int schema_version(struct store *s, int bad, int64_t *version, char *err, size_t errlen)
{
	int64_t v, n_tables;
	bool kv;
	int rc;

	if ((rc = store_query_int(s, "PRAGMA user_version", &v, "reading the schema version", err,
				  errlen)) < 0 ||
	    (rc = store_query_int(s, "SELECT count(*) FROM sqlite_master", &n_tables,
				  "reading the schema", err, errlen)) < 0 ||
	    (rc = store_table_exists(s, "kv", &kv, err, errlen)) < 0)
		return rc;
	if (v > SCHEMA_VERSION)
		return plugfs_errf(err, errlen, -ENOTSUP,
				   "state file `%s': schema version %lld is newer than this plugfs "
				   "supports (%d); use a newer plugfs or another state file",
				   s->path, (long long)v, SCHEMA_VERSION);
	if (v == 0 && kv)
		v = 1; /* the earliest registries left user_version alone */
	if (v == 0 && n_tables != 0)
		return plugfs_errf(err, errlen, -EINVAL,
				   "state file `%s': not a plugfs state file (user_version 0 and "
				   "unknown tables)",
				   s->path);
	if (v == 1 && !kv)
		return plugfs_errf(err, errlen, bad,
				   "state file `%s': schema version 1 without its `kv' table",
				   s->path);
	if (v != SCHEMA_VERSION && !step_from(v))
		return plugfs_errf(err, errlen, bad, "state file `%s': unknown schema version %lld",
				   s->path, (long long)v);
	*version = v;
	return 0;
}

/* Backs the file up to <path>.v<version>.bak; *bak receives that name
 * (NULL when there is none to take: a new file, a copy, :memory:). */
static int backup_before(struct store *s, int64_t version, char **bak, char *err, size_t errlen)
{
	int rc;

	*bak = NULL;
	if (version < 1 || s->copy || strcmp(s->path, ":memory:") == 0 || s->path[0] == '\0')
		return 0;
	if (asprintf(bak, "%s.v%lld.bak", s->path, (long long)version) < 0) {
		*bak = NULL;
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	}
	rc = store_backup_to(s, *bak, err, errlen);
	/* The backup of this very file, left by a migration killed before its
	 * commit: taken as this one's (and removed should this one fail too,
	 * the file staying as it is).  Any other file there is refused. */
	if (rc == -EEXIST && store_backup_same(s, *bak)) {
		if (errlen > 0)
			err[0] = '\0';
		return 0;
	}
	if (rc < 0) {
		free(*bak); /* nothing of ours left there to remove */
		*bak = NULL;
	}
	return rc;
}

int schema_upgrade(struct store *s, int64_t version, int64_t now, char *err, size_t errlen)
{
	char sql[64], *bak = NULL;
	int rc;

	if (version == SCHEMA_VERSION)
		return 0;
	/* Before anything else, WAL included: the backup is the file as it was. */
	if ((rc = backup_before(s, version, &bak, err, errlen)) < 0)
		goto out;
	if ((rc = store_begin(s, err, errlen)) < 0)
		goto out;
	while (version < SCHEMA_VERSION) {
		const struct migration *m = step_from(version);

		if (!m) {
			rc = plugfs_errf(err, errlen, -EINVAL,
					 "state file `%s': no migration from schema version %lld",
					 s->path, (long long)version);
			goto fail;
		}
		if ((rc = m->up(s, now, err, errlen)) < 0)
			goto fail;
		version = m->to;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", SCHEMA_VERSION);
	if ((rc = store_exec(s, sql, "setting the schema version", err, errlen)) < 0)
		goto fail;
	rc = store_commit(s, err, errlen);
	goto out;
fail:
	store_rollback(s);
out:
	/* A migration that did not happen leaves no backup of it. */
	if (rc < 0 && bak)
		store_remove_files(bak);
	free(bak);
	return rc;
}

int schema_check_tables(struct store *s, int code, char *err, size_t errlen)
{
	/* The tables a new file has: climb the ladder from 0 on a scratch
	 * database, so that a new version needs no list of its own here. */
	struct store scratch = {.path = (char *)":memory:"};
	sqlite3_stmt *st = NULL;
	int64_t version = 0;
	bool exists;
	int rc = sqlite3_open_v2(":memory:", &scratch.db, SQLITE_OPEN_READWRITE, NULL);

	if (rc != SQLITE_OK) {
		rc = store_fail(&scratch, rc, "creating a scratch schema", err, errlen);
		goto out;
	}
	while (version < SCHEMA_VERSION) {
		const struct migration *m = step_from(version);

		if ((rc = m->up(&scratch, 0, err, errlen)) < 0)
			goto out;
		version = m->to;
	}
	rc = sqlite3_prepare_v2(scratch.db,
				"SELECT name FROM sqlite_master WHERE type = 'table'"
				" AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
				-1, &st, NULL);
	if (rc != SQLITE_OK) {
		rc = store_fail(&scratch, rc, "reading a scratch schema", err, errlen);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		if ((rc = store_table_exists(s, name, &exists, err, errlen)) < 0)
			goto out;
		if (!exists) {
			rc = plugfs_errf(err, errlen, code,
					 "state file `%s': schema version %d without table `%s'",
					 s->path, SCHEMA_VERSION, name);
			goto out;
		}
	}
	rc = rc == SQLITE_DONE ? 0
			       : store_fail(&scratch, rc, "reading a scratch schema", err, errlen);
out:
	sqlite3_finalize(st);
	sqlite3_close(scratch.db);
	return rc;
}
