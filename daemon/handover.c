/* SPDX-License-Identifier: MIT */
/*
 * The daemon's side of a handover (fs/resume.c has the filesystem's): the
 * re-exec on SIGUSR2 and systemd's file descriptor store.
 *
 * A re-exec never costs the mount.  Before anything stops, the binary on
 * disk is run once (`version', bounded): a 0-byte file, a script that
 * fails, a file held open for writing (ETXTBSY) or anything that is not
 * plugfs is left alone and the running program is executed instead
 * (/proc/self/exe).  An exec that fails all the same falls back to the
 * running program, and if that fails too the mount is resumed in this
 * process.  A new program that executes but cannot take the mount over (its
 * start fails) hands it back: it executes the program that handed it over
 * (an fd of it in $PLUGFS_RESUME_FALLBACK) with the same descriptors.
 */
#include "handover.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "fsutil.h"
#include "log.h"
#include "sdnotify.h"

#define SELF_EXE "/proc/self/exe"
/* An fd of the program that handed the mount over, for a new program that
 * cannot take it (handover_fall_back).  Its own variable, not a field of
 * $PLUGFS_RESUME_FDS: a program that does not know it ignores it. */
#define RESUME_FALLBACK_ENV "PLUGFS_RESUME_FALLBACK"

extern char **environ;

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

/* How long the binary on disk may take to answer `version'. */
#define TRY_BINARY_MS 2000

/* Runs `path version' (stdin and stderr /dev/null, no signal blocked) and
 * waits at most TRY_BINARY_MS: 0 when it printed "plugfs ..." and exited 0,
 * else -errno with why. */
