/* SPDX-License-Identifier: MIT */
/*
 * The guard: a small child process that frees the mount when the daemon
 * dies but cannot finish dying.
 *
 * A SIGKILL ends every thread of the daemon at its next return to user space
 * or interruptible wait, except one inside the kernel in an uninterruptible
 * wait.  The notifier can be in one: fuse_lowlevel_notify_inval_entry takes
 * the parent directory's inode lock, which waits for a lookup in that
 * directory to be answered, and nobody is left to answer it.  That thread
 * holds the /dev/fuse file, the connection is never released, and the
 * process never finishes exiting (lookups on the mount hang with it).
 *
 * The guard is forked before the mount (it never holds /dev/fuse) from the
 * thread that runs the request loop and lives as long as the process, with
 * PR_SET_PDEATHSIG: when that thread ends, the guard gives the process
 * FS_GUARD_GRACE_MS to be gone, and if it is still there it aborts the
 * process's own FUSE connection through fusectl, which fails the lookup,
 * releases the notifier and lets the process exit.  A clean stop kills the
 * guard first (fs_guard_stop).  The daemon tells the guard which connection
 * is its own once mounted (fs_guard_set_conn), through a pipe the guard reads
 * only when it has to act.
 *
 * After fork() in a threaded process only async-signal-safe calls are made:
 * raw system calls, no stdio, no malloc.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_internal.h"
#include "log.h"

#define FS_GUARD_GRACE_MS 500

/* Writes the decimal digits of v into buf (no NUL); returns the count. */
static size_t fmt_uint(char *buf, unsigned long v)
{
	char tmp[24];
	size_t n = 0, i = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < sizeof(tmp));
	while (n)
		buf[i++] = tmp[--n];
	return i;
}

/* Whether stderr is the journal, decided before the fork (plog_journal):
 * the guard's lines then carry priority warn. */
static bool guard_journal;

static void say(const char *a, unsigned long n1, const char *b, unsigned long n2, const char *c)
{
	char buf[512];
	size_t len = 0;
	const char *head = guard_journal ? "<4>plugfs: guard: " : "plugfs: guard: ";
	const char *parts[] = {head, a, NULL, b, NULL, c, "\n"};

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (i == 2) {
			len += fmt_uint(buf + len, n1);
			continue;
		}
		if (i == 4) {
			len += fmt_uint(buf + len, n2);
			continue;
		}
		size_t l = strlen(parts[i]);

		if (len + l + 24 > sizeof(buf))
			break;
		memcpy(buf + len, parts[i], l);
		len += l;
	}
	if (write(STDERR_FILENO, buf, len) < 0) {
		/* Nothing else to tell it to. */
	}
}

/* The connection minor the daemon sent, the last one in the pipe; 0 if none. */
static unsigned read_conn(int fd)
{
	char buf[64];
	unsigned minor = 0, cur = 0;
	bool have = false;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				cur = cur * 10 + (unsigned)(buf[i] - '0');
				have = true;
			} else if (buf[i] == '\n' && have) {
				minor = cur;
				cur = 0;
				have = false;
			}
		}
	}
	return minor;
}

bool fs_abort_conn_minor(unsigned minor)
{
	char path[64] = "/sys/fs/fuse/connections/";
	size_t len = strlen(path);
	int fd;

	len += fmt_uint(path + len, minor);
	memcpy(path + len, "/abort", sizeof("/abort"));
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT &&
	    mount("fusectl", "/sys/fs/fuse/connections", "fusectl", 0, NULL) == 0)
		fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = write(fd, "1", 1) == 1;
	int e = errno;

	close(fd);
	errno = e;
	return ok;
}

static __attribute__((noreturn)) void guard_main(pid_t daemon, int rfd)
{
	sigset_t all;
	struct pollfd pfd;
	int pidfd, sig;

	/* Stop signals are meant for the daemon (a terminal's ^C reaches the
	 * whole process group): the guard ends by itself. */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_NAME, "plugfs-guard", 0, 0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0) != 0)
		_exit(1);
	pidfd = (int)syscall(SYS_pidfd_open, daemon, 0);
	if (pidfd < 0 || getppid() != daemon) {
		/* The daemon's thread is already gone (or pidfds are missing):
		 * nothing to watch safely. */
		_exit(0);
	}
	sigemptyset(&all);
	sigaddset(&all, SIGUSR1);
	do {
		sig = sigwaitinfo(&all, NULL);
	} while (sig < 0 && errno == EINTR);

	pfd.fd = pidfd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, FS_GUARD_GRACE_MS) == 1)
		_exit(0); /* gone: nothing held the connection */
	unsigned minor = read_conn(rfd);

	if (minor == 0) {
		say("daemon ", (unsigned long)daemon,
		    " did not finish exiting and its FUSE connection is unknown", 0, "");
		_exit(1);
	}
	if (fs_abort_conn_minor(minor))
		say("daemon ", (unsigned long)daemon,
		    " did not finish exiting (a thread waits on its own mount); aborted FUSE "
		    "connection ",
		    minor, "");
	else
		say("daemon ", (unsigned long)daemon,
		    " did not finish exiting; cannot abort FUSE connection ", minor, "");
	_exit(0);
}

int fs_guard_start(struct fs_guard *g)
{
	int p[2];
	pid_t daemon = getpid(), pid;

	g->pid = 0;
	g->wfd = -1;
	guard_journal = plog_journal();
	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		int rfd = p[0];

		/* Keep stderr and the read end only: never a file of the
		 * daemon's (its listening socket, its database). */
		if (rfd != 3) {
			if (dup2(rfd, 3) < 0)
				_exit(1);
			rfd = 3;
		}
		syscall(SYS_close_range, 4U, ~0U, 0U);
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			if (null > STDERR_FILENO && null != rfd)
				close(null);
		}
		fcntl(rfd, F_SETFL, O_NONBLOCK);
		guard_main(daemon, rfd);
	}
	close(p[0]);
	g->pid = pid;
	g->wfd = p[1];
	return 0;
}

void fs_guard_set_conn(struct fs_guard *g, unsigned minor)
{
	char buf[24];
	size_t n;

	if (g->wfd < 0 || minor == 0)
		return;
	n = fmt_uint(buf, minor);
	buf[n++] = '\n';
	if (write(g->wfd, buf, n) != (ssize_t)n)
		log_warn("fs: cannot tell the guard its connection: %s", strerror(errno));
}

void fs_guard_stop(struct fs_guard *g)
{
	if (g->pid > 0) {
		kill(g->pid, SIGKILL);
		while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (g->wfd >= 0)
		close(g->wfd);
	g->pid = 0;
	g->wfd = -1;
}
