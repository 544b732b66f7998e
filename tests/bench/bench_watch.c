/* SPDX-License-Identifier: MIT */
/*
 * plugfs-bench --watch: the watches (a listener's pidfd, inotify on its
 * socket's directory) against the rounds alone, the same plugfs binary
 * with the watches off by its test knob (PLUGFS_FAULT_NO_WATCH), in one
 * run, as ratios.
 *
 *   1. Failover: a plugin with an older live allocation (a1) and a newer
 *      one (a2), each a listening child process, [probe] mode = connect,
 *      rounds INTERVAL apart (30 s), failures 3.  kill -9 of a2's process
 *      (once the daemon holds its pidfd); the time until readlink of
 *      csi.sock through the mount leads to a1: median and p99 over KILLS
 *      kills.  Then a2 binds its path again; the time from its bind() to
 *      csi.sock leading to it.  The baseline does the same BASELINE_KILLS
 *      times: a round finds each (about failures x interval).
 *   2. Scale: N registrations whose sockets are missing (default 100,000),
 *      rounds 1 s apart: start to ready, RSS per registration at ready
 *      (against a daemon with none), the daemon's CPU over 10 rounds (a
 *      share of one core) and its RSS after them against at ready.  Then
 *      LIVE registrations (1,000) listening in one child process: the
 *      daemon's CPU over 10 rounds.
 *
 * Goals (issue 20): failover p99 <= 10 ms, return p99 <= 10 ms, CPU <= 0.5%
 * of a core each, RSS after 10 rounds within 5% of at ready, RSS at ready
 * <= 1 KiB per registration, start to ready <= 1 s.  Printed, never judged
 * by the exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_scale.h"
#include "bench_util.h"
#include "bench_watch.h"
#include "clock.h"

/* The rounds a CPU and RSS window lasts (bench_watch_opts.window). */
static int window_rounds = 10;

struct fail_run {
	double kill_med, kill_p99, kill_max;
	double bind_med, bind_p99, bind_max;
	int n;
};

struct scale_side {
	double start_ms, rss_b, cpu_pct, rss_ratio, live_cpu_pct;
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	return n > 0 ? v[i < n ? i : n - 1] : 0;
}

static void sleep_us(long us)
{
	struct timespec t = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};

	nanosleep(&t, NULL);
}

static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static int write_config(const char *dir, const char *name, double interval, char *cfg,
			size_t len)
{
	FILE *f;

	snprintf(cfg, len, "%s/%s.ini", dir, name);
	if (!(f = fopen(cfg, "w")))
		return -1;
	fprintf(f,
		"[mount]\nmountpoint = %s/mnt\nallow_other = true\ncache_timeout = 60\n\n"
		"[state]\npath = %s/%s.db\nsynchronous = normal\n\n"
		"[control]\nsocket = %s/ctl.sock\n\n"
		"[registry]\ntypes = csi-controller csi-node\n\n"
		"[probe]\nmode = connect\ninterval = %.3f\ntimeout = 1\nfailures = 3\n",
		dir, dir, name, dir, interval);
	return fclose(f);
}

/* n registrations of plugins plugin-K, sockets at DIR/SUB/K/csi.sock. */
static int import_n(const char *plugfs, const char *cfg, const char *dir, long n, const char *sub)
{
	char json[PATH_MAX], sock[PATH_MAX];
	FILE *f;
	int rc;

	snprintf(json, sizeof(json), "%s/legacy.json", dir);
	if (!(f = fopen(json, "w")))
		return -1;
	fputs("{\"Plugins\": {\"csi-node\": {", f);
	for (long i = 0; i < n; i++) {
		snprintf(sock, sizeof(sock), "%s/%s/%06ld/csi.sock", dir, sub, i);
		fprintf(f,
			"%s\"plugin-%06ld\": {\"Type\": \"node\", \"Version\": \"1.0\", "
			"\"AllocID\": \"%08lx-0000-4000-8000-%012lx\", \"ConnectionInfo\": "
			"{\"SocketPath\": \"%s\"}}",
			i ? ", " : "", i, i, i, sock);
	}
	fputs("}}}\n", f);
	if (fclose(f) != 0)
		return -1;
	char *const argv[] = {(char *)plugfs, "-c", (char *)cfg, "state", "import", json, NULL};
	rc = bench_run_quiet(argv);
	unlink(json);
	return rc;
}

