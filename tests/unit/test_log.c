/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* Captures what plog writes to stderr while fn runs. */
static void capture(void (*fn)(void), char *buf, size_t len)
{
	int fds[2], saved;
	ssize_t n;

	assert_int_equal(pipe(fds), 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fds[1], STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fds[1]);
	n = read(fds[0], buf, len - 1);
	buf[n < 0 ? 0 : n] = '\0';
	close(fds[0]);
}

static void log_both(void)
{
	log_info("visible %d", 42);
	log_debug("hidden");
}

static void test_level_filters(void **state)
{
	char buf[4096];

	(void)state;
	plog_set_level(PLOG_INFO);
	capture(log_both, buf, sizeof(buf));
	assert_non_null(strstr(buf, "plugfs info: visible 42\n"));
	assert_null(strstr(buf, "hidden"));
	plog_set_level(PLOG_DEBUG);
	capture(log_both, buf, sizeof(buf));
	assert_non_null(strstr(buf, "plugfs debug: hidden\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_filters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
