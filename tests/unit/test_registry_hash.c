/* SPDX-License-Identifier: MIT */
/* The registry's private chained hash table (registry/hash.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "hash.h"

static void test_put_get_del(void **state)
{
	struct hash h;
	int v[3] = {1, 2, 3};

	(void)state;
	hash_init(&h);
	assert_null(hash_get(&h, "a"));
	assert_null(hash_del(&h, "a"));
	assert_int_equal(hash_put(&h, "a", &v[0]), 0);
	assert_int_equal(hash_put(&h, "b", &v[1]), 0);
	assert_ptr_equal(hash_get(&h, "a"), &v[0]);
	assert_int_equal(hash_put(&h, "a", &v[2]), 0); /* replace */
	assert_int_equal(h.n, 2);
	assert_ptr_equal(hash_get(&h, "a"), &v[2]);
	assert_ptr_equal(hash_del(&h, "a"), &v[2]);
	assert_null(hash_get(&h, "a"));
	assert_ptr_equal(hash_get(&h, "b"), &v[1]);
	assert_int_equal(h.n, 1);
	hash_free(&h);
	assert_int_equal(h.n, 0);
}

static void test_many_keys(void **state)
{
	enum { N = 20000 };
	static int vals[N];
	struct hash h;
	struct hash_entry *e = NULL;
	size_t pos = 0, seen = 0;
	char key[32];

	(void)state;
	hash_init(&h);
	for (int i = 0; i < N; i++) {
		vals[i] = i;
		snprintf(key, sizeof(key), "csi-node/plugin-%d", i);
		assert_int_equal(hash_put(&h, key, &vals[i]), 0);
	}
	assert_int_equal(h.n, N);
	assert_true(h.n_buckets >= N * 4 / 3); /* it grew */
	for (int i = 0; i < N; i += 2) {
		snprintf(key, sizeof(key), "csi-node/plugin-%d", i);
		assert_ptr_equal(hash_del(&h, key), &vals[i]);
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "csi-node/plugin-%d", i);
		if (i % 2)
			assert_ptr_equal(hash_get(&h, key), &vals[i]);
		else
			assert_null(hash_get(&h, key));
	}
	while ((e = hash_next(&h, &pos, e))) {
		assert_int_equal(*(int *)e->value % 2, 1);
		seen++;
	}
	assert_int_equal(seen, N / 2);
	hash_free(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_get_del),
	    cmocka_unit_test(test_many_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
