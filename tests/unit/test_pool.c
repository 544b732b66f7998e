/* SPDX-License-Identifier: MIT */
/* The object pool (common/pool.c): zeroed objects, reuse of freed ones,
 * many objects over many slabs, the size rounding, destroy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "pool.h"

static void test_zeroed_and_reused(void **state)
{
	struct pool p;
	unsigned char *a, *b, *c;

	(void)state;
	pool_init(&p, 52);
	assert_int_equal(p.size, 56);
	a = pool_alloc(&p);
	b = pool_alloc(&p);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(b - a == 56 || a - b == 56); /* packed: no header between */
	for (size_t i = 0; i < 52; i++)
		assert_int_equal(a[i], 0);
	memset(a, 0xab, 52);
	assert_int_equal(p.n_live, 2);
	pool_free(&p, a);
	pool_free(&p, NULL);
	assert_int_equal(p.n_live, 1);
	c = pool_alloc(&p); /* the freed one again, zeroed */
	assert_ptr_equal(c, a);
	for (size_t i = 0; i < 52; i++)
		assert_int_equal(c[i], 0);
	pool_destroy(&p);
	assert_null(p.slabs);
	pool_init(&p, 1);
	assert_int_equal(p.size, sizeof(void *));
	pool_destroy(&p);
}

#define MANY 20000

static void test_many_over_slabs(void **state)
{
	struct pool p;
	uint64_t **v = calloc(MANY, sizeof(*v));

	(void)state;
	assert_non_null(v);
	pool_init(&p, 104);
	for (size_t i = 0; i < MANY; i++) {
		v[i] = pool_alloc(&p);
		assert_non_null(v[i]);
		v[i][0] = i;
		v[i][12] = ~(uint64_t)i; /* the last word of 104 bytes */
	}
	/* Every object intact (none overlaps another). */
	for (size_t i = 0; i < MANY; i++) {
		assert_int_equal(v[i][0], i);
		assert_int_equal(v[i][12], ~(uint64_t)i);
	}
	/* Free every other one; as many again fit without a new slab. */
	for (size_t i = 0; i < MANY; i += 2)
		pool_free(&p, v[i]);
	assert_int_equal(p.n_live, MANY / 2);
	{
		void *slabs = p.slabs;

		for (size_t i = 0; i < MANY; i += 2)
			assert_non_null(v[i] = pool_alloc(&p));
		assert_ptr_equal(p.slabs, slabs);
	}
	for (size_t i = 1; i < MANY; i += 2)
		assert_int_equal(v[i][0], i);
	pool_destroy(&p);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zeroed_and_reused),
	    cmocka_unit_test(test_many_over_slabs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
