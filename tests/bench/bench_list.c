/* SPDX-License-Identifier: MIT */
/*
 * plugfs-bench --scale, the list rows (bench_list.h): with the daemon of one
 * size running,
 *
 *   - list time: `plugfs list --json > /dev/null' through the CLI, the best
 *     of LIST_RUNS;
 *   - the daemon's peak RSS during those lists against its RSS at rest just
 *     before: the peak from VmHWM after resetting it (clear_refs 5), and a
 *     sampler reading VmRSS every millisecond, the larger of the two;
 *   - status latency: STATUS_N `status' requests one after another, each on
 *     a new connection, first with nothing else going on, then while another
 *     client loops full streamed lists as fast as it reads them: p50, p99.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_list.h"
#include "array.h"
#include "bench_util.h"
#include "clock.h"

#define LIST_RUNS 3
#define LIST_TARGET_RATIO 2.0
#define LIST_JUDGED_FROM 1000
#define STATUS_N 400
#define LISTS_MEANWHILE 3
#define BUSY_MAX_S 60

/* A field ("VmRSS", "VmHWM") of /proc/PID/status in KiB, or -1. */
static long proc_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t fl = strlen(field);
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			kib = strtol(line + fl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

/* Resets the peak RSS (VmHWM) of pid to its RSS now; 0 or -1. */
static int reset_hwm(pid_t pid)
{
	char path[64];
	int fd, rc;

	snprintf(path, sizeof(path), "/proc/%ld/clear_refs", (long)pid);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	rc = write(fd, "5", 1) == 1 ? 0 : -1;
	close(fd);
	return rc;
}

struct sampler {
	pid_t pid;
	atomic_bool stop;
	long peak_kib;
};

static void *sample(void *arg)
{
	struct sampler *s = arg;

	while (!atomic_load(&s->stop)) {
		long k = proc_kib(s->pid, "VmRSS");

		if (k > s->peak_kib)
			s->peak_kib = k;
		usleep(1000);
	}
	return NULL;
}

/* Sends req and reads until pat ("\n" for one answer, "\n{\"end\":" for
 * the end line of a streamed list).  0 or -1. */
static int exchange(const char *path, const char *req, const char *pat)
{
	char buf[(1 << 16) + 16];
	size_t keep = 0, pl = strlen(pat);
	int fd = bench_ctl_connect(path), rc = -1;

	if (fd < 0)
		return -1;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		goto out;
	for (;;) {
		ssize_t n = recv(fd, buf + keep, 1 << 16, 0);
		size_t len;

		if (n <= 0)
			goto out;
		len = keep + (size_t)n;
		if (memmem(buf, len, pat, pl)) {
			rc = 0;
			goto out;
		}
		keep = len < pl - 1 ? len : pl - 1;
		memmove(buf, buf + len - keep, keep);
	}
out:
	close(fd);
	return rc;
}

struct lister {
	const char *socket;
	atomic_bool stop;
	_Atomic long lists;
	bool failed;
};

static void *loop_lists(void *arg)
{
	struct lister *l = arg;

	while (!atomic_load(&l->stop)) {
		if (exchange(l->socket, "{\"op\":\"list\",\"stream\":true}\n", "\n{\"end\":") != 0) {
			l->failed = true;
			break;
		}
		l->lists++;
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* p50, p99 and max of status round trips, in ms: STATUS_N of them, and
 * with l (may be NULL) until it completed LISTS_MEANWHILE more lists too
 * (so that list starts, the names taken and sorted, fall among them), for
 * at most BUSY_MAX_S. */
static int status_latency(const char *socket, struct lister *l, double *p50, double *p99,
			  double *max)
{
	size_t n = 0, cap = STATUS_N;
	double *t = calloc(cap, sizeof(*t));
	long lists0 = l ? l->lists : 0;
	uint64_t start = plugfs_mono_ns();

	if (!t)
		return -1;
	while (n < STATUS_N || (l && l->lists - lists0 < LISTS_MEANWHILE &&
				plugfs_mono_ns() - start < BUSY_MAX_S * 1000000000ull)) {
		uint64_t t0 = plugfs_mono_ns();

		if (PLUGFS_GROW(t, cap, n, STATUS_N) != 0) {
			free(t);
			return -1;
		}
		if (exchange(socket, "{\"op\":\"status\"}\n", "\n") != 0) {
			free(t);
			return -1;
		}
		t[n++] = (double)(plugfs_mono_ns() - t0) / 1e6;
	}
	qsort(t, n, sizeof(*t), cmp_double);
	*p50 = t[n / 2];
	*p99 = t[n * 99 / 100];
	*max = t[n - 1];
	free(t);
	return 0;
}

int bench_list(const char *plugfs, const char *cfg, const char *socket, pid_t daemon,
	       struct list_figures *out)
{
	struct sampler smp = {.pid = daemon};
	struct lister lst = {.socket = socket};
	pthread_t th;
	bool hwm;

	memset(out, 0, sizeof(*out));
	out->list_ms = 1e12;
	out->rss_rest_kib = proc_kib(daemon, "VmRSS");
	hwm = reset_hwm(daemon) == 0;
	smp.peak_kib = out->rss_rest_kib;
	if (pthread_create(&th, NULL, sample, &smp) != 0)
		return -1;
	for (int k = 0; k < LIST_RUNS; k++) {
		uint64_t t0 = plugfs_mono_ns();
		char *const argv[] = {(char *)plugfs, "-c", (char *)cfg, "list", "--json", NULL};
		int rc = bench_run_quiet(argv);
		double ms = (double)(plugfs_mono_ns() - t0) / 1e6;

		if (rc != 0) {
			fprintf(stderr, "plugfs-bench: plugfs list --json failed\n");
			atomic_store(&smp.stop, true);
			pthread_join(th, NULL);
			return -1;
		}
		if (ms < out->list_ms)
			out->list_ms = ms;
	}
	atomic_store(&smp.stop, true);
	pthread_join(th, NULL);
	out->rss_peak_kib = smp.peak_kib;
	if (hwm) {
		long h = proc_kib(daemon, "VmHWM");

		if (h > out->rss_peak_kib)
			out->rss_peak_kib = h;
	}
	out->peak_from_hwm = hwm;

	if (status_latency(socket, NULL, &out->status_idle_p50, &out->status_idle_p99,
			   &out->status_idle_max) != 0)
		return -1;
	if (pthread_create(&th, NULL, loop_lists, &lst) != 0)
		return -1;
	usleep(50000);
	if (status_latency(socket, &lst, &out->status_busy_p50, &out->status_busy_p99,
			   &out->status_busy_max) != 0) {
		atomic_store(&lst.stop, true);
		pthread_join(th, NULL);
		return -1;
	}
	atomic_store(&lst.stop, true);
	pthread_join(th, NULL);
	out->lists_meanwhile = lst.lists;
	if (lst.failed) {
		fprintf(stderr, "plugfs-bench: a streamed list failed\n");
		return -1;
	}
	return 0;
}

void bench_list_print(const long *n, const struct list_figures *f, size_t k)
{
	printf("%-34s", "list --json via the CLI (ms)");
	for (size_t i = 0; i < k; i++)
		printf(" %16.1f", f[i].list_ms);
	printf("   (best of 3, output to /dev/null)\n");

	/* Flat cost: per plugin, against the smallest N of at least
	 * LIST_JUDGED_FROM (below it the fixed cost of a run dominates). */
	{
		double ref = 0;

		for (size_t i = 0; i < k && ref == 0; i++)
			if (n[i] >= LIST_JUDGED_FROM)
				ref = f[i].list_ms * 1000.0 / (double)n[i];
		printf("%-34s", "  per plugin (us)");
		for (size_t i = 0; i < k; i++) {
			double us = f[i].list_ms * 1000.0 / (double)n[i];

			printf(" %9.1f %-6s", us,
			       bench_verdict(ref > 0 && n[i] >= LIST_JUDGED_FROM,
				       us <= LIST_TARGET_RATIO * ref));
		}
		printf("   <= %.0fx the smallest N >= %d\n", LIST_TARGET_RATIO, LIST_JUDGED_FROM);
	}

	printf("%-34s", "daemon RSS at rest (KiB)");
	for (size_t i = 0; i < k; i++)
		printf(" %16ld", f[i].rss_rest_kib);
	printf("\n");

	printf("%-34s", "daemon peak RSS during list (KiB)");
	for (size_t i = 0; i < k; i++)
		printf(" %16ld", f[i].rss_peak_kib);
	printf("   (%s)\n", k && f[0].peak_from_hwm ? "VmHWM reset before, and sampled"
							: "VmRSS sampled every 1 ms");

	printf("%-34s", "  peak / rest");
	for (size_t i = 0; i < k; i++) {
		double r = f[i].rss_rest_kib > 0 ? (double)f[i].rss_peak_kib /
							       (double)f[i].rss_rest_kib
							 : 0;

		printf(" %9.3f %-6s", r, bench_verdict(true, r <= LIST_RSS_TARGET_RATIO));
	}
	printf("   <= %.1f\n", LIST_RSS_TARGET_RATIO);

	printf("%-34s", "status p50/p99/max, alone (ms)");
	for (size_t i = 0; i < k; i++)
		printf(" %5.2f/%4.1f/%5.1f", f[i].status_idle_p50,
		       f[i].status_idle_p99, f[i].status_idle_max);
	printf("\n");

	printf("%-34s", "status p50/p99/max, listing (ms)");
	for (size_t i = 0; i < k; i++)
		printf(" %5.2f/%4.1f/%5.1f", f[i].status_busy_p50,
		       f[i].status_busy_p99, f[i].status_busy_max);
	printf("   another client loops full lists (3 or more)\n");

	printf("%-34s", "  p99 verdict");
	for (size_t i = 0; i < k; i++)
		printf(" %16s",
		       bench_verdict(true, f[i].status_busy_p99 <= STATUS_BUSY_TARGET_MS));
	printf("   <= %.0f ms\n", STATUS_BUSY_TARGET_MS);

	printf("%-34s", "  lists completed meanwhile");
	for (size_t i = 0; i < k; i++)
		printf(" %16ld", f[i].lists_meanwhile);
	printf("\n");

}
