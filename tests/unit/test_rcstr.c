/* SPDX-License-Identifier: MIT */
/* Reference-counted texts (common/rcstr.c): counts, blocks of several
 * strings, and the last reference freeing the block from either of two
 * threads (AddressSanitizer sees a leak or a double free). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "rcstr.h"

static void test_new_ref_unref(void **state)
{
	char *s = rcstr_new("/run/a0/csi.sock");

	(void)state;
	assert_non_null(s);
	assert_string_equal(s, "/run/a0/csi.sock");
	assert_int_equal(rcstr_refs(s), 1);
	assert_ptr_equal(rcstr_ref(s), s);
	assert_int_equal(rcstr_refs(s), 2);
	rcstr_unref(s);
	assert_int_equal(rcstr_refs(s), 1);
	assert_string_equal(s, "/run/a0/csi.sock");
	rcstr_unref(s);
	rcstr_unref(NULL); /* nothing */
}

static void test_block_of_strings(void **state)
{
	/* "sock\0alloc\0": the second string lives as long as the block. */
	char *b = rcstr_alloc(11), *alloc;

	(void)state;
	assert_non_null(b);
	memcpy(b, "sock\0alloc", 11);
	alloc = b + 5;
	rcstr_ref(b);
	rcstr_unref(b);
	assert_string_equal(alloc, "alloc");
	assert_string_equal(b, "sock");
	rcstr_unref(b);
	assert_null(rcstr_alloc(SIZE_MAX));
}

#define ROUNDS 100000

static void *churn(void *arg)
{
	char *s = arg;

	for (int i = 0; i < ROUNDS; i++)
		rcstr_unref(rcstr_ref(s));
	rcstr_unref(s); /* this thread's own reference */
	return NULL;
}

static void test_two_threads(void **state)
{
	char *s = rcstr_new("shared");
	pthread_t t;

	(void)state;
	assert_non_null(s);
	rcstr_ref(s); /* the thread's */
	assert_int_equal(pthread_create(&t, NULL, churn, s), 0);
	for (int i = 0; i < ROUNDS; i++)
		rcstr_unref(rcstr_ref(s));
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(rcstr_refs(s), 1);
	rcstr_unref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_new_ref_unref),
	    cmocka_unit_test(test_block_of_strings),
	    cmocka_unit_test(test_two_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
