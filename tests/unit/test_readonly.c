/* SPDX-License-Identifier: MIT */
/*
 * registry_options.read_only: a read-only open reads a version-2 or
 * version-1 state file without changing a byte of it (no migration, no
 * backup, no type rows, no tombstone expiry, no -wal/-shm left behind), and
 * every mutation is -EROFS.  A file with a hot journal is read rolled back,
 * from a copy, and both files are left as they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "registry.h"
#include "test_registry_util.h"

struct bytes {
	unsigned char *p;
	size_t n;
};

static struct bytes read_bytes(const char *path)
{
	struct bytes b = {0};
	FILE *f = fopen(path, "rb");
	long len;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len >= 0);
	rewind(f);
	b.n = (size_t)len;
	b.p = malloc(b.n ? b.n : 1);
	assert_non_null(b.p);
	assert_int_equal(fread(b.p, 1, b.n, f), b.n);
	fclose(f);
	return b;
}

/* Asserts path holds exactly the bytes of before; frees before. */
static void assert_same_bytes(const char *path, struct bytes *before)
{
	struct bytes now = read_bytes(path);

	assert_int_equal(now.n, before->n);
	assert_memory_equal(now.p, before->p, before->n);
	free(now.p);
	free(before->p);
	before->p = NULL;
}

static bool exists_with(const struct fixture *f, const char *suffix)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", f->path, suffix);
	return access(p, F_OK) == 0;
}

static void assert_no_side_files(const struct fixture *f)
{
	assert_false(exists_with(f, "-wal"));
	assert_false(exists_with(f, "-shm"));
	assert_false(exists_with(f, "-journal"));
	assert_false(exists_with(f, ".v1.bak"));
}

static const char *const ro_types[] = {"csi-controller", "csi-node", "csi-extra"};

static int open_ro(struct fixture *f, struct registry **r, char *err, size_t errlen)
{
	struct registry_options o = fixture_options(f);

	o.types = ro_types;
	o.n_types = 3;
	o.read_only = true;
	return registry_open(f->path, &o, r, err, errlen);
}

static struct registry *open_ro_ok(struct fixture *f)
{
	struct registry *r = NULL;
	char err[REG_ERR_MAX] = "";
	int rc = open_ro(f, &r, err, sizeof(err));

	if (rc != 0)
		fail_msg("read-only registry_open: %d %s", rc, err);
	return r;
}

/* Every mutating function refuses with -EROFS and a message saying why. */
static void check_mutations_refused(struct registry *r, const char *path)
{
	static const char *const node[] = {"csi-node"};
	struct reg_spec spec = {.name = "p", .alloc = "new", .socket = "/run/csi/new/csi.sock"};
	char err[REG_ERR_MAX] = "";
	bool removed;
	size_t n = 7;

	assert_int_equal(registry_register(r, node, 1, &spec, err, sizeof(err)), -EROFS);
	assert_non_null(strstr(err, "read-only"));
	assert_non_null(strstr(err, path));
	err[0] = '\0';
	removed = true;
	assert_int_equal(registry_deregister(r, "csi-node", "p", "a0", &removed, err, sizeof(err)),
			 -EROFS);
	assert_false(removed);
	assert_non_null(strstr(err, "read-only"));
	err[0] = '\0';
	assert_int_equal(registry_deregister_alloc(r, "a0", &n, err, sizeof(err)), -EROFS);
	assert_int_equal(n, 0);
	assert_non_null(strstr(err, "read-only"));
	err[0] = '\0';
	n = 7;
	assert_int_equal(registry_import_legacy_json(r, "{\"Plugins\": {}}", &n, err, sizeof(err)),
			 -EROFS);
	assert_int_equal(n, 0);
	assert_non_null(strstr(err, "read-only"));
	err[0] = '\0';
	assert_int_equal(registry_expire_tombstones(r, err, sizeof(err)), -EROFS);
	assert_non_null(strstr(err, "read-only"));
}

static const char *ro_order(struct registry *r, const char *type, const char *name)
{
	static char buf[256];
	struct reg_plugin p;

	buf[0] = '\0';
	if (registry_get_plugin(r, type, name, &p) < 0)
		return NULL;
	for (size_t i = 0; i < p.n_regs; i++) {
		if (i)
			strcat(buf, " ");
		strcat(buf, p.regs[i].alloc);
	}
	reg_plugin_free_contents(&p);
	return buf;
}

