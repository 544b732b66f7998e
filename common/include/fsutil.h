/* SPDX-License-Identifier: MIT */
/* Small file-system helpers shared by the daemon and the CLI. */
#ifndef PLUGFS_FSUTIL_H
#define PLUGFS_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * `mkdir -p path`: creates path and every missing directory above it.
 *
 * Umask rule: each directory this call creates gets exactly `mode` (it is
 * chmod-ed after mkdir, so the process umask does not narrow it); a
 * directory that already exists is left as it is.
 *
 * Returns 0 (also when everything existed), or -errno with "DIR: reason" in
 * err naming the directory that could not be made (-EINVAL for an empty path
 * or one of PATH_MAX bytes or more).  A failed chmod is logged as a warning,
 * not an error: the directory exists.
 */
int plugfs_mkdir_p(const char *path, mode_t mode, char *err, size_t errlen);

/* "a directory", "a FIFO", "a socket", "a symlink" or "a device": what a
 * file of this mode is, for "`PATH': is a FIFO, not a regular file". */
const char *plugfs_mode_noun(mode_t mode);

/*
 * Readies the place of a file the program keeps (the state file, named by
 * field, e.g. "state.path"): checks that it can be trusted
 * (plugfs_path_trust: no directory above it writable by anyone but root or
 * us, no symlink at it), that what is there is a regular file (SQLite would
 * open a FIFO and block, or a device), then creates the missing directories
 * above it (0755 whatever the umask, plugfs_mkdir_p).  0, or -errno with
 * err naming the directory or the file and why.
 */
int plugfs_prepare_file(const char *field, const char *path, char *err, size_t errlen);

/* Whether path is a regular file of 0 bytes (SQLite takes it for a new,
 * empty database). */
bool plugfs_file_empty(const char *path);

/*
 * Reads what is left of fd up to its end into *out: a malloc'd buffer the
 * caller frees, NUL-terminated after its *len bytes (which may hold NULs
 * of their own).  At most max bytes: a file with more is refused.  A read
 * that EINTR interrupts goes on.
 *
 * 0, or -EFBIG (more than max bytes), -ENOMEM, or read's -errno; *out is
 * NULL and *len 0 on an error.  fd stays open: the caller closes it.
 */
int plugfs_read_fd(int fd, size_t max, char **out, size_t *len);

#endif
