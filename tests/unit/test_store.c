/* SPDX-License-Identifier: MIT */
/*
 * The SQLite store behind the registry: persist-then-apply under failing
 * commits, integrity and version checks on open, the version-1 migration,
 * legacy JSON import, registry_check_file, types no longer configured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "internal.h"
#include "registry.h"
#include "test_registry_util.h"

static int refuse_commit(void *arg)
{
	int *calls = arg;

	(*calls)++;
	return 1; /* non-zero: the COMMIT becomes a ROLLBACK */
}

static void test_failed_commit_changes_nothing(void **state)
{
	struct fixture *f = *state;
	static const char *const node[] = {"csi-node"};
	struct reg_spec upd = {.name = "p", .alloc = "a0", .socket = "/run/csi/a0/new.sock"};
	char err[REG_ERR_MAX] = "";
	struct reg_plugin p;
	size_t np, nr, removed = 7;
	int64_t seq1;
	int calls = 0;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	seq1 = p.regs[0].seq;
	reg_plugin_free_contents(&p);
	events_clear(f);
	sqlite3_commit_hook(registry_db(f->r), refuse_commit, &calls);

	/* Insert into an existing plugin, a new plugin, an update, a
	 * deregistration and deregister --alloc: each fails, nothing moves. */
	assert_int_equal(reg(f, "csi-node", "p", "a2"), -EIO);
	assert_int_equal(reg(f, "csi-node", "q", "a2"), -EIO);
	assert_int_equal(registry_register(f->r, node, 1, &upd, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "committing"));
	assert_non_null(strstr(err, f->path));
	assert_non_null(strstr(err, "constraint failed")); /* sqlite3_errmsg */
	assert_int_equal(dereg(f, "csi-node", "p", "a1"), -EIO);
	assert_int_equal(registry_deregister_alloc(f->r, "a0", &removed, err, sizeof(err)), -EIO);
	assert_int_equal(removed, 0);
	assert_int_equal(calls, 5);

	assert_string_equal(f->events, "");
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_null(active(f, "csi-node", "q"));
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 1);
	assert_int_equal(nr, 2);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_string_equal(p.regs[1].socket, "/run/csi/a0/csi.sock");
	reg_plugin_free_contents(&p);
	assert_int_equal(count_rows(f, "registrations"), 2);
	assert_int_equal(count_rows(f, "tombstones"), 0);

	/* The next good mutation works, and the failed ones used no seq. */
	sqlite3_commit_hook(registry_db(f->r), NULL, NULL);
	assert_int_equal(reg(f, "csi-node", "q", "a2"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a2"), 0);
	assert_string_equal(f->events, "registered csi-node/q a2;active csi-node/q (null)->a2;"
				       "registered csi-node/p a2;active csi-node/p a1->a2;");
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "q", &p), 0);
	assert_int_equal(p.regs[0].seq, seq1 + 1);
	reg_plugin_free_contents(&p);
	assert_int_equal(registry_deregister_alloc(f->r, "a2", &removed, err, sizeof(err)), 0);
	assert_int_equal(removed, 2);
	restart(f);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_null(active(f, "csi-node", "q"));
}

/* A transaction left open (a ROLLBACK that failed after a failed COMMIT, on
 * a disk that came back) is ended by the next mutation instead of making
 * every later BEGIN fail. */
