/* SPDX-License-Identifier: MIT */
/* plugfs-bench --scale (bench_scale.c). */
#ifndef PLUGFS_BENCH_SCALE_H
#define PLUGFS_BENCH_SCALE_H

/* Runs the scale section at each plugin count of sizes ("10,1000,100000")
 * with the plugfs binary at plugfs, in the directory tmpdir (tmpfs, emptied
 * by the caller); prints the table.  0, 1 on an error, 2 on bad sizes. */
int bench_scale(const char *plugfs, const char *tmpdir, const char *sizes);

#endif
