/* SPDX-License-Identifier: MIT */
/*
 * The program's one reading of CLOCK_MONOTONIC: every timeout, interval,
 * idle time and measurement takes its time from here (never from the wall
 * clock, which a person or NTP may move).  The values count from an
 * unspecified point (the boot) and never go back.
 */
#ifndef PLUGFS_CLOCK_H
#define PLUGFS_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds.  Any thread; no memory. */
uint64_t plugfs_mono_ns(void);

/* CLOCK_MONOTONIC in whole milliseconds (rounded down), signed so that a
 * deadline minus now may go below 0.  Any thread; no memory. */
int64_t plugfs_mono_ms(void);

#endif
