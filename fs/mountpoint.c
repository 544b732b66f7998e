/* SPDX-License-Identifier: MIT */
/*
 * The mountpoint before a mount: create it, detach a stale mount (its daemon
 * is gone: ENOTCONN), abort and detach a plugfs mount whose daemon hangs,
 * refuse a live one.  Nothing here touches a FUSE mount at the mountpoint
 * from this process: a stat of a hung one would wait for good.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "fs_internal.h"
#include "fsutil.h"
#include "log.h"
#include "pathtrust.h"

#define STALE_DETACH_MAX 8
/* How long a mount at the mountpoint may take to answer statfs. */
/* How long a mount that is kept for the next daemon takes not to answer. */
#define RELEASE_PROBE_MS 300
#define MOUNT_PROBE_MS 2000

/* Undoes the octal escapes (\040 ...) of /proc/self/mountinfo. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/*
 * The topmost mount at path in /proc/self/mountinfo: its filesystem type
 * (e.g. "fuse.plugfs") into fstype and its device into *dev.  1 when found,
 * 0 when path is no mount point, -errno.
 */
int fs_mount_at(const char *path, char *fstype, size_t fslen, dev_t *dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		char mp[PATH_MAX + 1], type[256];
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*u %*u %u:%u %*s %4096s", &maj, &min, mp) != 3 ||
		    sscanf(sep + 3, "%255s", type) != 1)
			continue;
		unescape(mp);
		if (strcmp(mp, path) != 0)
			continue;
		found = 1;
		snprintf(fstype, fslen, "%s", type);
		if (dev)
			*dev = makedev(maj, min);
	}
	free(line);
	fclose(f);
	return found;
}

static int mkdir_p(const char *path, char *err, size_t errlen)
{
	char why[PATH_MAX + 64];
	int rc = plugfs_mkdir_p(path, 0755, why, sizeof(why));

	if (rc != 0)
		plugfs_seterr(err, errlen, "cannot create mountpoint `%s': %s", path, why);
	return rc;
}

/* An absolute, canonical spelling of path that works while path itself
 * cannot be stat'ed (a dead mount): realpath of the parent + the last name. */
int fs_canonical(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	char tmp[PATH_MAX], parent[PATH_MAX];
	char *slash;
	const char *base;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp) || tmp[0] == '\0') {
		plugfs_seterr(err, errlen, "mountpoint `%s': not a usable path", path);
		return -EINVAL;
	}
	while (strlen(tmp) > 1 && tmp[strlen(tmp) - 1] == '/')
		tmp[strlen(tmp) - 1] = '\0';
	slash = strrchr(tmp, '/');
	if (!slash) {
		base = tmp;
		snprintf(parent, sizeof(parent), ".");
	} else if (slash == tmp) {
		base = tmp + 1;
		snprintf(parent, sizeof(parent), "/");
	} else {
		*slash = '\0';
		base = slash + 1;
		snprintf(parent, sizeof(parent), "%s", tmp);
	}
	if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || base[0] == '\0') {
		if (!realpath(path, out)) {
			plugfs_seterr(err, errlen, "mountpoint `%s': %s", path, strerror(errno));
			return -errno;
		}
		return 0;
	}
	char *rp = realpath(parent, NULL);

	if (!rp) {
		int e = errno;

		plugfs_seterr(err, errlen, "mountpoint `%s': parent directory: %s", path,
			      strerror(e));
		return -e;
	}
	if (snprintf(out, outlen, "%s/%s", strcmp(rp, "/") == 0 ? "" : rp, base) >= (int)outlen) {
		free(rp);
		plugfs_seterr(err, errlen, "mountpoint `%s': path too long", path);
		return -ENAMETOOLONG;
	}
	free(rp);
	return 0;
}

/*
 * statfs(path) in a child process, bounded by timeout_ms: a mount whose
 * daemon hangs (or cannot finish dying) never answers, and a wait on it in
 * this process would be a wait this process cannot always be killed out of
 * cleanly.  0 when it answers, -ETIMEDOUT when it does not, -errno of
 * statfs otherwise.
 */
