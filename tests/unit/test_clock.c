/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ns_is_monotonic_clock),
	    cmocka_unit_test(test_ms_is_monotonic_clock),
	    cmocka_unit_test(test_never_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