static void test_v2_unchanged(void **state)
{
	struct fixture *f = *state;
	struct registry *r = NULL;
	struct bytes before;
	const char *const *names = NULL;
	const int64_t *ids = NULL;
	size_t np = 0, nr = 0;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(reg(f, "csi-controller", "c", "a2"), 0);
	assert_int_equal(dereg(f, "csi-controller", "c", "a2"), 0); /* a tombstone */
	registry_close(f->r);
	f->r = NULL;
	assert_no_side_files(f); /* the last close checkpoints and removes them */
	/* The tombstone is past its TTL: a read-write open would expire it. */
	f->now += 2 * TTL;
	before = read_bytes(f->path);

	r = open_ro_ok(f);
	assert_no_side_files(f); /* no -wal or -shm even while open */
	assert_string_equal(ro_order(r, "csi-node", "p"), "a1 a0");
	assert_null(ro_order(r, "csi-controller", "c"));
	registry_counts(r, &np, &nr);
	assert_int_equal(np, 1);
	assert_int_equal(nr, 2);
	/* csi-extra is configured but not in the file: no plugins, id 0. */
	assert_int_equal(registry_types(r, &names, &ids), 3);
	assert_string_equal(names[2], "csi-extra");
	assert_int_equal(ids[2], 0);
	assert_true(ids[1] > 0);
	check_mutations_refused(r, f->path);
	assert_string_equal(ro_order(r, "csi-node", "p"), "a1 a0");
	registry_close(r);

	assert_same_bytes(f->path, &before);
	assert_no_side_files(f);
	/* registry_check_file reads the same way. */
	before = read_bytes(f->path);
	assert_int_equal(registry_check_file(f->path, NULL, 0), 0);
	assert_same_bytes(f->path, &before);
	assert_no_side_files(f);
	assert_int_equal(query_int(f->path, "SELECT count(*) FROM tombstones"), 1);
	assert_int_equal(query_int(f->path, "SELECT count(*) FROM types WHERE name = 'csi-extra'"),
			 0);
	reopen(f);
}

/* With a writer open (the daemon) the -wal exists and holds the newest
 * commits: the read-only open sees them and changes neither file. */
