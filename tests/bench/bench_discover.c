/* SPDX-License-Identifier: MIT */
/*
 * plugfs-bench --discover: the time from a plugin's socket appearing in
 * its allocation directory to its csi.sock being served through the mount
 * (readlink of MNT/plugins/csi-node/<name>/csi.sock leading to it), hook-free
 * discovery against the hook path, the same plugfs binary, in one run, as
 * ratios:
 *
 *   discover   a [discover.t] section over ROOT, type and name auto: the
 *              socket is identified over gRPC (GetPluginInfo,
 *              GetPluginCapabilities, NodeGetInfo) and registered;
 *   fixed      a [discover.f] section with type = csi-node and name = fixed:
 *              registered without asking (every socket an allocation of
 *              one plugin: read at allocs/<alloc>);
 *   hook       the baseline: no section; what a Nomad hook does once the
 *              socket is there, `plugfs register --type csi-node --name N
 *              --alloc A --socket S' (a process of the CLI; the control
 *              server's first probe, [probe] mode connect, the default).
 *
 * The plugins are real: one tests/integration/csi_plugin.py process
 * (python3-grpcio) serves every socket, each its own name ({dir}, a gRPC
 * server per name), listening in a staging directory before the clock
 * starts; a socket "appears" when it is renamed into its allocation
 * directory (created beforehand and watched, as Nomad creates mount_dir
 * before the task starts), which is the clock's start.  So the plugin's own
 * start-up is not measured, the daemon's part is.
 *
 *   1. SOCKETS (100) sockets one after the other, each once the one before
 *      is served: median and p99.
 *   2. BURST (1,000) sockets at once: the time until every one is served
 *      (and until half are), and the CPU the daemon and the plugins' process
 *      used until then.  The hook side runs 16 registers at a time.
 *
 * State and sockets on tmpfs, [state] synchronous = full (the default).
 * Printed, never judged by the exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_discover.h"
#include "bench_scale.h"
#include "bench_util.h"
#include "clock.h"

#define HOOK_PARALLEL 16
#define WAIT_SECS 120

enum side { S_DISCOVER, S_FIXED, S_HOOK, S_N };
static const char *const side_name[S_N] = {"discover", "fixed", "hook"};

struct ctx {
	const char *plugfs, *dir;
	const struct bench_discover_opts *o;
	long total; /* o->sockets + o->burst */
	pid_t plugins;
	char cfg[PATH_MAX];
};

struct side_run {
	double seq_med, seq_p99, seq_max;
	double burst_half, burst_all;
	double cpu_daemon, cpu_plugins; /* CPU ms during the burst */
	long unanswered;		/* plugfs_discover_identify_failed_total after it */
	int n;
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, long n, double p)
{
	long i = (long)(p * (double)(n - 1) + 0.5);

	return n > 0 ? v[i < n ? i : n - 1] : 0;
}

static void sleep_us(long us)
{
	struct timespec t = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};

	nanosleep(&t, NULL);
}

/* Socket i's allocation: s00000.. for the sequential part, then b00000... */
static void alloc_of(const struct ctx *c, long i, char *buf, size_t len)
{
	if (i < c->o->sockets)
		snprintf(buf, len, "s%05ld", i);
	else
		snprintf(buf, len, "b%05ld", i - c->o->sockets);
}

/* DIR/WHERE/<alloc>/csi.sock. */
static void sock_in(const struct ctx *c, const char *where, long i, char *buf, size_t len)
{
	char a[32];

	alloc_of(c, i, a, sizeof(a));
	snprintf(buf, len, "%s/%s/%s/csi.sock", c->dir, where, a);
}

/* Where a side puts its sockets: the discovery root, or the hook's. */
static const char *home(enum side s)
{
	return s == S_HOOK ? "hook" : s == S_FIXED ? "fixed" : "root";
}

/* The path whose readlink says socket i is served. */
static void link_of(const struct ctx *c, enum side s, long i, char *buf, size_t len)
{
	char a[32];

	alloc_of(c, i, a, sizeof(a));
	if (s == S_FIXED)
		snprintf(buf, len, "%s/mnt/plugins/csi-node/fixed/allocs/%s", c->dir, a);
	else
		snprintf(buf, len, "%s/mnt/plugins/csi-node/%s.example.com/csi.sock", c->dir, a);
}

static bool served(const struct ctx *c, enum side s, long i)
{
	char link[PATH_MAX], want[PATH_MAX], got[PATH_MAX];
	ssize_t n;

	link_of(c, s, i, link, sizeof(link));
	sock_in(c, home(s), i, want, sizeof(want));
	n = readlink(link, got, sizeof(got) - 1);
	if (n <= 0)
		return false;
	got[n] = '\0';
	return strcmp(got, want) == 0;
}

