/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_grow_appends),
	    cmocka_unit_test(test_grow_noop),
	    cmocka_unit_test(test_grow_overflow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
