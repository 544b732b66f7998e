/* SPDX-License-Identifier: MIT */
/*
 * plugfs-bench: the cost of going through a plugfs mount, against a plain
 * symlink on tmpfs, measured in one run.
 *
 * It mounts plugfs in-process (registry + fs, state on tmpfs), registers
 * csi-node/bench with a listening socket, and builds the same path shape on
 * tmpfs (<shm>/m/plugins/csi-node/bench/csi.sock -> the same socket), then:
 *
 *   1. readlink, stat (following the link) and socket+connect+close through
 *      both paths, in 200 short interleaved rounds; ns/op of the best round
 *      of each (the least disturbed on a shared machine), and the ratio;
 *   2. the FUSE requests the daemon served during the cached readlink and
 *      stat operations (after warm-up): 0 is the target;
 *   3. SWITCHES switches of the active allocation while a reader thread loops
 *      on readlink: time from the start of registry_register to the first
 *      readlink that returns the new target (median, p99), and stale reads
 *      (a readlink started after the registration was acknowledged that
 *      returned an older target).
 *
 *   plugfs-bench [--iterations N] [--connects N] [--switches N] [--quick]
 *   plugfs-bench --scale N[,N...] [--plugfs PATH] [--disk DIR] [--quick]
 *   plugfs-bench --watch [--plugfs PATH] ... (bench_watch.c)
 *   plugfs-bench --discover [--plugfs PATH] [--sockets N] [--burst N]
 *                [--python PATH] [--csi-plugin SCRIPT] [--quick] (bench_discover.c)
 *
 * --scale prints everything in one run: first the daemon at each plugin
 * count, side by side (start to ready, RSS per registration, uncached
 * lookup, register and deregister through the control socket:
 * bench_scale.c; list time, peak RSS and status latency: bench_list.c),
 * with the plugfs binary of the build tree (or --plugfs PATH), then durable
 * registrations at 1 and 16 clients with the state file in DIR (default
 * /var/tmp: a disk, not tmpfs) against a raw fdatasync loop there
 * (bench_durable.c), then the cached path above (--quick: small counts).
 *
 * Needs root and /dev/fuse: without them it says why and exits 77 (skip),
 * except under CI=true where that is a failure.  Exit 1 on an error or a
 * stale read; timings never fail the run.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_cached.h"
#include "bench_discover.h"
#include "bench_scale.h"
#include "bench_watch.h"
#include "clock.h"
#include "fs.h"
#include "log.h"
#include "registry.h"

#define TYPE "csi-node"
#define NAME "bench"

static double register_baseline(struct bench *b, long n);

static void die(const char *what)
{
	fprintf(stderr, "plugfs-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *server_main(void *arg)
{
	struct bench *b = arg;

	while (!__atomic_load_n(&b->stop, __ATOMIC_SEQ_CST)) {
		int c = accept(b->listen_fd, NULL, NULL);

		if (c >= 0)
			close(c);
	}
	return NULL;
}

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0755);
			*p = '/';
		}
	}
	mkdir(buf, 0755);
}

static int do_register(struct bench *b, const char *alloc, const char *sock)
{
	return bench_register("plugfs-bench", b->reg, TYPE, NAME, alloc, sock);
}

void bench_setup(struct bench *b)
{
	struct fs_options fo = {.socket_name = "csi.sock",
				.allow_other = true,
				.cache_timeout = b->cache_timeout,
				.no_default_permissions = b->no_default_permissions,
				.no_cache_symlinks = b->no_cache_symlinks,
				.no_dir_cache = b->no_dir_cache};
	char dir[PATH_MAX + 32];

	bench_tmpdir("plugfs-bench", "plugfs-bench", b->tmp, sizeof(b->tmp));
	snprintf(b->mnt, sizeof(b->mnt), "%s/mnt", b->tmp);
	snprintf(b->sock, sizeof(b->sock), "%s/a0/csi.sock", b->tmp);
	snprintf(b->fuse_link, sizeof(b->fuse_link), "%s/plugins/" TYPE "/" NAME "/csi.sock",
		 b->mnt);
	/* The same number of path components, on tmpfs. */
	snprintf(b->shm_link, sizeof(b->shm_link), "%s/shm/plugins/" TYPE "/" NAME "/csi.sock",
		 b->tmp);
	snprintf(dir, sizeof(dir), "%s/shm/plugins/" TYPE "/" NAME, b->tmp);
	mkdirs(dir);
	if (symlink(b->sock, b->shm_link) != 0)
		die("symlink on tmpfs");

	snprintf(dir, sizeof(dir), "%s/a0", b->tmp);
	mkdirs(dir);
	b->listen_fd = bench_listen("plugfs-bench", b->sock, 0);
	pthread_create(&b->server, NULL, server_main, b);

	b->reg = bench_open_registry("plugfs-bench", b->tmp, "full");
	if (do_register(b, "a0", b->sock) != 0)
		exit(1);
	b->register_alone_us = register_baseline(b, b->switches < 200 ? b->switches : 200);
	fo.mountpoint = b->mnt;
	bench_mount_start("plugfs-bench", b->reg, &fo, b->fuse_link, &b->m);
}