/* Moves socket i from one directory to another (the listener goes along). */
static int move(const struct ctx *c, long i, const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];

	sock_in(c, from, i, a, sizeof(a));
	sock_in(c, to, i, b, sizeof(b));
	if (rename(a, b) != 0) {
		fprintf(stderr, "plugfs-bench: --discover: rename %s -> %s: %s\n", a, b,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* The hook: `plugfs register' of socket i. */
static int hook(const struct ctx *c, long i)
{
	char a[32], name[64], sock[PATH_MAX];

	alloc_of(c, i, a, sizeof(a));
	snprintf(name, sizeof(name), "%s.example.com", a);
	sock_in(c, "hook", i, sock, sizeof(sock));
	char *const argv[] = {(char *)c->plugfs,
			      "-c",
			      (char *)c->cfg,
			      "register",
			      "--type",
			      "csi-node",
			      "--name",
			      name,
			      "--alloc",
			      a,
			      "--socket",
			      sock,
			      NULL};
	return bench_run_quiet(argv);
}

static int write_config(struct ctx *c, enum side s)
{
	FILE *f;

	snprintf(c->cfg, sizeof(c->cfg), "%s/%s.ini", c->dir, side_name[s]);
	if (!(f = fopen(c->cfg, "w")))
		return -1;
	fprintf(f,
		"[mount]\nmountpoint = %s/mnt\nallow_other = true\ncache_timeout = 60\n\n"
		"[state]\npath = %s/%s.db\n\n[control]\nsocket = %s/ctl.sock\n\n"
		"[registry]\ntypes = csi-controller csi-node\n\n",
		c->dir, c->dir, side_name[s], c->dir);
	if (s == S_DISCOVER)
		fprintf(f, "[discover.t]\nroot = %s/root\n", c->dir);
	else if (s == S_FIXED)
		fprintf(f, "[discover.f]\nroot = %s/fixed\ntype = csi-node\nname = fixed\n",
			c->dir);
	return fclose(f);
}

struct hook_share {
	const struct ctx *c;
	long from, to, step;
	int rc;
};

static void *hook_main(void *arg)
{
	struct hook_share *h = arg;

	for (long i = h->from; i < h->to; i += h->step)
		if (hook(h->c, i) != 0)
			h->rc = -1;
	return NULL;
}

/* Waits until sockets [from, to) are all served; the time (ms from t0)
 * when half were and when all were.  -1 on timeout. */
static int wait_all(const struct ctx *c, enum side s, long from, long to, uint64_t t0, double *half,
		    double *all)
{
	long n = to - from, done = 0;
	bool *ok = calloc((size_t)n, sizeof(bool));
	uint64_t end = t0 + (uint64_t)WAIT_SECS * 1000000000ull;

	if (!ok)
		return -1;
	while (done < n) {
		for (long i = 0; i < n; i++) {
			if (ok[i] || !served(c, s, from + i))
				continue;
			ok[i] = true;
			if (++done == (n + 1) / 2)
				*half = (double)(plugfs_mono_ns() - t0) / 1e6;
		}
		if (done < n && plugfs_mono_ns() > end)
			break;
		if (done < n)
			sleep_us(1000);
	}
	*all = (double)(plugfs_mono_ns() - t0) / 1e6;
	free(ok);
	if (done < n) {
		fprintf(stderr, "plugfs-bench: --discover: %s: %ld of %ld served after %d s\n",
			side_name[s], done, n, WAIT_SECS);
		return -1;
	}
	return 0;
}

/* The daemon's plugfs_discover_identify_failed_total (the control
 * socket's metrics answer, JSON: newlines escaped), or -1. */
static long unanswered(const struct ctx *c)
{
	static const char key[] = "\\nplugfs_discover_identify_failed_total ";
	char ctl[PATH_MAX], *ans = malloc(1 << 18);
	const char *p;
	long v = -1;
	int fd;

	snprintf(ctl, sizeof(ctl), "%s/ctl.sock", c->dir);
	if (!ans || (fd = bench_ctl_connect(ctl)) < 0) {
		free(ans);
		return -1;
	}
	if (bench_call(fd, "{\"op\":\"metrics\"}\n", ans, 1 << 18) == 0 && (p = strstr(ans, key)))
		v = strtol(p + strlen(key), NULL, 10);
	close(fd);
	free(ans);
	return v;
}

static int run_side(struct ctx *c, enum side s, struct side_run *out)
{
	const struct bench_discover_opts *o = c->o;
	double *t = calloc((size_t)o->sockets, sizeof(double)), ms;
	struct bench_daemon d = {0};
	char ready[512], db[PATH_MAX];
	long moved = 0;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!t || write_config(c, s) != 0 ||
	    bench_daemon_start(c->plugfs, c->cfg, &d, &ms, ready, sizeof(ready)) != 0)
		goto out;
	/* 1. One after the other. */
	for (long i = 0; i < o->sockets; i++) {
		uint64_t t0 = plugfs_mono_ns(), end = t0 + (uint64_t)WAIT_SECS * 1000000000ull;

		if (move(c, i, "stage", home(s)) != 0)
			goto stop;
		moved = i + 1;
		if (s == S_HOOK && hook(c, i) != 0) {
			fprintf(stderr, "plugfs-bench: --discover: plugfs register failed\n");
			goto stop;
		}
		while (!served(c, s, i)) {
			if (plugfs_mono_ns() > end) {
				fprintf(stderr,
					"plugfs-bench: --discover: %s: socket %ld not served\n",
					side_name[s], i);
				goto stop;
			}
			sleep_us(100);
		}
		t[i] = (double)(plugfs_mono_ns() - t0) / 1e6;
		out->n++;
	}
	qsort(t, (size_t)out->n, sizeof(double), cmp_d);
	out->seq_med = pct(t, out->n, 0.5);
	out->seq_p99 = pct(t, out->n, 0.99);
	out->seq_max = out->n ? t[out->n - 1] : 0;
	/* 2. At once. */
	{
		uint64_t t0 = plugfs_mono_ns();
		pthread_t th[HOOK_PARALLEL];
		struct hook_share hs[HOOK_PARALLEL];
		struct bench_daemon pd = {.pid = c->plugins};
		double dc0 = bench_daemon_cpu_ms(&d), pc0 = bench_daemon_cpu_ms(&pd);
		int nth = 0;

		for (long i = o->sockets; i < c->total; i++) {
			if (move(c, i, "stage", home(s)) != 0)
				goto stop;
			moved = i + 1;
		}
		if (s == S_HOOK) {
			for (int k = 0; k < HOOK_PARALLEL; k++) {
				hs[k] = (struct hook_share){.c = c,
							    .from = o->sockets + k,
							    .to = c->total,
							    .step = HOOK_PARALLEL};
				if (pthread_create(&th[k], NULL, hook_main, &hs[k]) != 0)
					break;
				nth++;
			}
		}
		int w = wait_all(c, s, o->sockets, c->total, t0, &out->burst_half, &out->burst_all);

		out->cpu_daemon = bench_daemon_cpu_ms(&d) - dc0;
		out->cpu_plugins = bench_daemon_cpu_ms(&pd) - pc0;
		out->unanswered = s == S_HOOK ? 0 : unanswered(c);
		for (int k = 0; k < nth; k++) {
			pthread_join(th[k], NULL);
			if (hs[k].rc != 0)
				w = -1;
		}
		if (w != 0)
			goto stop;
	}
	rc = 0;
stop:
	if (bench_daemon_stop(&d) != 0)
		rc = -1;
	for (long i = 0; i < moved; i++) /* back for the next side */
		if (move(c, i, home(s), "stage") != 0)
			rc = -1;
out:
	snprintf(db, sizeof(db), "%s/%s.db", c->dir, side_name[s]);
	unlink(db);
	free(t);
	if (rc != 0)
		fprintf(stderr, "plugfs-bench: --discover: the %s side failed\n", side_name[s]);
	return rc;
}

/* The plugin process: every socket in stage/, each named after its
 * directory; waits until all of them are there.  Its pid, or -1. */
static pid_t start_plugins(const struct ctx *c, const char *python, const char *script)
{
	char **argv = calloc((size_t)(2 * c->total + 8), sizeof(char *)), path[PATH_MAX];
	int64_t end;
	long k = 0;
	pid_t pid = -1;

	if (!argv)
		return -1;
	argv[k++] = (char *)python;
	argv[k++] = (char *)script;
	argv[k++] = "--flavour";
	argv[k++] = "node";
	argv[k++] = "--name";
	argv[k++] = "{dir}.example.com";
	for (long i = 0; i < c->total; i++) {
		sock_in(c, "stage", i, path, sizeof(path));
		*strrchr(path, '/') = '\0';
		mkdir(path, 0755);
		strcat(path, "/csi.sock");
		argv[k++] = "--socket";
		argv[k++] = strdup(path);
	}
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = {(rlim_t)(4 * c->total + 256), (rlim_t)(4 * c->total + 256)};
		int fd = open("/dev/null", O_WRONLY);

		(void)setrlimit(RLIMIT_NOFILE, &rl);
		if (fd >= 0)
			dup2(fd, 1);
		execv(python, argv);
		_exit(127);
	}
	end = plugfs_mono_ms() + 300 * 1000;
	for (long i = 0; pid > 0 && i < c->total;) {
		struct stat st;

		sock_in(c, "stage", i, path, sizeof(path));
		if (stat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
			i++;
			continue;
		}
		if (plugfs_mono_ms() > end || waitpid(pid, NULL, WNOHANG) == pid) {
			fprintf(stderr, "plugfs-bench: --discover: the plugins did not come up\n");
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			pid = -1;
			break;
		}
		sleep_us(20000);
	}
	for (long i = 6; i < k; i += 2)
		free(argv[i + 1]);
	free(argv);
	return pid;
}

/* The allocation directories, there before their sockets. */
static int mkdirs(const struct ctx *c)
{
	static const char *const where[] = {"stage", "root", "fixed", "hook"};
	char path[PATH_MAX];

	for (size_t w = 0; w < 4; w++) {
		snprintf(path, sizeof(path), "%s/%s", c->dir, where[w]);
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return -1;
		for (long i = 0; i < c->total; i++) {
			sock_in(c, where[w], i, path, sizeof(path));
			*strrchr(path, '/') = '\0';
			if (mkdir(path, 0755) != 0 && errno != EEXIST)
				return -1;
		}
	}
	return 0;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

int bench_discover(const char *plugfs, const char *tmpdir, const char *python, const char *script,
		   const struct bench_discover_opts *o)
{
	struct ctx c = {.plugfs = plugfs, .dir = tmpdir, .o = o, .total = o->sockets + o->burst};
	struct side_run r[S_N];
	pid_t pp;
	int rc = 1;

	printf("plugfs-bench --discover: a socket appearing in its allocation directory to "
	       "csi.sock served through the mount, %s\n"
	       "  discover: [discover.t], type and name auto (identified over gRPC); "
	       "fixed: [discover.f] with type and name set (no identification);\n"
	       "  hook: no section, `plugfs register' once the socket is there (its first "
	       "probe: connect).  %ld real plugins, one csi_plugin.py process.\n\n",
	       plugfs, c.total);
	fflush(stdout);
	if (mkdirs(&c) != 0) {
		fprintf(stderr, "plugfs-bench: --discover: cannot create the directories: %s\n",
			strerror(errno));
		return 1;
	}
	if ((pp = start_plugins(&c, python, script)) < 0)
		return 1;
	c.plugins = pp;
	for (int s = 0; s < S_N; s++)
		if (run_side(&c, (enum side)s, &r[s]) != 0)
			goto out;
	printf("one after the other, %ld sockets (ms)   discover      fixed       hook   "
	       "discover/hook  fixed/hook\n",
	       o->sockets);
	printf("  median                          %10.2f %10.2f %10.2f %12.2f %11.2f\n",
	       r[0].seq_med, r[1].seq_med, r[2].seq_med, ratio(r[0].seq_med, r[2].seq_med),
	       ratio(r[1].seq_med, r[2].seq_med));
	printf("  p99                             %10.2f %10.2f %10.2f %12.2f %11.2f\n",
	       r[0].seq_p99, r[1].seq_p99, r[2].seq_p99, ratio(r[0].seq_p99, r[2].seq_p99),
	       ratio(r[1].seq_p99, r[2].seq_p99));
	printf("  max                             %10.2f %10.2f %10.2f\n", r[0].seq_max,
	       r[1].seq_max, r[2].seq_max);
	printf("%ld at once (ms; hook: %d registers at a time)\n", o->burst, HOOK_PARALLEL);
	printf("  half served                     %10.0f %10.0f %10.0f %12.2f %11.2f\n",
	       r[0].burst_half, r[1].burst_half, r[2].burst_half,
	       ratio(r[0].burst_half, r[2].burst_half), ratio(r[1].burst_half, r[2].burst_half));
	printf("  all served                      %10.0f %10.0f %10.0f %12.2f %11.2f\n",
	       r[0].burst_all, r[1].burst_all, r[2].burst_all,
	       ratio(r[0].burst_all, r[2].burst_all), ratio(r[1].burst_all, r[2].burst_all));
	printf("  CPU until all served: daemon    %10.0f %10.0f %10.0f %12.2f %11.2f\n",
	       r[0].cpu_daemon, r[1].cpu_daemon, r[2].cpu_daemon,
	       ratio(r[0].cpu_daemon, r[2].cpu_daemon), ratio(r[1].cpu_daemon, r[2].cpu_daemon));
	printf("                        plugins   %10.0f %10.0f %10.0f\n", r[0].cpu_plugins,
	       r[1].cpu_plugins, r[2].cpu_plugins);
	printf("  identifications unanswered       %10ld %10ld %10s   (each asked again after "
	       "200 ms, doubling)\n",
	       r[0].unanswered, r[1].unanswered, "-");
	printf("  (the CPU of the hook side's `plugfs register' processes is not counted; "
	       "%ld CPUs)\n",
	       sysconf(_SC_NPROCESSORS_ONLN));
	rc = 0;
out:
	kill(pp, SIGKILL);
	waitpid(pp, NULL, 0);
	return rc;
}
