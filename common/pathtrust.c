/* SPDX-License-Identifier: MIT */
#include "pathtrust.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"

#define TRUST_DEPTH 8 /* symlinks followed, at most */

static bool trusted_uid(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* Whether the directory st (at d) is safe; else fills err. */
static int check_dir(const char *what, const char *path, const char *d, const struct stat *st,
		     char *err, size_t errlen)
{
	bool sticky = (st->st_mode & S_ISVTX) != 0;

	if (!trusted_uid(st->st_uid))
		return plugfs_errf(err, errlen, -EPERM,
				   "%s `%s': directory `%s' is owned by uid %u, not root or uid %u: "
				   "it could change what plugfs opens there; use a directory of "
				   "root's",
				   what, path, d, (unsigned)st->st_uid, (unsigned)geteuid());
	if ((st->st_mode & S_IWOTH) && !sticky)
		return plugfs_errf(err, errlen, -EPERM,
				   "%s `%s': directory `%s' is writable by others (mode %04o) "
				   "without the sticky bit: anyone could replace what plugfs opens "
				   "there; remove o+w or use another directory",
				   what, path, d, (unsigned)(st->st_mode & 07777));
	if ((st->st_mode & S_IWGRP) && !sticky && st->st_gid != 0)
		return plugfs_errf(err, errlen, -EPERM,
				   "%s `%s': directory `%s' is writable by group %u (mode %04o) "
				   "without the sticky bit: its members could replace what plugfs "
				   "opens there; remove g+w or use another directory",
				   what, path, d, (unsigned)st->st_gid, (unsigned)(st->st_mode & 07777));
	return 0;
}

/* Checks the directories of path (all its components when whole, else all
 * but the last); orig is the path named in messages. */
static int walk(const char *what, const char *orig, const char *path, bool whole, int depth,
		char *err, size_t errlen)
{
	char cur[PATH_MAX], next[PATH_MAX];
	const char *p = path;
	struct stat st;
	int rc;

	if (path[0] != '/')
		return plugfs_errf(err, errlen, -EINVAL, "%s `%s': must be an absolute path", what,
				   orig);
	if (lstat("/", &st) != 0)
		return plugfs_errf(err, errlen, -errno, "%s `%s': `/': %s", what, orig,
				   strerror(errno));
	if ((rc = check_dir(what, orig, "/", &st, err, errlen)) < 0)
		return rc;
	strcpy(cur, "");
	for (;;) {
		const char *end;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			return 0;
		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		/* The last component is not a directory of the path. */
		if (!whole && !end)
			return 0;
		if (!whole && end && end[strspn(end, "/")] == '\0')
			return 0;
		if ((size_t)snprintf(next, sizeof(next), "%s/%.*s", cur, (int)n, p) >= sizeof(next))
			return plugfs_errf(err, errlen, -ENAMETOOLONG, "%s `%s': too long", what,
					   orig);
		p += n;
		if (lstat(next, &st) != 0) {
			if (errno == ENOENT)
				return 0; /* created by us, under a trusted directory */
			return plugfs_errf(err, errlen, -errno, "%s `%s': `%s': %s", what, orig,
					   next, strerror(errno));
		}
		if (S_ISLNK(st.st_mode)) {
			char *target;

			if (!trusted_uid(st.st_uid))
				return plugfs_errf(
				    err, errlen, -EPERM,
				    "%s `%s': `%s' is a symlink owned by uid %u, not root or uid %u: "
				    "refusing to follow it",
				    what, orig, next, (unsigned)st.st_uid, (unsigned)geteuid());
			if (depth >= TRUST_DEPTH)
				return plugfs_errf(err, errlen, -ELOOP,
						   "%s `%s': too many symlinks", what, orig);
			target = realpath(next, NULL);
			if (!target)
				return errno == ENOENT
					   ? 0
					   : plugfs_errf(err, errlen, -errno, "%s `%s': `%s': %s",
							 what, orig, next, strerror(errno));
			rc = walk(what, orig, target, true, depth + 1, err, errlen);
			snprintf(cur, sizeof(cur), "%s", strcmp(target, "/") == 0 ? "" : target);
			free(target);
			if (rc < 0)
				return rc;
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			return plugfs_errf(err, errlen, -ENOTDIR, "%s `%s': `%s' is not a directory",
					   what, orig, next);
		if ((rc = check_dir(what, orig, next, &st, err, errlen)) < 0)
			return rc;
		memcpy(cur, next, strlen(next) + 1);
	}
}

int plugfs_path_trust(const char *what, const char *path, unsigned flags, char *err,
		      size_t errlen)
{
	struct stat st;
	int rc;

	if (!path || !path[0])
		return plugfs_errf(err, errlen, -EINVAL, "%s: missing", what);
	if ((rc = walk(what, path, path, false, 0, err, errlen)) < 0)
		return rc;
	if (flags & PLUGFS_TRUST_PARENTS_ONLY)
		return 0;
	if (lstat(path, &st) != 0)
		return 0; /* does not exist (yet), or the open says why */
	if (S_ISLNK(st.st_mode))
		return plugfs_errf(err, errlen, -ELOOP,
				   "%s `%s': is a symlink (to whatever someone made it point at): "
				   "refusing to follow it; name the file itself",
				   what, path);
	if (!trusted_uid(st.st_uid))
		return plugfs_errf(err, errlen, -EPERM,
				   "%s `%s': owned by uid %u, not root or uid %u: refusing it", what,
				   path, (unsigned)st.st_uid, (unsigned)geteuid());
	return 0;
}