static void test_v2_with_writer_open(void **state)
{
	struct fixture *f = *state;
	struct registry *r = NULL;
	struct bytes db, wal;
	char walpath[256];

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	snprintf(walpath, sizeof(walpath), "%s-wal", f->path);
	assert_int_equal(access(walpath, F_OK), 0);
	db = read_bytes(f->path);
	wal = read_bytes(walpath);

	r = open_ro_ok(f);
	assert_string_equal(ro_order(r, "csi-node", "p"), "a1 a0");
	check_mutations_refused(r, f->path);
	registry_close(r);

	assert_same_bytes(f->path, &db);
	assert_same_bytes(walpath, &wal);
	/* The writer goes on as before. */
	assert_int_equal(reg(f, "csi-node", "p", "a2"), 0);
	assert_string_equal(order(f, "csi-node", "p"), "a2 a1 a0");
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
    " \"legacy-type\": {"
    "  \"old\": {\"ConnectionInfo\": {\"SocketPath\": \"/run/x.sock\"}, \"AllocID\": \"o\"}},"
    " \"csi-controller\": {"
    "  \"p2\": {\"Name\": \"p2\", \"ConnectionInfo\": {\"SocketPath\": \"/run/csi/m/csi.sock\"},"
    "   \"AllocID\": \"m\", \"Options\": null}}"
    "}}";

static void test_v1_unchanged(void **state)
{
	struct fixture *f = *state;
	struct registry *r = NULL;
	struct reg_plugin p, q;
	struct bytes before;
	int64_t ro_id, ro_seq;

	registry_close(f->r);
	f->r = NULL;
	write_v1(f->path, 1, v1_json);
	assert_no_side_files(f);
	before = read_bytes(f->path);

	r = open_ro_ok(f);
	/* Served as the migration would store it. */
	assert_int_equal(registry_get_plugin(r, "csi-node", "p1", &p), 0);
	assert_int_equal(p.n_regs, 1);
	assert_string_equal(p.regs[0].alloc, "n1");
	assert_string_equal(p.regs[0].socket, "/run/csi/n1/csi.sock");
	assert_string_equal(p.regs[0].version, "1.2");
	assert_int_equal(p.regs[0].kind, REG_KIND_NODE);
	assert_int_equal(p.regs[0].n_options, 2);
	assert_string_equal(p.regs[0].options[0].key, "a");
	assert_string_equal(p.regs[0].options[0].value, "first");
	assert_string_equal(p.regs[0].options[1].key, "z");
	assert_int_equal(p.regs[0].registered_at, f->now);
	reg_plugin_free_contents(&p);
	assert_int_equal(registry_get_plugin(r, "csi-node", "p2", &p), 0);
	assert_int_equal(p.regs[0].kind, REG_KIND_MONOLITH);
	assert_string_equal(p.regs[0].version, "");
	reg_plugin_free_contents(&p);
	assert_int_equal(registry_get_plugin(r, "csi-controller", "p2", &p), 0);
	assert_int_equal(p.regs[0].kind, REG_KIND_CONTROLLER); /* no Type: from the type */
	ro_id = p.id;
	ro_seq = p.regs[0].seq;
	reg_plugin_free_contents(&p);
	assert_int_equal(registry_get_plugin(r, "legacy-type", "old", &p), -ENOENT);
	assert_null(ro_order(r, "csi-extra", "p1"));
	check_mutations_refused(r, f->path);
	registry_close(r);

	assert_same_bytes(f->path, &before);
	assert_no_side_files(f);
	assert_int_equal(query_int(f->path, "PRAGMA user_version"), 1);

	/* The real migration gives the same ids and seq. */
	reopen(f);
	assert_true(exists_with(f, ".v1.bak"));
	assert_int_equal(registry_get_plugin(f->r, "csi-controller", "p2", &q), 0);
	assert_int_equal(q.id, ro_id);
	assert_int_equal(q.regs[0].seq, ro_seq);
	reg_plugin_free_contents(&q);
}

static void test_refusals_change_nothing(void **state)
{
	struct fixture *f = *state;
	struct registry *r = NULL;
	struct bytes before;
	char err[REG_ERR_MAX] = "";

	/* A version-1 entry that fails validation: refused, file as it was. */
	registry_close(f->r);
	f->r = NULL;
	write_v1(f->path, 1,
		 "{\"Plugins\": {\"csi-node\": {\"p/1\": {\"AllocID\": \"a\","
		 " \"ConnectionInfo\": {\"SocketPath\": \"/a.sock\"}}}}}");
	before = read_bytes(f->path);
	assert_int_equal(open_ro(f, &r, err, sizeof(err)), -EINVAL);
	assert_null(r);
	assert_non_null(strstr(err, "version 1"));
	assert_non_null(strstr(err, "Plugins.csi-node"));
	assert_same_bytes(f->path, &before);
	assert_no_side_files(f);

	/* A newer schema: -ENOTSUP, unchanged. */
	unlink(f->path);
	reopen(f);
	registry_close(f->r);
	f->r = NULL;
	exec_sql(f->path, "PRAGMA user_version = 6");
	before = read_bytes(f->path);
	assert_int_equal(open_ro(f, &r, err, sizeof(err)), -ENOTSUP);
	assert_non_null(strstr(err, "newer"));
	assert_same_bytes(f->path, &before);
	assert_no_side_files(f);

	/* Not a database: quick_check still runs. */
	exec_sql(f->path, "PRAGMA user_version = 5");
	{
		FILE *g = fopen(f->path, "wb");

		assert_non_null(g);
		assert_int_equal(fputs("this is not an SQLite database, not at all.......", g) >= 0,
				 1);
		fclose(g);
	}
	before = read_bytes(f->path);
	assert_int_equal(open_ro(f, &r, err, sizeof(err)), -EIO);
	assert_non_null(strstr(err, "integrity check failed"));
	assert_same_bytes(f->path, &before);

	/* An empty file is an empty registry and stays empty. */
	{
		FILE *g = fopen(f->path, "wb");

		assert_non_null(g);
		fclose(g);
	}
	r = open_ro_ok(f);
	registry_counts(r, NULL, NULL);
	assert_null(ro_order(r, "csi-node", "p"));
	registry_close(r);
	before = read_bytes(f->path);
	assert_int_equal(before.n, 0);
	free(before.p);
	assert_no_side_files(f);

	/* A missing file is -ENOENT and is not created. */
	unlink(f->path);
	r = NULL;
	assert_int_equal(open_ro(f, &r, err, sizeof(err)), -ENOENT);
	assert_null(r);
	assert_non_null(strstr(err, f->path));
	assert_int_equal(access(f->path, F_OK), -1);
	reopen(f);
}

/* A transaction that did not end in rollback-journal mode: a child changes
 * every registration's version, with a cache so small that the changed
 * pages reach the file, and dies before its commit (as a migration killed
 * or failed halfway), leaving the file changed and its hot -journal. */
static void leave_hot_journal(const char *path)
{
	pid_t pid = fork();
	int status = 0;

	assert_true(pid >= 0);
	if (pid == 0) {
		sqlite3 *db = NULL;
		int rc = sqlite3_open(path, &db);

		if (rc == SQLITE_OK)
			rc = sqlite3_exec(db,
					  "PRAGMA cache_size = 1; BEGIN; "
					  "UPDATE registrations SET version = 'not-committed';",
					  NULL, NULL, NULL);
		_exit(rc == SQLITE_OK ? 0 : 1); /* no COMMIT, no close */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_hot_journal(void **state)
{
	struct fixture *f = *state;
	struct registry *r = NULL;
	struct reg_plugin p;
	struct bytes before, journal;
	char jpath[160], err[REG_ERR_MAX] = "";

	for (int i = 0; i < 200; i++) {
		char name[16];

		snprintf(name, sizeof(name), "p%d", i);
		assert_int_equal(reg(f, "csi-node", name, "a0"), 0);
	}
	registry_close(f->r);
	f->r = NULL;
	exec_sql(f->path, "PRAGMA journal_mode = DELETE");
	leave_hot_journal(f->path);
	snprintf(jpath, sizeof(jpath), "%s-journal", f->path);
	assert_int_equal(access(jpath, F_OK), 0);
	/* The change reached the file: read as it is (immutable: the journal
	 * ignored), versions are changed. */
	{
		char uri[200];
		sqlite3 *db = NULL;
		sqlite3_stmt *st = NULL;

		snprintf(uri, sizeof(uri), "file:%s?immutable=1", f->path);
		assert_int_equal(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
						 NULL),
				 SQLITE_OK);
		assert_int_equal(sqlite3_prepare_v2(db,
						    "SELECT count(*) FROM registrations WHERE "
						    "version = 'not-committed'",
						    -1, &st, NULL),
				 SQLITE_OK);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_true(sqlite3_column_int(st, 0) > 0);
		sqlite3_finalize(st);
		sqlite3_close(db);
	}
	before = read_bytes(f->path);
	journal = read_bytes(jpath);

	/* Checked as the next open will see it: rolled back, on a copy; also
	 * through a symlink (SQLite names the journal after its target). */
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 1);
	{
		char link[200];

		snprintf(link, sizeof(link), "%s/link.db", f->dir);
		assert_int_equal(symlink(f->path, link), 0);
		if (registry_check_file(link, err, sizeof(err)) != 1)
			fail_msg("through a symlink: %s", err);
		unlink(link);
	}
	r = open_ro_ok(f);
	memset(&p, 0, sizeof(p));
	assert_int_equal(registry_get_plugin(r, "csi-node", "p0", &p), 0);
	assert_int_equal(p.n_regs, 1);
	assert_string_equal(p.regs[0].version, "");
	reg_plugin_free_contents(&p);
	registry_close(r);
	/* Both files as they were, nothing left in them. */
	assert_same_bytes(f->path, &before);
	assert_same_bytes(jpath, &journal);

	/* The writable open rolls the file back: the same registrations. */
	reopen(f);
	assert_int_equal(access(jpath, F_OK), -1);
	assert_string_equal(active(f, "csi-node", "p199"), "a0");
	assert_int_equal(query_int(f->path, "SELECT count(*) FROM registrations WHERE version = "
					    "'not-committed'"),
			 0);
	assert_int_equal(registry_check_file(f->path, NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_v2_unchanged),
	    T(test_v2_with_writer_open),
	    T(test_v1_unchanged),
	    T(test_refusals_change_nothing),
	    T(test_hot_journal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
