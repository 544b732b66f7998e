/* SPDX-License-Identifier: MIT */
/*
 * A state file with a hot rollback journal beside it, read without writing
 * it (store_open_copy: `state check', `state dump').
 *
 * A transaction that failed halfway in rollback-journal mode (the version-1
 * migration on a failing disk, or a process killed inside it) leaves
 * `<path>-journal': the pages as they were before it.  The next writable
 * open rolls it back; a read-only connection cannot, and SQLite refuses to
 * read the file (SQLITE_READONLY_ROLLBACK, "attempt to write a readonly
 * database").  To read what the next `plugfs mount' will see, the file and
 * its journal are copied into a private directory and the copy is opened
 * for writing there: SQLite rolls the copy back, and the file and its
 * journal are left as they were.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "store.h"

/* Copies src to dst (created, mode 0600); 0 or -errno. */
static int copy_file(const char *src, const char *dst)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), out = -1, rc = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0) {
				if (errno == EINTR)
					continue;
				rc = -errno;
				goto out;
			}
			off += w;
		}
	}
out:
	if (out >= 0 && close(out) != 0 && rc == 0)
		rc = -errno;
	close(in);
	return rc;
}

int store_hot_copy_open(struct store *s, const char *path, char **dir_out, char *err,
			size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], copy[PATH_MAX + 16], src[PATH_MAX + 16], dst[PATH_MAX + 32];
	int rc;

	*dir_out = NULL;
	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (snprintf(dir, sizeof(dir), "%s/plugfs-rollback.XXXXXX", tmp) >= (int)sizeof(dir))
		errno = ENAMETOOLONG;
	else if (mkdtemp(dir))
		errno = 0;
	if (errno)
		return plugfs_errf(err, errlen, -errno,
				   "state file `%s': it has a hot journal `%s-journal' (a "
				   "transaction that did not end); a private directory to roll "
				   "back a copy of it in: %s/plugfs-rollback.XXXXXX: %s",
				   path, path, tmp, strerror(errno));
	snprintf(copy, sizeof(copy), "%s/state.db", dir);
	snprintf(dst, sizeof(dst), "%s-journal", copy);
	snprintf(src, sizeof(src), "%s-journal", path);
	if ((rc = copy_file(path, copy)) < 0 || (rc = copy_file(src, dst)) < 0) {
		plugfs_errf(err, errlen, rc,
			    "state file `%s': it has a hot journal `%s' (a transaction that did "
			    "not end); copying both into %s to roll the copy back: %s",
			    path, src, dir, strerror(-rc));
		goto fail;
	}
	/* The first read of a writable connection rolls the copy back. */
	rc = sqlite3_open_v2(copy, &s->db, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(s->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		rc = plugfs_errf(err, errlen, reg_sqlite_errno(rc),
				 "state file `%s': rolling back a copy of it with its hot journal "
				 "`%s': %s",
				 path, src, s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_extended_result_codes(s->db, 1);
	if (!(*dir_out = strdup(dir))) {
		rc = plugfs_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	return 0;
fail:
	if (s->db) {
		sqlite3_close(s->db);
		s->db = NULL;
	}
	store_hot_copy_remove(dir);
	return rc;
}

void store_hot_copy_remove(const char *dir)
{
	char p[PATH_MAX + 32];

	if (!dir)
		return;
	snprintf(p, sizeof(p), "%s/state.db", dir);
	store_remove_files(p);
	rmdir(dir);
}