void bench_teardown(struct bench *b)
{
	int fd;

	bench_mount_stop(&b->m);
	registry_close(b->reg);
	__atomic_store_n(&b->stop, true, __ATOMIC_SEQ_CST);
	/* Wake the accept. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};

		memcpy(sa.sun_path, b->sock, strlen(b->sock) + 1);
		connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
	}
	pthread_join(b->server, NULL);
	close(b->listen_fd);
	bench_tmpdir_remove("plugfs-bench", b->tmp);
}

/* ---- the operations ---------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

const char *const bench_op_names[] = {"readlink csi.sock", "stat csi.sock (follows)",
				      "socket+connect+close"};

static void run_op(enum op op, const char *path, long n)
{
	char buf[PATH_MAX];
	struct stat st;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (op == OP_CONNECT)
		memcpy(sa.sun_path, path, strlen(path) + 1);
	for (long i = 0; i < n; i++) {
		switch (op) {
		case OP_READLINK:
			if (readlink(path, buf, sizeof(buf)) < 0)
				die("readlink");
			break;
		case OP_STAT:
			if (stat(path, &st) != 0)
				die("stat");
			break;
		case OP_CONNECT: {
			int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

			if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
				die("connect");
			close(fd);
			break;
		}
		}
	}
}

/* The best round of each: the machine is shared, the best round is the one
 * least disturbed by other processes. */
void bench_measure(struct bench *b, enum op op, long n, double *shm_ns, double *fuse_ns)
{
	uint64_t shm = UINT64_MAX, fuse = UINT64_MAX;
	long per = n / ROUNDS > 0 ? n / ROUNDS : 1;

	run_op(op, b->shm_link, per / 10 + 1); /* warm-up */
	run_op(op, b->fuse_link, per / 10 + 1);
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = plugfs_mono_ns();

		run_op(op, b->shm_link, per);
		uint64_t t1 = plugfs_mono_ns();

		run_op(op, b->fuse_link, per);
		uint64_t t2 = plugfs_mono_ns();

		if (t1 - t0 < shm)
			shm = t1 - t0;
		if (t2 - t1 < fuse)
			fuse = t2 - t1;
	}
	*shm_ns = (double)shm / (double)per;
	*fuse_ns = (double)fuse / (double)per;
}

/* registry_register of a new active alloc with nothing subscribed: what the
 * registry itself costs (SQLite commit included), median in us. */
static double register_baseline(struct bench *b, long n)
{
	uint64_t *t = calloc((size_t)n, sizeof(*t));
	char alloc[32], prev[32] = "a0", err[REG_ERR_MAX];
	double med;

	if (!t)
		die("calloc");
	for (long i = 0; i < n; i++) {
		snprintf(alloc, sizeof(alloc), "base%ld", i);
		uint64_t t0 = plugfs_mono_ns();

		if (do_register(b, alloc, b->sock) != 0)
			exit(1);
		t[i] = plugfs_mono_ns() - t0;
		if (registry_deregister(b->reg, TYPE, NAME, prev, NULL, err, sizeof(err)) != 0) {
			fprintf(stderr, "plugfs-bench: deregister %s: %s\n", prev, err);
			exit(1);
		}
		snprintf(prev, sizeof(prev), "%s", alloc);
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_u64);
	med = (double)t[n / 2] / 1000.0;
	free(t);
	return med;
}