static int probe_statfs(const char *path, int timeout_ms)
{
	struct pollfd pfd;
	int status = 0, pidfd, rc;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct statfs sfs;

		_exit(statfs(path, &sfs) == 0 ? 0 : (errno & 0xff));
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0) {
		pfd.fd = pidfd;
		pfd.events = POLLIN;
		while ((rc = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		close(pidfd);
		if (rc == 0)
			kill(pid, SIGKILL); /* a FUSE wait is killable */
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return -ETIMEDOUT;
	return WIFEXITED(status) ? -WEXITSTATUS(status) : -EIO;
}

int fs_prepare_mountpoint(const char *path, char *canon, size_t canonlen, char *err, size_t errlen)
{
	struct stat st;
	char fstype[256];
	dev_t dev = 0;
	int found = 0, rc;

	/* The directories above it are root's: nobody else can swap them
	 * (or a symlink among them) for another place to mount on.  Not the
	 * mountpoint itself: see below. */
	if ((rc = plugfs_path_trust("mount.mountpoint", path, PLUGFS_TRUST_PARENTS_ONLY, err,
				    errlen)) < 0)
		return rc;
	/* Nothing here touches a FUSE mount at the mountpoint directly: a
	 * stat of a hung one would wait for good.  mountinfo first. */
	rc = fs_canonical(path, canon, canonlen, NULL, 0);
	if (rc == -ENOENT) {
		/* The parent is missing: no mount can be there. */
		rc = mkdir_p(path, err, errlen);
		if (rc != 0)
			return rc;
		log_info("fs: created mountpoint %s", path);
	}
	rc = fs_canonical(path, canon, canonlen, err, errlen);
	if (rc != 0)
		return rc;
	for (int i = 0; i <= STALE_DETACH_MAX; i++) {
		found = fs_mount_at(canon, fstype, sizeof(fstype), &dev);
		if (found != 1 || strncmp(fstype, "fuse", 4) != 0)
			break;
		/* A FUSE mount whose daemon died answers ENOTCONN to statfs
		 * (stat may still be answered from the attribute cache); one
		 * whose daemon hangs does not answer at all. */
		rc = probe_statfs(canon, MOUNT_PROBE_MS);
		if (rc == 0)
			break;
		if (rc == -ETIMEDOUT) {
			unsigned minor = (unsigned)((major(dev) << 20) | minor(dev));

			if (strcmp(fstype, "fuse.plugfs") != 0) {
				plugfs_seterr(
				    err, errlen,
				    "mountpoint `%s': the %s mount there does not answer "
				    "(within %d ms); not touching another filesystem's mount",
				    canon, fstype, MOUNT_PROBE_MS);
				return -EBUSY;
			}
			log_warn("fs: the plugfs mount at %s does not answer within %d ms (its "
				 "daemon hangs); aborting its FUSE connection %u",
				 canon, MOUNT_PROBE_MS, minor);
			if (!fs_abort_conn_minor(minor)) {
				rc = -errno;
				plugfs_seterr(
				    err, errlen,
				    "the plugfs mount at `%s' hangs and its FUSE connection %u "
				    "cannot be aborted: %s",
				    canon, minor, strerror(errno));
				return rc;
			}
		} else if (rc != -ENOTCONN && rc != -ECONNABORTED) {
			plugfs_seterr(err, errlen, "mountpoint `%s' (a %s mount): %s", canon,
				      fstype, strerror(-rc));
			return rc;
		}
		if (umount2(canon, MNT_DETACH) != 0) {
			rc = -errno;
			plugfs_seterr(err, errlen, "cannot detach the stale %s mount at `%s': %s",
				      fstype, canon, strerror(errno));
			return rc;
		}
		log_warn("fs: detached a stale %s mount at %s (its daemon is gone)", fstype, canon);
	}
	if (found == 1 && strcmp(fstype, "fuse.plugfs") == 0) {
		plugfs_seterr(
		    err, errlen,
		    "a live plugfs mount is already at `%s' (is another `plugfs mount' running?); "
		    "not stacking a second one",
		    canon);
		return -EBUSY;
	}
	if (stat(canon, &st) != 0 && errno == ENOENT) {
		rc = mkdir_p(canon, err, errlen);
		if (rc != 0)
			return rc;
		log_info("fs: created mountpoint %s", canon);
	}
	if (stat(canon, &st) != 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "mountpoint `%s': %s", canon, strerror(errno));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		plugfs_seterr(err, errlen, "mountpoint `%s' is not a directory", canon);
		return -ENOTDIR;
	}
	return 0;
}

int fs_release_mount(const char *mountpoint, enum fs_release how, char *err, size_t errlen)
{
	char canon[PATH_MAX], fstype[256];
	dev_t dev = 0;
	int rc, found;

	rc = fs_canonical(mountpoint, canon, sizeof(canon), err, errlen);
	if (rc != 0)
		return rc;
	found = fs_mount_at(canon, fstype, sizeof(fstype), &dev);
	if (found < 0) {
		plugfs_seterr(err, errlen, "cannot read /proc/self/mountinfo: %s",
			      strerror(-found));
		return found;
	}
	if (found == 0 || strcmp(fstype, "fuse.plugfs") != 0)
		return 0; /* nothing of ours there (another mount is left alone) */
	if (how == FS_RELEASE_IF_DEAD) {
		/* Dead: ENOTCONN at once.  Alive (its connection waits in the
		 * file descriptor store for the next daemon): no answer. */
		rc = probe_statfs(canon, RELEASE_PROBE_MS);
		if (rc != -ENOTCONN && rc != -ECONNABORTED)
			return 0;
	}
	if (how == FS_RELEASE_ABORT) {
		unsigned minor = (unsigned)((major(dev) << 20) | minor(dev));

		if (!fs_abort_conn_minor(minor)) {
			rc = -errno;
			plugfs_seterr(
			    err, errlen,
			    "cannot abort FUSE connection %u of the plugfs mount at `%s': %s",
			    minor, canon, strerror(errno));
			return rc;
		}
		log_info("fs: aborted FUSE connection %u of the plugfs mount at %s", minor, canon);
	}
	if (umount2(canon, MNT_DETACH) != 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "cannot detach the plugfs mount at `%s': %s", canon,
			      strerror(errno));
		return rc;
	}
	log_info("fs: detached the plugfs mount at %s", canon);
	return 1;
}
