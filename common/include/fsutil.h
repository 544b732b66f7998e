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

/*
 * Opens name, one component of the directory dirfd, with flags | O_NOFOLLOW
 * | O_CLOEXEC (O_PATH for a look at what it is), never crossing into a
 * file system mounted on it: -EXDEV when name is a mount point, found
 * before anything of that mount is looked up (openat2's RESOLVE_NO_XDEV;
 * a kernel without openat2, before Linux 5.6: name's path, dirpath/name,
 * among the mount points of /proc/self/mountinfo).  So nothing of a mount
 * there, plugfs's own (a bind mount of it) or a hung one, is ever asked.
 * name must not be empty, `.', `..' or hold a `/' (-EINVAL).  The fd or
 * -errno (a symlink: -ELOOP unless O_PATH, which opens the link itself).
 * Any thread.
 */
int plugfs_open_here(int dirfd, const char *dirpath, const char *name, int flags);

/*
 * Whether the absolute path leads under one of roots (n_roots absolute,
 * canonical paths without a trailing slash: the daemon's own mount): its
 * names are resolved one at a time from `/', as the kernel would resolve
 * them for a connect() (`.', `..', a symlink on the way and at the end, at
 * most 40 of them), with lstat and readlink, and before each one is looked
 * up, the path reached so far is compared with the roots: nothing at or
 * under a root is ever looked up (a lookup there would be a request to the
 * daemon's own mount).  A name that does not exist (or is no directory,
 * or cannot be looked up) ends the walk: the kernel's would end there too.
 *
 * 1 when it leads under a root (via: the path reached, under that root),
 * 0 when it does not (via: as far as it resolved), -EINVAL (not absolute),
 * -ELOOP (more than 40 symlinks), -ENAMETOOLONG.  Any thread; it blocks
 * as an lstat of the path's directories would (a hung filesystem among
 * them), never on the roots.
 */
int plugfs_path_leads_under(const char *path, const char *const *roots, size_t n_roots, char *via,
			    size_t vialen);

/*
 * The daemon's own mount (docs/design.md, Hazards: no thread of the daemon
 * accesses it): its mountpoint (the configured one, its parent resolved,
 * itself never looked up) and every other mount point of the same
 * filesystem in /proc/self/mountinfo (a bind mount of it: the device of
 * the FUSE mount at the mountpoint, when there is one).  The list is read
 * again when mountinfo says the mounts changed (POLLPRI).  Reference
 * counted: the threads that check a path (a connector, the watcher's
 * adder, a check abandoned at its deadline) hold a reference of their own.
 */
struct plugfs_own_mount;

/* 0 with *out (one reference), or -errno with err naming the mountpoint. */
int plugfs_own_mount_new(const char *mountpoint, struct plugfs_own_mount **out, char *err,
			 size_t errlen);
/* Another reference (m may be NULL: returns NULL). */
struct plugfs_own_mount *plugfs_own_mount_ref(struct plugfs_own_mount *m);
/* Drops a reference; the last frees m.  NULL is a no-op. */
void plugfs_own_mount_unref(struct plugfs_own_mount *m);
/* The mountpoint, canonical (m's, as long as the reference). */
const char *plugfs_own_mount_path(const struct plugfs_own_mount *m);

/*
 * plugfs_path_leads_under(path) against m's mount points, on the calling
 * thread: 1 (via: where it leads), 0, or -errno as that function.  m NULL:
 * 0.
 */
int plugfs_own_mount_check(struct plugfs_own_mount *m, const char *path, char *via, size_t vialen);

/*
 * The same on a helper thread, waited for at most timeout_ms: a thread
 * others wait on (the control server's) never blocks in a path lookup on
 * a hung filesystem.  -ETIMEDOUT when the helper did not return in time
 * (it is abandoned: it frees what it holds when it returns), -EBUSY when
 * PLUGFS_OWN_MOUNT_STUCK_MAX helpers are out already (refused at once
 * rather than adding another stuck thread), -EAGAIN when no thread could
 * be started.
 */
#define PLUGFS_OWN_MOUNT_STUCK_MAX 8
int plugfs_own_mount_check_within(struct plugfs_own_mount *m, const char *path, unsigned timeout_ms,
				  char *via, size_t vialen);

#endif
