/* SPDX-License-Identifier: MIT */
/*
 * plugfs-bench --scale N[,N...]: what the daemon costs at N plugins, as a new
 * user would see it, the sizes side by side in one run.
 *
 * For each N it writes a legacy registry of N plugins (csi-node/plugin-K,
 * one allocation each, sockets that do not exist), imports it with `plugfs
 * state import` (synchronous=normal, state on tmpfs), starts `plugfs mount`
 * and measures:
 *
 *   - start to ready: from fork to the daemon's "ready:" line (the FUSE
 *     handshake answered), [probe] mode = none; and again with mode =
 *     connect, every probe failing on a missing socket; the best of
 *     STARTS starts each (the least disturbed on a shared machine);
 *   - RSS per registration: the daemon's VmRSS at ready, minus that of a
 *     daemon with no registration measured in the same run, over N;
 *   - an uncached lookup in the type directory: stat of <type>/<name> for
 *     names the kernel has not seen (each a FUSE LOOKUP), median over up to
 *     2,000 names;
 *   - `plugfs list --json': its time, the daemon's peak RSS during it
 *     against its RSS at rest, and status p50/p99 alone and while another
 *     client loops full lists (bench_list.c).
 *
 * Targets: start to ready <= 1000 ms (goal 200 ms); RSS per registration
 * <= 1024 bytes (judged from 10,000 registrations on, where it is above the
 * noise of a page count); uncached lookup <= 2x the median at the smallest
 * size of the run (flat cost); list time per plugin <= 2x that of the
 * smallest size of 1,000 or more; peak RSS during a list <= 1.2x at rest;
 * status p99 while another client lists <= 50 ms.  Timings never fail the
 * run.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_list.h"
#include "bench_scale.h"
#include "bench_util.h"
#include "clock.h"

#define SCALE_MAX_SIZES 8
#define STARTS 3
#define LOOKUPS 2000
#define START_TARGET_MS 1000.0
#define START_GOAL_MS 200.0
#define RSS_TARGET_B 1024.0
#define RSS_JUDGED_FROM 10000
#define LOOKUP_TARGET_RATIO 2.0

struct scale_run {
	long n;
	double start_ms, start_connect_ms;
	double start_cpu_ms; /* CPU (user + system) of the daemon until ready, best start */
	long rss_kib;
	double rss_per_reg;
	double lookup_us;
	double reg_us, dereg_us; /* through the control socket, medians */
	char phases[512]; /* the ready line's breakdown, mode none */
	struct list_figures list;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int write_config(const char *dir, const char *state, const char *probe, char *cfg,
			size_t len)
{
	FILE *f;

	snprintf(cfg, len, "%s/plugfs-%s.ini", dir, probe);
	f = fopen(cfg, "w");
	if (!f)
		return -1;
	fprintf(f,
		"[mount]\nmountpoint = %s/mnt\nallow_other = true\ncache_timeout = 60\n\n"
		"[state]\npath = %s\nsynchronous = normal\n\n"
		"[control]\nsocket = %s/ctl.sock\n\n"
		"[registry]\ntypes = csi-controller csi-node\n\n"
		"[probe]\nmode = %s\ntimeout = 1\n",
		dir, state, dir, probe);
	return fclose(f);
}

/* The legacy JSON of n plugins into path. */
static int write_legacy(const char *path, const char *dir, long n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs("{\"Plugins\": {\"csi-node\": {", f);
	for (long i = 0; i < n; i++)
		fprintf(f,
			"%s\"plugin-%06ld\": {\"Type\": \"node\", \"Version\": \"1.0\", "
			"\"AllocID\": \"%08lx-0000-4000-8000-%012lx\", \"ConnectionInfo\": "
			"{\"SocketPath\": \"%s/sock/%06ld/csi.sock\"}}",
			i ? ", " : "", i, i, i, dir, i);
	fputs("}}}\n", f);
	return fclose(f);
}

/* Reads a daemon's log to its end. */
static void *drain_main(void *arg)
{
	FILE *log = arg;
	char line[1024];

	while (fgets(line, sizeof(line), log))
		;
	return NULL;
}