static void test_transaction_left_open_is_ended(void **state)
{
	struct fixture *f = *state;
	sqlite3 *db = registry_db(f->r);

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(sqlite3_exec(db, "BEGIN; INSERT INTO meta(key, value) VALUES('junk', 1)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_get_autocommit(db), 0);
	events_clear(f);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(sqlite3_get_autocommit(db), 1);
	assert_string_equal(f->events, "registered csi-node/p a1;active csi-node/p a0->a1;");
	assert_int_equal(count_rows(f, "registrations"), 2);
	assert_int_equal(count_rows(f, "meta WHERE key = 'junk'"), 0); /* rolled back */
	restart(f);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
}

static void test_full_database_is_enospc(void **state)
{
	struct fixture *f = *state;
	static const char *const node[] = {"csi-node"};
	static char big[REG_VALUE_MAX + 1];
	struct reg_option opts[64];
	char keys[64][8], err[REG_ERR_MAX] = "";
	struct reg_spec spec = {.name = "big",
				.alloc = "b0",
				.socket = "/run/csi/b0/csi.sock",
				.options = opts,
				.n_options = 64};
	sqlite3 *db;
	size_t np, nr;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	memset(big, 'x', REG_VALUE_MAX);
	for (int i = 0; i < 64; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%02d", i);
		opts[i] = (struct reg_option){keys[i], big};
	}
	db = registry_db(f->r);
	/* No page may be added: 64 KiB of options cannot fit. */
	assert_int_equal(sqlite3_exec(db, "PRAGMA max_page_count = 1", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), -ENOSPC);
	assert_non_null(strstr(err, "full"));
	assert_null(active(f, "csi-node", "big"));
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 1);
	assert_int_equal(nr, 1);
	assert_int_equal(sqlite3_exec(db, "PRAGMA max_page_count = 1000000", NULL, NULL, NULL),
			 SQLITE_OK);
	events_clear(f);
	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	assert_string_equal(f->events,
			    "registered csi-node/big b0;active csi-node/big (null)->b0;");
	restart(f);
	assert_string_equal(active(f, "csi-node", "big"), "b0");
}

static void test_read_only_database_is_erofs(void **state)
{
	struct fixture *f = *state;
	sqlite3 *db = registry_db(f->r);
	char err[REG_ERR_MAX] = "";
	size_t removed = 5;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	events_clear(f);
	/* Every write of the connection now fails with SQLITE_READONLY. */
	assert_int_equal(sqlite3_exec(db, "PRAGMA query_only = 1", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), -EROFS);
	assert_int_equal(registry_deregister_alloc(f->r, "a0", &removed, err, sizeof(err)), -EROFS);
	assert_non_null(strstr(err, "readonly"));
	assert_int_equal(removed, 0);
	assert_string_equal(order(f, "csi-node", "p"), "a0");
	assert_string_equal(f->events, "");
	assert_int_equal(sqlite3_exec(db, "PRAGMA query_only = 0", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
}

static void test_busy_database_is_ebusy(void **state)
{
	struct fixture *f = *state;
	sqlite3 *other = NULL;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(sqlite3_open(f->path, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_busy_timeout(registry_db(f->r), 50);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), -EBUSY);
	assert_string_equal(order(f, "csi-node", "p"), "a0");
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(other);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
}

static void test_wal_and_schema_version(void **state)
{
	struct fixture *f = *state;
	sqlite3 *db = registry_db(f->r);
	sqlite3_stmt *st = NULL;

	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 5);
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA synchronous", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 2); /* FULL */
	sqlite3_finalize(st);
}

static void close_registry(struct fixture *f)
{
	registry_close(f->r);
	f->r = NULL;
}

static void test_newer_version_refused(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	close_registry(f);
	exec_sql(f->path, "PRAGMA user_version = 6");
	assert_int_equal(try_open(f, err, sizeof(err)), -ENOTSUP);
	assert_non_null(strstr(err, "schema version 6 is newer than this plugfs supports (5)"));
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -ENOTSUP);
	assert_non_null(strstr(err, "newer"));
	/* Untouched: still version 6 with its row. */
	assert_int_equal(count_rows(f, "registrations"), 1);
	exec_sql(f->path, "PRAGMA user_version = 5");
	reopen(f);
	assert_string_equal(active(f, "csi-node", "p"), "a0");
}

static void test_not_a_database_refused(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";
	FILE *fp;

	close_registry(f);
	unlink(f->path);
	fp = fopen(f->path, "w");
	assert_non_null(fp);
	for (int i = 0; i < 200; i++)
		fputs("this is not an SQLite database, just text\n", fp);
	fclose(fp);
	assert_int_equal(try_open(f, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "integrity check failed"));
	assert_non_null(strstr(err, "not a database"));
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "integrity check failed"));
	unlink(f->path);
	reopen(f); /* fixture teardown expects an open registry */
}

static void test_corrupt_page_fails_quick_check(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "", name[32], junk[512];
	int fd;

	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "plugin-%03d", i);
		assert_int_equal(reg(f, "csi-node", name, "a0"), 0);
	}
	close_registry(f);
	exec_sql(f->path, "PRAGMA wal_checkpoint(TRUNCATE)");
	/* Scribble over the middle of the file (pages of the tables). */
	memset(junk, 0xa5, sizeof(junk));
	fd = open(f->path, O_WRONLY);
	assert_true(fd >= 0);
	for (off_t off = 4096 * 3; off < 4096 * 12; off += 4096)
		assert_int_equal(pwrite(fd, junk, sizeof(junk), off + 100), sizeof(junk));
	close(fd);
	assert_int_equal(try_open(f, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "integrity check failed"));
	assert_non_null(strstr(err, f->path));
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	unlink(f->path);
	reopen(f);
}

static const char v1_json[] =
    "{\"Plugins\": {"
    " \"csi-node\": {"
    "  \"p1\": {\"Name\": \"p1\", \"Type\": \"node\", \"Version\": \"1.2\","
    "   \"ConnectionInfo\": {\"SocketPath\": \"/run/csi/n1/csi.sock\"}, \"AllocID\": \"n1\","
    "   \"Options\": {\"z\": \"last\", \"a\": \"first\"}},"
    "  \"p2\": {\"Type\": \"monolith\", \"ConnectionInfo\": {\"SocketPath\": "
    "\"/run/csi/m/csi.sock\"},"
    "   \"AllocID\": \"m\"}},"
    " \"csi-controller\": {"
    "  \"p2\": {\"Name\": \"p2\", \"ConnectionInfo\": {\"SocketPath\": \"/run/csi/m/csi.sock\"},"
    "   \"AllocID\": \"m\", \"Options\": null}},"
    " \"legacy-type\": {"
    "  \"old\": {\"ConnectionInfo\": {\"SocketPath\": \"/run/x.sock\"}, \"AllocID\": \"o\"}}"
    "}}";

