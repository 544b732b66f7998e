/* SPDX-License-Identifier: MIT */
/*
 * A discovery root read once (discover_scan.h): its trust, each directory
 * below it and its socket, without following anything out of it nor
 * crossing into a mount below it.
 */
#include "discover_scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "err.h"
#include "fsutil.h"
#include "pathtrust.h"
#include "registry.h"
#include "strutil.h"

/* Why st (a directory's) is not trusted, or NULL: owned by root and
 * writable by no one else. */
static const char *untrusted(const struct stat *st)
{
	if (st->st_uid != 0)
		return "owned by a user other than root";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by users other than root (group or other write bit)";
	return NULL;
}

int discover_open_root(const struct plugfs_discover *sec, struct plugfs_own_mount *own,
		       struct stat *st, char *err, size_t errlen)
{
	char q[PLUGFS_QUOTE_MAX], what[REG_NAME_MAX + 32], via[PATH_MAX];
	const char *why;
	struct stat rst;
	int fd;

	plugfs_quote(q, sizeof(q), sec->root);
	snprintf(what, sizeof(what), "[discover.%s] root", sec->name);
	/* A bind mount of the own mount on the way: refused by its path,
	 * before anything there is looked up (lstat and readlink of the
	 * names on the way, each compared with the mount points first). */
	if (own && plugfs_own_mount_check(own, sec->root, via, sizeof(via)) == 1)
		return plugfs_errf(err, errlen, -EXDEV,
				   "%s `%s' leads into plugfs's own mount (at `%s'): never looked "
				   "at; expected a directory outside the mount",
				   what, q, via);
	fd = plugfs_root_dir_open(what, sec->root, &rst, err, errlen);
	if (fd < 0)
		return fd;
	if ((why = untrusted(&rst))) {
		close(fd);
		return plugfs_errf(
		    err, errlen, -EPERM,
		    "%s `%s' is %s; expected a directory owned by root that only root "
		    "may write",
		    what, q, why);
	}
	if (st)
		*st = rst;
	return fd;
}

