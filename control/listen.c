/* SPDX-License-Identifier: MIT */
/*
 * Creating the control socket file and checking who is on the other end.
 *
 * No window wider than 0660: the socket is bound inside a fresh private
 * directory (mkdtemp, 0700) next to the target, chmod'ed to 0660 and chown'ed
 * to the control group there, starts listening, and only then is renamed into
 * place.  The umask is process-wide and other daemon threads create files, so
 * it is never changed; the 0700 directory is what keeps others out while the
 * mode is whatever bind() gave.  rename() also replaces a stale socket
 * atomically, so clients never see the path missing once it existed.
 *
 * A start killed in its first milliseconds leaves that directory (maybe
 * with the socket in it); the next start removes such leftovers, and only
 * them (remove_leftover).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control_server_internal.h"
#include "log.h"

/* A start's private directory is this old at least before another start
 * may take it for a leftover (it lives milliseconds, locked). */
#define LEFTOVER_MIN_AGE 2

int ctl_resolve_group(const char *group, gid_t *gid, char *err, size_t errlen)
{
	struct group grp, *res = NULL;
	char buf[16384];
	int rc;

	rc = getgrnam_r(group, &grp, buf, sizeof(buf), &res);
	if (rc != 0 || !res) {
		plugfs_seterr(err, errlen, "control.group: unknown group `%s'%s%s", group,
			      rc ? ": " : "", rc ? strerror(rc) : "");
		return rc ? -rc : -ENOENT;
	}
	*gid = res->gr_gid;
	return 0;
}

/* -ECONNREFUSED when nothing listens on path, 0 when something answers. */
static int probe(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, rc = 0;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* May path be replaced? 0 when missing or a stale socket. */
static int check_existing(const char *path, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		plugfs_seterr(err, errlen, "control.socket: cannot stat %s: %s", path,
			      strerror(errno));
		return rc;
	}
	if (!S_ISSOCK(st.st_mode)) {
		plugfs_seterr(
		    err, errlen,
		    "control.socket: %s exists and is not a socket; refusing to replace it", path);
		return -EEXIST;
	}
	rc = probe(path);
	if (rc == 0) {
		plugfs_seterr(err, errlen,
			      "control.socket: a daemon is answering on %s; refusing to replace it "
			      "(is plugfs already running?)",
			      path);
		return -EADDRINUSE;
	}
	if (rc != -ECONNREFUSED) {
		plugfs_seterr(
		    err, errlen,
		    "control.socket: %s exists and cannot be probed (%s); refusing to replace "
		    "it",
		    path, strerror(-rc));
		return rc;
	}
	return 0;
}

/* Is name one of ours, ".plugfs-" and mkdtemp's six characters? */
static bool leftover_name(const char *name)
{
	if (strncmp(name, ".plugfs-", 8) != 0 || strlen(name) != 14)
		return false;
	for (const char *c = name + 8; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
	return true;
}

/*
 * Removes dfd's directory name if it is a private directory a start killed
 * early left behind: a real directory (not a symlink) of our uid, mode
 * 0700, older than LEFTOVER_MIN_AGE, not locked by a start in progress, and
 * empty or holding only our socket "s".  Anything else stays.
 */
static void remove_leftover(int dfd, const char *dir, const char *name, time_t now)
{
	struct stat st, sst;
	struct dirent *e;
	DIR *d = NULL;
	bool other = false;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 07777) != 0700 ||
	    now - st.st_mtime < LEFTOVER_MIN_AGE)
		return;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || !(d = fdopendir(fd))) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (strcmp(e->d_name, "s") != 0 ||
		    fstatat(fd, "s", &sst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISSOCK(sst.st_mode) ||
		    sst.st_uid != geteuid())
			other = true;
	}
	if (!other && (unlinkat(fd, "s", 0) == 0 || errno == ENOENT) &&
	    unlinkat(dfd, name, AT_REMOVEDIR) == 0)
		log_notice("control: removed %s/%s, left by a start that was stopped early", dir,
			   name);
	closedir(d);
}

/* Removes the leftovers (remove_leftover) of earlier starts in dir. */
static void remove_leftovers(const char *dir)
{
	time_t now = time(NULL);
	struct dirent *e;
	DIR *d;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((e = readdir(d)))
		if (leftover_name(e->d_name))
			remove_leftover(dfd, dir, e->d_name, now);
	closedir(d);
}

