/* SPDX-License-Identifier: MIT */
/*
 * Private to daemon/: what a [discover.NAME] section's root holds, read
 * once (discover_scan.c): the trust rules of the root and of each
 * directory below it, and the sockets found, in the order they were
 * created.  No watching and no identification here: the discovery's
 * watcher scans a root at start, at a reload and at a rescan.
 */
#ifndef PLUGFS_DISCOVER_SCAN_H
#define PLUGFS_DISCOVER_SCAN_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"

/* One socket found: ROOT/<alloc>/SOCKET. */
struct discover_found {
	char *alloc;	       /* the directory's name (a name by the registry's rule) */
	char *socket;	       /* the socket's path, ROOT/<alloc>/SOCKET */
	dev_t dev;	       /* the socket file's device and inode: the same socket */
	ino_t ino;	       /* is the same (dev, ino) */
	struct timespec ctime; /* its change time: when it was created, in practice */
};

/* A root's scan.  found is sorted by ctime, oldest first (ties by alloc);
 * skipped holds one message per entry refused ("ROOT/NAME: why; skipped"),
 * skipped_name[i] the entry's name; dirs the directories trusted (an
 * allocation, with or without its socket yet: each one watched). */
struct discover_scan {
	struct discover_found *found;
	size_t n_found;
	char **skipped;
	char **skipped_name;
	size_t n_skipped;
	char **dirs;
	size_t n_dirs;
	size_t cap_found, cap_skipped, cap_skipped_name, cap_dirs; /* the arrays' room */
};

struct plugfs_own_mount;

/*
 * The trust rule of a discovery root, and the root opened to be held by
 * its descriptor: the path leads nowhere into plugfs's own mount (own,
 * its mount points compared before anything on the way is looked up;
 * NULL: not checked); every component from `/' is opened relative to the
 * one before without following a symlink (none may be one), and every
 * directory above the root is owned by root and writable by no one else
 * unless sticky (plugfs_root_dir_open: nobody but root can rename one and
 * put another root in its place); the root itself is owned by root and
 * writable by no one else (no group or other write bit).  The fd
 * (O_RDONLY, the caller's) with *st its fstat (st may be NULL), or -errno
 * with err naming the section's field `[discover.NAME] root', the path and
 * the rule (-EXDEV: into the own mount; -EPERM, -ELOOP, -ENOTDIR, -ENOENT:
 * refused or gone): the daemon refuses such a config at start and at a
 * reload, the discovery deregisters what it found below.  Any thread.
 */
int discover_open_root(const struct plugfs_discover *sec, struct plugfs_own_mount *own,
		       struct stat *st, char *err, size_t errlen);

/* discover_open_root, the fd closed: 0 or -errno with err. */
int discover_check_root(const struct plugfs_discover *sec, struct plugfs_own_mount *own, char *err,
			size_t errlen);

/*
 * Scans sec's root, rootfd (discover_open_root's; sec->root names it in
 * messages and in the sockets' paths): each directory below it is an
 * allocation (layout alloc) or a plugin (layout plugin), its name the
 * alloc; a directory that is a symlink, that is not owned by root or that
 * anyone but root may write, whose name breaks the name rule, or whose
 * SOCKET is a symlink or not a socket is skipped with a message; so is a
 * mount point (a directory or a SOCKET that another file system is
 * mounted on, plugfs's own mount among them: never entered, nor looked
 * up, plugfs_open_here); a directory without SOCKET yet is neither found
 * nor skipped; anything but a directory (a file) is ignored.  Nothing is
 * followed out of the root: every step is relative to the directory above
 * it, without following a symlink or crossing a mount.  0 with *out (free
 * with discover_scan_free), or -errno with err (the root cannot be listed,
 * or out of memory).  Any thread.
 */
int discover_scan_root(const struct plugfs_discover *sec, int rootfd, struct discover_scan *out,
		       char *err, size_t errlen);

/*
 * The same for the entries names[0..n) of sec's root only (a rescan of
 * what an event named): a name that is gone is in none of the arrays.
 * 0 or -errno with err, as discover_scan_root.  Any thread.
 */
int discover_scan_names(const struct plugfs_discover *sec, int rootfd, const char *const *names,
			size_t n, struct discover_scan *out, char *err, size_t errlen);

/* The stat of ROOT/alloc/SOCKET, by rootfd and without crossing a mount
 * (as a scan finds it): 0, or -errno (-EXDEV: a mount point on the way).
 * Any thread. */
int discover_stat_socket(const struct plugfs_discover *sec, int rootfd, const char *alloc,
			 struct stat *st);

void discover_scan_free(struct discover_scan *s);

#endif