static void check_migrated(struct fixture *f)
{
	char bak[256], err[REG_ERR_MAX] = "";
	struct reg_plugin p;

	snprintf(bak, sizeof(bak), "%s.v1.bak", f->path);
	/* The backup is the version-1 file as it was. */
	assert_int_equal(access(bak, F_OK), 0);
	assert_int_equal(query_int(bak, "SELECT count(*) FROM kv WHERE key ="
					" 'dynamic_plugin_registry' AND value LIKE '%\"p1\"%'"),
			 1);
	/* The state file is version 5 without kv, lists right. */
	assert_int_equal(query_int(f->path, "PRAGMA user_version"), 5);
	assert_int_equal(query_int(f->path, "SELECT count(*) FROM sqlite_master WHERE name = 'kv'"),
			 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p1", &p), 0);
	assert_int_equal(p.n_regs, 1);
	assert_string_equal(p.regs[0].alloc, "n1");
	assert_string_equal(p.regs[0].socket, "/run/csi/n1/csi.sock");
	assert_string_equal(p.regs[0].version, "1.2");
	assert_int_equal(p.regs[0].kind, REG_KIND_NODE);
	assert_int_equal(p.regs[0].n_options, 2);
	assert_string_equal(p.regs[0].options[0].key, "a");
	assert_string_equal(p.regs[0].options[0].value, "first");
	assert_string_equal(p.regs[0].options[1].key, "z");
	reg_plugin_free_contents(&p);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p2", &p), 0);
	assert_int_equal(p.regs[0].kind, REG_KIND_MONOLITH);
	assert_string_equal(p.regs[0].version, "");
	reg_plugin_free_contents(&p);
	assert_int_equal(registry_get_plugin(f->r, "csi-controller", "p2", &p), 0);
	assert_int_equal(p.regs[0].kind, REG_KIND_CONTROLLER); /* no Type: from the type */
	assert_int_equal(p.regs[0].n_options, 0);
	reg_plugin_free_contents(&p);
	/* A type not configured is kept in the file but not served. */
	assert_int_equal(registry_get_plugin(f->r, "legacy-type", "old", &p), -ENOENT);
	assert_int_equal(count_rows(f, "registrations"), 4);
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
	/* The migrated registry works: a new alloc goes to the front. */
	assert_int_equal(reg(f, "csi-node", "p1", "n2"), 0);
	assert_string_equal(order(f, "csi-node", "p1"), "n2 n1");
	restart(f);
	assert_string_equal(order(f, "csi-node", "p1"), "n2 n1");
}

static void test_migrate_v1(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";

	close_registry(f);
	write_v1(f->path, 1, v1_json);
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
	reopen(f);
	check_migrated(f);
}

static void test_migrate_v0_with_kv(void **state)
{
	struct fixture *f = *state;

	close_registry(f);
	write_v1(f->path, 0, v1_json);
	reopen(f);
	check_migrated(f);
}

static void test_migrate_bad_entry_leaves_v1(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";

	close_registry(f);
	write_v1(f->path, 1,
		 "{\"Plugins\": {\"csi-node\": {\"p1\": {\"AllocID\": \"a/b\","
		 " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}");
	/* state check finds what the migration would refuse, with the same words. */
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "version 1: Plugins.csi-node.p1: alloc `a/b': must be 1-128"));
	assert_int_equal(try_open(f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cannot migrate version 1: Plugins.csi-node.p1: alloc `a/b'"));
	write_v1(f->path, 1,
		 "{\"Plugins\": {\"csi-node\": {\"p\\u001b\": {\"AllocID\": \"a\","
		 " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "version 1: Plugins.csi-node.p\\x1b: name `p\\x1b'"));
	assert_int_equal(try_open(f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cannot migrate version 1: Plugins.csi-node.p\\x1b: name"));
	write_v1(f->path, 1, "{\"Plugins\": {\"csi-node\": {\"p1\": {\"AllocID\": 1}}}}");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(
	    strstr(err, "version 1: legacy JSON: Plugins.csi-node.p1.AllocID: must be"));
	assert_int_equal(query_int(f->path, "PRAGMA user_version"), 1);
	assert_int_equal(query_int(f->path, "SELECT count(*) FROM kv"), 1);
	assert_int_equal(query_int(f->path, "SELECT count(*) FROM sqlite_master"
					    " WHERE name = 'registrations'"),
			 0);
	write_v1(f->path, 1, "{\"Plugins\": {\"csi-node\": [1, 2]}}");
	assert_int_equal(try_open(f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "every value of `Plugins' must be an object"));
	write_v1(f->path, 1, "{\"Plugins\": {\"csi-node\": {\"p1\": ");
	assert_int_equal(try_open(f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not valid JSON"));
	write_v1(f->path, 1, "{\"Plugins\": null}");
	reopen(f); /* an empty legacy registry */
	assert_int_equal(count_rows(f, "registrations"), 0);
}

static char *read_file(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *buf = NULL;
	long n;

	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	assert_true(n > 0);
	rewind(fp);
	buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	return buf;
}

static const char *option(const struct registration *g, const char *key)
{
	for (size_t i = 0; i < g->n_options; i++)
		if (strcmp(g->options[i].key, key) == 0)
			return g->options[i].value;
	return NULL;
}

static void check_fixture_import(struct fixture *f)
{
	struct reg_plugin p;

	assert_int_equal(registry_get_plugin(f->r, "csi-controller", "plugin-1", &p), 0);
	assert_int_equal(p.n_regs, 1);
	assert_string_equal(p.regs[0].alloc, "489cd5cf-3cfc-6792-3465-822371765b32");
	assert_string_equal(p.regs[0].socket, "/var/nomad/client/csi/plugin-1/csi.sock");
	assert_string_equal(p.regs[0].version, "v0.1");
	assert_int_equal(p.regs[0].kind, REG_KIND_MONOLITH);
	assert_int_equal(p.regs[0].n_options, 3);
	assert_string_equal(option(&p.regs[0], "Provider"), "demo");
	assert_string_equal(option(&p.regs[0], "MountPoint"), "/var/nomad/client/csi/plugin-1");
	assert_string_equal(option(&p.regs[0], "ContainerMountPoint"), "/csi");
	reg_plugin_free_contents(&p);

	assert_int_equal(registry_get_plugin(f->r, "csi-node", "plugin-1", &p), 0);
	assert_int_equal(p.n_regs, 1);
	assert_string_equal(p.regs[0].alloc, "489cd5cf-3cfc-6792-3465-822371765b32");
	assert_int_equal(p.regs[0].kind, REG_KIND_MONOLITH);
	assert_string_equal(option(&p.regs[0], "mountpoint"), "/var/nomad/client/csi/plugin-1");
	assert_null(option(&p.regs[0], "MountPoint"));
	reg_plugin_free_contents(&p);

	assert_int_equal(registry_get_plugin(f->r, "csi-node", "plugin-2", &p), 0);
	assert_int_equal(p.n_regs, 1);
	assert_string_equal(p.regs[0].alloc, "68221094-25a6-eeb6-8490-c71a03d46b0f");
	assert_string_equal(p.regs[0].socket, "/var/nomad/client/csi/plugin-2/csi.sock");
	assert_string_equal(p.regs[0].version, "v0.2");
	assert_int_equal(p.regs[0].kind, REG_KIND_NODE);
	assert_string_equal(option(&p.regs[0], "Provider"), "other-demo");
	assert_int_equal(p.regs[0].n_options, 3);
	reg_plugin_free_contents(&p);
}

static void test_import_fixture(void **state)
{
	struct fixture *f = *state;
	char *json = read_file(PLUGFS_FIXTURES "/legacy-registry-state.json");
	char err[REG_ERR_MAX] = "";
	size_t n = 0, np, nr;

	events_clear(f);
	assert_int_equal(registry_import_legacy_json(f->r, json, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	check_fixture_import(f);
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 3);
	assert_int_equal(nr, 3);
	assert_non_null(strstr(f->events, "registered csi-node/plugin-2 "
					  "68221094-25a6-eeb6-8490-c71a03d46b0f;"));
	restart(f);
	check_fixture_import(f);
	/* Importing the same document again changes nothing. */
	events_clear(f);
	assert_int_equal(registry_import_legacy_json(f->r, json, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	assert_string_equal(f->events, "");
	free(json);
}

static void test_import_rejects_all_or_nothing(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";
	size_t n = 9;
	static const struct {
		const char *json, *msg;
	} bad[] = {
	    {"{\"Plugins\": {\"csi-node\": {\"ok\": {\"AllocID\": \"a1\", \"ConnectionInfo\":"
	     " {\"SocketPath\": \"/run/a.sock\"}}}, \"gpu\": {\"p\": {\"AllocID\": \"a1\","
	     " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}",
	     "legacy JSON: Plugins.gpu.p: type `gpu': must be one of the configured types "
	     "(csi-controller, csi-node)"},
	    {"{\"Plugins\": {\"csi-node\": {\"ok\": {\"AllocID\": \"a1\", \"ConnectionInfo\":"
	     " {\"SocketPath\": \"run/a.sock\"}}}}}",
	     "legacy JSON: Plugins.csi-node.ok: socket `run/a.sock': must be an absolute path"},
	    {"{\"Plugins\": {\"csi-node\": {\"ok\": {\"AllocID\": 5, \"ConnectionInfo\":"
	     " {\"SocketPath\": \"/run/a.sock\"}}}}}",
	     "legacy JSON: Plugins.csi-node.ok.AllocID: must be a string"},
	    {"{\"Plugins\": {\"csi-node\": {\"ok\": {\"AllocID\": \"a\"}}}}",
	     "legacy JSON: Plugins.csi-node.ok.ConnectionInfo.SocketPath: must be a string"},
	    {"{\"Plugins\": {\"csi-node\": {\"ok\": {\"AllocID\": \"a\", \"Type\": \"gpu\","
	     " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}",
	     "legacy JSON: Plugins.csi-node.ok.Type: must be one of controller, node, monolith"},
	    {"{\"Plugins\": {\"csi-node\": {\"ok\": {\"AllocID\": \"a\", \"Options\": {\"k\": 1},"
	     " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}",
	     "legacy JSON: Plugins.csi-node.ok.Options: every value must be a string"},
	    {"{\"Plugins\": {\"csi-node\": {\"ok\": {\"AllocID\": \"a\", \"Name\": \"other\","
	     " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}",
	     "legacy JSON: Plugins.csi-node.ok.Name: must be the same as the key"},
	    {"{\"Plugins\": {\"csi-node\": {\"ok\": {\"AllocID\": \"a\", \"ConnectionInfo\":"
	     " {\"SocketPath\": \"/run/a.sock\"}}, \"ok\": {\"AllocID\": \"b\", \"ConnectionInfo\":"
	     " {\"SocketPath\": \"/run/b.sock\"}}}}}",
	     "legacy JSON: Plugins.csi-node.ok: appears more than once"},
	    {"[1, 2]", "legacy JSON: must be an object with `Plugins'"},
	    {"{\"plugins\": {}}", "legacy JSON: `Plugins' missing"},
	    {"{\"Plugins\": 3}", "legacy JSON: `Plugins' must be an object"},
	    {"{\"Plugins\": {\"csi-node\": {\"ok\": 1}}}",
	     "legacy JSON: Plugins.csi-node.ok: must be an object"},
	    {"not json", "legacy JSON: not valid JSON (line 1, column 3: '[' or '{' expected near 'not')"},
	    /* SQLite's json_valid accepts these two, and json_each crashed on them. */
	    {"{\"Plugins\": {\"csi-node\": {{\"k\": \"v\"}: \"x\"}}}",
	     "legacy JSON: not valid JSON (line 1, column 27: string or '}' expected near '{')"},
	    {"{\"Plugins\": {\"csi-n\xff" "de\": {}}}",
	     "legacy JSON: an object key is not valid UTF-8"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = 9;
		err[0] = '\0';
		assert_int_equal(
		    registry_import_legacy_json(f->r, bad[i].json, &n, err, sizeof(err)), -EINVAL);
		assert_string_equal(err, bad[i].msg);
		assert_int_equal(n, 0);
	}
	assert_null(active(f, "csi-node", "ok"));
	assert_int_equal(count_rows(f, "registrations"), 0);
	assert_int_equal(count_rows(f, "plugins"), 0);
}

static void test_unconfigured_type_kept_not_served(void **state)
{
	struct fixture *f = *state;
	struct reg_snapshot s;
	char err[REG_ERR_MAX] = "";

	close_registry(f);
	f->types[2] = "gpu";
	f->n_types = 3;
	reopen(f);
	assert_int_equal(reg(f, "gpu", "g", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "g", "a0"), 0);
	assert_string_equal(active(f, "gpu", "g"), "a0");
	f->n_types = 2; /* gpu no longer configured */
	restart(f);
	assert_null(active(f, "gpu", "g"));
	assert_int_equal(registry_snapshot(f->r, NULL, &s), 0);
	assert_int_equal(s.n_plugins, 1);
	assert_string_equal(s.plugins[0].type, "csi-node");
	reg_snapshot_free(&s);
	assert_int_equal(reg(f, "gpu", "g", "a1"), -EINVAL);
	/* deregister --alloc only touches configured types. */
	assert_int_equal(registry_deregister_alloc(f->r, "a0", NULL, err, sizeof(err)), 0);
	assert_int_equal(count_rows(f, "registrations"), 1);
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
	f->n_types = 3;
	restart(f);
	assert_string_equal(active(f, "gpu", "g"), "a0");
}

/* A deleted registration takes its options with it (ON DELETE CASCADE):
 * foreign keys are on for the registry's connection. */
static void test_deregister_cascades_options(void **state)
{
	struct fixture *f = *state;
	static const char *const node[] = {"csi-node"};
	struct reg_option opts[] = {{"a", "1"}, {"b", "2"}};
	struct reg_spec spec = {.name = "p",
				.alloc = "a0",
				.socket = "/run/csi/a0/csi.sock",
				.options = opts,
				.n_options = 2};
	char err[REG_ERR_MAX] = "";
	sqlite3_stmt *st = NULL;

	assert_int_equal(
	    sqlite3_prepare_v2(registry_db(f->r), "PRAGMA foreign_keys", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 1);
	sqlite3_finalize(st);
	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	assert_int_equal(count_rows(f, "reg_options"), 2);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(count_rows(f, "reg_options"), 0);
	assert_int_equal(count_rows(f, "registrations"), 0);
}

static void test_check_file(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "", missing[256];

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
	snprintf(missing, sizeof(missing), "%s/nope.db", f->dir);
	assert_int_equal(registry_check_file(missing, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "nope.db"));
	assert_int_equal(access(missing, F_OK), -1); /* not created */
	close_registry(f);
	exec_sql(f->path, "UPDATE registrations SET socket = 'relative/csi.sock'");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "table `registrations', row 1 (csi-node/p a0): socket "
				    "`relative/csi.sock': must be an absolute path"));
	exec_sql(f->path, "UPDATE registrations SET socket = '/ok.sock';"
			  " UPDATE meta SET value = 0 WHERE key = 'seq'");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "sequence counter 0 is below a stored seq 1"));
	exec_sql(f->path, "UPDATE meta SET value = 1 WHERE key = 'seq';"
			  " INSERT INTO plugins(type_id, name) VALUES(1, 'empty')");
	/* A plugin whose list emptied keeps its row (and its id): good. */
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
	exec_sql(f->path, "DELETE FROM plugins WHERE name = 'empty'");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
	reopen(f);
}

static void test_missing_table(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "", want[256];

	close_registry(f);
	exec_sql(f->path, "DROP TABLE tombstones");
	snprintf(want, sizeof(want), "state file `%s': schema version 5 without table `tombstones'",
		 f->path);
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_string_equal(err, want);
	assert_int_equal(try_open(f, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, want);
	unlink(f->path);
	reopen(f);
}

static void test_bad_open_options(void **state)
{
	struct fixture *f = *state;
	struct registry_options o = fixture_options(f);
	struct registry *r = NULL;
	char err[REG_ERR_MAX] = "", path[256];
	static const char *const dup[] = {"csi-node", "csi-node"};
	static const char *const bad_type[] = {"csi/node"};
	static const char *const bad_root[] = {"/run/"};

	snprintf(path, sizeof(path), "%s/other.db", f->dir);
	o.n_types = 0;
	assert_int_equal(registry_open(path, &o, &r, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "registry.types: at least one type is required");
	o.types = dup;
	o.n_types = 2;
	assert_int_equal(registry_open(path, &o, &r, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "registry.types: `csi-node' given more than once");
	o.types = bad_type;
	o.n_types = 1;
	assert_int_equal(registry_open(path, &o, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "registry.types entry `csi/node': must be 1-128 characters"));
	o = fixture_options(f);
	o.socket_roots = bad_root;
	o.n_socket_roots = 1;
	assert_int_equal(registry_open(path, &o, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "registry.socket_roots entry `/run/': must be normalised"));
	o = fixture_options(f);
	o.synchronous = "sometimes";
	assert_int_equal(registry_open(path, &o, &r, err, sizeof(err)), -EINVAL);
	assert_string_equal(err,
			    "synchronous `sometimes': must be one of off, normal, full, extra");
	o = fixture_options(f);
	o.tombstone_ttl = -1;
	assert_int_equal(registry_open(path, &o, &r, err, sizeof(err)), -EINVAL);
	assert_null(r);
	snprintf(path, sizeof(path), "%s/no/such/dir/state.db", f->dir);
	o = fixture_options(f);
	assert_true(registry_open(path, &o, &r, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, path));
	assert_null(r);
	snprintf(path, sizeof(path), "%s/other.db", f->dir);
	unlink(path);
}

static void test_memory_database(void **state)
{
	struct fixture *f = *state;
	struct registry_options o = fixture_options(f);
	struct registry *r = NULL;
	char err[REG_ERR_MAX] = "";
	static const char *const node[] = {"csi-node"};
	struct reg_spec spec = {.name = "p", .alloc = "a", .socket = "/a.sock"};
	size_t np;

	assert_int_equal(registry_open(":memory:", &o, &r, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, node, 1, &spec, err, sizeof(err)), 0);
	registry_counts(r, &np, NULL);
	assert_int_equal(np, 1);
	registry_close(r);
}

/* The probe override of p/alloc as "probe csi_name" ("- -" for none). */
static const char *probe_of(struct fixture *f, const char *type, const char *alloc)
{
	static char buf[128];
	struct reg_plugin p;

	snprintf(buf, sizeof(buf), "?");
	assert_int_equal(registry_get_plugin(f->r, type, "p", &p), 0);
	for (size_t i = 0; i < p.n_regs; i++)
		if (strcmp(p.regs[i].alloc, alloc) == 0)
			snprintf(buf, sizeof(buf), "%s %s",
				 reg_probe_name(p.regs[i].probe) ? reg_probe_name(p.regs[i].probe)
								 : "-",
				 p.regs[i].csi_name[0] ? p.regs[i].csi_name : "-");
	reg_plugin_free_contents(&p);
	return buf;
}

/* A version-2 file (registrations without the probe columns) climbs to 3:
 * backed up first, its rows kept with their type's probe mode. */
static void test_migrate_v2_probe(void **state)
{
	struct fixture *f = *state;
	char bak[256];

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	close_registry(f);
	exec_sql(f->path, "ALTER TABLE registrations DROP COLUMN probe;"
			  "ALTER TABLE registrations DROP COLUMN csi_name;"
			  "ALTER TABLE registrations DROP COLUMN source;"
			  "DROP TABLE holds;"
			  "PRAGMA user_version = 2");
	assert_int_equal(query_int(f->path,
				   "SELECT count(*) FROM pragma_table_info('registrations')"
				   " WHERE name IN ('probe', 'csi_name')"),
			 0);
	reopen(f);
	assert_int_equal(query_int(f->path, "PRAGMA user_version"), 5);
	assert_int_equal(query_int(f->path,
				   "SELECT count(*) FROM pragma_table_info('registrations')"
				   " WHERE name IN ('probe', 'csi_name', 'source')"),
			 3);
	snprintf(bak, sizeof(bak), "%s.v2.bak", f->path);
	assert_int_equal(query_int(bak, "PRAGMA user_version"), 2);
	assert_int_equal(query_int(bak, "SELECT count(*) FROM registrations"), 2);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_string_equal(probe_of(f, "csi-node", "a1"), "- -");
	assert_int_equal(registry_check_file(f->path, NULL, 0), 0);
}

/* register with a probe override: stored, loaded, updated, checked; bad
 * ones refused with nothing stored. */
static void test_probe_override_persists(void **state)
{
	struct fixture *f = *state;
	static const char *const node[] = {"csi-node"};
	struct reg_spec s = {.name = "p",
			     .alloc = "a0",
			     .socket = "/run/csi/a0/csi.sock",
			     .probe = REG_PROBE_CSI,
			     .csi_name = "ebs.csi.aws.com"};
	char err[REG_ERR_MAX] = "";

	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), 0);
	assert_string_equal(probe_of(f, "csi-node", "a0"), "csi ebs.csi.aws.com");
	restart(f);
	assert_string_equal(probe_of(f, "csi-node", "a0"), "csi ebs.csi.aws.com");
	/* The same again: no change; another mode: an update. */
	events_clear(f);
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), 0);
	assert_string_equal(f->events, "");
	s.probe = REG_PROBE_CONNECT;
	s.csi_name = NULL;
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), 0);
	assert_non_null(strstr(f->events, "updated"));
	restart(f);
	assert_string_equal(probe_of(f, "csi-node", "a0"), "connect -");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
	/* Refused, nothing stored. */
	s.alloc = "a1";
	s.csi_name = "ebs.csi.aws.com";
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "csi_name: only with probe csi"));
	s.probe = REG_PROBE_CSI;
	s.csi_name = "-bad.name";
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "csi_name `-bad.name': must be a CSI plugin name"));
	s.csi_name = "a_b";
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), -EINVAL);
	s.probe = (enum reg_probe)9;
	s.csi_name = NULL;
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "probe 9: must be one of none, connect, csi"));
	assert_string_equal(order(f, "csi-node", "p"), "a0");
	/* A bad value in the file: state check says so. */
	close_registry(f);
	exec_sql(f->path, "UPDATE registrations SET probe = 'none', csi_name = 'x.y'");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "csi_name: only with probe csi"));
	exec_sql(f->path, "UPDATE registrations SET probe = '', csi_name = ''");
	reopen(f);
	assert_string_equal(probe_of(f, "csi-node", "a0"), "- -");
}