int ctl_listen(const char *path, bool set_group, gid_t gid, int *fd_out, dev_t *dev_out,
	       ino_t *ino_out, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *dir = NULL, *tmpdir = NULL, *tmpsock = NULL;
	const char *slash;
	struct stat st;
	int fd = -1, lockfd = -1, rc;

	if (!path || path[0] != '/') {
		plugfs_seterr(err, errlen, "control.socket: `%s' must be an absolute path",
			      path ? path : "");
		return -EINVAL;
	}
	/* The temporary name "<dir>/.plugfs-XXXXXX/s" is 17 bytes longer than
	 * the directory; both must fit sun_path. */
	slash = strrchr(path, '/');
	if (strlen(path) >= sizeof(sa.sun_path) ||
	    (size_t)(slash - path) + 17 >= sizeof(sa.sun_path)) {
		plugfs_seterr(err, errlen,
			      "control.socket: %s is too long for a Unix socket (its directory may "
			      "have at most %zu bytes, the path at most %zu)",
			      path, sizeof(sa.sun_path) - 18, sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	if (slash[1] == '\0') {
		plugfs_seterr(err, errlen, "control.socket: `%s' names a directory, not a socket",
			      path);
		return -EINVAL;
	}
	rc = check_existing(path, err, errlen);
	if (rc)
		return rc;

	dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (dir)
		remove_leftovers(dir);
	if (!dir ||
	    asprintf(&tmpdir, "%s%s.plugfs-XXXXXX", dir, strcmp(dir, "/") == 0 ? "" : "/") < 0) {
		tmpdir = NULL;
		rc = -ENOMEM;
		plugfs_seterr(err, errlen, "out of memory");
		goto out;
	}
	if (!mkdtemp(tmpdir)) {
		rc = -errno;
		plugfs_seterr(err, errlen,
			      "control.socket: cannot create a private directory in %s: %s", dir,
			      strerror(errno));
		free(tmpdir);
		tmpdir = NULL;
		goto out;
	}
	/* Held until the directory is removed: a start sweeping leftovers
	 * never takes this one (remove_leftover). */
	lockfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lockfd >= 0)
		flock(lockfd, LOCK_EX | LOCK_NB);
	if (asprintf(&tmpsock, "%s/s", tmpdir) < 0) {
		tmpsock = NULL;
		rc = -ENOMEM;
		plugfs_seterr(err, errlen, "out of memory");
		goto out;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "control.socket: socket(): %s", strerror(errno));
		goto out;
	}
	memcpy(sa.sun_path, tmpsock, strlen(tmpsock) + 1);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "control.socket: cannot bind %s: %s", tmpsock,
			      strerror(errno));
		goto out;
	}
	if (chmod(tmpsock, 0660) < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "control.socket: chmod 0660 %s: %s", tmpsock,
			      strerror(errno));
		goto out;
	}
	if (set_group && lchown(tmpsock, (uid_t)-1, gid) < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "control.socket: cannot give %s to group %u: %s",
			      tmpsock, (unsigned)gid, strerror(errno));
		goto out;
	}
	if (listen(fd, 128) < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "control.socket: listen(): %s", strerror(errno));
		goto out;
	}
	if (lstat(tmpsock, &st) < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "control.socket: stat %s: %s", tmpsock, strerror(errno));
		goto out;
	}
	/* Check again right before replacing: another daemon may have started. */
	rc = check_existing(path, err, errlen);
	if (rc)
		goto out;
	if (rename(tmpsock, path) < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "control.socket: cannot move the socket to %s: %s", path,
			      strerror(errno));
		goto out;
	}
	*fd_out = fd;
	fd = -1;
	*dev_out = st.st_dev;
	*ino_out = st.st_ino;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (tmpsock) {
		unlink(tmpsock);
		free(tmpsock);
	}
	if (tmpdir) {
		rmdir(tmpdir);
		free(tmpdir);
	}
	if (lockfd >= 0)
		close(lockfd);
	free(dir);
	return rc;
}

void ctl_unlink_if_ours(const char *path, dev_t dev, ino_t ino)
{
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev && st.st_ino == ino)
		unlink(path);
}

int ctl_peer_creds(int fd, gid_t group, bool have_group, struct ctl_peer *peer)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	gid_t stackgroups[64];
	gid_t *groups = stackgroups;
	socklen_t glen = sizeof(stackgroups);
	int rc = 0;

	memset(peer, 0, sizeof(*peer));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return -errno;
	peer->pid = uc.pid;
	peer->uid = uc.uid;
	peer->may_mutate = uc.uid == 0 || (have_group && uc.gid == group);
	if (peer->may_mutate || !have_group)
		return 0;
	/* Supplementary groups as they were at connect() (SO_PEERGROUPS, Linux
	 * 4.13): no race with the peer exiting or changing its groups. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) < 0) {
		if (errno != ERANGE)
			return -errno;
		groups = malloc(glen);
		if (!groups)
			return -ENOMEM;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) < 0) {
			rc = -errno;
			goto out;
		}
	}
	for (size_t i = 0; i < glen / sizeof(gid_t); i++)
		if (groups[i] == group)
			peer->may_mutate = true;
out:
	if (groups != stackgroups)
		free(groups);
	return rc;
}
