/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>

#include "clock.h"

static uint64_t ns_of(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

/* plugfs_mono_ns reads CLOCK_MONOTONIC: it falls between two readings of
 * that clock (the wall clock, CLOCK_REALTIME, is decades away from it). */
static void test_ns_is_monotonic_clock(void **state)
{
	struct timespec a, b;
	uint64_t t;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &a);
	t = plugfs_mono_ns();
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(t >= ns_of(&a));
	assert_true(t <= ns_of(&b));
}

/* plugfs_mono_ms is the same clock in whole milliseconds, rounded down. */
static void test_ms_is_monotonic_clock(void **state)
{
	struct timespec a, b;
	int64_t t;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &a);
	t = plugfs_mono_ms();
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(t >= (int64_t)(ns_of(&a) / 1000000));
	assert_true(t <= (int64_t)(ns_of(&b) / 1000000));
}

/* Readings never go back, and the two units agree. */
static void test_never_back(void **state)
{
	uint64_t ns = plugfs_mono_ns(), ns2;
	int64_t ms = plugfs_mono_ms(), ms2;

	(void)state;
	for (int i = 0; i < 10000; i++) {
		ns2 = plugfs_mono_ns();
		ms2 = plugfs_mono_ms();
		assert_true(ns2 >= ns);
		assert_true(ms2 >= ms);
		assert_true((int64_t)(ns2 / 1000000) <= ms2);
		ns = ns2;
		ms = ms2;
	}
}

/* A length in ms as a timespec, whole seconds and the rest. */
static void test_timespec_ms(void **state)
{
	struct timespec t;

	(void)state;
	t = plugfs_timespec_ms(0);
	assert_int_equal(t.tv_sec, 0);
	assert_int_equal(t.tv_nsec, 0);
	t = plugfs_timespec_ms(999);
	assert_int_equal(t.tv_sec, 0);
	assert_int_equal(t.tv_nsec, 999000000L);
	t = plugfs_timespec_ms(1000);
	assert_int_equal(t.tv_sec, 1);
	assert_int_equal(t.tv_nsec, 0);
	t = plugfs_timespec_ms(86400123);
	assert_int_equal(t.tv_sec, 86400);
	assert_int_equal(t.tv_nsec, 123000000L);
}

/* A deadline is now plus the timeout; a negative timeout is none (-1). */
static void test_deadline_ms(void **state)
{
	int64_t a, d, b;

	(void)state;
	a = plugfs_mono_ms();
	d = plugfs_deadline_ms(2500);
	b = plugfs_mono_ms();
	assert_true(d >= a + 2500);
	assert_true(d <= b + 2500);
	assert_int_equal(plugfs_deadline_ms(-1), -1);
	assert_int_equal(plugfs_deadline_ms(-1000), -1);
	a = plugfs_mono_ms();
	d = plugfs_deadline_ms(0);
	assert_true(d >= a);
}

/* poll()'s timeout: none for no deadline, 0 for one passed, the rest
 * else, at most INT_MAX. */
static void test_poll_ms(void **state)
{
	int64_t now;
	int w;

	(void)state;
	assert_int_equal(plugfs_poll_ms(-1), -1);
	assert_int_equal(plugfs_poll_ms(0), 0);
	now = plugfs_mono_ms();
	assert_int_equal(plugfs_poll_ms(now - 5000), 0);
	w = plugfs_poll_ms(now + 60000);
	assert_true(w > 59000);
	assert_true(w <= 60000);
	assert_int_equal(plugfs_poll_ms(now + (int64_t)INT_MAX * 4), INT_MAX);
}

/* A condition variable of plugfs_cond_init_mono times out on the
 * monotonic clock: not before the deadline (on the wall clock's, a
 * deadline of plugfs_mono_ms lies decades back and the wait would return
 * at once), and with 0 when signalled. */
static void test_cond_until(void **state)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c;
	int64_t until;
	int rc;

	(void)state;
	plugfs_cond_init_mono(&c);
	pthread_mutex_lock(&mu);
	until = plugfs_mono_ms() + 50;
	while ((rc = plugfs_cond_wait_until(&c, &mu, until)) == 0)
		;
	assert_int_equal(rc, ETIMEDOUT);
	assert_true(plugfs_mono_ms() >= until);
	/* A deadline passed: ETIMEDOUT at once, the mutex held again. */
	assert_int_equal(plugfs_cond_wait_until(&c, &mu, plugfs_mono_ms() - 1000), ETIMEDOUT);
	assert_int_equal(pthread_mutex_trylock(&mu), EBUSY);
	pthread_mutex_unlock(&mu);
	pthread_cond_destroy(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ns_is_monotonic_clock),
	    cmocka_unit_test(test_ms_is_monotonic_clock),
	    cmocka_unit_test(test_never_back),
	    cmocka_unit_test(test_timespec_ms),
	    cmocka_unit_test(test_deadline_ms),
	    cmocka_unit_test(test_poll_ms),
	    cmocka_unit_test(test_cond_until),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
