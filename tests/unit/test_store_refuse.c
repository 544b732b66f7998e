/* SPDX-License-Identifier: MIT */
/*
 * A refused open writes nothing: the state file, its -wal and any backup
 * are byte for byte as they were.  And an open refuses every row that
 * `state check' refuses, with the same words (one rule set).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "registry.h"
#include "test_registry_util.h"

/* The whole content of path (NULL when it does not exist); *len its size. */
static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	long n;

	*len = 0;
	if (!fp)
		return NULL;
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	assert_true(n >= 0);
	rewind(fp);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

struct snap {
	char *db, *wal;
	size_t db_len, wal_len;
};

static void snap_take(struct fixture *f, struct snap *s)
{
	char wal[256];

	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	s->db = slurp(f->path, &s->db_len);
	s->wal = slurp(wal, &s->wal_len);
}

/* The state file and its -wal are as in s (a -wal that was there still is). */
static void snap_assert_same(struct fixture *f, const struct snap *s)
{
	struct snap now;

	snap_take(f, &now);
	assert_non_null(now.db);
	assert_int_equal(now.db_len, s->db_len);
	assert_memory_equal(now.db, s->db, s->db_len);
	if (s->wal) {
		assert_non_null(now.wal);
		assert_int_equal(now.wal_len, s->wal_len);
		assert_memory_equal(now.wal, s->wal, s->wal_len);
	} else {
		assert_null(now.wal);
	}
	free(now.db);
	free(now.wal);
}

static void snap_free(struct snap *s)
{
	free(s->db);
	free(s->wal);
}

static void close_registry(struct fixture *f)
{
	registry_close(f->r);
	f->r = NULL;
}

/* Removes the state file and its companions. */
static void store_remove(struct fixture *f)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal", ".v1.bak"};
	char p[256];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", f->path, suffixes[i]);
		unlink(p);
	}
}

static void copy_file(const char *from, const char *to)
{
	size_t len;
	char *buf = slurp(from, &len);
	FILE *fp = fopen(to, "wb");

	assert_non_null(buf);
	assert_non_null(fp);
	assert_int_equal(fwrite(buf, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
	free(buf);
}

/* Another database's WAL, not checkpointed, beside a good state file: the
 * open fails (the pages it would read are not this file's) and closing the
 * connection must not checkpoint that WAL into the file, nor delete it. */
static void test_foreign_wal_refused_unchanged(void **state)
{
	struct fixture *f = *state;
	char other[256], other_wal[300], wal[256], err[REG_ERR_MAX] = "", name[16];
	sqlite3 *db = NULL;
	struct snap before;

	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "a%d", i);
		assert_int_equal(reg(f, "csi-node", i % 2 ? "p" : "q", name), 0);
	}
	close_registry(f);
	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	assert_int_equal(access(wal, F_OK), -1); /* checkpointed at close */

	snprintf(other, sizeof(other), "%s/other.db", f->dir);
	snprintf(other_wal, sizeof(other_wal), "%s-wal", other);
	exec_sql(other, "PRAGMA journal_mode = WAL; CREATE TABLE u(y, z);"
			"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c"
			" WHERE i < 500) INSERT INTO u SELECT i, randomblob(50) FROM c");
	assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "UPDATE u SET z = randomblob(50) WHERE y % 50 = 0",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	copy_file(other_wal, wal);
	sqlite3_close(db);
	unlink(other);
	unlink(other_wal);
	snprintf(other, sizeof(other), "%s/other.db-shm", f->dir);
	unlink(other);

	snap_take(f, &before);
	assert_non_null(before.wal);
	assert_true(try_open(f, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, f->path));
	print_message("refused: %s\n", err);
	snap_assert_same(f, &before);
	/* Twice: the first refusal left nothing that makes the second differ. */
	assert_true(try_open(f, err, sizeof(err)) < 0);
	snap_assert_same(f, &before);
	snap_free(&before);
	unlink(wal);
}

/* A version-1 file whose migration fails is left as it was, and no
 * backup of it is left behind. */
