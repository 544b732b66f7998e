/* SPDX-License-Identifier: MIT */
/* Small file-system helpers shared by the daemon and the CLI. */
#ifndef PLUGFS_FSUTIL_H
#define PLUGFS_FSUTIL_H

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

#endif
