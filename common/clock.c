/* SPDX-License-Identifier: MIT */
#include "clock.h"

#include <limits.h>

uint64_t plugfs_mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int64_t plugfs_mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void plugfs_cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
}

struct timespec plugfs_timespec_ms(int64_t ms)
{
	return (struct timespec){.tv_sec = (time_t)(ms / 1000),
				 .tv_nsec = (long)(ms % 1000) * 1000000L};
}

int plugfs_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t until_ms)
{
	struct timespec at = plugfs_timespec_ms(until_ms);

	return pthread_cond_timedwait(c, mu, &at);
}

int64_t plugfs_deadline_ms(int64_t timeout_ms)
{
	return timeout_ms < 0 ? -1 : plugfs_mono_ms() + timeout_ms;
}

int plugfs_poll_ms(int64_t until_ms)
{
	int64_t left;

	if (until_ms < 0)
		return -1;
	left = until_ms - plugfs_mono_ms();
	return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}