/* The value of a metric line `name value' in a metrics answer (JSON:
 * quotes escaped), or -1. */
static long metric(const char *ctl, const char *name)
{
	char ans[1 << 17], key[256];
	int fd = bench_ctl_connect(ctl);
	const char *p;
	long v = -1;

	if (fd < 0)
		return -1;
	if (bench_call(fd, "{\"op\":\"metrics\"}\n", ans, sizeof(ans)) == 0) {
		snprintf(key, sizeof(key), "\\n%s ", name);
		if ((p = strstr(ans, key)))
			v = strtol(p + strlen(key), NULL, 10);
	}
	close(fd);
	return v;
}

static bool wait_metric(const char *ctl, const char *name, long want, int secs)
{
	int64_t end = plugfs_mono_ms() + secs * 1000;

	while (plugfs_mono_ms() < end) {
		if (metric(ctl, name) == want)
			return true;
		sleep_us(1000);
	}
	return false;
}

/* A child listening on path; *bound_ns when its bind() returned. */
static pid_t listener(const char *path, uint64_t *bound_ns)
{
	int p[2];
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	unlink(path);
	pid = fork();
	if (pid == 0) {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		uint64_t t;

		if (strlen(path) >= sizeof(a.sun_path))
			_exit(1);
		memcpy(a.sun_path, path, strlen(path) + 1);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
			_exit(1);
		t = plugfs_mono_ns();
		if (listen(fd, 64) != 0)
			_exit(1);
		(void)!write(p[1], &t, sizeof(t));
		for (;;) {
			int c = accept(fd, NULL, NULL);

			if (c >= 0)
				close(c);
		}
	}
	close(p[1]);
	if (pid > 0 && read(p[0], bound_ns, sizeof(*bound_ns)) != sizeof(*bound_ns)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

/* Waits until readlink(link) is target; the time it did, ns; 0 on timeout. */
static uint64_t wait_link(const char *link, const char *target, int secs)
{
	char buf[PATH_MAX];
	uint64_t end = plugfs_mono_ns() + (uint64_t)secs * 1000000000ull;

	for (;;) {
		ssize_t n = readlink(link, buf, sizeof(buf) - 1);
		uint64_t t = plugfs_mono_ns();

		if (n > 0) {
			buf[n] = '\0';
			if (strcmp(buf, target) == 0)
				return t;
		}
		if (t > end)
			return 0;
		sleep_us(100);
	}
}

static int reg(const char *ctl, const char *alloc, const char *sock)
{
	char line[PATH_MAX + 256], ans[4096];
	int fd = bench_ctl_connect(ctl), rc = -1;

	if (fd < 0)
		return -1;
	snprintf(line, sizeof(line),
		 "{\"op\":\"register\",\"types\":[\"csi-node\"],\"name\":\"p\",\"alloc\":\"%s\","
		 "\"socket\":\"%s\"}\n",
		 alloc, sock);
	if (bench_call(fd, line, ans, sizeof(ans)) == 0 && strstr(ans, "\"ok\":true"))
		rc = 0;
	close(fd);
	return rc;
}

/* Part 1 with the watches on or off. */
static int failover(const char *plugfs, const char *dir, bool watch, double interval, int kills,
		    struct fail_run *out)
{
	char cfg[PATH_MAX], ctl[PATH_MAX], link[PATH_MAX], s1[PATH_MAX], s2[PATH_MAX], ready[512];
	double *tk = calloc((size_t)kills, sizeof(double)), *tb = calloc((size_t)kills, sizeof(double));
	struct bench_daemon d = {0};
	pid_t p1 = -1, p2 = -1;
	uint64_t bound;
	double ms;
	int rc = -1, n = 0, secs = (int)(interval * 4) + 5;

	memset(out, 0, sizeof(*out));
	snprintf(ctl, sizeof(ctl), "%s/ctl.sock", dir);
	snprintf(link, sizeof(link), "%s/mnt/plugins/csi-node/p/csi.sock", dir);
	snprintf(s1, sizeof(s1), "%s/alloc/a1/csi.sock", dir);
	snprintf(s2, sizeof(s2), "%s/alloc/a2/csi.sock", dir);
	snprintf(cfg, sizeof(cfg), "%s/alloc", dir);
	mkdir(cfg, 0755);
	snprintf(cfg, sizeof(cfg), "%s/alloc/a1", dir);
	mkdir(cfg, 0755);
	snprintf(cfg, sizeof(cfg), "%s/alloc/a2", dir);
	mkdir(cfg, 0755);
	if (!tk || !tb || write_config(dir, watch ? "fail-watch" : "fail-rounds", interval, cfg,
				       sizeof(cfg)) != 0)
		goto out;
	if (!watch)
		setenv("PLUGFS_FAULT_NO_WATCH", "1", 1);
	rc = bench_daemon_start(plugfs, cfg, &d, &ms, ready, sizeof(ready));
	unsetenv("PLUGFS_FAULT_NO_WATCH");
	if (rc != 0)
		goto out;
	rc = -1;
	if ((p1 = listener(s1, &bound)) < 0 || (p2 = listener(s2, &bound)) < 0 ||
	    reg(ctl, "a1", s1) != 0 || reg(ctl, "a2", s2) != 0 || !wait_link(link, s2, 5)) {
		fprintf(stderr, "plugfs-bench: --watch: the plugin did not come up\n");
		goto stop;
	}
	for (n = 0; n < kills; n++) {
		uint64_t t0, t1;

		if (watch && !wait_metric(ctl, "plugfs_probe_watches{kind=\\\"pidfd\\\"}", 2, 10)) {
			fprintf(stderr, "plugfs-bench: --watch: no pidfd of a2's listener\n");
			goto stop;
		}
		t0 = plugfs_mono_ns();
		kill(p2, SIGKILL);
		waitpid(p2, NULL, 0);
		p2 = -1;
		if (!(t1 = wait_link(link, s1, secs))) {
			fprintf(stderr, "plugfs-bench: --watch: csi.sock did not leave a2\n");
			goto stop;
		}
		tk[n] = (double)(t1 - t0) / 1e6;
		if ((p2 = listener(s2, &bound)) < 0 || !(t1 = wait_link(link, s2, secs))) {
			fprintf(stderr, "plugfs-bench: --watch: csi.sock did not come back to a2\n");
			goto stop;
		}
		tb[n] = (double)(t1 - bound) / 1e6;
	}
	qsort(tk, (size_t)n, sizeof(double), cmp_d);
	qsort(tb, (size_t)n, sizeof(double), cmp_d);
	*out = (struct fail_run){.kill_med = pct(tk, n, 0.5),
				 .kill_p99 = pct(tk, n, 0.99),
				 .kill_max = tk[n - 1],
				 .bind_med = pct(tb, n, 0.5),
				 .bind_p99 = pct(tb, n, 0.99),
				 .bind_max = tb[n - 1],
				 .n = n};
	rc = 0;
stop:
	if (bench_daemon_stop(&d) != 0)
		rc = -1;
out:
	if (p1 > 0)
		kill(p1, SIGKILL), waitpid(p1, NULL, 0);
	if (p2 > 0)
		kill(p2, SIGKILL), waitpid(p2, NULL, 0);
	free(tk);
	free(tb);
	snprintf(cfg, sizeof(cfg), "%s/%s.db", dir, watch ? "fail-watch" : "fail-rounds");
	unlink(cfg);
	return rc;
}

/* A child listening on n sockets at DIR/SUB/K/csi.sock; its pid. */
static pid_t listeners(const char *dir, long n, const char *sub)
{
	int p[2];
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = {(rlim_t)n + 64, (rlim_t)n + 64};
		char path[PATH_MAX];

		(void)setrlimit(RLIMIT_NOFILE, &rl);
		for (long i = 0; i < n; i++) {
			struct sockaddr_un a = {.sun_family = AF_UNIX};
			int fd = socket(AF_UNIX, SOCK_STREAM, 0);

			snprintf(path, sizeof(path), "%s/%s/%06ld/csi.sock", dir, sub, i);
			if (strlen(path) >= sizeof(a.sun_path))
				_exit(1);
			memcpy(a.sun_path, path, strlen(path) + 1);
			unlink(path); /* an earlier run's */
			*strrchr(path, '/') = '\0';
			mkdir(path, 0755);
			if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
			    listen(fd, 16) != 0)
				_exit(1);
		}
		(void)!write(p[1], "x", 1);
		for (;;)
			pause(); /* connections wait in the backlogs, closed by the client */
	}
	close(p[1]);
	char c;
	if (pid > 0 && read(p[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

/* The daemon's CPU over window_rounds rounds 1 s apart, % of one core. */
static double cpu_window(const struct bench_daemon *d)
{
	double c0 = bench_daemon_cpu_ms(d);
	uint64_t t0 = plugfs_mono_ns();

	sleep_us(window_rounds * 1000000L);
	return (bench_daemon_cpu_ms(d) - c0) * 100.0 / ((double)(plugfs_mono_ns() - t0) / 1e6);
}

/* Part 2 with the watches on or off. */
static int scale(const char *plugfs, const char *dir, bool watch, long n, long live,
		 struct scale_side *out)
{
	char cfg[PATH_MAX], ctl[PATH_MAX], ready[512], db[PATH_MAX];
	const char *name = watch ? "scale-watch" : "scale-rounds";
	struct bench_daemon d = {0};
	long rss0, rss1, rss2;
	pid_t lp = -1;
	double ms;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	snprintf(ctl, sizeof(ctl), "%s/ctl.sock", dir);
	snprintf(db, sizeof(db), "%s/%s.db", dir, name);
	if (write_config(dir, name, 1.0, cfg, sizeof(cfg)) != 0)
		return -1;
	if (!watch)
		setenv("PLUGFS_FAULT_NO_WATCH", "1", 1);
	/* None: the daemon's own RSS. */
	if (bench_daemon_start(plugfs, cfg, &d, &ms, ready, sizeof(ready)) != 0)
		goto out;
	rss0 = rss_kib(d.pid);
	if (bench_daemon_stop(&d) != 0)
		goto out;
	unlink(db);
	if (import_n(plugfs, cfg, dir, n, "sock") != 0) {
		fprintf(stderr, "plugfs-bench: --watch: cannot import %ld registrations\n", n);
		goto out;
	}
	if (bench_daemon_start(plugfs, cfg, &d, &out->start_ms, ready, sizeof(ready)) != 0)
		goto out;
	rss1 = rss_kib(d.pid);
	out->rss_b = (double)(rss1 - rss0) * 1024.0 / (double)n;
	if (watch && !wait_metric(ctl, "plugfs_probe_watches{kind=\\\"inotify\\\"}", n, 60)) {
		fprintf(stderr, "plugfs-bench: --watch: not every socket is watched\n");
		bench_daemon_stop(&d);
		goto out;
	}
	out->cpu_pct = cpu_window(&d);
	rss2 = rss_kib(d.pid);
	out->rss_ratio = (double)rss2 / (double)rss1;
	if (bench_daemon_stop(&d) != 0)
		goto out;
	unlink(db);
	/* live registrations, listening. */
	{
		char live_dir[PATH_MAX];

		snprintf(live_dir, sizeof(live_dir), "%s/live", dir);
		mkdir(live_dir, 0755);
	}
	if ((lp = listeners(dir, live, "live")) < 0 ||
	    import_n(plugfs, cfg, dir, live, "live") != 0)
		goto out;
	if (bench_daemon_start(plugfs, cfg, &d, &ms, ready, sizeof(ready)) != 0)
		goto out;
	if (watch && !wait_metric(ctl, "plugfs_probe_watches{kind=\\\"pidfd\\\"}", live, 60)) {
		fprintf(stderr, "plugfs-bench: --watch: not every listener has a pidfd\n");
		bench_daemon_stop(&d);
		goto out;
	}
	out->live_cpu_pct = cpu_window(&d);
	if (bench_daemon_stop(&d) != 0)
		goto out;
	rc = 0;
out:
	if (rc != 0)
		fprintf(stderr, "plugfs-bench: --watch: the scale part failed (%s)\n", name);
	unsetenv("PLUGFS_FAULT_NO_WATCH");
	if (lp > 0)
		kill(lp, SIGKILL), waitpid(lp, NULL, 0);
	unlink(db);
	return rc;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

int bench_watch(const char *plugfs, const char *tmpdir, const struct bench_watch_opts *o)
{
	struct fail_run fw, fr;
	struct scale_side sw, sr;

	if (o->window > 0)
		window_rounds = o->window;
	printf("plugfs-bench --watch: the watches against the rounds alone (the same binary, "
	       "PLUGFS_FAULT_NO_WATCH=1), %s\n\n",
	       plugfs);
	if (failover(plugfs, tmpdir, true, o->interval, o->kills, &fw) != 0 ||
	    failover(plugfs, tmpdir, false, o->interval, o->baseline_kills, &fr) != 0)
		return 1;
	printf("failover, rounds %.0f s apart, failures 3 (ms)     watches (%d)   rounds (%d)   "
	       "ratio   goal\n",
	       o->interval, fw.n, fr.n);
	printf("  kill -9 -> csi.sock on the older: median    %10.2f %13.1f %8.4f\n", fw.kill_med,
	       fr.kill_med, ratio(fw.kill_med, fr.kill_med));
	printf("                                    p99       %10.2f %13.1f %8.4f  <= 10 %s\n",
	       fw.kill_p99, fr.kill_p99, ratio(fw.kill_p99, fr.kill_p99),
	       bench_verdict(fw.n >= 100, fw.kill_p99 <= 10));
	printf("                                    max       %10.2f %13.1f\n", fw.kill_max,
	       fr.kill_max);
	printf("  bind() again -> csi.sock on it:  median     %10.2f %13.1f %8.4f\n", fw.bind_med,
	       fr.bind_med, ratio(fw.bind_med, fr.bind_med));
	printf("                                    p99       %10.2f %13.1f %8.4f  <= 10 %s\n",
	       fw.bind_p99, fr.bind_p99, ratio(fw.bind_p99, fr.bind_p99),
	       bench_verdict(fw.n >= 100, fw.bind_p99 <= 10));
	printf("                                    max       %10.2f %13.1f\n\n", fw.bind_max,
	       fr.bind_max);
	fflush(stdout);
	if (scale(plugfs, tmpdir, true, o->n, o->live, &sw) != 0 ||
	    scale(plugfs, tmpdir, false, o->n, o->live, &sr) != 0)
		return 1;
	printf("scale, rounds 1 s apart                          watches      rounds    ratio   goal\n");
	printf("  start to ready at %ld missing (ms)         %10.0f %11.0f %8.2f  <= 1000 %s\n", o->n,
	       sw.start_ms, sr.start_ms, ratio(sw.start_ms, sr.start_ms),
	       bench_verdict(o->n >= 100000, sw.start_ms <= 1000));
	printf("  RSS at ready per registration (bytes)       %10.0f %11.0f %8.2f  <= 1024 %s\n",
	       sw.rss_b, sr.rss_b, ratio(sw.rss_b, sr.rss_b),
	       bench_verdict(o->n >= 10000, sw.rss_b <= 1024));
	printf("  RSS after %d rounds / at ready              %10.3f %11.3f %8.2f  <= 1.05 %s\n",
	       window_rounds, sw.rss_ratio, sr.rss_ratio, ratio(sw.rss_ratio, sr.rss_ratio),
	       bench_verdict(o->n >= 10000, sw.rss_ratio <= 1.05));
	printf("  CPU over %d rounds, %ld missing (%% core)    %10.2f %11.2f %8.2f  <= 0.5 %s\n",
	       window_rounds, o->n, sw.cpu_pct, sr.cpu_pct, ratio(sw.cpu_pct, sr.cpu_pct),
	       bench_verdict(o->n >= 100000, sw.cpu_pct <= 0.5));
	printf("  CPU over %d rounds, %ld live (%% core)        %10.2f %11.2f %8.2f  <= 0.5 %s\n",
	       window_rounds, o->live, sw.live_cpu_pct, sr.live_cpu_pct,
	       ratio(sw.live_cpu_pct, sr.live_cpu_pct),
	       bench_verdict(o->live >= 1000, sw.live_cpu_pct <= 0.5));
	printf("  (the baseline's rounds at 1 s: the default interval of 5 s costs a fifth)\n");
	return 0;
}
