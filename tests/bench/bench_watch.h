/* SPDX-License-Identifier: MIT */
/* plugfs-bench --watch (bench_watch.c). */
#ifndef PLUGFS_BENCH_WATCH_H
#define PLUGFS_BENCH_WATCH_H

struct bench_watch_opts {
	double interval;    /* seconds between rounds in the failover part (30) */
	int kills;	    /* kills with the watches (200) */
	int baseline_kills; /* kills with the rounds alone (3) */
	long n;		    /* missing sockets (100,000) */
	long live;	    /* listening sockets (1,000) */
	int window;	    /* rounds (1 s apart) each CPU and RSS window lasts (10) */
};

/* The watches against the rounds alone with the plugfs binary at plugfs,
 * in tmpdir (tmpfs, emptied by the caller); prints the tables.  0 or 1. */
int bench_watch(const char *plugfs, const char *tmpdir, const struct bench_watch_opts *o);

#endif
