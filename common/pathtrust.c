/* SPDX-License-Identifier: MIT */
#include "pathtrust.h"

#include <errno.h>
#include <fcntl.h>
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

/* dfd's path `shown' plus the component name[0, n), for messages: cut to
 * outlen - 1 bytes when longer. */
static void join_shown(char *out, size_t outlen, const char *shown, const char *name, size_t n)
{
	if (snprintf(out, outlen, "%s%s%.*s", shown, strcmp(shown, "/") == 0 ? "" : "/", (int)n,
		     name) < 0)
		out[0] = '\0';
}

/* Opens path, from base when it is relative, by components (see
 * plugfs_trusted_dir_open); shown is base's path, for messages.  An fd or
 * -errno. */
static int open_walk(const char *what, const char *orig, int base, const char *shown,
		     const char *path, int depth, char *err, size_t errlen)
{
	char at[PATH_MAX], next[PATH_MAX], target[PATH_MAX];
	const char *p = path;
	struct stat st;
	int cur, fd, rc;

	if (path[0] == '/') {
		cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		snprintf(at, sizeof(at), "/");
	} else {
		cur = fcntl(base, F_DUPFD_CLOEXEC, 0);
		snprintf(at, sizeof(at), "%s", shown);
	}
	if (cur < 0)
		return plugfs_errf(err, errlen, -errno, "%s `%s': `%s': %s", what, orig, at,
				   strerror(errno));
	for (;;) {
		const char *end;
		size_t n;
		ssize_t len;

		while (*p == '/')
			p++;
		if (!*p)
			return cur;
		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n >= NAME_MAX + 1) {
			rc = plugfs_errf(err, errlen, -ENAMETOOLONG, "%s `%s': too long", what, orig);
			goto fail;
		}
		join_shown(next, sizeof(next), at, p, n);
		memcpy(target, p, n);
		target[n] = '\0';
		p += n;
		if (strcmp(target, ".") == 0)
			continue;
		fd = openat(cur, target, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) != 0) {
			rc = plugfs_errf(err, errlen, -errno, "%s `%s': `%s': %s", what, orig, next,
					 strerror(errno));
			if (fd >= 0)
				close(fd);
			goto fail;
		}
		if (S_ISLNK(st.st_mode)) {
			if (!trusted_uid(st.st_uid)) {
				rc = plugfs_errf(
				    err, errlen, -EPERM,
				    "%s `%s': `%s' is a symlink owned by uid %u, not root or uid %u: "
				    "refusing to follow it",
				    what, orig, next, (unsigned)st.st_uid, (unsigned)geteuid());
				close(fd);
				goto fail;
			}
			len = depth < TRUST_DEPTH ? readlinkat(fd, "", target, sizeof(target) - 1)
						  : -1;
			close(fd);
			if (depth >= TRUST_DEPTH) {
				rc = plugfs_errf(err, errlen, -ELOOP, "%s `%s': too many symlinks",
						 what, orig);
				goto fail;
			}
			if (len < 0 || (size_t)len >= sizeof(target) - 1) {
				rc = plugfs_errf(err, errlen, len < 0 ? -errno : -ENAMETOOLONG,
						 "%s `%s': `%s': cannot read the symlink", what,
						 orig, next);
				goto fail;
			}
			target[len] = '\0';
			fd = open_walk(what, orig, cur, at, target, depth + 1, err, errlen);
			if (fd < 0) {
				rc = fd;
				goto fail;
			}
			snprintf(at, sizeof(at), "%s", next);
			close(cur);
			cur = fd;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			rc = plugfs_errf(err, errlen, -ENOTDIR, "%s `%s': `%s' is not a directory",
					 what, orig, next);
			goto fail;
		}
		snprintf(at, sizeof(at), "%s", next);
		close(cur);
		cur = fd;
	}
fail:
	close(cur);
	return rc;
}

int plugfs_trusted_dir_open(const char *what, const char *dir, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	if (!dir || dir[0] != '/')
		return plugfs_errf(err, errlen, -EINVAL, "%s `%s': must be an absolute path", what,
				   dir ? dir : "");
	fd = open_walk(what, dir, -1, "/", dir, 0, err, errlen);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) != 0) {
		rc = plugfs_errf(err, errlen, -errno, "%s `%s': %s", what, dir, strerror(errno));
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		rc = plugfs_errf(err, errlen, -ENOTDIR, "%s `%s': not a directory", what, dir);
		goto fail;
	}
	if ((rc = check_dir(what, dir, dir, &st, err, errlen)) < 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return rc;
}

