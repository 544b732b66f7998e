/* SPDX-License-Identifier: MIT */
/*
 * plugfs-demo-plugin: a stand-in for a CSI plugin allocation, used by the
 * README walkthrough and the tests.
 *
 *   plugfs-demo-plugin --socket PATH --alloc ID [--once]
 *       listens on the Unix stream socket PATH and answers every connection
 *       with "ID\n", then closes it.  SIGTERM or SIGINT: removes the socket
 *       and exits 0.
 *   plugfs-demo-plugin --connect PATH [--wait SECONDS]
 *       connects to PATH (through symlinks, e.g. a plugfs csi.sock) and
 *       copies what the server sends to stdout: which allocation answered.
 *
 * Exit codes: 0 success, 1 failure (bind, connect, I/O), 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define PROG "plugfs-demo-plugin"
#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define ALLOC_MAX 128
#define CONNECT_IO_TIMEOUT_S 5

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " --socket PATH --alloc ID [--once]\n"
		"       " PROG " --connect PATH [--wait SECONDS]\n"
		"\n"
		"A stand-in for a CSI plugin allocation, for the plugfs walkthrough and tests.\n"
		"\n"
		"Server mode: listens on the Unix stream socket PATH (creating its parent\n"
		"directory and replacing a stale socket file) and answers every connection\n"
		"with the allocation id and a newline.  SIGTERM or SIGINT removes the socket\n"
		"and exits 0.\n"
		"  --socket PATH     where to listen (at most %zu bytes)\n"
		"  --alloc ID        the allocation id to answer with (1-%d printable characters)\n"
		"  --once            exit after answering one connection\n"
		"\n"
		"Client mode: connects to PATH (symlinks are followed, so a plugfs csi.sock\n"
		"works) and prints what the server sends.\n"
		"  --connect PATH    the socket to connect to\n"
		"  --wait SECONDS    retry for up to SECONDS while PATH is missing or refuses\n"
		"                    connections (default 0: one try)\n"
		"\n"
		"Exit codes: 0 success, 1 failure, 2 usage error.\n",
		sizeof(((struct sockaddr_un *)0)->sun_path) - 1, ALLOC_MAX);
}

/* Fills addr from path; -ENAMETOOLONG when it does not fit sun_path. */
static int make_addr(const char *path, struct sockaddr_un *addr)
{
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(addr->sun_path))
		return -ENAMETOOLONG;
	memcpy(addr->sun_path, path, strlen(path) + 1);
	return 0;
}

/* mkdir -p of the directory that holds path (mode 0755). 0 or -errno. */
static int make_parent_dirs(const char *path)
{
	char buf[PATH_MAX];
	char *slash = NULL;
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0; /* relative name in the cwd, or a file in / */
	*slash = '\0';
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static bool valid_alloc(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > ALLOC_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/*
 * Removes what is at path when it is a socket nobody answers on.  0 when
 * the path is free now, else -errno with a message in err.
 */
static int remove_stale_socket(const char *path, const struct sockaddr_un *addr, char *err,
			       size_t errlen)
{
	struct stat st;
	int fd = -1;
	int rc = 0;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISSOCK(st.st_mode)) {
		rc = -EEXIST;
		snprintf(err, errlen, "%s exists and is not a socket; not replacing it", path);
		goto out;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto out;
	}
	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0) {
		rc = -EADDRINUSE;
		snprintf(err, errlen, "%s: another server is listening there", path);
		goto out;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "cannot remove stale socket %s: %s", path, strerror(errno));
		goto out;
	}
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

static int serve(const char *path, const char *alloc, bool once)
{
	struct sockaddr_un addr;
	struct sigaction sa;
	struct stat bound;
	struct stat now;
	sigset_t block, orig;
	char err[PATH_MAX + 128];
	char reply[ALLOC_MAX + 2];
	size_t reply_len;
	bool bound_ok = false;
	int lfd = -1;
	int rc = EXIT_FAILED;
	int e;

	if (make_addr(path, &addr) < 0) {
		fprintf(stderr, PROG ": --socket: `%s' is longer than %zu bytes (sun_path limit)\n",
			path, sizeof(addr.sun_path) - 1);
		return EXIT_USAGE;
	}
	reply_len = (size_t)snprintf(reply, sizeof(reply), "%s\n", alloc);

	/* Block the stop signals; ppoll() unblocks them only while it waits. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &orig);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	e = make_parent_dirs(path);
	if (e < 0) {
		fprintf(stderr, PROG ": cannot create the directory of %s: %s\n", path, strerror(-e));
		goto out;
	}
	if (remove_stale_socket(path, &addr, err, sizeof(err)) < 0) {
		fprintf(stderr, PROG ": %s\n", err);
		goto out;
	}
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		fprintf(stderr, PROG ": socket: %s\n", strerror(errno));
		goto out;
	}
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		fprintf(stderr, PROG ": cannot bind %s: %s\n", path, strerror(errno));
		goto out;
	}
	bound_ok = stat(path, &bound) == 0;
	if (listen(lfd, 64) < 0) {
		fprintf(stderr, PROG ": cannot listen on %s: %s\n", path, strerror(errno));
		goto out;
	}
	fprintf(stderr, PROG ": alloc %s listening on %s\n", alloc, path);

	while (!stop_signal) {
		struct pollfd pfd = {.fd = lfd, .events = POLLIN};
		int n = ppoll(&pfd, 1, NULL, &orig);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, PROG ": poll: %s\n", strerror(errno));
			goto out;
		}
		int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED)
				continue;
			fprintf(stderr, PROG ": accept: %s\n", strerror(errno));
			goto out;
		}
		/* A short reply fits the socket buffer: this does not block. */
		if (send(cfd, reply, reply_len, MSG_NOSIGNAL) < 0 && errno != EPIPE)
			fprintf(stderr, PROG ": send: %s\n", strerror(errno));
		close(cfd);
		if (once)
			break;
	}
	rc = 0;