/* ---- switches ----------------------------------------------------------- */

#define SW_FMT "/run/plugfs-bench/s%ld/csi.sock"

static void *switch_reader(void *arg)
{
	struct bench *b = arg;
	char buf[PATH_MAX];
	unsigned long long reads = 0, stale = 0;

	while (!__atomic_load_n(&b->stop, __ATOMIC_SEQ_CST)) {
		long g = __atomic_load_n(&b->acked, __ATOMIC_SEQ_CST);
		ssize_t n = readlink(b->fuse_link, buf, sizeof(buf) - 1);
		long k = -1;

		if (n < 0)
			continue;
		buf[n] = '\0';
		if (sscanf(buf, "/run/plugfs-bench/s%ld/csi.sock", &k) != 1)
			k = 0; /* the initial a0 */
		reads++;
		if (k < g)
			stale++;
		if (k > __atomic_load_n(&b->seen, __ATOMIC_SEQ_CST)) {
			__atomic_store_n(&b->seen_ns, plugfs_mono_ns(), __ATOMIC_SEQ_CST);
			__atomic_store_n(&b->seen, k, __ATOMIC_SEQ_CST);
		}
	}
	__atomic_fetch_add(&b->reads, reads, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&b->stale, stale, __ATOMIC_SEQ_CST);
	return NULL;
}

static int run_switches(struct bench *b, double *median_us, double *p99_us, double *ack_med_us,
			unsigned long long *ack_stale)
{
	uint64_t *lat = calloc((size_t)b->switches, sizeof(*lat));
	uint64_t *ack = calloc((size_t)b->switches, sizeof(*ack));
	char sock[PATH_MAX], alloc[32], prev[32] = "a0", buf[PATH_MAX];
	pthread_t reader;
	int rc = 0;

	if (!lat || !ack)
		die("calloc");
	__atomic_store_n(&b->stop, false, __ATOMIC_SEQ_CST);
	pthread_create(&reader, NULL, switch_reader, b);
	*ack_stale = 0;
	for (long i = 1; i <= b->switches; i++) {
		snprintf(sock, sizeof(sock), SW_FMT, i);
		snprintf(alloc, sizeof(alloc), "s%ld", i);
		uint64_t t0 = plugfs_mono_ns();

		if (do_register(b, alloc, sock) != 0) {
			rc = -1;
			break;
		}
		uint64_t t1 = plugfs_mono_ns();

		__atomic_store_n(&b->acked, i, __ATOMIC_SEQ_CST);
		ack[i - 1] = t1 - t0;
		/* The next readlink after the acknowledgement. */
		ssize_t n = readlink(b->fuse_link, buf, sizeof(buf) - 1);
		uint64_t t2 = plugfs_mono_ns();

		buf[n < 0 ? 0 : n] = '\0';
		if (strcmp(buf, sock) != 0)
			(*ack_stale)++;
		/* The first readlink that returned the new target: this one, or the
		 * reader thread's when it was earlier. */
		lat[i - 1] = t2 - t0;
		if (__atomic_load_n(&b->seen, __ATOMIC_SEQ_CST) >= i) {
			uint64_t seen = __atomic_load_n(&b->seen_ns, __ATOMIC_SEQ_CST);

			if (seen > t0 && seen - t0 < lat[i - 1])
				lat[i - 1] = seen - t0;
		}
		/* Keep the list short: the previous one goes (not timed; the active
		 * link does not change). */
		char err[REG_ERR_MAX];

		if (registry_deregister(b->reg, TYPE, NAME, prev, NULL, err, sizeof(err)) != 0) {
			fprintf(stderr, "plugfs-bench: deregister %s: %s\n", prev, err);
			rc = -1;
		}
		snprintf(prev, sizeof(prev), "%s", alloc);
		if (rc != 0)
			break;
	}
	__atomic_store_n(&b->stop, true, __ATOMIC_SEQ_CST);
	pthread_join(reader, NULL);
	__atomic_store_n(&b->stop, false, __ATOMIC_SEQ_CST);
	qsort(lat, (size_t)b->switches, sizeof(*lat), cmp_u64);
	qsort(ack, (size_t)b->switches, sizeof(*ack), cmp_u64);
	*median_us = (double)lat[b->switches / 2] / 1000.0;
	*p99_us = (double)lat[(size_t)((double)b->switches * 0.99) < (size_t)b->switches
				  ? (size_t)((double)b->switches * 0.99)
				  : (size_t)b->switches - 1] /
		  1000.0;
	*ack_med_us = (double)ack[b->switches / 2] / 1000.0;
	free(lat);
	free(ack);
	return rc;
}

