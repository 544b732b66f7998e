/* SPDX-License-Identifier: MIT */
/*
 * plugfs-bench: what default_permissions and each cache option cost.  The
 * cached path (readlink and stat of csi.sock against the tmpfs twin, the
 * daemon's requests per 1,000 of them, and per listing of the plugin
 * directory) measured again with each turned off, one at a time, side by
 * side with the options plugfs mounts with, in the same run.
 *
 * What plugfs keeps, and why, for a read-only tree whose every change is
 * pushed to the kernel before it is acknowledged:
 *   - default_permissions: the kernel checks the mode bits from the
 *     attributes it caches; without it nothing checks them (the daemon
 *     implements no access()), and it costs nothing measurable;
 *   - cache_symlinks: a readlink is answered from the kernel's page cache;
 *     without it every readlink is a request;
 *   - the listing cache: a warm listing is no request;
 *   - cache_timeout 60 s: entries and attributes cached; at 0 every path
 *     walk asks the daemon again.
 */
#include <stdio.h>

#include "bench_cached.h"
#include "fs.h"

struct variant {
	const char *what;
	bool no_default_permissions, no_cache_symlinks, no_dir_cache;
	double cache_timeout;
};

void bench_options(const struct bench *base)
{
	static const struct variant variants[] = {
	    {"as plugfs mounts", false, false, false, 60},
	    {"without default_permissions", true, false, false, 60},
	    {"without cache_symlinks", false, true, false, 60},
	    {"without the listing cache", false, false, true, 60},
	    {"cache_timeout = 0", false, false, false, 0},
	};
	long n = base->iterations / 5 < 200000 ? base->iterations / 5 : 200000;

	if (n < ROUNDS)
		n = ROUNDS;
	printf("\nwhat each mount option costs: %ld readlink and %ld stat of csi.sock per "
	       "variant, against tmpfs\n",
	       n, n);
	printf("%-30s %10s %10s %18s %14s\n", "variant", "readlink", "stat", "requests/1000 ops",
	       "per listing");
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		const struct variant *v = &variants[i];
		struct bench b = *base;
		double shm[2], fuse[2], listing;
		unsigned long long r0, r1;

		b.no_default_permissions = v->no_default_permissions;
		b.no_cache_symlinks = v->no_cache_symlinks;
		b.no_dir_cache = v->no_dir_cache;
		b.cache_timeout = v->cache_timeout;
		b.switches = 10; /* bench_setup's registration baseline */
		bench_setup(&b);
		r0 = fs_requests_served(b.m.fs);
		bench_measure(&b, OP_READLINK, n, &shm[0], &fuse[0]);
		bench_measure(&b, OP_STAT, n, &shm[1], &fuse[1]);
		r1 = fs_requests_served(b.m.fs);
		listing = bench_requests_per_listing(&b, 200);
		/* Per operation through the mount (its short warm-up included). */
		printf("%-30s %9.2fx %9.2fx %18.1f %14.2f\n", v->what, fuse[0] / shm[0],
		       fuse[1] / shm[1], (double)(r1 - r0) * 1000.0 / (2.0 * (double)n), listing);
		fflush(stdout);
		bench_teardown(&b);
	}
}
