/* SPDX-License-Identifier: MIT */
/*
 * plugfs-test-ctlraw [--hold] SOCKET [TIMEOUT_S]: a raw control-socket
 * client for the tests.  Sends stdin byte for byte (no framing added), shuts
 * down its sending side and copies everything the daemon answers to stdout
 * (flushed as it arrives) until the daemon closes the connection.  Exit 0, or
 * 1 on a connect or I/O error or when the daemon keeps the connection open
 * past TIMEOUT_S (default 10) without answering.  With --hold the sending side
 * stays open: an idle client that only the daemon can end.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"

int main(int argc, char *argv[])
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char buf[65536];
	bool hold = argc > 1 && strcmp(argv[1], "--hold") == 0;
	int fd, timeout_ms, e;
	size_t off = 0, len = 0;
	char *in = NULL;
	ssize_t n;

	if (hold) {
		argc--;
		argv++;
	}
	timeout_ms = argc > 2 ? atoi(argv[2]) * 1000 : 10000;
	if (argc < 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr,
			"usage: plugfs-test-ctlraw [--hold] SOCKET [TIMEOUT_S] < request-bytes\n");
		return 2;
	}
	if ((e = plugfs_read_fd(STDIN_FILENO, (size_t)1 << 30, &in, &len)) != 0) {
		fprintf(stderr, "plugfs-test-ctlraw: reading the request: %s\n", strerror(-e));
		return 1;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "plugfs-test-ctlraw: connect %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (len == 0 && !hold)
		shutdown(fd, SHUT_WR);
	/* Send and receive together: a large request may only fit once the
	 * daemon has answered earlier lines. */
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN | (off < len ? POLLOUT : 0)};
		int rc = poll(&p, 1, timeout_ms);

		if (rc == 0) {
			fprintf(stderr, "plugfs-test-ctlraw: no end of answer within %d ms\n",
				timeout_ms);
			return 1;
		}
		if (rc < 0)
			return 1;
		if (p.revents & POLLOUT) {
			n = send(fd, in + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN) {
				fprintf(stderr, "plugfs-test-ctlraw: send: %s\n", strerror(errno));
				return 1;
			}
			if (n > 0)
				off += (size_t)n;
			if (off == len && !hold)
				shutdown(fd, SHUT_WR);
		}
		if (p.revents & (POLLIN | POLLHUP)) {
			n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n == 0)
				break;
			if (n < 0 && errno != EAGAIN) {
				if (errno == ECONNRESET)
					break;
				fprintf(stderr, "plugfs-test-ctlraw: recv: %s\n", strerror(errno));
				return 1;
			}
			if (n > 0) {
				fwrite(buf, 1, (size_t)n, stdout);
				fflush(stdout);
			}
		}
	}
	close(fd);
	free(in);
	return 0;
}