out:
	if (lfd >= 0)
		close(lfd);
	/* Remove the socket only if it is still the one we bound. */
	if (bound_ok && lstat(path, &now) == 0 && now.st_dev == bound.st_dev &&
	    now.st_ino == bound.st_ino)
		unlink(path);
	if (stop_signal)
		fprintf(stderr, PROG ": alloc %s stopping on signal %d\n", alloc, (int)stop_signal);
	return rc;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int client(const char *path, double wait_s)
{
	struct sockaddr_un addr;
	struct timeval tv = {.tv_sec = CONNECT_IO_TIMEOUT_S};
	double deadline = now_s() + wait_s;
	char buf[4096];
	int fd = -1;
	int rc = EXIT_FAILED;

	if (make_addr(path, &addr) < 0) {
		fprintf(stderr, PROG ": --connect: `%s' is longer than %zu bytes (sun_path limit)\n",
			path, sizeof(addr.sun_path) - 1);
		return EXIT_USAGE;
	}
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			fprintf(stderr, PROG ": socket: %s\n", strerror(errno));
			goto out;
		}
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			break;
		int e = errno;
		close(fd);
		fd = -1;
		if ((e == ENOENT || e == ECONNREFUSED) && now_s() < deadline) {
			usleep(50 * 1000);
			continue;
		}
		fprintf(stderr, PROG ": cannot connect to %s: %s\n", path, strerror(e));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n == 0)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, PROG ": reading from %s: %s\n", path,
				errno == EAGAIN ? "timed out" : strerror(errno));
			goto out;
		}
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) {
			fprintf(stderr, PROG ": writing to stdout: %s\n", strerror(errno));
			goto out;
		}
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, PROG ": writing to stdout: %s\n", strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

int main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, 's'},
		{"alloc", required_argument, NULL, 'a'},
		{"once", no_argument, NULL, 'o'},
		{"connect", required_argument, NULL, 'c'},
		{"wait", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *sock = NULL;
	const char *alloc = NULL;
	const char *conn = NULL;
	double wait_s = 0;
	bool once = false;
	bool have_wait = false;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'a':
			alloc = optarg;
			break;
		case 'o':
			once = true;
			break;
		case 'c':
			conn = optarg;
			break;
		case 'w': {
			char *end = NULL;

			errno = 0;
			wait_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(wait_s >= 0 && wait_s <= 86400)) {
				fprintf(stderr,
					PROG ": --wait: `%s' is not a number of seconds from 0 to "
					     "86400\n",
					optarg);
				return EXIT_USAGE;
			}
			have_wait = true;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			/* getopt_long has printed what was wrong. */
			fprintf(stderr, "Try `" PROG " --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument `%s'; try `" PROG " --help'\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (conn) {
		if (sock || alloc || once) {
			fprintf(stderr, PROG ": --connect cannot be combined with --socket, --alloc "
					     "or --once\n");
			return EXIT_USAGE;
		}
		if (!*conn) {
			fprintf(stderr, PROG ": --connect: the path is empty\n");
			return EXIT_USAGE;
		}
		return client(conn, wait_s);
	}
	if (have_wait) {
		fprintf(stderr, PROG ": --wait only applies to --connect\n");
		return EXIT_USAGE;
	}
	if (!sock || !alloc) {
		fprintf(stderr, PROG ": %s is required; try `" PROG " --help'\n",
			!sock ? "--socket PATH" : "--alloc ID");
		return EXIT_USAGE;
	}
	if (!*sock) {
		fprintf(stderr, PROG ": --socket: the path is empty\n");
		return EXIT_USAGE;
	}
	if (!valid_alloc(alloc)) {
		fprintf(stderr,
			PROG ": --alloc: `%s' must be 1-%d printable characters without spaces\n",
			alloc, ALLOC_MAX);
		return EXIT_USAGE;
	}
	return serve(sock, alloc, once);
}
