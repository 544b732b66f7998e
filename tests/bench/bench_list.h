/* SPDX-License-Identifier: MIT */
/* plugfs-bench --scale: the rows of `list' and of status under a list
 * (bench_list.c). */
#ifndef PLUGFS_BENCH_LIST_H
#define PLUGFS_BENCH_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Targets: the daemon's peak RSS during a full `list --json' at most 1.2x
 * its RSS at rest; status p99 while another client loops full lists at
 * most STATUS_BUSY_TARGET_MS. */
#define LIST_RSS_TARGET_RATIO 1.2
#define STATUS_BUSY_TARGET_MS 50.0

struct list_figures {
	double list_ms;		 /* plugfs list --json > /dev/null, best of a few */
	long rss_rest_kib;	 /* the daemon's VmRSS before */
	long rss_peak_kib;	 /* its peak during the lists */
	bool peak_from_hwm;	 /* VmHWM could be reset (else sampled only) */
	double status_idle_p50, status_idle_p99, status_idle_max;
	/* while another client loops full lists, over at least 3 of them */
	double status_busy_p50, status_busy_p99, status_busy_max;
	long lists_meanwhile;
};

/* Measures, with the daemon pid running with config cfg and control socket
 * socket, by the plugfs binary at plugfs.  0 or -1 (a message printed). */
int bench_list(const char *plugfs, const char *cfg, const char *socket, pid_t daemon,
	       struct list_figures *out);

/* Prints the rows of the k sizes n[] (plugins) of the --scale table, each
 * with its target and met or missed. */
void bench_list_print(const long *n, const struct list_figures *f, size_t k);

#endif
