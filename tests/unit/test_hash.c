/* SPDX-License-Identifier: MIT */
/* The hash table (common/hash.c): the intrusive table and the string map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
	assert_int_equal(hash_count(&h), 2);
	assert_ptr_equal(hash_get(&h, "a"), &v[2]);
	assert_ptr_equal(hash_del(&h, "a"), &v[2]);
	assert_null(hash_get(&h, "a"));
	assert_ptr_equal(hash_get(&h, "b"), &v[1]);
	assert_int_equal(hash_count(&h), 1);
	hash_free(&h);
	assert_int_equal(hash_count(&h), 0);
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
	assert_int_equal(hash_count(&h), N);
	assert_true(h.t.n_buckets >= N); /* it grew */
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

struct item {
	struct htab_node node;
	int v;
};

/* Integer keys: each is its own key, sequential ones spread. */
static void test_htab_integer_keys(void **state)
{
	enum { N = 5000 };
	struct item *items = calloc(N, sizeof(*items));
	struct htab t;
	struct htab_node *e;

	(void)state;
	assert_non_null(items);
	htab_init(&t);
	assert_null(htab_find(&t, 1, NULL));
	for (int i = 0; i < N; i++) {
		items[i].v = i;
		assert_int_equal(htab_insert(&t, &items[i].node, (uint64_t)i * 8 + 1), 0);
	}
	assert_int_equal(t.n, N);
	assert_true(t.n <= t.n_buckets);
	for (int i = 0; i < N; i++) {
		e = htab_find(&t, (uint64_t)i * 8 + 1, NULL);
		assert_non_null(e);
		assert_int_equal(htab_entry(e, struct item, node)->v, i);
		assert_null(htab_find(&t, (uint64_t)i * 8 + 1, e));
		assert_null(htab_find(&t, (uint64_t)i * 8 + 2, NULL));
	}
	for (int i = 0; i < N; i += 2)
		htab_remove(&t, &items[i].node);
	assert_int_equal(t.n, N / 2);
	for (int i = 0; i < N; i++)
		assert_int_equal(htab_find(&t, (uint64_t)i * 8 + 1, NULL) != NULL, i % 2);
	htab_free(&t);
	assert_int_equal(t.n, 0);
	assert_null(htab_find(&t, 9, NULL));
	free(items);
}

/* Inode numbers (id * 8 + tag, five tags per id, 100,000 ids) fill the
 * buckets about as evenly as random keys would (1 - e^-load of them used):
 * no long chains for keys in steps. */
static void test_htab_keys_in_steps_spread(void **state)
{
	enum { IDS = 100000, TAGS = 5 };
	struct item *items = calloc((size_t)IDS * TAGS, sizeof(*items));
	struct htab t;
	size_t used = 0, longest = 0;

	(void)state;
	assert_non_null(items);
	htab_init(&t);
	for (size_t i = 0; i < (size_t)IDS * TAGS; i++)
		assert_int_equal(
		    htab_insert(&t, &items[i].node, (uint64_t)(i / TAGS + 3) * 8 + i % TAGS), 0);
	for (size_t b = 0; b < t.n_buckets; b++) {
		size_t c = 0;

		for (struct htab_node *e = t.buckets[b]; e; e = e->next)
			c++;
		used += c > 0;
		longest = c > longest ? c : longest;
	}
	/* Load 0.95 here: random keys use 61% of the buckets (the single
	 * multiply used before reached about a quarter). */
	assert_true(used * 100 >= t.n_buckets * 55);
	assert_true(longest <= 12);
	htab_free(&t);
	free(items);
}

/* htab_reserve sizes the table once: inserting that many never grows it. */
static void test_htab_reserve(void **state)
{
	enum { N = 1000 };
	struct item *items = calloc(N, sizeof(*items));
	struct htab t;
	size_t nb;

	(void)state;
	assert_non_null(items);
	htab_init(&t);
	assert_int_equal(htab_reserve(&t, N), 0);
	nb = t.n_buckets;
	assert_true(N <= nb);
	for (int i = 0; i < N; i++)
		assert_int_equal(htab_insert(&t, &items[i].node, (uint64_t)i), 0);
	assert_int_equal(t.n_buckets, nb);
	/* Less than it has: nothing changes; more: it grows, nodes kept. */
	assert_int_equal(htab_reserve(&t, 10), 0);
	assert_int_equal(t.n_buckets, nb);
	assert_int_equal(htab_reserve(&t, 4 * N), 0);
	assert_true(t.n_buckets > nb);
	for (int i = 0; i < N; i++)
		assert_ptr_equal(htab_find(&t, (uint64_t)i, NULL), &items[i].node);
	htab_free(&t);
	free(items);
}

/* Nodes under one key (two strings with the same hash) are all found. */
static void test_htab_shared_key(void **state)
{
	struct item a = {.v = 1}, b = {.v = 2};
	struct htab t;
	struct htab_node *e;
	int sum = 0;

	(void)state;
	htab_init(&t);
	assert_int_equal(htab_insert(&t, &a.node, 42), 0);
	assert_int_equal(htab_insert(&t, &b.node, 42), 0);
	for (e = htab_find(&t, 42, NULL); e; e = htab_find(&t, 42, e))
		sum += htab_entry(e, struct item, node)->v;
	assert_int_equal(sum, 3);
	htab_remove(&t, &a.node);
	e = htab_find(&t, 42, NULL);
	assert_ptr_equal(e, &b.node);
	assert_null(htab_find(&t, 42, e));
	htab_free(&t);
}

/* The iteration lets the caller free each node once it has the next. */
static void test_htab_free_while_iterating(void **state)
{
	struct htab t;
	struct htab_node *e, *next;
	size_t pos = 0, n = 0;

	(void)state;
	htab_init(&t);
	for (int i = 0; i < 100; i++) {
		struct item *it = calloc(1, sizeof(*it));

		assert_non_null(it);
		assert_int_equal(htab_insert(&t, &it->node, (uint64_t)i), 0);
	}
	for (e = htab_next(&t, &pos, NULL); e; e = next) {
		next = htab_next(&t, &pos, e);
		free(htab_entry(e, struct item, node));
		n++;
	}
	assert_int_equal(n, 100);
	htab_free(&t);
}

static void test_hash_string(void **state)
{
	(void)state;
	/* FNV-1a test vectors. */
	assert_true(htab_hash_string("") == 0xcbf29ce484222325ULL);
	assert_true(htab_hash_string("a") == 0xaf63dc4c8601ec8cULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_put_get_del),
	    cmocka_unit_test(test_many_keys),
	    cmocka_unit_test(test_htab_integer_keys),
	    cmocka_unit_test(test_htab_shared_key),
	    cmocka_unit_test(test_htab_free_while_iterating),
	    cmocka_unit_test(test_hash_string),
	    cmocka_unit_test(test_htab_keys_in_steps_spread),
	    cmocka_unit_test(test_htab_reserve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