/* FUSE requests per listing of the plugin directory (opendir, readdir to the
 * end, closedir), after warm-up. */
double bench_requests_per_listing(struct bench *b, int n)
{
	char dir[PATH_MAX];
	unsigned long long r0 = 0;

	snprintf(dir, sizeof(dir), "%s/plugins/" TYPE "/" NAME, b->mnt);
	for (int i = -10; i < n; i++) {
		DIR *d;

		if (i == 0)
			r0 = fs_requests_served(b->m.fs);
		d = opendir(dir);
		if (!d)
			die("opendir");
		while (readdir(d) != NULL)
			;
		closedir(d);
	}
	return (double)(fs_requests_served(b->m.fs) - r0) / n;
}

/* The plugfs binary of the build tree this bench was built in. */
static void default_plugfs(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	self[n > 0 ? n : 0] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	if (snprintf(out, len, "%s/../../cli/plugfs", self) >= (int)len)
		out[0] = '\0'; /* too long: run_scale says the binary is missing */
}

static int run_scale(const char *plugfs_arg, const char *sizes, const char *disk, bool quick)
{
	char plugfs[PATH_MAX], tmp[256];
	int rc;

	if (plugfs_arg)
		snprintf(plugfs, sizeof(plugfs), "%s", plugfs_arg);
	else
		default_plugfs(plugfs, sizeof(plugfs));
	bench_tmpdir("plugfs-bench", "plugfs-bench", tmp, sizeof(tmp));
	rc = bench_scale(plugfs, tmp, sizes);
	if (rc == 0)
		rc = bench_durable(plugfs, tmp, disk, quick);
	bench_tmpdir_remove("plugfs-bench", tmp);
	return rc;
}

static int run_watch(const char *plugfs_arg, const struct bench_watch_opts *o)
{
	char plugfs[PATH_MAX], tmp[256];
	int rc;

	if (plugfs_arg)
		snprintf(plugfs, sizeof(plugfs), "%s", plugfs_arg);
	else
		default_plugfs(plugfs, sizeof(plugfs));
	bench_tmpdir("plugfs-bench", "plugfs-bench", tmp, sizeof(tmp));
	rc = bench_watch(plugfs, tmp, o);
	bench_tmpdir_remove("plugfs-bench", tmp);
	return rc;
}

static int run_discover(const char *plugfs_arg, const char *python, const char *script,
			const struct bench_discover_opts *o)
{
	char plugfs[PATH_MAX], tmp[256], check[PATH_MAX + 64];
	int rc;

	if (snprintf(check, sizeof(check), "'%s' -c 'import grpc' 2>/dev/null", python) >=
		(int)sizeof(check) ||
	    strchr(python, '\'') || system(check) != 0 || access(script, R_OK) != 0) {
		const char *ci = getenv("CI");
		bool fail = ci && strcmp(ci, "true") == 0;

		fprintf(stderr,
			"plugfs-bench: --discover: python3-grpcio for %s or the plugin %s is "
			"missing (contrib/install-deps.sh)%s\n",
			python, script, fail ? "; CI=true: not skipping" : "; skipped");
		return fail ? 1 : 77;
	}
	if (plugfs_arg)
		snprintf(plugfs, sizeof(plugfs), "%s", plugfs_arg);
	else
		default_plugfs(plugfs, sizeof(plugfs));
	bench_tmpdir("plugfs-bench", "plugfs-bench", tmp, sizeof(tmp));
	rc = bench_discover(plugfs, tmp, python, script, o);
	bench_tmpdir_remove("plugfs-bench", tmp);
	return rc;
}

/* The cached path: readlink, stat and connect through the mount against a
 * tmpfs symlink of the same depth (what is left is the kernel's FUSE code:
 * no request reaches the daemon), listings, switches, stale reads.  0, or 1
 * when a read after an acknowledgement was stale or a switch failed. */
