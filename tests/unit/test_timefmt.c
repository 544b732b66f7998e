/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "timefmt.h"

#define T0 INT64_C(1796030345) /* 2026-11-30T09:19:05Z */

static void test_format_time(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(plugfs_format_time(T0, -1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2026-11-30T09:19:05Z");
	plugfs_format_time(0, -1, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	plugfs_format_time(INT64_C(951782400), -1, buf, sizeof(buf)); /* leap day */
	assert_string_equal(buf, "2000-02-29T00:00:00Z");
	/* Exactly 21 bytes is enough; fewer never overflow. */
	plugfs_format_time(T0, -1, buf, 21);
	assert_string_equal(buf, "2026-11-30T09:19:05Z");
	memset(buf, 'x', sizeof(buf));
	plugfs_format_time(T0, -1, buf, 8);
	assert_int_equal(strlen(buf), 7);
	assert_int_equal(buf[8], 'x');
	memset(buf, 'x', sizeof(buf));
	plugfs_format_time(T0, -1, buf, 0);
	assert_int_equal(buf[0], 'x');
}

static void test_milliseconds(void **state)
{
	char buf[PLUGFS_TIME_LEN];

	(void)state;
	plugfs_format_time(T0, 7, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-30T09:19:05.007Z");
	plugfs_format_time(T0, 999, buf, sizeof(buf));
	assert_string_equal(buf, "2026-11-30T09:19:05.999Z");
	plugfs_format_time(T0, 1000, buf, sizeof(buf)); /* not a fraction: none */
	assert_string_equal(buf, "2026-11-30T09:19:05Z");
}

static void test_out_of_range(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(plugfs_format_time(INT64_MAX, -1, buf, sizeof(buf)), -ERANGE);
	assert_string_equal(buf, "invalid");
	/* 9999-12-31T23:59:59Z is the last time RFC 3339 can write. */
	assert_int_equal(plugfs_format_time(INT64_C(253402300799), -1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "9999-12-31T23:59:59Z");
	assert_int_equal(plugfs_format_time(INT64_C(253402300800), -1, buf, sizeof(buf)), -ERANGE);
	assert_string_equal(buf, "invalid");
	/* 0000-01-01T00:00:00Z is the first. */
	assert_int_equal(plugfs_format_time(INT64_C(-62167219200), -1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0000-01-01T00:00:00Z");
	assert_int_equal(plugfs_format_time(INT64_C(-62167219201), 5, buf, sizeof(buf)), -ERANGE);
	assert_string_equal(buf, "invalid");
	assert_int_equal(plugfs_format_time(INT64_MIN, -1, buf, sizeof(buf)), -ERANGE);
	assert_string_equal(buf, "invalid");
	memset(buf, 'x', sizeof(buf));
	plugfs_format_time(INT64_MAX, -1, buf, 4);
	assert_string_equal(buf, "inv");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_format_time),
	    cmocka_unit_test(test_milliseconds),
	    cmocka_unit_test(test_out_of_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