static void test_failed_migration_leaves_no_backup(void **state)
{
	struct fixture *f = *state;
	char bak[256], err[REG_ERR_MAX] = "";
	struct snap before;

	close_registry(f);
	write_v1(f->path, 1,
		 "{\"Plugins\": {\"csi-node\": {\"p1\": {\"AllocID\": \"a/b\","
		 " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}");
	snprintf(bak, sizeof(bak), "%s.v1.bak", f->path);
	snap_take(f, &before);
	assert_int_equal(try_open(f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cannot migrate version 1: Plugins.csi-node.p1: alloc `a/b'"));
	assert_int_equal(access(bak, F_OK), -1);
	snap_assert_same(f, &before);
	snap_free(&before);
	unlink(f->path);
	reopen(f);
}

/* An earlier backup is never replaced, and a symlink planted where the
 * backup goes is not followed: the migration is refused, nothing written. */
static void test_backup_never_replaced(void **state)
{
	struct fixture *f = *state;
	char bak[256], target[256], err[REG_ERR_MAX] = "";
	struct snap before;
	size_t len;
	char *old;

	close_registry(f);
	write_v1(f->path, 1,
		 "{\"Plugins\": {\"csi-node\": {\"p1\": {\"AllocID\": \"a\","
		 " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}");
	snprintf(bak, sizeof(bak), "%s.v1.bak", f->path);
	exec_sql(bak, "CREATE TABLE earlier(x)");
	old = slurp(bak, &len);
	snap_take(f, &before);
	assert_int_equal(try_open(f, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "move the old backup away first"));
	assert_non_null(strstr(err, bak));
	snap_assert_same(f, &before);
	{
		size_t n;
		char *now = slurp(bak, &n);

		assert_int_equal(n, len);
		assert_memory_equal(now, old, len);
		free(now);
	}
	free(old);
	unlink(bak);

	snprintf(target, sizeof(target), "%s/elsewhere.db", f->dir);
	assert_int_equal(symlink(target, bak), 0);
	assert_int_equal(try_open(f, err, sizeof(err)), -EEXIST);
	assert_int_equal(access(target, F_OK), -1);
	snap_assert_same(f, &before);
	snap_free(&before);
	unlink(bak);

	/* With the way clear, the migration runs and leaves its backup. */
	reopen(f);
	assert_int_equal(access(bak, F_OK), 0);
}

/* A migration killed between its backup and its commit leaves the file at
 * version 1 and its backup beside it: the next open takes that backup as
 * its own (the same database, row for row) and migrates.  A backup that
 * differs in one row is another file's: refused, untouched. */
static void test_backup_of_killed_migration_taken(void **state)
{
	struct fixture *f = *state;
	static const char json[] = "{\"Plugins\": {\"csi-node\": {\"p1\": {\"AllocID\": \"a\","
				   " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}";
	char bak[256], err[REG_ERR_MAX] = "";
	struct snap before;
	size_t len, n;
	char *old, *now;

	close_registry(f);
	snprintf(bak, sizeof(bak), "%s.v1.bak", f->path);
	write_v1(bak, 1,
		 "{\"Plugins\": {\"csi-node\": {\"p1\": {\"AllocID\": \"b\","
		 " \"ConnectionInfo\": {\"SocketPath\": \"/run/a.sock\"}}}}}");
	write_v1(f->path, 1, json);
	snap_take(f, &before);
	assert_int_equal(try_open(f, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "move the old backup away first"));
	snap_assert_same(f, &before);
	snap_free(&before);

	copy_file(f->path, bak);
	old = slurp(bak, &len);
	assert_int_equal(try_open(f, err, sizeof(err)), 0);
	assert_string_equal(active(f, "csi-node", "p1"), "a");
	now = slurp(bak, &n);
	assert_int_equal(n, len);
	assert_memory_equal(now, old, len);
	free(now);
	free(old);
	assert_int_equal(query_int(bak, "PRAGMA user_version"), 1);
}

struct bad_row {
	const char *what, *sql, *want;
	bool check_differs; /* `state check' names it otherwise */
};

static const struct bad_row bad_rows[] = {
    {"socket with a newline",
     "UPDATE registrations SET socket = '/run/csi/a0/x' || char(10) || '.sock'",
     "table `registrations', row 1 (csi-node/p a0): socket `/run/csi/a0/x\\x0a.sock': must not "
     "contain control characters", false},
    {"socket not UTF-8",
     "UPDATE registrations SET socket = CAST(X'2f61ff2e736f636b' AS TEXT)",
     "table `registrations', row 1 (csi-node/p a0): socket `/a\\xff.sock': must be valid UTF-8", false},
    {"sequence counter below a stored seq", "UPDATE meta SET value = 0 WHERE key = 'seq'",
     "table `meta', row `seq': sequence counter 0 is below a stored seq 1", false},
    {"no sequence counter", "DELETE FROM meta WHERE key = 'seq'",
     "table `meta', row `seq': sequence counter 0 is below a stored seq 1", false},
    {"plugin without registrations and a bad name",
     "INSERT INTO plugins(type_id, name) VALUES(1, '../x')",
     "table `plugins', row 2: name `../x': must be 1-128 characters", false},
    {"type name", "UPDATE types SET name = 'csi node' WHERE name = 'csi-controller'",
     "table `types', row 1: name `csi node': must be 1-128 characters", false},
    {"alloc", "UPDATE registrations SET alloc = 'a/0'",
     "table `registrations', row 1 (csi-node/p a/0): alloc `a/0': must be 1-128", false},
    {"version with an escape", "UPDATE registrations SET version = '1' || char(27)",
     "row 1 (csi-node/p a0): version `1\\x1b': must be printable", false},
    /* quick_check on the file sees the CHECK constraint broken; on the
     * read-only copy `state check' checks it is not, and names the row. */
    {"kind", "PRAGMA ignore_check_constraints = 1; UPDATE registrations SET kind = 'x'",
     "integrity check failed: CHECK constraint failed in registrations", true},
    {"option value", "UPDATE reg_options SET value = 'a' || char(10)",
     "table `reg_options', (key `k' of registration 1): option `k' value `a\\x0a': must be "
     "printable", false},
};

/* Each row `state check' refuses, the open refuses too, with the same
 * message, and writes nothing. */
static void test_open_refuses_what_check_refuses(void **state)
{
	struct fixture *f = *state;
	static const char *const node[] = {"csi-node"};
	struct reg_option opt = {.key = (char *)"k", .value = (char *)"v"};
	struct reg_spec spec = {
	    .name = "p", .alloc = "a0", .socket = "/run/csi/a0/csi.sock", .options = &opt,
	    .n_options = 1};
	char err[REG_ERR_MAX], check_err[REG_ERR_MAX];

	for (size_t i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
		const struct bad_row *b = &bad_rows[i];
		struct snap before;

		print_message("case: %s\n", b->what);
		close_registry(f);
		store_remove(f);
		reopen(f);
		assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
		close_registry(f);
		exec_sql(f->path, b->sql);
		snap_take(f, &before);
		err[0] = check_err[0] = '\0';
		assert_int_equal(registry_check_file(f->path, check_err, sizeof(check_err)), -EIO);
		assert_int_equal(try_open(f, err, sizeof(err)), -EIO);
		if (!strstr(err, b->want))
			fail_msg("%s: got `%s', want `%s'", b->what, err, b->want);
		if (!b->check_differs)
			assert_string_equal(err, check_err);
		assert_non_null(strstr(err, f->path));
		snap_assert_same(f, &before);
		snap_free(&before);
	}
	store_remove(f);
	reopen(f);
}

/* A plugin whose list emptied keeps its row: valid, loaded. */
static void test_open_accepts_empty_plugin(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	close_registry(f);
	exec_sql(f->path, "INSERT INTO plugins(type_id, name) VALUES(2, 'never')");
	assert_int_equal(registry_check_file(f->path, NULL, 0), 0);
	reopen(f);
	assert_null(active(f, "csi-node", "p"));
}

/* A version-1 socket path that is not UTF-8 is refused by the migration
 * (and by `state check'), the file left version 1, no backup. */
static void test_v1_socket_not_utf8_refused(void **state)
{
	struct fixture *f = *state;
	char bak[256], err[REG_ERR_MAX] = "", check_err[REG_ERR_MAX] = "";
	struct snap before;

	close_registry(f);
	write_v1(f->path, 1,
		 "{\"Plugins\": {\"csi-node\": {\"p1\": {\"AllocID\": \"a\","
		 " \"ConnectionInfo\": {\"SocketPath\": \"/a\xff\xfe.sock\"}}}}}");
	snprintf(bak, sizeof(bak), "%s.v1.bak", f->path);
	snap_take(f, &before);
	assert_int_equal(registry_check_file(f->path, check_err, sizeof(check_err)), -EIO);
	assert_non_null(strstr(check_err, "socket `/a\\xff\\xfe.sock': must be valid UTF-8"));
	assert_int_equal(try_open(f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cannot migrate version 1: Plugins.csi-node.p1: socket "
				    "`/a\\xff\\xfe.sock': must be valid UTF-8"));
	assert_int_equal(access(bak, F_OK), -1);
	snap_assert_same(f, &before);
	snap_free(&before);
	store_remove(f);
	reopen(f);
}

/* An index that does not match its table, damage only integrity_check
 * sees: the rows pass their check and load (the check runs beside them,
 * on its own connection and thread), and the open is still refused, in
 * the integrity check's words, before anything is written; `state check'
 * refuses it too.  With and without a -wal beside the file. */
static void test_damaged_index_refused_after_load(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX], check_err[REG_ERR_MAX], name[16];

	for (int with_wal = 0; with_wal < 2; with_wal++) {
		struct snap before;

		close_registry(f);
		store_remove(f);
		reopen(f);
		for (int i = 0; i < 2000; i++) {
			snprintf(name, sizeof(name), "a%d", i);
			assert_int_equal(reg(f, "csi-node", i % 2 ? "p" : "q", name), 0);
		}
		close_registry(f);
		/* The index made partial (WHERE 0) so that an update of the
		 * table skips it, then given its definition back. */
		exec_sql(f->path, "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = "
				  "'CREATE INDEX registrations_alloc ON registrations(alloc) WHERE 0'"
				  " WHERE name = 'registrations_alloc'");
		exec_sql(f->path, "UPDATE registrations SET alloc = 'b' || alloc WHERE id % 7 = 0");
		exec_sql(f->path, "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = "
				  "'CREATE INDEX registrations_alloc ON registrations(alloc)'"
				  " WHERE name = 'registrations_alloc'");
		if (with_wal) {
			/* A commit left in the -wal: the connection keeps it
			 * (no checkpoint on close). */
			sqlite3 *db = NULL;
			int persist = 1;

			assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
			assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode = WAL; UPDATE meta SET "
							  "value = value WHERE key = 'seq'",
						      NULL, NULL, NULL),
					 SQLITE_OK);
			sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
			sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
			assert_int_equal(sqlite3_close(db), SQLITE_OK);
		}
		snap_take(f, &before);
		assert_int_equal(before.wal != NULL, with_wal);
		assert_int_equal(try_open(f, err, sizeof(err)), -EIO);
		if (!strstr(err, "integrity check failed") || !strstr(err, "registrations_alloc"))
			fail_msg("got `%s', want the integrity check's refusal", err);
		assert_non_null(strstr(err, f->path));
		snap_assert_same(f, &before);
		assert_int_equal(registry_check_file(f->path, check_err, sizeof(check_err)), -EIO);
		assert_non_null(strstr(check_err, "registrations_alloc"));
		snap_assert_same(f, &before);
		snap_free(&before);
	}
	store_remove(f);
	reopen(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_foreign_wal_refused_unchanged),
	    T(test_failed_migration_leaves_no_backup),
	    T(test_backup_never_replaced),
	    T(test_backup_of_killed_migration_taken),
	    T(test_open_refuses_what_check_refuses),
	    T(test_open_accepts_empty_plugin),
	    T(test_v1_socket_not_utf8_refused),
	    T(test_damaged_index_refused_after_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
