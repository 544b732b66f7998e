/* SPDX-License-Identifier: MIT */
/* plugfs-bench --discover (bench_discover.c). */
#ifndef PLUGFS_BENCH_DISCOVER_H
#define PLUGFS_BENCH_DISCOVER_H

struct bench_discover_opts {
	long sockets; /* created one after the other (100) */
	long burst;   /* created at once (1,000) */
};

/* Hook-free discovery against `plugfs register' with the plugfs binary at
 * plugfs, in tmpdir (tmpfs, emptied by the caller), the plugins served by
 * python running script (csi_plugin.py); prints the table.  0 or 1. */
int bench_discover(const char *plugfs, const char *tmpdir, const char *python, const char *script,
		   const struct bench_discover_opts *o);

#endif
