/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "err.h"

static void test_formats(void **state)
{
	char err[64];

	(void)state;
	plugfs_seterr(err, sizeof(err), "name `%s': %d", "x", 7);
	assert_string_equal(err, "name `x': 7");
}

static void test_truncates(void **state)
{
	char err[6];

	(void)state;
	memset(err, 'z', sizeof(err));
	plugfs_seterr(err, sizeof(err), "%s", "0123456789");
	assert_string_equal(err, "01234");
}

static void test_no_buffer(void **state)
{
	char err[4] = "abc";

	(void)state;
	plugfs_seterr(NULL, 0, "ignored %d", 1);
	plugfs_seterr(NULL, 10, "ignored %d", 1);
	plugfs_seterr(err, 0, "ignored %d", 1);
	assert_string_equal(err, "abc");
	assert_int_equal(plugfs_errf(NULL, 0, -ENOENT, "x"), -ENOENT);
}

static void test_errf_returns_rc(void **state)
{
	char err[32];

	(void)state;
	assert_int_equal(plugfs_errf(err, sizeof(err), -EINVAL, "bad %s", "value"), -EINVAL);
	assert_string_equal(err, "bad value");
	assert_int_equal(plugfs_errf(err, sizeof(err), 0, "ok"), 0);
	assert_string_equal(err, "ok");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_formats),
	    cmocka_unit_test(test_truncates),
	    cmocka_unit_test(test_no_buffer),
	    cmocka_unit_test(test_errf_returns_rc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
