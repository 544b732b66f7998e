/* SPDX-License-Identifier: MIT */
/*
 * plugfs-bench --scale, durable registrations: `register' through the
 * control socket with the state file on a disk (synchronous = full: each
 * acknowledged registration is on the disk), against a raw fdatasync loop
 * in the same directory, measured in the same run.
 *
 *   - raw fdatasync: 4 KiB appended to a file, then fdatasync, in a loop
 *     (what a log that grows costs: the size changes, so the file system
 *     journals it), and 4 KiB overwritten in place, then fdatasync (the
 *     least a sync costs on this disk);
 *   - 1 client: one connection, one `register' at a time, each waiting for
 *     its answer (a new plugin each time);
 *   - 16 clients: 16 connections on 16 threads, the same each.
 *
 * Targets: 1 client >= 0.9x the appending raw loop's rate (the disk's
 * limit for one durable commit at a time; its ratio to the overwriting loop
 * is printed too); 16 clients >= 30,000 registrations/s (group commit: the
 * requests of all clients waiting share one transaction and one fsync).
 * The daemon's group commits and the mutations they carried come from its
 * metrics, and the mean group with them.  The registry alone, in this
 * process, 1 and 16 registrations per commit on the same disk, is the
 * floor of the daemon's design: what a commit costs in SQLite before a
 * socket, a request, an answer, the view or a log line; the daemon's
 * rates are printed as a fraction of it too.
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
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bench_scale.h"
#include "bench_util.h"
#include "clock.h"
#include "registry.h"

#define ONE_TARGET_RATIO 0.9
#define MANY_TARGET_PER_S 30000.0
#define MANY_CLIENTS 16

static double mono_s(void)
{
	return (double)plugfs_mono_ns() / 1e9;
}

/* fdatasyncs per second of a loop writing 4 KiB each time: appended, or
 * overwriting the same 64 blocks; -1 on an error. */
static double raw_rate(const char *dir, bool append, long n)
{
	char path[PATH_MAX], buf[4096];
	double t0, dt;
	int fd;

	memset(buf, 'x', sizeof(buf));
	snprintf(path, sizeof(path), "%s/raw-fdatasync", dir);
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (!append) {
		for (int i = 0; i < 64; i++)
			if (pwrite(fd, buf, sizeof(buf), (off_t)i * 4096) != (ssize_t)sizeof(buf))
				goto fail;
		if (fsync(fd) != 0)
			goto fail;
	}
	t0 = mono_s();
	for (long i = 0; i < n; i++) {
		off_t off = append ? (off_t)i * 4096 : (off_t)(i % 64) * 4096;

		if (pwrite(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf) || fdatasync(fd) != 0)
			goto fail;
	}
	dt = mono_s() - t0;
	close(fd);
	unlink(path);
	return (double)n / dt;
fail:
	close(fd);
	unlink(path);
	return -1;
}

/* Sends line and reads one answer line into ans; 0, or -1. */
struct client_job {
	const char *sock;
	int id;
	long n;
	int rc;
};

static void *client_main(void *arg)
{
	struct client_job *j = arg;
	char line[512], *ans = malloc(65536);
	int fd = ans ? bench_ctl_connect(j->sock) : -1;

	j->rc = -1;
	if (fd < 0) {
		free(ans);
		return NULL;
	}
	for (long i = 0; i < j->n; i++) {
		snprintf(line, sizeof(line),
			 "{\"op\":\"register\",\"types\":[\"csi-node\"],\"name\":\"d%d-%ld\","
			 "\"alloc\":\"d%d-a%ld\",\"socket\":\"/run/bench/d%d/%ld/csi.sock\"}\n",
			 j->id, i, j->id, i, j->id, i);
		if (bench_call(fd, line, ans, 65536) != 0 || !strstr(ans, "\"ok\":true")) {
			fprintf(stderr, "plugfs-bench: register: %.300s\n", ans);
			close(fd);
			free(ans);
			return NULL;
		}
	}
	close(fd);
	free(ans);
	j->rc = 0;
	return NULL;
}

/* Registrations per second of k clients sending n each; -1 on an error. */
static double clients_rate(const char *sock, int k, long n, int first_id)
{
	pthread_t t[MANY_CLIENTS];
	struct client_job j[MANY_CLIENTS];
	double t0 = mono_s(), dt;
	int bad = 0;

	for (int i = 0; i < k; i++) {
		j[i] = (struct client_job){.sock = sock, .id = first_id + i, .n = n};
		if (pthread_create(&t[i], NULL, client_main, &j[i]) != 0)
			return -1;
	}
	for (int i = 0; i < k; i++) {
		pthread_join(t[i], NULL);
		bad |= j[i].rc;
	}
	dt = mono_s() - t0;
	return bad ? -1 : (double)k * (double)n / dt;
}

