/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* The sanitized copy of s equals want. */
static void check_sanitize(const char *s, const char *want)
{
	char *got = plugfs_utf8_sanitize(s);

	assert_non_null(got);
	assert_string_equal(got, want);
	assert_true(plugfs_utf8_valid(got));
	free(got);
}

static void test_decode_valid(void **state)
{
	uint32_t cp = 0;

	(void)state;
	assert_int_equal(plugfs_utf8_decode("A", &cp), 1);
	assert_int_equal(cp, 'A');
	assert_int_equal(plugfs_utf8_decode("\xc2\x80", &cp), 2); /* smallest 2-byte */
	assert_int_equal(cp, 0x80);
	assert_int_equal(plugfs_utf8_decode("\xc3\xa9", &cp), 2);
	assert_int_equal(cp, 0xe9);
	assert_int_equal(plugfs_utf8_decode("\xe0\xa0\x80", &cp), 3); /* U+0800 */
	assert_int_equal(cp, 0x800);
	assert_int_equal(plugfs_utf8_decode("\xed\x9f\xbf", &cp), 3); /* U+D7FF */
	assert_int_equal(cp, 0xd7ff);
	assert_int_equal(plugfs_utf8_decode("\xee\x80\x80", &cp), 3); /* U+E000 */
	assert_int_equal(cp, 0xe000);
	assert_int_equal(plugfs_utf8_decode("\xf0\x90\x80\x80", &cp), 4); /* U+10000 */
	assert_int_equal(cp, 0x10000);
	assert_int_equal(plugfs_utf8_decode("\xf4\x8f\xbf\xbf", &cp), 4); /* U+10FFFF */
	assert_int_equal(cp, 0x10ffff);
	assert_int_equal(plugfs_utf8_decode("\xc3\xa9", NULL), 2); /* cp may be NULL */
	assert_int_equal(plugfs_utf8_decode("", &cp), 0);	   /* NUL: no character */
}

static void test_decode_invalid(void **state)
{
	(void)state;
	/* Overlong forms. */
	assert_int_equal(plugfs_utf8_decode("\xc0\xaf", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xc1\xbf", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xe0\x80\xaf", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xe0\x9f\xbf", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xf0\x80\x80\xaf", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xf0\x8f\xbf\xbf", NULL), 0);
	/* Surrogates U+D800-U+DFFF. */
	assert_int_equal(plugfs_utf8_decode("\xed\xa0\x80", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xed\xbf\xbf", NULL), 0);
	/* Above U+10FFFF, and lead bytes that cannot start anything. */
	assert_int_equal(plugfs_utf8_decode("\xf4\x90\x80\x80", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xf7\xbf\xbf\xbf", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xf8\x88\x80\x80\x80", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xff", NULL), 0);
	/* A stray continuation byte. */
	assert_int_equal(plugfs_utf8_decode("\x80", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xbf", NULL), 0);
	/* Truncated sequences, at the end and before another character. */
	assert_int_equal(plugfs_utf8_decode("\xc3", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xe2\x82", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xf0\x9f\x98", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xc3(", NULL), 0);
	assert_int_equal(plugfs_utf8_decode("\xe2\x82x", NULL), 0);
}

static void test_valid(void **state)
{
	(void)state;
	assert_true(plugfs_utf8_valid(""));
	assert_true(plugfs_utf8_valid("plain ascii"));
	assert_true(plugfs_utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
	assert_false(plugfs_utf8_valid("caf\xe9"));
	assert_false(plugfs_utf8_valid("x \xc0\xaf y"));       /* overlong */
	assert_false(plugfs_utf8_valid("x \xed\xa0\x80 y"));   /* surrogate */
	assert_false(plugfs_utf8_valid("x \xf4\x90\x80\x80")); /* > U+10FFFF */
	assert_false(plugfs_utf8_valid("x \xe2\x82"));	       /* truncated */
	assert_false(plugfs_utf8_valid("\x80"));	       /* stray */
}

static void test_sanitize(void **state)
{
	(void)state;
	/* Valid text is copied as it is. */
	check_sanitize("", "");
	check_sanitize("caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80");
	/* Each invalid byte becomes `?'; the valid characters around it stay. */
	check_sanitize("caf\xc3\xa9 \xff", "caf\xc3\xa9 ?");
	check_sanitize("caf\xe9", "caf?");
	check_sanitize("bad \xff\xfe name", "bad ?? name");
	check_sanitize("x \xc0\xaf y", "x ?? y");	  /* overlong */
	check_sanitize("x \xed\xa0\x80 y", "x ??? y");	  /* surrogate */
	check_sanitize("x \xf4\x90\x80\x80", "x ????");	  /* > U+10FFFF */
	check_sanitize("\xe2\x82", "??");		  /* truncated at the end */
	check_sanitize("\xe2\x82\xc3\xa9", "??\xc3\xa9"); /* truncated, then valid */
	check_sanitize("\x80\xc3\xa9\x80", "?\xc3\xa9?"); /* stray continuations */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_valid),
	    cmocka_unit_test(test_decode_invalid),
	    cmocka_unit_test(test_valid),
	    cmocka_unit_test(test_sanitize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