/* The source of each registration of (type, "p") at alloc, or "?". */
static const char *source_of(struct fixture *f, const char *type, const char *alloc)
{
	static char buf[160];
	struct reg_plugin p;

	snprintf(buf, sizeof(buf), "?");
	assert_int_equal(registry_get_plugin(f->r, type, "p", &p), 0);
	for (size_t i = 0; i < p.n_regs; i++)
		if (strcmp(p.regs[i].alloc, alloc) == 0)
			snprintf(buf, sizeof(buf), "%s", reg_source_name(p.regs[i].source));
	reg_plugin_free_contents(&p);
	return buf;
}

/* A version-3 file (registrations without their source) climbs to 4:
 * backed up first, its rows kept, from the control socket. */
static void test_migrate_v3_source(void **state)
{
	struct fixture *f = *state;
	char bak[256];

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	close_registry(f);
	exec_sql(f->path, "ALTER TABLE registrations DROP COLUMN source;"
			  "DROP TABLE holds;"
			  "PRAGMA user_version = 3");
	reopen(f);
	assert_int_equal(query_int(f->path, "PRAGMA user_version"), 5);
	assert_int_equal(query_int(f->path,
				   "SELECT count(*) FROM pragma_table_info('registrations')"
				   " WHERE name = 'source'"),
			 1);
	snprintf(bak, sizeof(bak), "%s.v3.bak", f->path);
	assert_int_equal(query_int(bak, "PRAGMA user_version"), 3);
	assert_int_equal(query_int(bak, "SELECT count(*) FROM registrations"), 2);
	assert_int_equal(query_int(bak, "SELECT count(*) FROM pragma_table_info('registrations')"
					" WHERE name = 'source'"),
			 0);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_string_equal(source_of(f, "csi-node", "a0"), "control");
	assert_int_equal(registry_check_file(f->path, NULL, 0), 0);
	/* Version 4 (no holds) to 5. */
	close_registry(f);
	exec_sql(f->path, "DROP TABLE holds; PRAGMA user_version = 4");
	reopen(f);
	assert_int_equal(query_int(f->path, "PRAGMA user_version"), 5);
	assert_int_equal(query_int(f->path, "SELECT count(*) FROM holds"), 0);
	snprintf(bak, sizeof(bak), "%s.v4.bak", f->path);
	assert_int_equal(query_int(bak, "PRAGMA user_version"), 4);
	assert_int_equal(query_int(bak, "SELECT count(*) FROM sqlite_master WHERE name = 'holds'"),
			 0);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_int_equal(registry_check_file(f->path, NULL, 0), 0);
}

