/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static size_t fmt(char *buf, size_t len, enum plugfs_log_level l, bool journal, const char *f, ...)
    __attribute__((format(printf, 5, 6)));
static size_t fmt(char *buf, size_t len, enum plugfs_log_level l, bool journal, const char *f, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, f);
	n = plog_format(buf, len, l, journal, "2026-01-02T03:04:05.006Z", f, ap);
	va_end(ap);
	return n;
}

/* The journal gets the syslog priority as a prefix and no timestamp; a
 * terminal gets the time and the level's name. */
static void test_format(void **state)
{
	static const struct {
		enum plugfs_log_level l;
		const char *journal, *plain;
	} cases[] = {
	    {PLOG_ERROR, "<3>error: m 1\n", "2026-01-02T03:04:05.006Z plugfs error: m 1\n"},
	    {PLOG_WARN, "<4>warn: m 1\n", "2026-01-02T03:04:05.006Z plugfs warn: m 1\n"},
	    {PLOG_NOTICE, "<5>notice: m 1\n", "2026-01-02T03:04:05.006Z plugfs notice: m 1\n"},
	    {PLOG_INFO, "<6>info: m 1\n", "2026-01-02T03:04:05.006Z plugfs info: m 1\n"},
	    {PLOG_DEBUG, "<7>debug: m 1\n", "2026-01-02T03:04:05.006Z plugfs debug: m 1\n"},
	};
	char buf[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(fmt(buf, sizeof(buf), cases[i].l, true, "m %d", 1),
				 strlen(cases[i].journal));
		assert_string_equal(buf, cases[i].journal);
		assert_int_equal(fmt(buf, sizeof(buf), cases[i].l, false, "m %d", 1),
				 strlen(cases[i].plain));
		assert_string_equal(buf, cases[i].plain);
	}
	assert_int_equal(plog_priority(PLOG_NOTICE), 5);
	/* An embedded newline would start a line of priority 6: one line. */
	fmt(buf, sizeof(buf), PLOG_WARN, true, "a\nb");
	assert_string_equal(buf, "<4>warn: a b\n");
	/* Too long: cut, still one newline-terminated line in the buffer. */
	assert_int_equal(fmt(buf, 12, PLOG_WARN, true, "%s", "0123456789"), 11);
	assert_string_equal(buf, "<4>warn: 0\n");
	assert_int_equal(fmt(buf, 5, PLOG_WARN, true, "%s", "0123456789"), 4);
	assert_string_equal(buf, "<4>\n");
}

/* A notice is shown at level info and above, not at warn. */
static void log_notice_line(void)
{
	log_notice("refused %s", "x");
}

static void test_notice_filter(void **state)
{
	char buf[4096];

	(void)state;
	plog_set_level(PLOG_WARN);
	capture(log_notice_line, buf, sizeof(buf));
	assert_string_equal(buf, "");
	plog_set_level(PLOG_INFO);
	capture(log_notice_line, buf, sizeof(buf));
	assert_non_null(strstr(buf, "plugfs notice: refused x\n"));
}

/* $JOURNAL_STREAM counts only when it names what stderr is. */
static void test_journal_detection(void **state)
{
	char env[64], buf[4096];
	struct stat st;
	int fds[2], saved;
	ssize_t n;

	(void)state;
	plog_set_level(PLOG_INFO);
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(fstat(fds[1], &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fds[1], STDERR_FILENO);

	unsetenv("JOURNAL_STREAM");
	assert_false(plog_detect_journal());
	setenv("JOURNAL_STREAM", "1:2", 1); /* another stream */
	assert_false(plog_detect_journal());
	setenv("JOURNAL_STREAM", "garbage", 1);
	assert_false(plog_detect_journal());
	setenv("JOURNAL_STREAM", env, 1);
	assert_true(plog_detect_journal());
	assert_true(plog_journal());
	log_warn("to the journal %d", 7);
	log_notice("refused");
	fflush(stderr);

	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	buf[n < 0 ? 0 : n] = '\0';
	close(fds[0]);
	assert_string_equal(buf, "<4>warn: to the journal 7\n<5>notice: refused\n");
	/* stderr is no longer that pipe. */
	assert_false(plog_detect_journal());
	unsetenv("JOURNAL_STREAM");
	plog_detect_journal();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_level_filters),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_notice_filter),
	    cmocka_unit_test(test_journal_detection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