/* Why the directory st (d, above the one opened) could be swapped by
 * someone other than root, as err; 0 when it cannot. */
static int check_above(const char *what, const char *dir, const char *d, const struct stat *st,
		       char *err, size_t errlen)
{
	bool sticky = (st->st_mode & S_ISVTX) != 0;
	const char *rule = "expected every directory above it owned by root and writable by no "
			   "one else (or sticky, like /tmp)";

	if (st->st_uid != 0)
		return plugfs_errf(err, errlen, -EPERM,
				   "%s `%s': directory `%s' above it is owned by uid %u, not root: "
				   "its owner could rename what is in it and put another directory "
				   "in its place; %s",
				   what, dir, d, (unsigned)st->st_uid, rule);
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !sticky)
		return plugfs_errf(err, errlen, -EPERM,
				   "%s `%s': directory `%s' above it is writable by %s (mode %04o) "
				   "without the sticky bit: %s could rename what is in it and put "
				   "another directory in its place; %s",
				   what, dir, d, st->st_mode & S_IWOTH ? "others" : "its group",
				   (unsigned)(st->st_mode & 07777),
				   st->st_mode & S_IWOTH ? "anyone" : "its members", rule);
	return 0;
}

int plugfs_root_dir_open(const char *what, const char *dir, struct stat *st, char *err,
			 size_t errlen)
{
	char at[PATH_MAX], name[NAME_MAX + 1];
	const char *p = dir;
	struct stat cst;
	int cur, fd, rc;

	if (!dir || dir[0] != '/')
		return plugfs_errf(err, errlen, -EINVAL, "%s `%s': must be an absolute path", what,
				   dir ? dir : "");
	if (strlen(dir) >= sizeof(at))
		return plugfs_errf(err, errlen, -ENAMETOOLONG, "%s `%s': too long", what, dir);
	cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0 || fstat(cur, &cst) != 0) {
		rc = plugfs_errf(err, errlen, -errno, "%s `%s': `/': %s", what, dir,
				 strerror(errno));
		goto fail;
	}
	snprintf(at, sizeof(at), "/");
	for (;;) {
		const char *end;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		/* cur is a directory above dir: judged before anything in it
		 * is looked up. */
		if ((rc = check_above(what, dir, at, &cst, err, errlen)) < 0)
			goto fail;
		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n > NAME_MAX) {
			rc =
			    plugfs_errf(err, errlen, -ENAMETOOLONG, "%s `%s': too long", what, dir);
			goto fail;
		}
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
			rc =
			    plugfs_errf(err, errlen, -EINVAL,
					"%s `%s': has a `%s' component; expected a normalised path",
					what, dir, name);
			goto fail;
		}
		snprintf(at + strlen(at), sizeof(at) - strlen(at), "%s%s",
			 strcmp(at, "/") == 0 ? "" : "/", name);
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &cst) != 0) {
			rc = -errno;
			if (fd >= 0)
				close(fd);
			plugfs_errf(err, errlen, rc, "%s `%s': `%s': %s", what, dir, at,
				    strerror(-rc));
			goto fail;
		}
		close(cur);
		cur = fd;
		while (*p == '/')
			p++;
		if (S_ISLNK(cst.st_mode)) {
			rc = *p ? plugfs_errf(err, errlen, -ELOOP,
					      "%s `%s': `%s' above it is a symlink: refusing to "
					      "follow it; name the directory by its real path",
					      what, dir, at)
				: plugfs_errf(err, errlen, -ELOOP,
					      "%s `%s' is a symlink; expected a directory", what,
					      dir);
			goto fail;
		}
		if (!S_ISDIR(cst.st_mode)) {
			rc = *p ? plugfs_errf(err, errlen, -ENOTDIR,
					      "%s `%s': `%s' above it is not a directory", what,
					      dir, at)
				: plugfs_errf(err, errlen, -ENOTDIR, "%s `%s' is not a directory",
					      what, dir);
			goto fail;
		}
	}
	/* The directory reached, opened to be read: the inode just checked
	 * ("." never leaves it). */
	fd = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = plugfs_errf(err, errlen, -errno, "%s `%s': cannot open it: %s", what, dir,
				 strerror(errno));
		goto fail;
	}
	close(cur);
	if (st)
		*st = cst;
	return fd;
fail:
	if (cur >= 0)
		close(cur);
	return rc;
}