/* A registration's source: stored, loaded, changed by a register of the
 * same alloc, checked; a bad one refused with nothing stored. */
static void test_source_persists(void **state)
{
	struct fixture *f = *state;
	static const char *const node[] = {"csi-node"};
	struct reg_spec s = {.name = "p",
			     .alloc = "a0",
			     .socket = "/run/csi/a0/csi.sock",
			     .source = "discover.nomad"};
	char err[REG_ERR_MAX] = "";

	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), 0);
	assert_string_equal(source_of(f, "csi-node", "a0"), "discover.nomad");
	restart(f);
	assert_string_equal(source_of(f, "csi-node", "a0"), "discover.nomad");
	/* The same again: no change; over the control socket: an update. */
	events_clear(f);
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), 0);
	assert_string_equal(f->events, "");
	s.source = NULL;
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), 0);
	assert_non_null(strstr(f->events, "updated"));
	restart(f);
	assert_string_equal(source_of(f, "csi-node", "a0"), "control");
	s.source = "discover.k8s";
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), 0);
	restart(f);
	assert_string_equal(source_of(f, "csi-node", "a0"), "discover.k8s");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
	/* Refused, nothing stored. */
	s.alloc = "a1";
	s.source = "hook";
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "source `hook': must be empty (the control socket) or "
				    "discover.NAME"));
	s.source = "discover.";
	assert_int_equal(registry_register(f->r, node, 1, &s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "source: discover.NAME"));
	assert_string_equal(order(f, "csi-node", "p"), "a0");
	/* A bad value in the file: state check says so. */
	close_registry(f);
	exec_sql(f->path, "UPDATE registrations SET source = 'discover.a/b'");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "source: discover.NAME"));
	exec_sql(f->path, "UPDATE registrations SET source = ''");
	reopen(f);
	assert_string_equal(source_of(f, "csi-node", "a0"), "control");
}