static int run_cached(struct bench *bp)
{
	static const double targets[] = {1.2, 1.2, 1.1};
	struct bench b = *bp;
	double shm_ns[3], fuse_ns[3], med, p99, ack_med;
	unsigned long long req0, req1, ack_stale;
	struct utsname u;
	int rc = 0;

	plog_set_level(PLOG_WARN);
	bench_setup(&b);

	req0 = fs_requests_served(b.m.fs);
	bench_measure(&b, OP_READLINK, b.iterations, &shm_ns[0], &fuse_ns[0]);
	bench_measure(&b, OP_STAT, b.iterations, &shm_ns[1], &fuse_ns[1]);
	req1 = fs_requests_served(b.m.fs);
	bench_measure(&b, OP_CONNECT, b.connects, &shm_ns[2], &fuse_ns[2]);
	double per_listing = bench_requests_per_listing(&b, 1000);
	if (run_switches(&b, &med, &p99, &ack_med, &ack_stale) != 0)
		rc = 1;

	uname(&u);
	printf("plugfs-bench: Linux %s, %ld CPUs, state and sockets on tmpfs (%s)\n", u.release,
	       sysconf(_SC_NPROCESSORS_ONLN), b.tmp);
	printf("paths: %s\n       %s (tmpfs symlink, same depth)\n\n", b.fuse_link, b.shm_link);
	printf("best of %d interleaved rounds per operation\n", ROUNDS);
	printf("%-26s %10s %12s %12s %8s %8s\n", "operation", "ops", "tmpfs ns/op", "plugfs ns/op",
	       "ratio", "target");
	for (int i = 0; i < 3; i++) {
		double ratio = fuse_ns[i] / shm_ns[i];

		printf("%-26s %10ld %12.0f %12.0f %7.2fx %7s%.2fx %s\n", bench_op_names[i],
		       i == 2 ? b.connects : b.iterations, shm_ns[i], fuse_ns[i], ratio,
		       "<=", targets[i], ratio <= targets[i] ? "met" : "MISSED");
	}
	unsigned long long cached_ops = 2ull * (unsigned long long)b.iterations;
	double per_million = (double)(req1 - req0) * 1e6 / (double)cached_ops;

	printf("\nFUSE requests served during %llu cached readlink+stat ops (after warm-up): "
	       "%llu (%.2f per million; target 0) %s\n",
	       cached_ops, req1 - req0, per_million, req1 == req0 ? "met" : "MISSED");
	printf("FUSE requests per listing of a plugin directory (opendir, readdir, closedir; "
	       "warm): %.2f (target 0) %s\n",
	       per_listing, per_listing == 0.0 ? "met" : "MISSED");
	printf("switch of the active allocation -> first readlink with the new target, over %ld "
	       "switches:\n  median %.1f us, p99 %.1f us (target p99 <= 1000 us) %s\n",
	       b.switches, med, p99, p99 <= 1000.0 ? "met" : "MISSED");
	printf("  registry_register (persist with synchronous=full on tmpfs, apply, "
	       "invalidations delivered): median %.1f us;\n  the same without a mount: median "
	       "%.1f us\n",
	       ack_med, b.register_alone_us);
	printf("stale reads after acknowledgement: %llu by the reader thread (%llu reads), %llu "
	       "by the first readlink after each ack (target 0) %s\n",
	       b.stale, b.reads, ack_stale, b.stale + ack_stale == 0 ? "met" : "MISSED");
	if (b.stale + ack_stale > 0)
		rc = 1;
	bench_teardown(&b);
	return rc;
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"iterations", required_argument, NULL, 'i'},
	    {"connects", required_argument, NULL, 'c'},
	    {"switches", required_argument, NULL, 's'},
	    {"quick", no_argument, NULL, 'q'},
	    {"scale", required_argument, NULL, 'S'},
	    {"plugfs", required_argument, NULL, 'P'},
	    {"disk", required_argument, NULL, 'D'},
	    {"watch", no_argument, NULL, 'W'},
	    {"kills", required_argument, NULL, 'K'},
	    {"baseline-kills", required_argument, NULL, 'B'},
	    {"interval", required_argument, NULL, 'I'},
	    {"missing", required_argument, NULL, 'M'},
	    {"live", required_argument, NULL, 'L'},
	    {"discover", no_argument, NULL, 'X'},
	    {"sockets", required_argument, NULL, 'N'},
	    {"burst", required_argument, NULL, 'U'},
	    {"python", required_argument, NULL, 'Y'},
	    {"csi-plugin", required_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct bench b = {
	    .iterations = 1000000, .connects = 200000, .switches = 1000, .cache_timeout = 60};
	const char *scale = NULL, *plugfs = NULL, *disk = "/var/tmp";
	struct bench_watch_opts wo = {
	    .interval = 30, .kills = 200, .baseline_kills = 3, .n = 100000, .live = 1000, .window = 10};
	struct bench_discover_opts xo = {.sockets = 100, .burst = 1000};
	const char *python = "/usr/bin/python3", *csi_plugin = BENCH_CSI_PLUGIN;
	bool quick = false, watch = false, discover = false;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			b.iterations = atol(optarg);
			break;
		case 'c':
			b.connects = atol(optarg);
			break;
		case 's':
			b.switches = atol(optarg);
			break;
		case 'q':
			b.iterations = 20000;
			b.connects = 5000;
			b.switches = 50;
			quick = true;
			wo = (struct bench_watch_opts){
			    .interval = 1, .kills = 5, .baseline_kills = 1, .n = 300, .live = 20, .window = 2};
			xo = (struct bench_discover_opts){.sockets = 10, .burst = 50};
			break;
		case 'X':
			discover = true;
			break;
		case 'N':
			xo.sockets = atol(optarg);
			break;
		case 'U':
			xo.burst = atol(optarg);
			break;
		case 'Y':
			python = optarg;
			break;
		case 'C':
			csi_plugin = optarg;
			break;
		case 'W':
			watch = true;
			break;
		case 'K':
			wo.kills = atoi(optarg);
			break;
		case 'B':
			wo.baseline_kills = atoi(optarg);
			break;
		case 'I':
			wo.interval = atof(optarg);
			break;
		case 'M':
			wo.n = atol(optarg);
			break;
		case 'L':
			wo.live = atol(optarg);
			break;
		case 'S':
			scale = optarg;
			break;
		case 'P':
			plugfs = optarg;
			break;
		case 'D':
			disk = optarg;
			break;
		case 'h':
			printf("usage: plugfs-bench [--iterations N] [--connects N] [--switches N] "
			       "[--quick]\n       plugfs-bench --scale N[,N...] [--plugfs PATH] "
			       "[--disk DIR] "
			       "[--quick]\n       plugfs-bench --watch [--plugfs PATH] [--kills N] "
			       "[--baseline-kills N] [--interval S] [--missing N] [--live N] "
			       "[--quick]\n       plugfs-bench --discover [--plugfs PATH] "
			       "[--sockets N] "
			       "[--burst N] [--python PATH] [--csi-plugin SCRIPT] [--quick]\n");
			return 0;
		default:
			return 2;
		}
	}
	if (b.iterations < ROUNDS || b.connects < ROUNDS || b.switches < 1) {
		fprintf(stderr,
			"plugfs-bench: --iterations and --connects must be >= %d, "
			"--switches >= 1\n",
			ROUNDS);
		return 2;
	}
	if (!bench_fuse_usable("plugfs-bench", &rc))
		return rc;
	if (wo.kills < 1 || wo.baseline_kills < 1 || wo.interval < 0.05 || wo.n < 1 ||
	    wo.live < 1) {
		fprintf(stderr,
			"plugfs-bench: --kills, --baseline-kills, --missing and --live must "
			"be >= 1, --interval >= 0.05\n");
		return 2;
	}
	if (xo.sockets < 1 || xo.burst < 1 || xo.sockets > 99999 || xo.burst > 99999) {
		fprintf(stderr, "plugfs-bench: --sockets and --burst must be 1 to 99999\n");
		return 2;
	}
	if (watch)
		return run_watch(plugfs, &wo);
	if (discover)
		return run_discover(plugfs, python, csi_plugin, &xo);
	if (scale) {
		/* The whole picture in one run: the daemon at each size, then the
		 * cached path against tmpfs. */
		rc = run_scale(plugfs, scale, disk, quick);
		printf("\n");
		fflush(stdout);
	}
	rc |= run_cached(&b);
	bench_options(&b);
	return rc;
}
