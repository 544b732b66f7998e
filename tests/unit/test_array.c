/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

/* Appending 1000 elements: capacity doubles from the first one, contents
 * survive each realloc. */
static void test_grow_appends(void **state)
{
	int *v = NULL;
	size_t n = 0, cap = 0;

	(void)state;
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(PLUGFS_GROW(v, cap, n, 4), 0);
		assert_true(cap > n);
		v[n++] = i;
	}
	assert_int_equal(cap, 1024);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(v[i], i);
	free(v);
}

/* Room already there: nothing moves. */
static void test_grow_noop(void **state)
{
	int *v = calloc(8, sizeof(*v)), *before = v;
	size_t cap = 8;

	(void)state;
	assert_int_equal(PLUGFS_GROW(v, cap, 3, 4), 0);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 8);
	free(v);
}

/* A size that would overflow is refused and changes nothing. */
static void test_grow_overflow(void **state)
{
	char *v = malloc(1);
	size_t cap = SIZE_MAX / 2 + 1;

	(void)state;
	assert_int_equal(plugfs_grow((void **)&v, &cap, cap, 4, 1), -ENOMEM);
	assert_int_equal(cap, SIZE_MAX / 2 + 1);
	free(v);
}

/* Room for need elements: doubling from first until it holds them, the
 * contents kept. */
static void test_reserve_doubles(void **state)
{
	char *b = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(PLUGFS_RESERVE(b, cap, 10, 4096), 0);
	assert_int_equal(cap, 4096);
	memset(b, 'x', 10);
	assert_int_equal(PLUGFS_RESERVE(b, cap, 4097, 4096), 0);
	assert_int_equal(cap, 8192);
	assert_int_equal(PLUGFS_RESERVE(b, cap, 40000, 4096), 0);
	assert_int_equal(cap, 65536);
	for (int i = 0; i < 10; i++)
		assert_int_equal(b[i], 'x');
	free(b);
}

/* Elements of any size, and a first of 0 starts at 1. */
static void test_reserve_elems(void **state)
{
	long *v = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(PLUGFS_RESERVE(v, cap, 1, 0), 0);
	assert_int_equal(cap, 1);
	v[0] = 7;
	assert_int_equal(PLUGFS_RESERVE(v, cap, 3, 0), 0);
	assert_int_equal(cap, 4);
	v[3] = 9;
	assert_int_equal(v[0], 7);
	free(v);
}

/* Enough room already: nothing moves, also for need 0. */
static void test_reserve_noop(void **state)
{
	char *b = malloc(64), *before = b;
	size_t cap = 64;

	(void)state;
	assert_int_equal(PLUGFS_RESERVE(b, cap, 64, 4096), 0);
	assert_int_equal(PLUGFS_RESERVE(b, cap, 0, 4096), 0);
	assert_ptr_equal(b, before);
	assert_int_equal(cap, 64);
	free(b);
}

/* A capacity or a size in bytes that would overflow is refused and changes
 * nothing. */
static void test_reserve_overflow(void **state)
{
	char *b = malloc(1), *before = b;
	uint64_t *v = NULL;
	size_t cap = SIZE_MAX / 2 + 1, vcap = 0;

	(void)state;
	assert_int_equal(plugfs_reserve((void **)&b, &cap, cap + 1, 1, 1), -ENOMEM);
	assert_int_equal(cap, SIZE_MAX / 2 + 1);
	assert_ptr_equal(b, before);
	assert_int_equal(PLUGFS_RESERVE(v, vcap, SIZE_MAX / 4, 1), -ENOMEM);
	assert_null(v);
	assert_int_equal(vcap, 0);
	free(b);
}

/* An array kept at exactly its n elements: each call makes room for one
 * more, the contents kept; an overflowing size is refused, the array as
 * it was. */
static void test_grow_exact(void **state)
{
	long *v = NULL, *before;

	(void)state;
	for (size_t n = 0; n < 100; n++) {
		assert_int_equal(PLUGFS_GROW_EXACT(v, n), 0);
		v[n] = (long)n * 3;
	}
	for (size_t n = 0; n < 100; n++)
		assert_int_equal(v[n], (long)n * 3);
	before = v;
	assert_int_equal(PLUGFS_GROW_EXACT(v, SIZE_MAX / sizeof(*v)), -ENOMEM);
	assert_ptr_equal(v, before);
	assert_int_equal(v[99], 297);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grow_appends),     cmocka_unit_test(test_grow_noop),
	    cmocka_unit_test(test_grow_overflow),    cmocka_unit_test(test_reserve_doubles),
	    cmocka_unit_test(test_reserve_elems),    cmocka_unit_test(test_reserve_noop),
	    cmocka_unit_test(test_reserve_overflow), cmocka_unit_test(test_grow_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