int discover_check_root(const struct plugfs_discover *sec, struct plugfs_own_mount *own, char *err,
			size_t errlen)
{
	int fd = discover_open_root(sec, own, NULL, err, errlen);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* Adds "ROOT/NAME: why; skipped" to s->skipped.  -ENOMEM. */
__attribute__((format(printf, 4, 5))) static int skip(struct discover_scan *s, const char *root,
						      const char *name, const char *fmt, ...)
{
	char why[256], qr[PLUGFS_QUOTE_MAX], qn[PLUGFS_QUOTE_MAX], *msg = NULL, *nm = strdup(name);
	va_list ap;

	if (!nm)
		return -ENOMEM;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (asprintf(&msg, "%s/%s: %s; skipped", plugfs_quote(qr, sizeof(qr), root),
		     plugfs_quote(qn, sizeof(qn), name), why) < 0) {
		free(nm);
		return -ENOMEM;
	}
	if (PLUGFS_GROW(s->skipped, s->cap_skipped, s->n_skipped, 4) < 0 ||
	    PLUGFS_GROW(s->skipped_name, s->cap_skipped_name, s->n_skipped, 4) < 0) {
		free(msg);
		free(nm);
		return -ENOMEM;
	}
	s->skipped_name[s->n_skipped] = nm;
	s->skipped[s->n_skipped++] = msg;
	return 0;
}

/* One directory entry of the root: found, skipped, or nothing. */
static int scan_entry(const struct plugfs_discover *sec, int rootfd, const char *name,
		      struct discover_scan *s)
{
	struct stat st;
	struct discover_found *f;
	const char *why;
	char *path = NULL, dirpath[PATH_MAX];
	int fd, dfd = -1, rc = 0;

	/* O_PATH, never crossing a mount: a look at what it is that asks
	 * nothing of the file system it is on, nor of one mounted on it. */
	fd = plugfs_open_here(rootfd, sec->root, name, O_PATH);
	if (fd == -ENOENT)
		return 0; /* gone meanwhile */
	if (fd == -EXDEV)
		return skip(s, sec->root, name,
			    "a mount point (another file system mounted on the directory, "
			    "plugfs's own mount perhaps): never entered; expected a directory of "
			    "the root's file system");
	if (fd < 0)
		return skip(s, sec->root, name, "%s", strerror(-fd));
	if (fstat(fd, &st) < 0) {
		rc = skip(s, sec->root, name, "%s", strerror(errno));
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		rc = skip(s, sec->root, name, "a symlink where a directory is expected");
		goto out;
	}
	if (!S_ISDIR(st.st_mode))
		goto out; /* a file: not an allocation */
	if ((why = untrusted(&st))) {
		rc = skip(s, sec->root, name, "%s", why);
		goto out;
	}
	if (reg_validate_name("alloc", name, NULL, 0) < 0) {
		rc = skip(s, sec->root, name,
			  "the directory's name is not a name (1-128 of "
			  "[A-Za-z0-9._-], not starting with a dot)");
		goto out;
	}
	/* The directory opened is the one checked ("." never leaves it). */
	dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		rc = errno == ENOENT ? 0 : skip(s, sec->root, name, "%s", strerror(errno));
		goto out;
	}
	{
		char *d = strdup(name);

		if (!d || PLUGFS_GROW(s->dirs, s->cap_dirs, s->n_dirs, 8) < 0) {
			free(d);
			rc = -ENOMEM;
			goto out;
		}
		s->dirs[s->n_dirs++] = d;
	}
	close(fd);
	snprintf(dirpath, sizeof(dirpath), "%s/%s", sec->root, name);
	fd = plugfs_open_here(dfd, dirpath, sec->socket, O_PATH);
	if (fd == -EXDEV) {
		rc = skip(s, sec->root, name,
			  "its %s is a mount point (another file system mounted on it): never "
			  "entered; expected a socket",
			  sec->socket);
		goto out;
	}
	if (fd < 0 || fstat(fd, &st) < 0)
		goto out; /* no socket yet */
	if (S_ISLNK(st.st_mode)) {
		rc =
		    skip(s, sec->root, name, "its %s is a symlink; expected a socket", sec->socket);
		goto out;
	}
	if (!S_ISSOCK(st.st_mode)) {
		rc = skip(s, sec->root, name, "its %s is not a socket", sec->socket);
		goto out;
	}
	if (asprintf(&path, "%s/%s/%s", sec->root, name, sec->socket) < 0) {
		path = NULL;
		rc = -ENOMEM;
		goto out;
	}
	if (PLUGFS_GROW(s->found, s->cap_found, s->n_found, 8) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	f = &s->found[s->n_found];
	memset(f, 0, sizeof(*f));
	f->alloc = strdup(name);
	if (!f->alloc) {
		rc = -ENOMEM;
		goto out;
	}
	f->socket = path;
	path = NULL;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->ctime = st.st_ctim;
	s->n_found++;
out:
	free(path);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* Oldest change time first; the same time: by alloc. */
static int by_ctime(const void *a, const void *b)
{
	const struct discover_found *x = a, *y = b;

	if (x->ctime.tv_sec != y->ctime.tv_sec)
		return x->ctime.tv_sec < y->ctime.tv_sec ? -1 : 1;
	if (x->ctime.tv_nsec != y->ctime.tv_nsec)
		return x->ctime.tv_nsec < y->ctime.tv_nsec ? -1 : 1;
	return strcmp(x->alloc, y->alloc);
}

int discover_scan_root(const struct plugfs_discover *sec, int rootfd, struct discover_scan *out,
		       char *err, size_t errlen)
{
	struct discover_scan s = {0};
	struct dirent *de;
	DIR *dir = NULL;
	int dupfd, rc = 0;

	memset(out, 0, sizeof(*out));
	/* Its own open file, listed from the start (a held fd's offset is
	 * where the last listing ended). */
	dupfd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dupfd < 0 || !(dir = fdopendir(dupfd))) {
		rc = plugfs_errf(err, errlen, -errno, "[discover.%s] root `%s': cannot list it: %s",
				 sec->name, sec->root, strerror(errno));
		if (dupfd >= 0)
			close(dupfd);
		goto out;
	}
	while ((errno = 0, de = readdir(dir))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((rc = scan_entry(sec, rootfd, de->d_name, &s)) < 0) {
			plugfs_errf(err, errlen, rc, "[discover.%s]: out of memory", sec->name);
			goto out;
		}
	}
	if (errno) {
		rc = plugfs_errf(err, errlen, -errno, "[discover.%s] root `%s': cannot list it: %s",
				 sec->name, sec->root, strerror(errno));
		goto out;
	}
	if (s.n_found > 1)
		qsort(s.found, s.n_found, sizeof(*s.found), by_ctime);
	*out = s;
	memset(&s, 0, sizeof(s));
out:
	if (dir)
		closedir(dir);
	discover_scan_free(&s);
	return rc;
}

int discover_scan_names(const struct plugfs_discover *sec, int rootfd, const char *const *names,
			size_t n, struct discover_scan *out, char *err, size_t errlen)
{
	struct discover_scan s = {0};
	int rc = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		if (strcmp(names[i], ".") == 0 || strcmp(names[i], "..") == 0 ||
		    strchr(names[i], '/'))
			continue;
		if ((rc = scan_entry(sec, rootfd, names[i], &s)) < 0) {
			plugfs_errf(err, errlen, rc, "[discover.%s]: out of memory", sec->name);
			goto out;
		}
	}
	if (s.n_found > 1)
		qsort(s.found, s.n_found, sizeof(*s.found), by_ctime);
	*out = s;
	memset(&s, 0, sizeof(s));
out:
	discover_scan_free(&s);
	return rc;
}

int discover_stat_socket(const struct plugfs_discover *sec, int rootfd, const char *alloc,
			 struct stat *st)
{
	char dirpath[PATH_MAX];
	int dfd = plugfs_open_here(rootfd, sec->root, alloc, O_PATH | O_DIRECTORY), fd, rc = 0;

	if (dfd < 0)
		return dfd;
	snprintf(dirpath, sizeof(dirpath), "%s/%s", sec->root, alloc);
	fd = plugfs_open_here(dfd, dirpath, sec->socket, O_PATH);
	if (fd < 0)
		rc = fd;
	else if (fstat(fd, st) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	close(dfd);
	return rc;
}

void discover_scan_free(struct discover_scan *s)
{
	for (size_t i = 0; i < s->n_found; i++) {
		free(s->found[i].alloc);
		free(s->found[i].socket);
	}
	for (size_t i = 0; i < s->n_skipped; i++) {
		free(s->skipped[i]);
		free(s->skipped_name[i]);
	}
	for (size_t i = 0; i < s->n_dirs; i++)
		free(s->dirs[i]);
	free(s->found);
	free(s->skipped);
	free(s->skipped_name);
	free(s->dirs);
	memset(s, 0, sizeof(*s));
}
