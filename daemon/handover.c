/* SPDX-License-Identifier: MIT */
/*
 * The daemon's side of a handover (fs/resume.c has the filesystem's): the
 * re-exec on SIGUSR2 and systemd's file descriptor store.
 */
#include "handover.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "sdnotify.h"

/* The names of what is kept in systemd's file descriptor store. */
static const char *const store_names[] = {"fuse", "init", "control"};

/* A clean stop: the store lets go of the connection before the unmount. */
void handover_unstore(void)
{
	char msg[64];

	if (!getenv("NOTIFY_SOCKET"))
		return;
	for (size_t i = 0; i < 3; i++) {
		snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", store_names[i]);
		sd_notify_send(msg);
	}
}

/*
 * Under systemd, a fresh mount hands copies of the connection, its FUSE_INIT
 * and the control socket to the service's file descriptor store
 * (FileDescriptorStoreMax=), so that a start after a crash resumes them
 * ($LISTEN_FDS).  Called from the FUSE init callback: never blocks.
 */
bool handover_store(struct plugfs_fs *fs, struct control_server *ctl)
{
	int fds[3], rc;
	char msg[64];
	bool ok = true;

	if (!getenv("NOTIFY_SOCKET"))
		return false;
	fs_connection_fds(fs, &fds[0], &fds[1]);
	fds[2] = control_server_listen_fd(ctl);
	/* What a previous mount left there is stale. */
	handover_unstore();
	for (size_t i = 0; i < 3; i++) {
		if (fds[i] < 0)
			continue;
		snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s", store_names[i]);
		rc = sd_notify_send_fds(msg, &fds[i], 1);
		if (rc < 0) {
			log_warn("cannot hand `%s' to systemd's file descriptor store: %s",
				 store_names[i], strerror(-rc));
			ok = false;
		}
	}
	return ok && fds[0] >= 0 && fds[1] >= 0;
}

/*
 * What systemd passed from its file descriptor store ($LISTEN_FDS named
 * fuse, init, control) into h.  1 when there is a connection to resume, 0
 * when not (other fds are closed), -errno.
 */
int handover_from_systemd(struct fs_handover *h)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(&names);

	h->fuse_fd = h->init_fd = h->control_fd = -1;
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;

		if (strcmp(names[i], "fuse") == 0 && h->fuse_fd < 0)
			h->fuse_fd = fd;
		else if (strcmp(names[i], "init") == 0 && h->init_fd < 0)
			h->init_fd = fd;
		else if (strcmp(names[i], "control") == 0 && h->control_fd < 0)
			h->control_fd = fd;
		else
			close(fd);
	}
	free(names);
	if (n < 0)
		return n;
	if (h->fuse_fd >= 0 && h->init_fd >= 0)
		return 1;
	/* Half a handover is none: mount afresh. */
	for (int i = 0; i < 3; i++) {
		int *fd = i == 0 ? &h->fuse_fd : i == 1 ? &h->init_fd : &h->control_fd;

		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
	return 0;
}

/* This process's argv from /proc/self/cmdline (NULL-terminated, one
 * allocation), so that a re-exec runs the same command line. */
static char **own_argv(void)
{
	char *buf = NULL, **argv = NULL, *str;
	size_t n = 0, count = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return NULL;
	/* Below 16 KiB: a longer command line is not run again. */
	rc = plugfs_read_fd(fd, 16382, &buf, &n);
	close(fd);
	if (rc != 0 || n == 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		count += buf[i] == '\0';
	argv = malloc((count + 1) * sizeof(*argv) + n + 1);
	if (!argv)
		goto out;
	str = (char *)(argv + count + 1);
	memcpy(str, buf, n + 1);
	for (size_t i = 0, k = 0; k < count; k++) {
		argv[k] = str + i;
		i += strlen(str + i) + 1;
	}
	argv[count] = NULL;
out:
	free(buf);
	return argv;
}

/*
 * The second half of SIGUSR2: every other thread is gone and h holds the
 * connection and the control socket.  Executes the binary on disk (after an
 * upgrade replaced it, /proc/self/exe names the old, deleted file) with the
 * same arguments and $PLUGFS_RESUME_FDS.  Returns only on failure: the
 * mount is then detached (nobody would serve it) and the socket closed.
 */
void handover_reexec(const char *mountpoint, const struct fs_handover *h)
{
	char exe[4096];
	const char *path = "/proc/self/exe";
	char **argv = own_argv();
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int rc;

	if (n > 0) {
		const char *del = " (deleted)";
		size_t dl = strlen(del);

		exe[n] = '\0';
		if ((size_t)n > dl && strcmp(exe + n - dl, del) == 0)
			exe[n - dl] = '\0';
		if (access(exe, X_OK) == 0)
			path = exe;
	}
	rc = argv ? fs_handover_to_env(h) : -ENOMEM;
	if (rc == 0) {
		log_info("re-executing %s (pid %ld), keeping the mount", path, (long)getpid());
		execv(path, argv);
		rc = -errno;
	}
	log_error("cannot re-execute %s: %s; unmounting", path, strerror(-rc));
	free(argv);
	close(h->fuse_fd);
	close(h->init_fd);
	if (h->control_fd >= 0)
		close(h->control_fd);
	if (umount2(mountpoint, MNT_DETACH) != 0)
		log_warn("cannot unmount %s: %s", mountpoint, strerror(errno));
}
