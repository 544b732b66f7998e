/* SPDX-License-Identifier: MIT */
/*
 * The program's one reading of CLOCK_MONOTONIC: every timeout, interval,
 * idle time and measurement takes its time from here (never from the wall
 * clock, which a person or NTP may move).  The values count from an
 * unspecified point (the boot) and never go back.
 */
#ifndef PLUGFS_CLOCK_H
#define PLUGFS_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds.  Any thread; no memory. */
uint64_t plugfs_mono_ns(void);

/* CLOCK_MONOTONIC in whole milliseconds (rounded down), signed so that a
 * deadline minus now may go below 0.  Any thread; no memory. */
int64_t plugfs_mono_ms(void);

/*
 * Deadlines are plugfs_mono_ms values: now plus a timeout.  A condition
 * variable that waits for one is made by plugfs_cond_init_mono (its
 * timeouts on CLOCK_MONOTONIC, not the wall clock) and waited on with
 * plugfs_cond_wait_until.
 */

/* The deadline timeout_ms from now, or -1 (none) when timeout_ms < 0. */
int64_t plugfs_deadline_ms(int64_t timeout_ms);

/* poll()'s timeout for the deadline until_ms: -1 (no timeout) when
 * until_ms < 0, 0 once it passed, else the ms left (at most INT_MAX). */
int plugfs_poll_ms(int64_t until_ms);

/* pthread_cond_init(c) with CLOCK_MONOTONIC for its timeouts; destroy it
 * with pthread_cond_destroy.  Any thread. */
void plugfs_cond_init_mono(pthread_cond_t *c);

/* pthread_cond_timedwait on c (made by plugfs_cond_init_mono, mu held by
 * the caller) until the deadline until_ms: 0 when woken (perhaps
 * spuriously: look again), ETIMEDOUT once the deadline passed. */
int plugfs_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t until_ms);

/* ms milliseconds (ms >= 0) as a timespec: a length of time (sigtimedwait,
 * nanosleep) or, for a deadline, a time on CLOCK_MONOTONIC. */
struct timespec plugfs_timespec_ms(int64_t ms);

#endif
