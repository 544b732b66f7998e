/* SPDX-License-Identifier: MIT */
/*
 * Whether a path may be trusted by a privileged process, as sshd's
 * StrictModes and systemd-tmpfiles judge it: nobody but root or the
 * process's effective uid can have put, or can still change, what the path
 * leads to.
 */
#ifndef PLUGFS_PATHTRUST_H
#define PLUGFS_PATHTRUST_H

#include <stddef.h>
#include <sys/stat.h>

/* Check only the directories above path, not path itself (a mountpoint,
 * whose lstat could wait on a hung FUSE mount; a socket replaced anyway). */
#define PLUGFS_TRUST_PARENTS_ONLY 1u

/*
 * Walks the absolute path from `/' with lstat, component by component:
 *  - every existing directory is owned by root or the effective uid, and is
 *    writable by its group or others only when it has the sticky bit (like
 *    /tmp) or, for the group, when the group is root's;
 *  - a symlink on the way is followed only when it is owned by root or the
 *    effective uid (its target is then checked the same way);
 *  - path itself (unless PLUGFS_TRUST_PARENTS_ONLY), when it exists, is not
 *    a symlink and is owned by root or the effective uid.
 * A component that does not exist ends the walk (what is missing is created
 * by us, under a trusted directory).  Returns 0, or -EPERM (-ELOOP, -errno)
 * with "<what> `<path>': directory `D' is ...: <why>" in err.
 */
int plugfs_path_trust(const char *what, const char *path, unsigned flags, char *err,
		      size_t errlen);

/*
 * Opens the directory dir (absolute) for the *at() calls of a privileged
 * writer, as O_PATH: every component is opened relative to the one before
 * (O_NOFOLLOW), a symlink on the way is followed only when it is owned by
 * root or the effective uid, and the directory reached must be a trusted
 * one (owned by root or the effective uid; writable by others, or by a group
 * other than root's, only with the sticky bit).  The directories above it
 * may be anyone's (Debian's /var/lib/prometheus is the prometheus user's):
 * what is written through the fd lands in that directory whatever is
 * renamed above it later.  Returns the fd (close-on-exec, the caller's), or
 * -errno with "<what> `<dir>': ..." in err.
 */
int plugfs_trusted_dir_open(const char *what, const char *dir, char *err, size_t errlen);

/*
 * Opens the absolute, normalised directory dir (O_RDONLY | O_DIRECTORY,
 * close-on-exec) for a privileged reader that keeps it by its descriptor
 * (a discovery root): every component from `/' is opened relative to the
 * one before with O_NOFOLLOW, none may be a symlink, and every directory
 * above dir (`/' included) must be owned by root and writable by no one
 * else (no group or other write bit) unless it has the sticky bit (like
 * /tmp: others may add entries there, not rename or remove root's).  So
 * nobody but root can rename a directory on the way and put another in
 * its place.  dir itself is not judged (the caller's rule): *st, when not
 * NULL, is its fstat.  The fd (the caller's), or -errno with
 * "<what> `<dir>': ..." in err naming the component and the rule it broke:
 * -EPERM (a directory above), -ELOOP (a symlink), -ENOTDIR, -ENOENT,
 * -EINVAL (not absolute).  Any thread; it blocks as an lstat of the
 * directories on the way would.
 */
int plugfs_root_dir_open(const char *what, const char *dir, struct stat *st, char *err,
			 size_t errlen);

#endif
