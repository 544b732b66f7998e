/* SPDX-License-Identifier: MIT */
/*
 * plugfs-bench-liveness: what liveness costs and how fast it reacts, measured
 * in one run.
 *
 *   1. Cost: N registrations (default 1,000), each a listening socket; one
 *      probe round (probe_round: snapshot, parallel non-blocking connects,
 *      registry_set_runtime per registration) against the baseline of the
 *      same N sockets connected one after the other with blocking
 *      socket+connect+close.  It prints the CPU time of a round (the
 *      process's, CLOCK_PROCESS_CPUTIME_ID: the connector threads that make
 *      the connect() calls included, and for both the thread that accepts
 *      the connections), its wall time, both as ratios to the baseline, and the CPU share of one
 * core that probing costs at the given interval (default 5 s, the default of [probe] interval).
 *   2. Reaction, through a real mount (in-process registry, filesystem and
 *      prober thread, as `plugfs mount' runs them): a plugin with an older
 *      live allocation and a newer one.  The newer one dies (its listening
 *      socket is closed, the file stays: connections are refused, as after
 *      a SIGKILL); the time until readlink of csi.sock leads to the older
 *      one.  It comes back on the same path; the time until csi.sock leads
 *      to it again.  Median and max over the trials, against interval x
 *      failures (detection) and interval (recovery): the prober's period
 *      bounds them, a death falls at a random phase of it.
 *
 *   plugfs-bench-liveness [--registrations N] [--rounds N] [--cost-interval MS]
 *                      [--interval MS] [--failures N] [--trials N] [--quick]
 *
 * Part 2 needs root and /dev/fuse: without them it says why and exits 77
 * (skip), except under CI=true where that is a failure.  Exit 1 on an
 * error; timings never fail the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bench_mount.h"
#include "fs.h"
#include "clock.h"
#include "log.h"
#include "probe.h"
#include "registry.h"

#define TYPE "csi-node"

struct opts {
	long registrations, rounds, cost_interval_ms, interval_ms, failures, trials;
};

static char tmp[256];

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "plugfs-bench-liveness: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int listen_at(const char *path)
{
	return bench_listen("plugfs-bench-liveness", path, SOCK_NONBLOCK);
}

/* ---- the listeners: one epoll thread accepts and closes everything ---- */

struct acceptor {
	int ep, wake[2];
	pthread_t thread;
};

