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
#include <stdbool.h>
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
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
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

/* What tells a file changed: its identity, size and modification time. */
static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Both files, before or after the copy; -errno. */
static int stat_both(const char *db, const char *journal, struct stat st[2])
{
	if (stat(db, &st[0]) != 0 || stat(journal, &st[1]) != 0)
		return -errno;
	return 0;
}

int store_hot_copy_open(struct store *s, const char *path, char **dir_out, char *err,
			size_t errlen)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], copy[PATH_MAX + 16], src[PATH_MAX + 16], dst[PATH_MAX + 32],
	    wal[PATH_MAX + 16], real[PATH_MAX];
	struct stat before[2], after[2], w;
	int rc;

	*dir_out = NULL;
	/* SQLite names the journal after the file a symlink leads to. */
	if (!realpath(path, real))
		return plugfs_errf(err, errlen, -errno, "state file `%s': %s", path,
				   strerror(errno));
	if (snprintf(src, sizeof(src), "%s-journal", real) >= (int)sizeof(src) ||
	    snprintf(wal, sizeof(wal), "%s-wal", real) >= (int)sizeof(wal))
		return plugfs_errf(err, errlen, -ENAMETOOLONG, "state file `%s': %s", path,
				   strerror(ENAMETOOLONG));
	/* A hot journal and a -wal together is no state plugfs leaves: the
	 * copy would lack the -wal's commits. */
	if (stat(wal, &w) == 0 && w.st_size > 0)
		return plugfs_errf(err, errlen, -EIO,
				   "state file `%s': it has both a hot journal `%s' (a transaction "
				   "that did not end) and a non-empty `%s': not a state plugfs "
				   "leaves; keep all three for a person",
				   path, src, wal);
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
	if ((rc = stat_both(real, src, before)) < 0 || (rc = copy_file(real, copy)) < 0 ||
	    (rc = copy_file(src, dst)) < 0 || (rc = stat_both(real, src, after)) < 0) {
		plugfs_errf(err, errlen, rc,
			    "state file `%s': it has a hot journal `%s' (a transaction that did "
			    "not end); copying both into %s to roll the copy back: %s",
			    path, src, dir, strerror(-rc));
		goto fail;
	}
	/* Nothing is locked while they are copied: a `plugfs mount' starting
	 * meanwhile rolls the file back itself. */
	if (!same_file(&before[0], &after[0]) || !same_file(&before[1], &after[1])) {
		rc = plugfs_errf(err, errlen, -EAGAIN,
				 "state file `%s': it or its hot journal `%s' changed while being "
				 "copied to roll the copy back (a `plugfs mount' starting?); try "
				 "again",
				 path, src);
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