/* The daemon's floor: registrations per second of the registry alone, in
 * this process (no socket, no request to parse, no answer, no view, no
 * log), synchronous = full with the daemon's upkeep, in groups of `group'
 * per registry_mutate (one transaction and one fsync each, as the control
 * server's group commit); the state file in dir.  -1 on an error. */
static double registry_rate(const char *dir, int group, long n)
{
	static const char *const types[] = {"csi-node"};
	struct registry_options o = {
	    .types = types, .n_types = 1, .tombstone_ttl = 86400, .synchronous = "full"};
	struct reg_mutation m[MANY_CLIENTS];
	struct reg_spec spec[MANY_CLIENTS];
	char path[PATH_MAX], err[REG_ERR_MAX], names[MANY_CLIENTS][3][96], cmd[PATH_MAX + 32];
	struct registry *r = NULL;
	double t0, rate = -1;

	if (group < 1 || group > MANY_CLIENTS)
		return -1;
	snprintf(path, sizeof(path), "%s/alone.db", dir);
	if (registry_open(path, &o, &r, err, sizeof(err)) != 0 ||
	    registry_start_upkeep(r, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "plugfs-bench: the registry alone: %s\n", err);
		goto out;
	}
	t0 = mono_s();
	for (long i = 0; i < n; i += group) {
		int k = 0;

		for (; k < group && i + k < n; k++) {
			snprintf(names[k][0], sizeof(names[k][0]), "r%ld", i + k);
			snprintf(names[k][1], sizeof(names[k][1]), "r-a%ld", i + k);
			snprintf(names[k][2], sizeof(names[k][2]), "/run/bench/r/%ld/csi.sock", i + k);
			spec[k] = (struct reg_spec){
			    .name = names[k][0], .alloc = names[k][1], .socket = names[k][2]};
			m[k] = (struct reg_mutation){
			    .op = REG_MUT_REGISTER, .types = types, .n_types = 1, .spec = &spec[k]};
		}
		registry_mutate(r, m, (size_t)k);
		for (int j = 0; j < k; j++)
			if (m[j].rc != 0) {
				fprintf(stderr, "plugfs-bench: the registry alone: %s\n", m[j].err);
				goto out;
			}
	}
	rate = (double)n / (mono_s() - t0);
out:
	if (r)
		registry_close(r);
	snprintf(cmd, sizeof(cmd), "rm -f '%s'*", path);
	if (system(cmd) != 0)
		fprintf(stderr, "plugfs-bench: could not remove %s\n", path);
	return rate;
}

/* A counter of the daemon's metrics (0 when absent). */
static double metric(const char *sock, const char *name)
{
	static char ans[1 << 20];
	char needle[256];
	int fd = bench_ctl_connect(sock);
	double v = 0;
	char *p;

	if (fd < 0)
		return 0;
	/* The sample line (after a newline, escaped in the JSON string). */
	snprintf(needle, sizeof(needle), "\\n%s ", name);
	if (bench_call(fd, "{\"op\":\"metrics\"}\n", ans, sizeof(ans)) == 0 && (p = strstr(ans, needle)))
		v = strtod(p + strlen(needle), NULL);
	close(fd);
	return v;
}

static const char *fs_name(const char *dir)
{
	struct statfs s;

	if (statfs(dir, &s) != 0)
		return "?";
	switch ((unsigned long)s.f_type) {
	case 0x01021994UL:
		return "tmpfs: not a disk";
	case 0xEF53UL:
		return "ext2/3/4";
	case 0x58465342UL:
		return "xfs";
	case 0x9123683EUL:
		return "btrfs";
	default:
		return "other";
	}
}

