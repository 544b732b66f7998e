/* SPDX-License-Identifier: MIT */
/*
 * plugfs-test-connect-loop: the consumer of the systemd restart test.  It
 * plays a container that bind-mounted a plugin directory and connects to
 * the plugin through it, over and over, while the daemon is restarted.
 *
 *   plugfs-test-connect-loop --socket PATH --control DIR [--interval-ms N]
 *
 * Every attempt connect()s to PATH (a csi.sock symlink, so the kernel asks
 * the FUSE daemon for it once its cache expired), reads the line the
 * plugfs-demo-plugin behind it answers with (its allocation id, "a<N>")
 * and closes.  An attempt fails when connect or the read fails; it is
 * wrong when the answer is not "a<N>" or names an older allocation than
 * one already seen (allocations only ever move forward in the test).
 *
 * The figures are kept per phase.  The phase is the first line of
 * DIR/phase, read before every attempt (the driver writes it with a rename):
 * when it changes, the figures of the phase that ended are appended to
 * DIR/figures as one line
 *
 *   phase=NAME tried=N ok=N failed=N wrong=N stall_ms=N gap_ms=N last=aN errors=E:N,...
 *
 * (stall_ms: the longest attempt; gap_ms: the longest time without a good
 * answer) and counting starts again.  The phase "end" makes it exit 0.
 * Without DIR/phase the phase is "none".  Exit 1 on a usage or I/O error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define PROG "plugfs-test-connect-loop"
#define PHASE_MAX 64
#define ERRNO_SLOTS 8
#define READ_TIMEOUT_S 10

struct figures {
	char phase[PHASE_MAX];
	unsigned long tried, ok, failed, wrong;
	double stall_ms;  /* longest single attempt */
	double gap_ms;	  /* longest time between two good answers */
	double last_good; /* monotonic seconds of the last good answer */
	long last_alloc;  /* highest allocation seen, -1 before the first */
	struct {
		int err; /* errno, or -1 for a wrong answer */
		unsigned long n;
	} errors[ERRNO_SLOTS];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void count_error(struct figures *f, int err)
{
	for (int i = 0; i < ERRNO_SLOTS; i++) {
		if (f->errors[i].n == 0)
			f->errors[i].err = err;
		if (f->errors[i].err == err) {
			f->errors[i].n++;
			return;
		}
	}
}

static const char *err_name(int err)
{
	switch (err) {
	case -1:
		return "WRONG";
	case 0:
		return "EOF";
	case ENOTCONN:
		return "ENOTCONN";
	case ENOENT:
		return "ENOENT";
	case ECONNREFUSED:
		return "ECONNREFUSED";
	case ESTALE:
		return "ESTALE";
	case EIO:
		return "EIO";
	case EINTR:
		return "EINTR";
	case EPIPE:
		return "EPIPE";
	case EAGAIN:
		return "ETIMEDOUT";
	default:
		return "other";
	}
}

/* Reads the first line of path into buf (at most len - 1 bytes); "none"
 * when the file is missing.  0 or -errno. */
static int read_phase(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0) {
		if (errno != ENOENT)
			return -errno;
		snprintf(buf, len, "none");
		return 0;
	}
	n = read(fd, buf, len - 1);
	if (n < 0) {
		rc = -errno;
		goto out;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
out:
	close(fd);
	return rc;
}

/* Appends the figures of f as one line to path.  0 or -errno. */
static int write_figures(const char *path, const struct figures *f)
{
	FILE *out = fopen(path, "a");
	int rc = 0;

	if (!out)
		return -errno;
	fprintf(out, "phase=%s tried=%lu ok=%lu failed=%lu wrong=%lu stall_ms=%.0f gap_ms=%.0f",
		f->phase, f->tried, f->ok, f->failed, f->wrong, f->stall_ms, f->gap_ms);
	if (f->last_alloc >= 0)
		fprintf(out, " last=a%ld", f->last_alloc);
	else
		fprintf(out, " last=-");
	fprintf(out, " errors=");
	for (int i = 0; i < ERRNO_SLOTS && f->errors[i].n; i++)
		fprintf(out, "%s%s:%lu", i ? "," : "", err_name(f->errors[i].err), f->errors[i].n);
	if (f->errors[0].n == 0)
		fprintf(out, "-");
	fprintf(out, "\n");
	if (fclose(out) != 0)
		rc = -errno;
	return rc;
}

