/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "strutil.h"

static void test_join(void **state)
{
	static const char *const abc[] = {"a", "bb", "ccc"};
	char buf[32];

	(void)state;
	assert_int_equal(plugfs_join(buf, sizeof(buf), abc, 3, ", "), 10);
	assert_string_equal(buf, "a, bb, ccc");
	assert_int_equal(plugfs_join(buf, sizeof(buf), abc, 1, ", "), 1);
	assert_string_equal(buf, "a");
	assert_int_equal(plugfs_join(buf, sizeof(buf), abc, 3, ""), 6);
	assert_string_equal(buf, "abbccc");
	memset(buf, 'x', sizeof(buf));
	assert_int_equal(plugfs_join(buf, sizeof(buf), NULL, 0, ", "), 0);
	assert_string_equal(buf, "");
}

static void test_join_cut(void **state)
{
	static const char *const abc[] = {"a", "bb", "ccc"};
	char buf[32];

	(void)state;
	/* Exactly enough room, then one byte short (cut mid-item), then in a
	 * separator; the length is always that of the whole list. */
	assert_int_equal(plugfs_join(buf, 11, abc, 3, ", "), 10);
	assert_string_equal(buf, "a, bb, ccc");
	assert_int_equal(plugfs_join(buf, 10, abc, 3, ", "), 10);
	assert_string_equal(buf, "a, bb, cc");
	assert_int_equal(plugfs_join(buf, 3, abc, 3, ", "), 10);
	assert_string_equal(buf, "a,");
	assert_int_equal(plugfs_join(buf, 1, abc, 3, ", "), 10);
	assert_string_equal(buf, "");
	/* len 0 writes nothing. */
	buf[0] = 'x';
	assert_int_equal(plugfs_join(buf, 0, abc, 3, ", "), 10);
	assert_int_equal(buf[0], 'x');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_join),
	    cmocka_unit_test(test_join_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