int bench_daemon_start(const char *plugfs, const char *cfg, struct bench_daemon *d, double *ms,
		       char *ready, size_t readylen)
{
	char line[1024];
	int p[2];
	uint64_t t0;

	if (pipe(p) != 0)
		return -1;
	t0 = plugfs_mono_ns();
	d->pid = fork();
	if (d->pid < 0)
		return -1;
	if (d->pid == 0) {
		close(p[0]);
		dup2(p[1], 2);
		close(p[1]);
		execl(plugfs, plugfs, "-c", cfg, "mount", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	d->log = fdopen(p[0], "r");
	if (!d->log)
		return -1;
	while (fgets(line, sizeof(line), d->log)) {
		char *r = strstr(line, "ready: serving");

		if (r) {
			*ms = (double)(plugfs_mono_ns() - t0) / 1e6;
			line[strcspn(line, "\n")] = '\0';
			snprintf(ready, readylen, "%s", r);
			/* From now on its log (a line per change) is read
			 * on a thread: a daemon never blocks on a full pipe. */
			d->draining = pthread_create(&d->drain, NULL, drain_main, d->log) == 0;
			return 0;
		}
	}
	fprintf(stderr, "plugfs-bench: the daemon exited before it was ready\n");
	return -1;
}

static long daemon_rss_kib(const struct bench_daemon *d)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)d->pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

double bench_daemon_cpu_ms(const struct bench_daemon *d)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)d->pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields 14 and 15, after the command name in parentheses. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			 &st) != 2)
		return -1;
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

