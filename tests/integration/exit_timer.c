/* SPDX-License-Identifier: MIT */
/*
 * plugfs-test-exit-timer PID: times a process's exit from its SIGKILL, as
 * the kernel reports it (test_fs_kill).
 *
 * Opens a pidfd for PID and prints "ready" (or "gone" when PID no longer
 * exists).  On the first line read from standard input, "kill [LOAD_PID...]",
 * it sends SIGKILL through the pidfd, stops each LOAD_PID's process group
 * (SIGSTOP: the load a test puts on the machine, children included, so that
 * what is timed is the exit, not a CPU taken by the load; a LOAD_PID in this
 * process's own group is stopped alone), and waits up to 5 s for the pidfd to
 * become readable, which it does once every thread of PID has exited (a
 * thread stuck inside the kernel keeps it unreadable).  Prints the
 * milliseconds from the kill to that moment, or "hung"; exits 0, or 2 on a
 * usage or system error.
 *
 * Started before the kill, and before the load, its own start-up is not in
 * the figure, and neither is a test shell that polls /proc and forks a sed
 * per thread.  It is C, not python: a python start takes 0.6 s here, and a
 * test that kills 170 daemons starts one per kill.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

#define EXIT_WAIT_MS 5000

/* line: "kill [LOAD_PID...]". */
static void stop_load(char *line)
{
	pid_t own = getpgrp();
	char *save = NULL;

	(void)strtok_r(line, " \t\n", &save);
	for (char *w; (w = strtok_r(NULL, " \t\n", &save));) {
		char *end;
		long p = strtol(w, &end, 10);

		if (*end || p <= 0)
			continue;
		pid_t g = getpgid((pid_t)p);

		if (g < 0)
			continue;
		if (g == own)
			(void)kill((pid_t)p, SIGSTOP);
		else
			(void)kill(-g, SIGSTOP);
	}
}

int main(int argc, char *argv[])
{
	char line[4096];
	struct pollfd pfd;
	int64_t t0, left;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PID\n", argv[0]);
		return 2;
	}
	fd = (int)syscall(SYS_pidfd_open, (pid_t)atoi(argv[1]), 0);
	if (fd < 0) {
		if (errno != ESRCH) {
			fprintf(stderr, "pidfd_open %s: %s\n", argv[1], strerror(errno));
			return 2;
		}
		printf("gone\n");
		return 0;
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;

	t0 = plugfs_mono_ms();
	/* A zombie already: the pidfd is readable at once. */
	if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) != 0 && errno != ESRCH) {
		fprintf(stderr, "pidfd_send_signal: %s\n", strerror(errno));
		return 2;
	}
	stop_load(line);
	pfd.fd = fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	while ((left = t0 + EXIT_WAIT_MS - plugfs_mono_ms()) > 0) {
		int n = poll(&pfd, 1, (int)left);

		if (n > 0 || (n < 0 && errno != EINTR))
			break;
	}
	if (pfd.revents & POLLIN)
		printf("%lld\n", (long long)(plugfs_mono_ms() - t0));
	else
		printf("hung\n");
	return 0;
}
