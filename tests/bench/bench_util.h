/* SPDX-License-Identifier: MIT */
/* What the sections of plugfs-bench share (bench_util.c). */
#ifndef PLUGFS_BENCH_UTIL_H
#define PLUGFS_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A connection to the control socket at path, or -1. */
int bench_ctl_connect(const char *path);
/* Sends line (with its newline) on fd and reads one answer line into ans
 * (NUL-terminated, at most anslen - 1 bytes).  0, or -1. */
int bench_call(int fd, const char *line, char *ans, size_t anslen);
/* Runs argv[0] with argv, its stdout to /dev/null, and waits: 0 when it
 * exited 0, else -1. */
int bench_run_quiet(char *const argv[]);
/* A table's verdict: "-" when not judged, "met" or "MISSED". */
const char *bench_verdict(bool judged, bool met);

#endif