static void *acceptor_main(void *arg)
{
	struct acceptor *a = arg;
	struct epoll_event ev[64];

	for (;;) {
		int n = epoll_wait(a->ep, ev, 64, -1);

		for (int i = 0; i < n; i++) {
			int c;

			if (ev[i].data.fd == a->wake[0])
				return NULL;
			while ((c = accept4(ev[i].data.fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
				close(c);
		}
	}
}

static void acceptor_start(struct acceptor *a)
{
	struct epoll_event ev = {.events = EPOLLIN};

	a->ep = epoll_create1(EPOLL_CLOEXEC);
	if (a->ep < 0 || pipe2(a->wake, O_CLOEXEC) != 0)
		die("epoll");
	ev.data.fd = a->wake[0];
	epoll_ctl(a->ep, EPOLL_CTL_ADD, a->wake[0], &ev);
	pthread_create(&a->thread, NULL, acceptor_main, a);
}

static void acceptor_add(struct acceptor *a, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	if (epoll_ctl(a->ep, EPOLL_CTL_ADD, fd, &ev) != 0)
		die("epoll_ctl");
}

static void acceptor_stop(struct acceptor *a)
{
	if (write(a->wake[1], "x", 1) != 1)
		die("write");
	pthread_join(a->thread, NULL);
	close(a->wake[0]);
	close(a->wake[1]);
	close(a->ep);
}

static struct registry *open_registry(const char *dir)
{
	return bench_open_registry("plugfs-bench-liveness", dir, "off");
}

static void do_register(struct registry *r, const char *name, const char *alloc, const char *sock)
{
	if (bench_register("plugfs-bench-liveness", r, TYPE, name, alloc, sock) != 0)
		exit(1);
}

/* ---- 1. cost ----------------------------------------------------------- */

/* One blocking connect+close per socket; *cpu_ns gets its CPU time. */
static double baseline_round_ns(char (*paths)[108], long n, double *cpu_ns)
{
	uint64_t c0 = thread_cpu_ns(), t0 = plugfs_mono_ns();

	for (long i = 0; i < n; i++) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		memcpy(sa.sun_path, paths[i], strlen(paths[i]) + 1);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
			die("baseline connect");
		close(fd);
	}
	*cpu_ns = (double)(thread_cpu_ns() - c0);
	return (double)(plugfs_mono_ns() - t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void bench_cost(const struct opts *o)
{
	char dir[PATH_MAX];
	char(*paths)[108] = calloc((size_t)o->registrations, 108);
	int *fds = calloc((size_t)o->registrations, sizeof(int));
	double *cpu = calloc((size_t)o->rounds, sizeof(double));
	double *wall = calloc((size_t)o->rounds, sizeof(double));
	double *base = calloc((size_t)o->rounds, sizeof(double));
	double *base_cpu = calloc((size_t)o->rounds, sizeof(double));
	struct probe_options po = {
	    .policy = {.dflt = {REG_PROBE_CONNECT, (unsigned)o->cost_interval_ms, 1000, 3}}};
	struct acceptor acc;
	struct registry *r;
	struct rlimit rl;

	if (!paths || !fds || !cpu || !wall || !base || !base_cpu)
		die("calloc");
	/* A socket per registration, the round's sockets and the registry. */
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)o->registrations + PROBE_MAX_INFLIGHT + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	snprintf(dir, sizeof(dir), "%s/cost", tmp);
	mkdir(dir, 0755);
	r = open_registry(dir);
	acceptor_start(&acc);
	for (long i = 0; i < o->registrations; i++) {
		char name[32];

		if (snprintf(paths[i], 108, "%s/s%ld", dir, i) >= 108) {
			fprintf(stderr, "plugfs-bench-liveness: socket path too long under %s\n", dir);
			exit(1);
		}
		snprintf(name, sizeof(name), "p%ld", i);
		fds[i] = listen_at(paths[i]);
		acceptor_add(&acc, fds[i]);
		do_register(r, name, "a1", paths[i]);
	}
	/* Warm-up: every registration turns alive (events go out once). */
	if (probe_round(r, &po) != o->registrations) {
		fprintf(stderr, "plugfs-bench-liveness: the first round did not probe them all\n");
		exit(1);
	}
	for (long k = 0; k < o->rounds; k++) {
		uint64_t c0 = thread_cpu_ns(), t0 = plugfs_mono_ns();
		int n = probe_round(r, &po);

		wall[k] = (double)(plugfs_mono_ns() - t0);
		cpu[k] = (double)(thread_cpu_ns() - c0);
		if (n != o->registrations) {
			fprintf(stderr, "plugfs-bench-liveness: a round probed %d of %ld\n", n,
				o->registrations);
			exit(1);
		}
		base[k] = baseline_round_ns(paths, o->registrations, &base_cpu[k]);
	}
	qsort(cpu, (size_t)o->rounds, sizeof(double), cmp_double);
	qsort(wall, (size_t)o->rounds, sizeof(double), cmp_double);
	qsort(base, (size_t)o->rounds, sizeof(double), cmp_double);
	qsort(base_cpu, (size_t)o->rounds, sizeof(double), cmp_double);
	{
		double c = cpu[o->rounds / 2], w = wall[o->rounds / 2], b = base[o->rounds / 2],
		       bc = base_cpu[o->rounds / 2];

		printf("probe cost, %ld registrations (connect mode), median of %ld rounds:\n",
		       o->registrations, o->rounds);
		printf("  %-44s %10.2f ms wall  %10.2f ms CPU\n", "probe_round (parallel connects)",
		       w / 1e6, c / 1e6);
		printf("  %-44s %10.2f ms wall  %10.2f ms CPU\n",
		       "baseline: blocking connect+close, one by one", b / 1e6, bc / 1e6);
		printf("  %-44s %10.2f x wall  %10.2f x CPU\n", "round / baseline", w / b, c / bc);
		printf("  %-44s %10.3f %% of one core (at interval %ld ms)\n",
		       "CPU share of probing", 100.0 * c / ((double)o->cost_interval_ms * 1e6),
		       o->cost_interval_ms);
		printf("  %-44s %10.2f us CPU\n", "per registration and round",
		       c / 1e3 / (double)o->registrations);
	}
	acceptor_stop(&acc);
	registry_close(r);
	for (long i = 0; i < o->registrations; i++)
		close(fds[i]);
	free(paths);
	free(fds);
	free(cpu);
	free(wall);
	free(base);
	free(base_cpu);
}

/* ---- 2. reaction through a mount ---------------------------------------- */

/* Waits until readlink(link) is want; returns the nanoseconds from t0,
 * or a negative number after 30 s. */
static double wait_link(const char *link, const char *want, uint64_t t0)
{
	char got[PATH_MAX];

	for (;;) {
		ssize_t n = readlink(link, got, sizeof(got) - 1);
		uint64_t t = plugfs_mono_ns();

		if (n > 0) {
			got[n] = '\0';
			if (strcmp(got, want) == 0)
				return (double)(t - t0);
		}
		if (t - t0 > 30000000000ull)
			return -1;
		usleep(1000);
	}
}

static int bench_reaction(const struct opts *o)
{
	char dir[PATH_MAX], mnt[PATH_MAX + 8], link[PATH_MAX + 64], old_sock[PATH_MAX + 8],
	    new_sock[PATH_MAX + 8], err[REG_ERR_MAX];
	struct bench_mount m;
	struct fs_options fo = {
	    .socket_name = "csi.sock", .allow_other = true, .cache_timeout = 60};
	struct probe_options po = {.policy = {.dflt = {REG_PROBE_CONNECT, (unsigned)o->interval_ms,
						       1000, (unsigned)o->failures}}};
	double *det = calloc((size_t)o->trials, sizeof(double));
	double *rec = calloc((size_t)o->trials, sizeof(double));
	struct acceptor acc;
	struct registry *r;
	struct prober *prober;
	int old_fd, new_fd;

	if (!det || !rec)
		die("calloc");
	snprintf(dir, sizeof(dir), "%s/reaction", tmp);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(old_sock, sizeof(old_sock), "%s/a1.sock", dir);
	snprintf(new_sock, sizeof(new_sock), "%s/a2.sock", dir);
	snprintf(link, sizeof(link), "%s/plugins/" TYPE "/p/csi.sock", mnt);
	mkdir(dir, 0755);
	mkdir(mnt, 0755);
	r = open_registry(dir);
	acceptor_start(&acc);
	old_fd = listen_at(old_sock);
	new_fd = listen_at(new_sock);
	acceptor_add(&acc, old_fd);
	acceptor_add(&acc, new_fd);
	do_register(r, "p", "a1", old_sock);
	do_register(r, "p", "a2", new_sock);
	fo.mountpoint = mnt;
	bench_mount_start("plugfs-bench-liveness", r, &fo, link, &m);
	if (prober_start(r, &po, &prober, err, sizeof(err)) != 0) {
		fprintf(stderr, "plugfs-bench-liveness: %s\n", err);
		exit(1);
	}
	if (wait_link(link, new_sock, plugfs_mono_ns()) < 0) {
		fprintf(stderr, "plugfs-bench-liveness: csi.sock never led to the newest\n");
		exit(1);
	}
	for (long k = 0; k < o->trials; k++) {
		uint64_t t0;

		/* Dies at a random phase of the interval. */
		usleep((useconds_t)(rand() % (int)o->interval_ms) * 1000);
		epoll_ctl(acc.ep, EPOLL_CTL_DEL, new_fd, NULL);
		t0 = plugfs_mono_ns();
		close(new_fd); /* the file stays: connections are refused */
		det[k] = wait_link(link, old_sock, t0);
		usleep((useconds_t)(rand() % (int)o->interval_ms) * 1000);
		t0 = plugfs_mono_ns();
		new_fd = listen_at(new_sock);
		acceptor_add(&acc, new_fd);
		rec[k] = wait_link(link, new_sock, t0);
		if (det[k] < 0 || rec[k] < 0) {
			fprintf(stderr, "plugfs-bench-liveness: trial %ld: csi.sock did not move\n",
				k);
			exit(1);
		}
	}
	prober_stop(prober);
	bench_mount_stop(&m);
	acceptor_stop(&acc);
	registry_close(r);
	close(old_fd);
	close(new_fd);
	qsort(det, (size_t)o->trials, sizeof(double), cmp_double);
	qsort(rec, (size_t)o->trials, sizeof(double), cmp_double);
	printf("\nreaction through the mount (interval %ld ms, failures %ld), %ld trials:\n",
	       o->interval_ms, o->failures, o->trials);
	printf("  %-44s %8s %8s %14s\n", "", "median", "max", "bound");
	printf("  %-44s %6.0f ms %6.0f ms %8ld ms (interval x failures)\n",
	       "death -> csi.sock leads to the older alloc", det[o->trials / 2] / 1e6,
	       det[o->trials - 1] / 1e6, o->interval_ms * o->failures);
	printf("  %-44s %6.0f ms %6.0f ms %8ld ms (interval)\n",
	       "return -> csi.sock leads to it again", rec[o->trials / 2] / 1e6,
	       rec[o->trials - 1] / 1e6, o->interval_ms);
	free(det);
	free(rec);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"registrations", required_argument, NULL, 'n'},
						 {"rounds", required_argument, NULL, 'r'},
						 {"cost-interval", required_argument, NULL, 'c'},
						 {"interval", required_argument, NULL, 'i'},
						 {"failures", required_argument, NULL, 'f'},
						 {"trials", required_argument, NULL, 't'},
						 {"quick", no_argument, NULL, 'q'},
						 {"help", no_argument, NULL, 'h'},
						 {0, 0, 0, 0}};
	struct opts o = {.registrations = 1000,
			 .rounds = 20,
			 .cost_interval_ms = 5000,
			 .interval_ms = 200,
			 .failures = 3,
			 .trials = 10};
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			o.registrations = atol(optarg);
			break;
		case 'r':
			o.rounds = atol(optarg);
			break;
		case 'c':
			o.cost_interval_ms = atol(optarg);
			break;
		case 'i':
			o.interval_ms = atol(optarg);
			break;
		case 'f':
			o.failures = atol(optarg);
			break;
		case 't':
			o.trials = atol(optarg);
			break;
		case 'q':
			o.registrations = 100;
			o.rounds = 3;
			o.trials = 2;
			break;
		default:
			printf("usage: plugfs-bench-liveness [--registrations N] [--rounds N] "
			       "[--cost-interval MS] [--interval MS] [--failures N] [--trials N] "
			       "[--quick]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (o.registrations < 1 || o.rounds < 1 || o.cost_interval_ms < 1 || o.interval_ms < 10 ||
	    o.failures < 1 || o.trials < 1) {
		fprintf(stderr, "plugfs-bench-liveness: every count must be at least 1 "
				"(--interval at least 10 ms)\n");
		return 2;
	}
	plog_set_level(PLOG_WARN);
	bench_tmpdir("plugfs-bench-liveness", "plugfs-bench-liveness", tmp, sizeof(tmp));
	srand((unsigned)plugfs_mono_ns());
	bench_cost(&o);
	if (bench_fuse_usable("plugfs-bench-liveness", &rc))
		rc = bench_reaction(&o);
	bench_tmpdir_remove("plugfs-bench-liveness", tmp);
	return rc;
}
