/* SPDX-License-Identifier: MIT */
/*
 * plugfs-bench-probe: what a probe round costs the daemon, csi against
 * connect, measured in one run against the same sockets.
 *
 * It starts the tests' stand-in CSI plugin (tests/integration/csi_plugin.py,
 * a real gRPC server, python3-grpcio) listening on N Unix sockets, then runs
 * ROUNDS rounds of probe_connect_many and of probe_csi_many over the N
 * sockets, interleaved, on this thread, and prints for each mode the wall
 * time of the best round and the CPU time of this thread per probe
 * (getrusage RUSAGE_THREAD: the prober's own cost; the plugin's is not
 * counted), the csi/connect ratio, and what probing 1,000 registrations
 * every 5 s (the default interval) costs in percent of one core.
 *
 *   plugfs-bench-probe [--sockets N] [--rounds R] [--python PATH] [--plugin SCRIPT]
 *
 * Exit 1 when a probe fails or the plugin does not come up; 77 (skip) when
 * python3-grpcio is missing, a failure under CI=true.  Timings never fail
 * the run.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "clock.h"

static double now_s(void)
{
	return (double)plugfs_mono_ns() / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

struct figures {
	double best_wall, cpu;
	size_t failed;
};

static int run(bool csi, const char *const *paths, size_t n, struct probe_result *res,
	       struct figures *f)
{
	double w0 = now_s(), c0 = cpu_s(), w;
	int rc = csi ? probe_csi_many(paths, NULL, n, 2000, res)
		     : probe_connect_many(paths, n, 2000, res);

	w = now_s() - w0;
	f->cpu += cpu_s() - c0;
	if (f->best_wall == 0 || w < f->best_wall)
		f->best_wall = w;
	for (size_t i = 0; i < n; i++)
		if (!res[i].ok) {
			if (f->failed++ == 0)
				fprintf(stderr, "bench-probe: %s probe of %s: %s\n",
					csi ? "csi" : "connect", paths[i], res[i].error);
		}
	return rc;
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = {{"sockets", required_argument, NULL, 'n'},
						 {"rounds", required_argument, NULL, 'r'},
						 {"python", required_argument, NULL, 'p'},
						 {"plugin", required_argument, NULL, 's'},
						 {NULL, 0, NULL, 0}};
	const char *python = "/usr/bin/python3", *plugin = NULL;
	char dir[] = "/tmp/plugfs-bench-probe-XXXXXX";
	size_t n = 100, rounds = 20;
	char **paths = NULL, **args = NULL;
	struct probe_result *res = NULL;
	struct figures conn = {0}, csi = {0};
	bool ci = getenv("CI") && strcmp(getenv("CI"), "true") == 0;
	char check[PATH_MAX + 64];
	pid_t pid = -1;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			n = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 10);
			break;
		case 'p':
			python = optarg;
			break;
		case 's':
			plugin = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!plugin || n == 0 || rounds == 0) {
		fprintf(stderr, "usage: plugfs-bench-probe --plugin csi_plugin.py [--sockets N] "
				"[--rounds R] [--python PATH]\n");
		return 2;
	}
	if (snprintf(check, sizeof(check), "'%s' -c 'import grpc' 2>/dev/null", python) >=
		(int)sizeof(check) ||
	    strchr(python, '\'') || system(check) != 0) {
		fprintf(stderr, "bench-probe: python3-grpcio is missing%s\n",
			ci ? "" : "; skipping");
		return ci ? 1 : 77;
	}
	if (!mkdtemp(dir) || probe_global_init() != 0)
		return 1;
	paths = calloc(n, sizeof(*paths));
	args = calloc(2 * n + 4, sizeof(*args));
	res = calloc(n, sizeof(*res));
	if (!paths || !args || !res)
		goto out;
	args[0] = (char *)python;
	args[1] = (char *)plugin;
	for (size_t i = 0; i < n; i++) {
		if (asprintf(&paths[i], "%s/%zu.sock", dir, i) < 0)
			goto out;
		args[2 + 2 * i] = (char *)"--socket";
		args[3 + 2 * i] = paths[i];
	}
	pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execv(python, args);
		_exit(127);
	}
	for (int i = 0; i < 300; i++) { /* 30 s for the plugin to listen */
		struct stat st;

		if (stat(paths[n - 1], &st) == 0)
			break;
		usleep(100000);
	}
	/* Warm-up, then the rounds, interleaved. */
	run(true, (const char *const *)paths, n, res, &(struct figures){0});
	for (size_t r = 0; r < rounds; r++) {
		if (run(false, (const char *const *)paths, n, res, &conn) < 0 ||
		    run(true, (const char *const *)paths, n, res, &csi) < 0)
			goto out;
	}
	if (conn.failed || csi.failed) {
		fprintf(stderr, "bench-probe: %zu connect and %zu csi probes failed\n", conn.failed,
			csi.failed);
		goto out;
	}
	{
		double cp = conn.cpu / (double)(rounds * n), sp = csi.cpu / (double)(rounds * n);

		printf("probe round of %zu sockets, %zu rounds (best wall time; CPU of the probing "
		       "thread per probe)\n",
		       n, rounds);
		printf("  connect  %8.2f ms/round  %8.1f us CPU/probe\n", conn.best_wall * 1e3,
		       cp * 1e6);
		printf("  csi      %8.2f ms/round  %8.1f us CPU/probe\n", csi.best_wall * 1e3,
		       sp * 1e6);
		if (cp > 0)
			printf("  csi/connect: %.1fx wall, %.1fx CPU\n",
			       csi.best_wall / conn.best_wall, sp / cp);
		else /* connect's CPU below the clock's resolution */
			printf("  csi/connect: %.1fx wall\n", csi.best_wall / conn.best_wall);
		printf("  1000 registrations every 5 s: connect %.3f%%, csi %.3f%% of one core\n",
		       cp * 1000 / 5 * 100, sp * 1000 / 5 * 100);
	}
	rc = 0;
out:
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
	for (size_t i = 0; paths && i < n; i++) {
		if (paths[i])
			unlink(paths[i]);
		free(paths[i]);
	}
	rmdir(dir);
	free(paths);
	free(args);
	free(res);
	probe_global_cleanup();
	return rc;
}
