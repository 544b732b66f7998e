/* SPDX-License-Identifier: MIT */
/* plugfs-bench's cached path (plugfs_bench.c), shared with the mount
 * options' costs (bench_options.c). */
#ifndef PLUGFS_BENCH_CACHED_H
#define PLUGFS_BENCH_CACHED_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench_mount.h"

#define ROUNDS 200

struct bench {
	long iterations, connects, switches;
	char tmp[256]; /* state and sockets (tmpfs) */
	char mnt[512];
	char fuse_link[PATH_MAX]; /* <mnt>/plugins/csi-node/bench/csi.sock */
	char shm_link[PATH_MAX];  /* same shape on tmpfs */
	char sock[PATH_MAX];	  /* the listening socket */
	int listen_fd;
	struct registry *reg;
	struct bench_mount m; /* the mount (bench_mount.h) */
	pthread_t server;
	bool stop; /* atomic */
	/* switch phase */
	long acked;	  /* atomic: last acknowledged switch */
	long seen;	  /* atomic: newest index a reader saw */
	uint64_t seen_ns; /* atomic: when it was first seen */
	unsigned long long reads, stale;
	double register_alone_us; /* registry_register without a mount */
	/* The mount's options (bench_options.c measures variants). */
	bool no_default_permissions, no_cache_symlinks, no_dir_cache;
	double cache_timeout; /* 60 unless a variant says otherwise */
};

enum op { OP_READLINK, OP_STAT, OP_CONNECT };
extern const char *const bench_op_names[];

/* Mounts plugfs in-process with b's options, the socket and the tmpfs
 * twin of the path; exits on an error. */
void bench_setup(struct bench *b);
void bench_teardown(struct bench *b);
/* ROUNDS interleaved rounds of n / ROUNDS operations on each path; ns/op of
 * the best round of each. */
void bench_measure(struct bench *b, enum op op, long n, double *shm_ns, double *fuse_ns);
/* FUSE requests per listing of the plugin directory, after warm-up. */
double bench_requests_per_listing(struct bench *b, int n);
/* What default_permissions and each cache option cost: the cached path
 * measured again with each turned off, side by side (bench_options.c). */
void bench_options(const struct bench *base);

#endif
