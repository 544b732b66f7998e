/* SPDX-License-Identifier: MIT */
/* plugfs-bench --scale (bench_scale.c). */
#ifndef PLUGFS_BENCH_SCALE_H
#define PLUGFS_BENCH_SCALE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Runs the scale section at each plugin count of sizes ("10,1000,100000")
 * with the plugfs binary at plugfs, in the directory tmpdir (tmpfs, emptied
 * by the caller); prints the table.  0, 1 on an error, 2 on bad sizes. */
int bench_scale(const char *plugfs, const char *tmpdir, const char *sizes);

/* Durable registrations/s at 1 and 16 clients with the state file in
 * diskdir (synchronous = full), against a raw fdatasync loop there, with
 * targets (bench_durable.c); config and socket in tmpdir.  quick: small
 * counts (a check that it runs).  0, or 1 on an error. */
int bench_durable(const char *plugfs, const char *tmpdir, const char *diskdir, bool quick);

/* A daemon the benchmarks start: `plugfs -c cfg mount`, its stderr read
 * until the ready line (copied into ready), the time from fork to it in
 * *ms; stopped with SIGTERM, its log drained.  0 or -1. */
struct bench_daemon {
	pid_t pid;
	FILE *log;	 /* its stderr */
	pthread_t drain; /* reads log once the daemon is ready */
	bool draining;
};
int bench_daemon_start(const char *plugfs, const char *cfg, struct bench_daemon *d, double *ms,
		       char *ready, size_t readylen);
int bench_daemon_stop(struct bench_daemon *d);
/* The CPU time (user + system) the daemon used so far, in ms; -1. */
double bench_daemon_cpu_ms(const struct bench_daemon *d);

#endif
