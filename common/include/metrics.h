/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus text exposition format (version 0.0.4), built in memory:
 * `plugfs metrics' answers with it and writes it for node_exporter's
 * textfile collector.  A family is announced once (# HELP, # TYPE), then
 * its samples follow.  Label values are escaped (\\, \", \n); names are
 * the caller's constants.  Out of memory is sticky: m->failed is set and
 * later calls do nothing, so a caller checks once at the end.
 */
#ifndef PLUGFS_METRICS_H
#define PLUGFS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct metrics {
	char *buf; /* NUL-terminated, len bytes; owned */
	size_t len, cap;
	bool failed; /* out of memory at some point: buf is incomplete */
};

/* A zeroed struct metrics is empty; metrics_free frees buf and zeroes it. */
void metrics_free(struct metrics *m);

/* "# HELP name help" and "# TYPE name type" (type: counter, gauge,
 * histogram). */
void metrics_family(struct metrics *m, const char *name, const char *type, const char *help);

/* One sample: name{k1="v1",...} value.  labels: NULL, or pairs of key and
 * value strings ended by a NULL key. */
void metrics_sample(struct metrics *m, const char *name, const char *const *labels, double value);

/* The samples of a histogram: name_bucket{le="b"} for each of the n upper
 * bounds (increasing, seconds or whatever the unit) and le="+Inf", then
 * name_sum and name_count.  counts has n + 1 entries, per bucket (not
 * cumulative; the last: above every bound); it is accumulated here. */
void metrics_histogram(struct metrics *m, const char *name, const double *bounds, size_t n,
		       const uint64_t *counts, double sum);

#endif