/*
 * One attempt: connect to addr, read the answer into buf.  Returns 0 on an
 * answer, else the errno of the step that failed (0 is never an error:
 * a closed connection without an answer is reported as EPIPE).
 */
static int attempt(const struct sockaddr_un *addr, char *buf, size_t len)
{
	struct timeval tv = {.tv_sec = READ_TIMEOUT_S};
	size_t got = 0;
	int err = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0) {
		err = errno;
		goto out;
	}
	while (got < len - 1) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (memchr(buf, '\n', got))
			break;
	}
	buf[got] = '\0';
	if (got == 0)
		err = EPIPE;
out:
	close(fd);
	return err;
}

/* The allocation number of an answer "a<N>\n", or -1. */
static long parse_alloc(const char *answer)
{
	char *end = NULL;
	long n;

	if (answer[0] != 'a' || answer[1] < '0' || answer[1] > '9')
		return -1;
	n = strtol(answer + 1, &end, 10);
	if (*end != '\n' && *end != '\0')
		return -1;
	return n;
}

static void reset(struct figures *f, const char *phase, double t, long last_alloc)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->phase, sizeof(f->phase), "%s", phase);
	f->last_good = t;
	f->last_alloc = last_alloc;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: " PROG " --socket PATH --control DIR [--interval-ms N]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"socket", required_argument, NULL, 's'},
					     {"control", required_argument, NULL, 'c'},
					     {"interval-ms", required_argument, NULL, 'i'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	const char *sock = NULL, *dir = NULL;
	char phase_path[4096], figures_path[4096], phase[PHASE_MAX], answer[256];
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct figures f;
	long interval_ms = 1;
	int c, rc;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'c':
			dir = optarg;
			break;
		case 'i':
			interval_ms = strtol(optarg, NULL, 10);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (!sock || !dir || optind != argc || interval_ms < 0 ||
	    strlen(sock) >= sizeof(addr.sun_path)) {
		usage(stderr);
		return 1;
	}
	memcpy(addr.sun_path, sock, strlen(sock) + 1);
	snprintf(phase_path, sizeof(phase_path), "%s/phase", dir);
	snprintf(figures_path, sizeof(figures_path), "%s/figures", dir);
	if (read_phase(phase_path, phase, sizeof(phase)) < 0) {
		fprintf(stderr, PROG ": cannot read %s: %s\n", phase_path, strerror(errno));
		return 1;
	}
	reset(&f, phase, now_s(), -1);
	for (;;) {
		double t0, t1;
		long alloc;
		int err;

		if ((rc = read_phase(phase_path, phase, sizeof(phase))) < 0) {
			fprintf(stderr, PROG ": cannot read %s: %s\n", phase_path, strerror(-rc));
			return 1;
		}
		if (strcmp(phase, f.phase) != 0) {
			t0 = now_s();
			if (t0 - f.last_good > f.gap_ms / 1000)
				f.gap_ms = (t0 - f.last_good) * 1000;
			if ((rc = write_figures(figures_path, &f)) < 0) {
				fprintf(stderr, PROG ": cannot write %s: %s\n", figures_path,
					strerror(-rc));
				return 1;
			}
			if (strcmp(phase, "end") == 0)
				return 0;
			reset(&f, phase, t0, f.last_alloc);
		}
		t0 = now_s();
		err = attempt(&addr, answer, sizeof(answer));
		t1 = now_s();
		f.tried++;
		if ((t1 - t0) * 1000 > f.stall_ms)
			f.stall_ms = (t1 - t0) * 1000;
		if (err) {
			f.failed++;
			count_error(&f, err);
		} else if ((alloc = parse_alloc(answer)) < 0 || alloc < f.last_alloc) {
			f.wrong++;
			count_error(&f, -1);
		} else {
			f.ok++;
			f.last_alloc = alloc;
			if ((t1 - f.last_good) * 1000 > f.gap_ms)
				f.gap_ms = (t1 - f.last_good) * 1000;
			f.last_good = t1;
		}
		if (interval_ms > 0)
			usleep((useconds_t)interval_ms * 1000);
	}
}
