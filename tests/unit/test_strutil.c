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

/* What a message shows of a value: printable UTF-8 as it is, anything else
 * as \xNN. */
static void test_quote(void **state)
{
	char q[PLUGFS_QUOTE_MAX];

	(void)state;
	assert_string_equal(plugfs_quote(q, sizeof(q), "csi-node"), "csi-node");
	assert_string_equal(plugfs_quote(q, sizeof(q), "caf\xc3\xa9 \xe2\x82\xac"),
			    "caf\xc3\xa9 \xe2\x82\xac");
	assert_string_equal(plugfs_quote(q, sizeof(q), "a\nb\tc"), "a\\x0ab\\x09c");
	assert_string_equal(plugfs_quote(q, sizeof(q), "a\\b"), "a\\x5cb");
	assert_string_equal(plugfs_quote(q, sizeof(q), "\x7f"), "\\x7f");
	/* A stray byte, a C1 control (U+0085), a surrogate: byte by byte. */
	assert_string_equal(plugfs_quote(q, sizeof(q), "x\xffy"), "x\\xffy");
	assert_string_equal(plugfs_quote(q, sizeof(q), "\xc2\x85"), "\\xc2\\x85");
	assert_string_equal(plugfs_quote(q, sizeof(q), "\xed\xa0\x80"), "\\xed\\xa0\\x80");
	assert_string_equal(plugfs_quote(q, sizeof(q), ""), "");
	assert_string_equal(plugfs_quote(q, sizeof(q), NULL), "");
	assert_ptr_equal(plugfs_quote(q, sizeof(q), "x"), q);
}

/* Cut with "..." after PLUGFS_QUOTE_SHOWN bytes; PLUGFS_QUOTE_MAX holds the
 * longest answer (every byte shown escaped). */
static void test_quote_cut(void **state)
{
	char s[200], q[PLUGFS_QUOTE_MAX], want[PLUGFS_QUOTE_MAX];

	(void)state;
	memset(s, 'a', PLUGFS_QUOTE_SHOWN);
	s[PLUGFS_QUOTE_SHOWN] = '\0';
	assert_string_equal(plugfs_quote(q, sizeof(q), s), s);
	s[PLUGFS_QUOTE_SHOWN] = 'b';
	s[PLUGFS_QUOTE_SHOWN + 1] = '\0';
	memcpy(want, s, PLUGFS_QUOTE_SHOWN);
	memcpy(want + PLUGFS_QUOTE_SHOWN, "...", 4);
	assert_string_equal(plugfs_quote(q, sizeof(q), s), want);
	memset(s, 1, 150);
	s[150] = '\0';
	plugfs_quote(q, sizeof(q), s);
	assert_int_equal(strlen(q), 4 * PLUGFS_QUOTE_SHOWN + 3);
	assert_string_equal(q + 4 * PLUGFS_QUOTE_SHOWN, "...");
	assert_memory_equal(q, "\\x01\\x01", 8);
}

/* A small buffer: cut at a character's edge, never mid-escape, always
 * terminated. */
static void test_quote_small(void **state)
{
	char q[8];

	(void)state;
	memset(q, 'z', sizeof(q));
	assert_string_equal(plugfs_quote(q, 4, "abcdef"), "abc");
	assert_string_equal(plugfs_quote(q, 4, "\n"), "");
	assert_string_equal(plugfs_quote(q, 5, "a\n"), "a");
	assert_string_equal(plugfs_quote(q, 6, "a\n"), "a\\x0a");
	assert_string_equal(plugfs_quote(q, 4, "\xc3\xa9\xc3\xa9"), "\xc3\xa9");
	q[0] = 'z';
	plugfs_quote(q, 0, "abc");
	assert_int_equal(q[0], 'z');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_join),	cmocka_unit_test(test_join_cut),
	    cmocka_unit_test(test_quote),	cmocka_unit_test(test_quote_cut),
	    cmocka_unit_test(test_quote_small),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
