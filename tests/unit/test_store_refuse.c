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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_foreign_wal_refused_unchanged),
	    T(test_failed_migration_leaves_no_backup),
	    T(test_backup_never_replaced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
