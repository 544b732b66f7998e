/* SPDX-License-Identifier: MIT */
/*
 * The state file's files, below the rest of the store (calling none of it):
 * removing a file with its -wal, -shm and -journal (store_remove_files), and
 * a backup copy linked into place once complete (store_backup_to, before a
 * migration).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "store.h"

/* Copies src's main database over dst's with the backup API; an SQLite
 * result code. */
int store_backup_db(sqlite3 *dst, sqlite3 *src)
{
	sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
	int rc;

	if (!b)
		return sqlite3_errcode(dst);
	rc = sqlite3_backup_step(b, -1);
	sqlite3_backup_finish(b);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int store_backup_to(struct store *s, const char *dest, char *err, size_t errlen)
{
	struct stat st;
	sqlite3 *d = NULL;
	char *tmp = NULL;
	int fd, rc;

	/* Never an existing backup (it may be the only copy of an earlier
	 * file) nor whatever a symlink there points at. */
	rc = lstat(dest, &st) == 0 ? EEXIST : errno == ENOENT ? 0 : errno;
	if (rc)
		return plugfs_errf(err, errlen, -rc, "state file `%s': backing up to `%s': %s%s",
				   s->path, dest, strerror(rc),
				   rc == EEXIST ? " (move the old backup away first)" : "");
	/* Written beside it and linked into place once complete (link(2)
	 * never replaces): a backup killed halfway leaves only the partial
	 * copy, never a `dest' that the next start would refuse to replace.
	 * A partial copy there is such a leftover: removed. */
	if (asprintf(&tmp, "%s.partial", dest) < 0)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	store_remove_files(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = plugfs_errf(err, errlen, -errno, "state file `%s': backing up to `%s': %s",
				 s->path, tmp, strerror(errno));
		goto out;
	}
	close(fd);
	rc = sqlite3_open_v2(tmp, &d, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK)
		rc = store_backup_db(d, s->db);
	if (rc != SQLITE_OK)
		rc = plugfs_errf(err, errlen, reg_sqlite_errno(rc),
				 "state file `%s': backing up to `%s': %s", s->path, dest,
				 d ? sqlite3_errmsg(d) : sqlite3_errstr(rc));
	sqlite3_close(d);
	if (rc == 0 && link(tmp, dest) < 0)
		rc = plugfs_errf(err, errlen, -errno, "state file `%s': backing up to `%s': %s%s",
				 s->path, dest, strerror(errno),
				 errno == EEXIST ? " (move the old backup away first)" : "");
out:
	store_remove_files(tmp);
	free(tmp);
	return rc;
}

void store_remove_files(const char *path)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
	char *p = NULL;

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		if (asprintf(&p, "%s%s", path, suffixes[i]) < 0)
			return;
		unlink(p);
		free(p);
		p = NULL;
	}
}