static int try_binary(const char *path, char *why, size_t whylen)
{
	char *const argv[] = {(char *)path, (char *)"version", NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	char out[256];
	size_t got = 0;
	int64_t until = plugfs_deadline_ms(TRY_BINARY_MS);
	int pipefd[2], st = 0, rc;
	bool killed = false;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return plugfs_errf(why, whylen, -errno, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawn(&pid, path, &fa, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	if (rc != 0) {
		close(pipefd[0]);
		return plugfs_errf(why, whylen, -rc, "cannot execute it: %s", strerror(rc));
	}
	for (;;) {
		struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
		int ms = plugfs_poll_ms(until);
		ssize_t n;

		if (ms == 0 || poll(&p, 1, ms) == 0) {
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		n = read(pipefd[0], out + got, sizeof(out) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(out) - 1)
			break;
	}
	close(pipefd[0]);
	out[got] = '\0';
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (killed)
		return plugfs_errf(why, whylen, -ETIMEDOUT, "`%s version' did not finish within %d ms",
				   path, TRY_BINARY_MS);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return plugfs_errf(why, whylen, -ENOEXEC, "`%s version' %s %d", path,
				   WIFEXITED(st) ? "exited with status" : "was killed by signal",
				   WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	if (strncmp(out, "plugfs ", 7) != 0)
		return plugfs_errf(why, whylen, -ENOEXEC,
				   "`%s version' did not say \"plugfs VERSION\": not plugfs?", path);
	return 0;
}

int handover_pick_binary(char *path, size_t pathlen)
{
	char exe[PATH_MAX], why[PATH_MAX + 128];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *del = " (deleted)";
	size_t dl = strlen(del);

	snprintf(path, pathlen, "%s", SELF_EXE);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	if ((size_t)n > dl && strcmp(exe + n - dl, del) == 0)
		exe[n - dl] = '\0';
	if (access(exe, F_OK) != 0)
		return 0; /* removed: the running program it is */
	if (try_binary(exe, why, sizeof(why)) != 0) {
		log_warn("re-exec: the binary on disk %s does not run (%s); re-executing the "
			 "running program (%s) instead, keeping the mount",
			 exe, why, SELF_EXE);
		return 0;
	}
	snprintf(path, pathlen, "%s", exe);
	return 1;
}

/* execv, or as if it failed with the test fault PLUGFS_FAULT_REEXEC=fail. */
static int exec_path(const char *path, char **argv)
{
#ifdef PLUGFS_FAULTS
	const char *fault = getenv("PLUGFS_FAULT_REEXEC");

	if (fault && strcmp(fault, "fail") == 0) {
		errno = ENOEXEC;
		return -1;
	}
#endif
	return execv(path, argv);
}

/*
 * The second half of SIGUSR2: every other thread is gone and h holds the
 * connection and the control socket.  Executes path (handover_pick_binary's
 * choice) with the same arguments and $PLUGFS_RESUME_FDS, and an fd of the
 * running program in $PLUGFS_RESUME_FALLBACK for a new program whose start
 * fails (handover_fall_back).  When that exec fails, the running program
 * itself (through that fd, as /proc/self/exe would).  Returns only when
 * both failed: -errno, with h's descriptors open and named in
 * $PLUGFS_RESUME_FDS, for daemon_start to resume in this process.  A failed
 * upgrade never costs the mount.
 */
int handover_reexec(const char *path, const struct fs_handover *h)
{
	char **argv = own_argv();
	char num[16];
	int self = -1, rc;

	rc = argv ? fs_handover_to_env(h) : -ENOMEM;
	if (rc != 0)
		goto out;
	/* Inherited (no close-on-exec): the new program's way back. */
	self = open(SELF_EXE, O_RDONLY);
	if (self >= 0) {
		snprintf(num, sizeof(num), "%d", self);
		setenv(RESUME_FALLBACK_ENV, num, 1);
	}
	if (strcmp(path, SELF_EXE) != 0) {
		log_info("re-executing %s (pid %ld), keeping the mount", path, (long)getpid());
		exec_path(path, argv);
		log_warn("cannot re-execute %s: %s; re-executing the running program instead, "
			 "keeping the mount",
			 path, strerror(errno));
	} else {
		log_info("re-executing the running program (pid %ld), keeping the mount",
			 (long)getpid());
	}
	/* The running program falls back on nothing: it ran until now. */
	unsetenv(RESUME_FALLBACK_ENV);
	if (self >= 0) {
		fcntl(self, F_SETFD, FD_CLOEXEC);
#ifdef PLUGFS_FAULTS
		if (!getenv("PLUGFS_FAULT_REEXEC"))
#endif
			syscall(SYS_execveat, self, "", argv, environ, AT_EMPTY_PATH);
	}
	exec_path(SELF_EXE, argv);
	rc = -errno;
out:
	log_warn("cannot re-execute the running program either: %s; resuming the mount in this "
		 "process",
		 strerror(-rc));
	if (self >= 0)
		close(self);
	free(argv);
	return rc;
}

int handover_take_fallback(void)
{
	const char *env = getenv(RESUME_FALLBACK_ENV);
	char *end;
	long v;
	int fd = -1;

	if (env && env[0]) {
		errno = 0;
		v = strtol(env, &end, 10);
		if (!errno && !*end && v >= 0 && v <= 65535 && fcntl((int)v, F_GETFD) >= 0) {
			fd = (int)v;
			fcntl(fd, F_SETFD, FD_CLOEXEC);
		}
	}
	unsetenv(RESUME_FALLBACK_ENV);
	return fd;
}

void handover_fall_back(int exe_fd, const struct fs_handover *h)
{
	char **argv = own_argv();
	int rc = argv ? fs_handover_to_env(h) : -ENOMEM;

	if (rc == 0) {
		log_warn("handing the mount back to the program that handed it over (pid %ld)",
			 (long)getpid());
		syscall(SYS_execveat, exe_fd, "", argv, environ, AT_EMPTY_PATH);
		rc = -errno;
	}
	log_error("cannot hand the mount back: %s", strerror(-rc));
	unsetenv(FS_RESUME_ENV);
	free(argv);
}
