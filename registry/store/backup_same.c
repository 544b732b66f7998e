/* SPDX-License-Identifier: MIT */
/*
 * Whether an existing backup holds the database being migrated: what a
 * migration killed after its backup and before its commit leaves behind
 * (the file still at the old version, its backup beside it).  The next
 * start takes that backup as its own instead of refusing for good.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

/* Whether st and su (prepared, same query) give the same rows. */
static bool same_rows(sqlite3_stmt *st, sqlite3_stmt *su)
{
	for (;;) {
		int a = sqlite3_step(st), b = sqlite3_step(su), n;

		if (a != b || (a != SQLITE_ROW && a != SQLITE_DONE))
			return false;
		if (a == SQLITE_DONE)
			return true;
		n = sqlite3_column_count(st);
		if (n != sqlite3_column_count(su))
			return false;
		for (int i = 0; i < n; i++) {
			int t = sqlite3_column_type(st, i), len;

			if (t != sqlite3_column_type(su, i))
				return false;
			if (t == SQLITE_NULL)
				continue;
			if (t == SQLITE_INTEGER) {
				if (sqlite3_column_int64(st, i) != sqlite3_column_int64(su, i))
					return false;
				continue;
			}
			/* Text, blobs and reals compared as their bytes. */
			const void *x = t == SQLITE_BLOB ? sqlite3_column_blob(st, i)
							 : (const void *)sqlite3_column_text(st, i);
			const void *y = t == SQLITE_BLOB ? sqlite3_column_blob(su, i)
							 : (const void *)sqlite3_column_text(su, i);
			len = sqlite3_column_bytes(st, i);
			if (len != sqlite3_column_bytes(su, i) ||
			    (len && memcmp(x, y, (size_t)len)))
				return false;
		}
	}
}

/* The same query on both; false on any error. */
static bool same_query(sqlite3 *a, sqlite3 *b, const char *sql)
{
	sqlite3_stmt *st = NULL, *su = NULL;
	bool same = sqlite3_prepare_v2(a, sql, -1, &st, NULL) == SQLITE_OK &&
		    sqlite3_prepare_v2(b, sql, -1, &su, NULL) == SQLITE_OK && same_rows(st, su);

	sqlite3_finalize(st);
	sqlite3_finalize(su);
	return same;
}

bool store_backup_same(struct store *s, const char *path)
{
	struct stat st;
	sqlite3 *b = NULL, *db = s->db;
	sqlite3_stmt *tables = NULL;
	bool same = false;
	char *sql = NULL;
	int rc;

	/* Only a regular file of ours, not a symlink, nothing beside it
	 * (a -journal: the backup itself was cut short). */
	if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return false;
	sql = sqlite3_mprintf("%s-journal", path);
	if (!sql || access(sql, F_OK) == 0)
		goto out;
	if (sqlite3_open_v2(path, &b, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		goto out;
	if (!same_query(db, b, "PRAGMA user_version") ||
	    !same_query(db, b, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"))
		goto out;
	if (sqlite3_prepare_v2(db,
			       "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
			       -1, &tables, NULL) != SQLITE_OK)
		goto out;
	/* Every row of every table (the backup API copied the pages, so a
	 * scan gives them in the same order). */
	while ((rc = sqlite3_step(tables)) == SQLITE_ROW) {
		sqlite3_free(sql);
		sql = sqlite3_mprintf("SELECT * FROM \"%w\"",
				      (const char *)sqlite3_column_text(tables, 0));
		if (!sql || !same_query(db, b, sql))
			goto out;
	}
	same = rc == SQLITE_DONE;
out:
	sqlite3_finalize(tables);
	sqlite3_free(sql);
	sqlite3_close(b);
	return same;
}