/* The holds read back as a list "source/alloc:dev:ino ...". */
static int hold_line(void *arg, const struct reg_hold *h, char *err, size_t errlen)
{
	char *out = arg;
	size_t len = strlen(out);

	(void)err;
	(void)errlen;
	snprintf(out + len, 512 - len, "%s%s/%s:%llu:%llu:%lld", len ? " " : "", h->source,
		 h->alloc, (unsigned long long)h->dev, (unsigned long long)h->ino,
		 (long long)h->ctime_ns);
	return 0;
}

static const char *holds_of(struct fixture *f)
{
	static char out[512];
	char err[REG_ERR_MAX] = "";

	out[0] = '\0';
	assert_int_equal(registry_holds(f->r, hold_line, out, err, sizeof(err)), 0);
	return out;
}

/* The discovery's holds: stored, replaced, kept across a restart, deleted;
 * a bad one refused with nothing stored, a bad row named by state check. */
static void test_holds_persist(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";
	const uint64_t big = 0xfedcba9876543210ULL; /* above INT64_MAX: the bits kept */

	assert_string_equal(holds_of(f), "");
	assert_int_equal(registry_hold(f->r, "discover.nomad", "a1", 2049, 77, 1000000001, err, sizeof(err)),
			 0);
	assert_int_equal(registry_hold(f->r, "discover.nomad", "a0", 2049, big, 3, err, sizeof(err)),
			 0);
	assert_int_equal(registry_hold(f->r, "discover.k8s", "a0", 5, 6, 7, err, sizeof(err)), 0);
	assert_string_equal(holds_of(f), "discover.k8s/a0:5:6:7 discover.nomad/a0:2049:"
					 "18364758544493064720:3 discover.nomad/a1:2049:77:1000000001");
	restart(f);
	assert_string_equal(holds_of(f), "discover.k8s/a0:5:6:7 discover.nomad/a0:2049:"
					 "18364758544493064720:3 discover.nomad/a1:2049:77:1000000001");
	/* Replaced, deleted, a missing one a no-op. */
	assert_int_equal(registry_hold(f->r, "discover.nomad", "a1", 2049, 78, 9, err, sizeof(err)),
			 0);
	assert_int_equal(registry_unhold(f->r, "discover.nomad", "a0", err, sizeof(err)), 0);
	assert_int_equal(registry_unhold(f->r, "discover.nomad", "zz", err, sizeof(err)), 0);
	restart(f);
	assert_string_equal(holds_of(f), "discover.k8s/a0:5:6:7 discover.nomad/a1:2049:78:9");
	/* Refused, nothing stored. */
	assert_int_equal(registry_hold(f->r, "", "a2", 1, 1, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "source: a hold is a discovery's (discover.NAME)"));
	assert_int_equal(registry_hold(f->r, "discover.a/b", "a2", 1, 1, 1, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "source: discover.NAME"));
	assert_int_equal(registry_hold(f->r, "discover.nomad", "a/2", 1, 1, 1, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "alloc"));
	assert_string_equal(holds_of(f), "discover.k8s/a0:5:6:7 discover.nomad/a1:2049:78:9");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
	/* A bad row in the file: state check and the open say so. */
	close_registry(f);
	exec_sql(f->path, "UPDATE holds SET alloc = 'a/1' WHERE source = 'discover.nomad'");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "table `holds', (source `discover.nomad' alloc `a/1'): alloc"));
	exec_sql(f->path, "UPDATE holds SET alloc = 'a1', source = '' WHERE alloc = 'a/1'");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "source: a hold is a discovery's (discover.NAME)"));
	exec_sql(f->path, "DELETE FROM holds WHERE source = ''");
	reopen(f);
	assert_string_equal(holds_of(f), "discover.k8s/a0:5:6:7");
	/* Not an integer: named. */
	close_registry(f);
	exec_sql(f->path, "UPDATE holds SET ino = 'x'");
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "table `holds', (source `discover.k8s' alloc `a0'): ino: must "
				    "be an integer"));
	exec_sql(f->path, "UPDATE holds SET ino = 6");
	reopen(f);
	assert_string_equal(holds_of(f), "discover.k8s/a0:5:6:7");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_failed_commit_changes_nothing),
	    T(test_transaction_left_open_is_ended),
	    T(test_full_database_is_enospc),
	    T(test_read_only_database_is_erofs),
	    T(test_busy_database_is_ebusy),
	    T(test_wal_and_schema_version),
	    T(test_newer_version_refused),
	    T(test_not_a_database_refused),
	    T(test_corrupt_page_fails_quick_check),
	    T(test_migrate_v1),
	    T(test_migrate_v0_with_kv),
	    T(test_migrate_bad_entry_leaves_v1),
	    T(test_import_fixture),
	    T(test_import_rejects_all_or_nothing),
	    T(test_unconfigured_type_kept_not_served),
	    T(test_check_file),
	    T(test_deregister_cascades_options),
	    T(test_missing_table),
	    T(test_migrate_v2_probe),
	    T(test_probe_override_persists),
	    T(test_migrate_v3_source),
	    T(test_source_persists),
	    T(test_holds_persist),
	    T(test_bad_open_options),
	    T(test_memory_database),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