int bench_durable(const char *plugfs, const char *tmpdir, const char *diskdir, bool quick)
{
	char dir[PATH_MAX], cfg[PATH_MAX], sock[PATH_MAX], ready[512], cmd[PATH_MAX + 16];
	long n_raw = quick ? 200 : 3000, n_one = quick ? 200 : 3000, n_many = quick ? 50 : 2500;
	double raw_app, raw_over, one, many, ms, groups0, grouped0, groups, grouped, alone1, alone16;
	double cpu0, cpu1, cpu2, cpu3;
	struct bench_daemon d = {0};
	int rc = 1;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/plugfs-bench-durable.XXXXXX", diskdir);
	if (!mkdtemp(dir)) {
		fprintf(stderr, "plugfs-bench: mkdtemp in %s: %s\n", diskdir, strerror(errno));
		return 1;
	}
	snprintf(cfg, sizeof(cfg), "%s/plugfs-durable.ini", tmpdir);
	snprintf(sock, sizeof(sock), "%s/ctl-durable.sock", tmpdir);
	f = fopen(cfg, "w");
	if (!f)
		goto out;
	fprintf(f,
		"[mount]\nmountpoint = %s/mnt-durable\n\n"
		"[state]\npath = %s/state.db\nsynchronous = full\n\n"
		"[control]\nsocket = %s\nmax_clients = 64\n\n"
		"[registry]\ntypes = csi-controller csi-node\n\n"
		"[probe]\nmode = none\n",
		tmpdir, dir, sock);
	if (fclose(f) != 0)
		goto out;
	raw_app = raw_rate(dir, true, n_raw);
	raw_over = raw_rate(dir, false, n_raw);
	if (raw_app < 0 || raw_over < 0) {
		fprintf(stderr, "plugfs-bench: the raw fdatasync loop failed in %s\n", dir);
		goto out;
	}
	alone1 = registry_rate(dir, 1, n_one);
	alone16 = registry_rate(dir, MANY_CLIENTS, n_many * MANY_CLIENTS);
	if (alone1 < 0 || alone16 < 0)
		goto out;
	if (bench_daemon_start(plugfs, cfg, &d, &ms, ready, sizeof(ready)) != 0)
		goto out;
	cpu0 = bench_daemon_cpu_ms(&d);
	one = clients_rate(sock, 1, n_one, 100);
	cpu1 = bench_daemon_cpu_ms(&d);
	groups0 = metric(sock, "plugfs_control_group_commits_total");
	grouped0 = metric(sock, "plugfs_control_grouped_mutations_total");
	cpu2 = bench_daemon_cpu_ms(&d);
	many = clients_rate(sock, MANY_CLIENTS, n_many, 0);
	cpu3 = bench_daemon_cpu_ms(&d);
	groups = metric(sock, "plugfs_control_group_commits_total") - groups0;
	grouped = metric(sock, "plugfs_control_grouped_mutations_total") - grouped0;
	if (bench_daemon_stop(&d) != 0 || one < 0 || many < 0) {
		fprintf(stderr, "plugfs-bench: the durable registrations failed\n");
		goto out;
	}
	/* The other rates again: the machine is shared, take the best. */
	{
		double a = raw_rate(dir, true, n_raw), o = raw_rate(dir, false, n_raw);

		raw_app = a > raw_app ? a : raw_app;
		raw_over = o > raw_over ? o : raw_over;
	}

	printf("\ndurable registrations: `register' over the control socket, synchronous = full, "
	       "state in %s (%s), probe none\n",
	       diskdir, fs_name(dir));
	printf("%-44s %10s %10s   %s\n", "", "per s", "us each", "target");
	printf("%-44s %10.0f %10.1f   (the baseline, the best of two loops)\n",
	       "raw fdatasync, 4 KiB appended each", raw_app, 1e6 / raw_app);
	printf("%-44s %10.0f %10.1f   (the best this disk syncs)\n",
	       "raw fdatasync, 4 KiB overwritten each", raw_over, 1e6 / raw_over);
	printf("%-44s %10.0f %10.1f   (in this process: no socket, request, answer, view, log)\n",
	       "the registry alone, 1 per commit", alone1, 1e6 / alone1);
	printf("%-44s %10.0f %10.1f   (registry_mutate, as the group commit)\n",
	       "the registry alone, 16 per commit", alone16, 1e6 / alone16);
	printf("%-44s %10.0f %10.1f   >= %.1fx appended raw: %.2fx %s (%.2fx overwritten)\n",
	       "1 client, one register at a time", one, 1e6 / one, ONE_TARGET_RATIO, one / raw_app,
	       one / raw_app >= ONE_TARGET_RATIO ? "met" : "MISSED", one / raw_over);
	printf("%-44s %10.2f              (the registry alone's rate it reaches)\n",
	       "  1 client / the registry alone", one / alone1);
	printf("%-44s %10.0f %10.1f   >= %.0f/s: %s%s\n", "16 clients, each one at a time", many,
	       1e6 / many, MANY_TARGET_PER_S, many >= MANY_TARGET_PER_S ? "met" : "MISSED",
	       quick ? " (--quick: too few to judge)" : "");
	printf("%-44s %10.2f              (the registry alone's rate, 16 per commit)\n",
	       "  16 clients / the registry alone", many / alone16);
	printf("%-44s %10.1f              (%.0f mutations in %.0f commits)\n",
	       "  mean group commit at 16 clients", groups > 0 ? grouped / groups : 0, grouped,
	       groups);
	printf("%-44s %10.1f %10.1f   (1 client, 16 clients: the daemon's user+sys CPU)\n",
	       "  daemon CPU per registration (us)", (cpu1 - cpu0) * 1000.0 / (double)n_one,
	       (cpu3 - cpu2) * 1000.0 / ((double)n_many * MANY_CLIENTS));
	rc = 0;
out:
	if (rc != 0 && d.pid > 0 && d.log)
		bench_daemon_stop(&d);
	unlink(cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "plugfs-bench: could not remove %s\n", dir);
	return rc;
}
