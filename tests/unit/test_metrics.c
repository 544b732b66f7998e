/* SPDX-License-Identifier: MIT */
/* The Prometheus text builder: families, labels and their escaping, value
 * formatting, cumulative histogram buckets, growth past the first buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "metrics.h"

static void test_family_and_samples(void **state)
{
	struct metrics m = {0};

	(void)state;
	metrics_family(&m, "x_total", "counter", "Things, with a \\ and\na newline.");
	metrics_sample(&m, "x_total", NULL, 3);
	metrics_sample(&m, "x_total", (const char *[]){"k", "a\"b\\c\nd", "j", "", NULL}, 0.5);
	metrics_sample(&m, "x_total", (const char *[]){NULL}, NAN);
	metrics_sample(&m, "x_total", NULL, INFINITY);
	metrics_sample(&m, "x_total", NULL, 12345678901.0);
	assert_false(m.failed);
	assert_string_equal(m.buf, "# HELP x_total Things, with a \\\\ and\\na newline.\n"
				   "# TYPE x_total counter\n"
				   "x_total 3\n"
				   "x_total{k=\"a\\\"b\\\\c\\nd\",j=\"\"} 0.5\n"
				   "x_total NaN\n"
				   "x_total +Inf\n"
				   "x_total 12345678901\n");
	assert_int_equal(m.len, strlen(m.buf));
	metrics_free(&m);
	assert_null(m.buf);
	assert_int_equal(m.len, 0);
}

static void test_histogram(void **state)
{
	static const double bounds[] = {0.001, 0.01, 1};
	const uint64_t counts[] = {2, 0, 3, 1};
	struct metrics m = {0};

	(void)state;
	metrics_histogram(&m, "h_seconds", bounds, 3, counts, 1.5);
	assert_string_equal(m.buf, "h_seconds_bucket{le=\"0.001\"} 2\n"
				   "h_seconds_bucket{le=\"0.01\"} 2\n"
				   "h_seconds_bucket{le=\"1\"} 5\n"
				   "h_seconds_bucket{le=\"+Inf\"} 6\n"
				   "h_seconds_sum 1.5\n"
				   "h_seconds_count 6\n");
	metrics_free(&m);
}

static void test_grows(void **state)
{
	struct metrics m = {0};
	char label[600];

	(void)state;
	memset(label, 'v', sizeof(label) - 1);
	label[sizeof(label) - 1] = '\0';
	for (int i = 0; i < 200; i++)
		metrics_sample(&m, "g", (const char *[]){"l", label, NULL}, i);
	assert_false(m.failed);
	assert_int_equal(m.len, strlen(m.buf));
	assert_true(m.len > 200 * sizeof(label));
	assert_non_null(strstr(m.buf, "\"} 199\n"));
	metrics_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_family_and_samples),
	    cmocka_unit_test(test_histogram),
	    cmocka_unit_test(test_grows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