int bench_daemon_stop(struct bench_daemon *d)
{
	char line[1024];
	int status = 0;

	kill(d->pid, SIGTERM);
	/* Drain the log so that the daemon never blocks on a full pipe. */
	if (d->draining)
		pthread_join(d->drain, NULL);
	d->draining = false;
	while (d->log && fgets(line, sizeof(line), d->log))
		;
	if (d->log)
		fclose(d->log);
	d->log = NULL;
	if (waitpid(d->pid, &status, 0) != d->pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Median of stat() of up to LOOKUPS names of the type directory, each the
 * first lookup of that name since the mount (the kernel has not cached it). */
static double uncached_lookup_us(const char *dir, long n)
{
	long k = n < LOOKUPS ? n : LOOKUPS;
	uint64_t *t = calloc((size_t)k, sizeof(*t));
	char path[PATH_MAX];
	struct stat st;
	double med;

	if (!t)
		return -1;
	for (long i = 0; i < k; i++) {
		/* Spread over the whole directory. */
		long idx = (long)((double)i * (double)n / (double)k);

		snprintf(path, sizeof(path), "%s/mnt/plugins/csi-node/plugin-%06ld", dir, idx);
		uint64_t t0 = plugfs_mono_ns();

		if (stat(path, &st) != 0) {
			fprintf(stderr, "plugfs-bench: stat %s: %s\n", path, strerror(errno));
			free(t);
			return -1;
		}
		t[i] = plugfs_mono_ns() - t0;
	}
	qsort(t, (size_t)k, sizeof(*t), cmp_u64);
	med = (double)t[k / 2] / 1000.0;
	free(t);
	return med;
}

/*
 * Medians of RR_PAIRS register and deregister requests through the control
 * socket at sock (each of a new plugin: its answer stays small), one at a
 * time on one connection, the daemon at n plugins
 * (synchronous = normal on tmpfs: the daemon's own cost, not the disk's).
 * 0, or -1.
 */
#define RR_PAIRS 200
static int register_latency(const char *sock, const char *dir, double *reg_us, double *dereg_us)
{
	uint64_t *tr = calloc(RR_PAIRS, sizeof(*tr)), *td = calloc(RR_PAIRS, sizeof(*td));
	int fd = bench_ctl_connect(sock), rc = -1;
	char line[PATH_MAX + 256], ans[65536];

	if (!tr || !td || fd < 0)
		goto out;
	for (int i = 0; i < RR_PAIRS; i++) {
		uint64_t t0 = plugfs_mono_ns();

		snprintf(line, sizeof(line),
			 "{\"op\":\"register\",\"types\":[\"csi-node\"],\"name\":\"bench-rr-%d\","
			 "\"alloc\":\"rr-%d\",\"socket\":\"%s/sock/rr-%d/csi.sock\"}\n",
			 i, i, dir, i);
		if (bench_call(fd, line, ans, sizeof(ans)) != 0 || !strstr(ans, "\"ok\":true"))
			goto out;
		tr[i] = plugfs_mono_ns() - t0;
	}
	for (int i = 0; i < RR_PAIRS; i++) {
		uint64_t t0 = plugfs_mono_ns();

		snprintf(line, sizeof(line),
			 "{\"op\":\"deregister\",\"type\":\"csi-node\",\"name\":\"bench-rr-%d\","
			 "\"alloc\":\"rr-%d\"}\n",
			 i, i);
		if (bench_call(fd, line, ans, sizeof(ans)) != 0 || !strstr(ans, "\"ok\":true"))
			goto out;
		td[i] = plugfs_mono_ns() - t0;
	}
	qsort(tr, RR_PAIRS, sizeof(*tr), cmp_u64);
	qsort(td, RR_PAIRS, sizeof(*td), cmp_u64);
	*reg_us = (double)tr[RR_PAIRS / 2] / 1000.0;
	*dereg_us = (double)td[RR_PAIRS / 2] / 1000.0;
	rc = 0;
out:
	if (rc != 0)
		fprintf(stderr, "plugfs-bench: register/deregister through %s failed%s%s\n", sock,
			fd >= 0 ? ": " : "", fd >= 0 ? ans : "");
	if (fd >= 0)
		close(fd);
	free(tr);
	free(td);
	return rc;
}

/* One size: state, starts in both probe modes, RSS, lookups. */
static int run_size(const char *plugfs, const char *dir, long n, struct scale_run *out)
{
	char state[PATH_MAX], json[PATH_MAX], cfg_none[PATH_MAX], cfg_conn[PATH_MAX];
	char ready[512];
	struct bench_daemon d = {0};
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->n = n;
	snprintf(state, sizeof(state), "%s/state-%ld.db", dir, n);
	snprintf(json, sizeof(json), "%s/legacy-%ld.json", dir, n);
	if (write_config(dir, state, "none", cfg_none, sizeof(cfg_none)) != 0 ||
	    write_config(dir, state, "connect", cfg_conn, sizeof(cfg_conn)) != 0)
		return -1;
	if (n > 0) {
		char *const argv[] = {(char *)plugfs, "-c", cfg_none, "state", "import", json, NULL};

		if (write_legacy(json, dir, n) != 0 || bench_run_quiet(argv) != 0) {
			fprintf(stderr, "plugfs-bench: cannot import %ld registrations\n", n);
			return -1;
		}
		unlink(json);
	}
	out->start_ms = out->start_connect_ms = 1e12;
	for (int k = 0; k < STARTS; k++) {
		double ms;

		if (bench_daemon_start(plugfs, cfg_none, &d, &ms, ready, sizeof(ready)) != 0)
			goto out;
		if (ms < out->start_ms) {
			const char *p = strchr(ready, '(');

			out->start_ms = ms;
			out->start_cpu_ms = bench_daemon_cpu_ms(&d);
			snprintf(out->phases, sizeof(out->phases), "%s", p ? p : ready);
		}
		/* The last start is measured further: RSS, lookups. */
		if (k == STARTS - 1) {
			char sock[PATH_MAX];

			out->rss_kib = daemon_rss_kib(&d);
			out->lookup_us = n > 0 ? uncached_lookup_us(dir, n) : 0;
			snprintf(sock, sizeof(sock), "%s/ctl.sock", dir);
			if (n > 0 && out->lookup_us >= 0 &&
			    bench_list(plugfs, cfg_none, sock, d.pid, &out->list) != 0)
				out->lookup_us = -1;
			if (out->lookup_us >= 0 &&
			    register_latency(sock, dir, &out->reg_us, &out->dereg_us) != 0)
				out->lookup_us = -1;
		}
		if (bench_daemon_stop(&d) != 0 || out->lookup_us < 0)
			goto out;
	}
	for (int k = 0; k < STARTS; k++) {
		double ms;

		if (bench_daemon_start(plugfs, cfg_conn, &d, &ms, ready, sizeof(ready)) != 0)
			goto out;
		if (ms < out->start_connect_ms)
			out->start_connect_ms = ms;
		if (bench_daemon_stop(&d) != 0)
			goto out;
	}
	rc = 0;
out:
	if (rc != 0 && d.pid > 0 && d.log)
		bench_daemon_stop(&d);
	unlink(state);
	return rc;
}

int bench_scale(const char *plugfs, const char *tmpdir, const char *sizes)
{
	struct scale_run runs[SCALE_MAX_SIZES], base;
	long ns[SCALE_MAX_SIZES];
	size_t k = 0;
	char *copy = strdup(sizes), *save = NULL;

	if (!copy)
		return 1;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		long n = strtol(t, &end, 10);

		if (*end || n < 1 || n > 10000000 || k == SCALE_MAX_SIZES) {
			fprintf(stderr,
				"plugfs-bench: --scale `%s': a comma-separated list of at most %d "
				"plugin counts, each 1-10000000\n",
				sizes, SCALE_MAX_SIZES);
			free(copy);
			return 2;
		}
		ns[k++] = n;
	}
	free(copy);
	if (k == 0) {
		fprintf(stderr, "plugfs-bench: --scale: no plugin count given\n");
		return 2;
	}
	if (access(plugfs, X_OK) != 0) {
		fprintf(stderr, "plugfs-bench: %s: %s (give --plugfs PATH)\n", plugfs,
			strerror(errno));
		return 1;
	}
	/* The fixed base: a daemon with no registration. */
	if (run_size(plugfs, tmpdir, 0, &base) != 0)
		return 1;
	for (size_t i = 0; i < k; i++) {
		if (run_size(plugfs, tmpdir, ns[i], &runs[i]) != 0)
			return 1;
		runs[i].rss_per_reg =
		    (double)(runs[i].rss_kib - base.rss_kib) * 1024.0 / (double)runs[i].n;
	}

	printf("plugfs-bench --scale: `plugfs mount' at N plugins (one registration each, state "
	       "imported, synchronous=normal, on tmpfs)\n");
	printf("base: a daemon with no registration: RSS %ld KiB, start to ready %.1f ms\n",
	       base.rss_kib, base.start_ms);
	printf("start to ready: the best of %d starts; CPU in clock ticks of 1/%ld s\n\n", STARTS,
	       sysconf(_SC_CLK_TCK));
	printf("%-34s", "N");
	for (size_t i = 0; i < k; i++)
		printf(" %16ld", runs[i].n);
	printf("   target\n");

	printf("%-34s", "start to ready, probe none (ms)");
	for (size_t i = 0; i < k; i++)
		printf(" %9.1f %-6s", runs[i].start_ms,
		       bench_verdict(true, runs[i].start_ms <= START_TARGET_MS));
	printf("   <= %.0f (goal %.0f)\n", START_TARGET_MS, START_GOAL_MS);

	printf("%-34s", "  its CPU time, user+sys (ms)");
	for (size_t i = 0; i < k; i++)
		printf(" %16.0f", runs[i].start_cpu_ms);
	printf("   (the start on an idle machine)\n");

	printf("%-34s", "start to ready, probe connect (ms)");
	for (size_t i = 0; i < k; i++)
		printf(" %9.1f %-6s", runs[i].start_connect_ms,
		       bench_verdict(true, runs[i].start_connect_ms <= START_TARGET_MS));
	printf("   <= %.0f (every socket missing)\n", START_TARGET_MS);

	printf("%-34s", "RSS at ready (KiB)");
	for (size_t i = 0; i < k; i++)
		printf(" %16ld", runs[i].rss_kib);
	printf("\n");

	printf("%-34s", "RSS per registration (bytes)");
	for (size_t i = 0; i < k; i++)
		printf(" %9.0f %-6s", runs[i].rss_per_reg,
		       bench_verdict(runs[i].n >= RSS_JUDGED_FROM, runs[i].rss_per_reg <= RSS_TARGET_B));
	printf("   <= %.0f beyond the base (judged from %d)\n", RSS_TARGET_B, RSS_JUDGED_FROM);

	printf("%-34s", "uncached lookup in the type dir (us)");
	for (size_t i = 0; i < k; i++)
		printf(" %9.1f %-6s", runs[i].lookup_us,
		       bench_verdict(true,
			       runs[i].lookup_us <= LOOKUP_TARGET_RATIO * runs[0].lookup_us));
	printf("   <= %.0fx the smallest N (median of up to %d)\n", LOOKUP_TARGET_RATIO, LOOKUPS);

	printf("%-34s", "register via the control socket (us)");
	for (size_t i = 0; i < k; i++)
		printf(" %9.1f %-6s", runs[i].reg_us,
		       bench_verdict(true, runs[i].reg_us <= LOOKUP_TARGET_RATIO * runs[0].reg_us));
	printf("   <= %.0fx the smallest N (median of %d, one client)\n", LOOKUP_TARGET_RATIO,
	       RR_PAIRS);
	printf("%-34s", "deregister via the control socket (us)");
	for (size_t i = 0; i < k; i++)
		printf(" %9.1f %-6s", runs[i].dereg_us,
		       bench_verdict(true, runs[i].dereg_us <= LOOKUP_TARGET_RATIO * runs[0].dereg_us));
	printf("   <= %.0fx the smallest N (synchronous = normal, tmpfs)\n", LOOKUP_TARGET_RATIO);

	{
		long ln[SCALE_MAX_SIZES];
		struct list_figures lf[SCALE_MAX_SIZES];

		for (size_t i = 0; i < k; i++) {
			ln[i] = runs[i].n;
			lf[i] = runs[i].list;
		}
		bench_list_print(ln, lf, k);
	}

	printf("\nwhere the start went (the daemon's ready line, probe none):\n");
	for (size_t i = 0; i < k; i++)
		printf("  N=%-8ld %s\n", runs[i].n, runs[i].phases);
	return 0;
}
