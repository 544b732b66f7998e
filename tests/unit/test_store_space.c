/* SPDX-License-Identifier: MIT */
/*
 * The upkeep of the state file's space (registry_start_upkeep): the WAL
 * stays bounded while registrations stream in and is truncated when they
 * stop, nothing committed is lost, the reserve is allocated beside the
 * file, and new files get small pages.  (The full disk itself is
 * tests/integration/test_state_full.sh: it needs a small filesystem.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry.h"
#include "test_registry_util.h"

static off_t size_of(const char *path, const char *suffix)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s%s", path, suffix);
	return stat(p, &st) == 0 ? st.st_size : -1;
}

static void start(struct fixture *f, const struct registry_upkeep *o)
{
	char err[REG_ERR_MAX] = "";

	if (registry_start_upkeep(f->r, o, err, sizeof(err)) != 0)
		fail_msg("registry_start_upkeep: %s", err);
}

/* Registers n plugins p<from>.. and returns the largest -wal seen after a
 * commit (the WAL only grows between its restarts). */
static off_t register_many(struct fixture *f, int from, int n)
{
	char name[32];
	off_t max = 0, w;

	for (int i = from; i < from + n; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		assert_int_equal(reg(f, "csi-node", name, "a0"), 0);
		if ((w = size_of(f->path, "-wal")) > max)
			max = w;
	}
	return max;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* A new file has 1 KiB pages (a registration writes a quarter of what
 * SQLite's default 4 KiB pages write to the WAL). */
static void test_new_file_small_pages(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(query_int(f->path, "PRAGMA page_size"), 1024);
}

/* Without the upkeep SQLite's own checkpoint lets the WAL grow to 1,000
 * pages; with it the WAL stays within its limit plus what the commits
 * under way add, and every registration survives. */
static void test_wal_bounded(void **state)
{
	struct fixture *f = *state;
	const struct registry_upkeep o = {
	    .checkpoint_bytes = 32 * 1024, .wal_limit_bytes = 128 * 1024, .idle_ms = 60000};
	struct registry_upkeep_stats st;
	off_t max;

	start(f, &o);
	max = register_many(f, 0, 300);
	registry_upkeep_stats(f->r, &st);
	print_message("# max -wal over 300 registrations: %lld bytes (checkpoints: %llu passive, "
		      "%llu restart, %llu failed)\n",
		      (long long)max, (unsigned long long)st.passive,
		      (unsigned long long)st.restart, (unsigned long long)st.failed);
	assert_true(max > 0);
	assert_true(max <= 2 * 128 * 1024);
	assert_true(st.running);
	assert_true(st.passive + st.restart > 0);
	restart(f);
	for (int i = 0; i < 300; i += 37) {
		char name[32];

		snprintf(name, sizeof(name), "p%d", i);
		assert_string_equal(active(f, "csi-node", name), "a0");
	}
	assert_int_equal(count_rows(f, "registrations"), 300);
}

/* The baseline the bound above beats: SQLite's checkpoint alone. */
static void test_wal_without_upkeep(void **state)
{
	struct fixture *f = *state;
	struct registry_upkeep_stats st;
	off_t max = register_many(f, 0, 300);

	print_message("# max -wal without the upkeep: %lld bytes\n", (long long)max);
	assert_true(max > 2 * 128 * 1024);
	registry_upkeep_stats(f->r, &st);
	assert_false(st.running);
}

/* Idle: the WAL is truncated to 0 bytes (TRUNCATE), and the registry
 * goes on as before. */
static void test_idle_truncates(void **state)
{
	struct fixture *f = *state;
	const struct registry_upkeep o = {.idle_ms = 100};
	struct registry_upkeep_stats st;
	int i;

	start(f, &o);
	register_many(f, 0, 20);
	assert_true(size_of(f->path, "-wal") > 0);
	/* (The counter moves once the checkpoint returned: after the -wal.) */
	for (i = 0; i < 100; i++) {
		registry_upkeep_stats(f->r, &st);
		if (size_of(f->path, "-wal") == 0 && st.truncate >= 1)
			break;
		sleep_ms(50);
	}
	assert_int_equal(size_of(f->path, "-wal"), 0);
	assert_true(st.truncate >= 1);
	assert_int_equal(reg(f, "csi-node", "after", "a1"), 0);
	assert_int_equal(dereg(f, "csi-node", "p3", "a0"), 0);
	restart(f);
	assert_string_equal(active(f, "csi-node", "after"), "a1");
	assert_null(active(f, "csi-node", "p3"));
	assert_int_equal(count_rows(f, "registrations"), 20);
}

/* The reserve: a file of reserve_bytes beside the state file, kept after
 * the registry closes (the next start uses it again). */
static void test_reserve_file(void **state)
{
	struct fixture *f = *state;
	const struct registry_upkeep o = {.reserve_bytes = 64 * 1024};
	struct registry_upkeep_stats st;
	char p[256];
	struct stat sb;

	start(f, &o);
	assert_int_equal(size_of(f->path, "-reserve"), 64 * 1024);
	snprintf(p, sizeof(p), "%s-reserve", f->path);
	assert_int_equal(stat(p, &sb), 0);
	assert_true(sb.st_blocks * 512 >= 64 * 1024); /* allocated, not sparse */
	assert_int_equal(sb.st_mode & 07777, 0600);
	registry_upkeep_stats(f->r, &st);
	assert_true(st.reserve_held);
	assert_int_equal(st.reserve_released, 0);
	restart(f);
	assert_int_equal(size_of(f->path, "-reserve"), 64 * 1024);
}

/* A reserve path that is not a regular file of ours refuses the upkeep,
 * naming it. */
static void test_reserve_not_a_file(void **state)
{
	struct fixture *f = *state;
	char p[256], err[REG_ERR_MAX] = "";

	snprintf(p, sizeof(p), "%s-reserve", f->path);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(registry_start_upkeep(f->r, NULL, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "-reserve' is not a regular file"));
	assert_int_equal(rmdir(p), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0); /* the registry goes on */
}

/* Bad options, twice, or a registry that is not a file for writing. */
static void test_refusals(void **state)
{
	struct fixture *f = *state;
	const struct registry_upkeep bad = {.checkpoint_bytes = 65536, .wal_limit_bytes = 4096};
	char err[REG_ERR_MAX] = "";

	assert_int_equal(registry_start_upkeep(f->r, &bad, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "wal_limit_bytes 4096: must be at least checkpoint_bytes"));
	start(f, NULL);
	assert_int_equal(registry_start_upkeep(f->r, NULL, err, sizeof(err)), -EALREADY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_new_file_small_pages),
	    T(test_wal_bounded),
	    T(test_wal_without_upkeep),
	    T(test_idle_truncates),
	    T(test_reserve_file),
	    T(test_reserve_not_a_file),
	    T(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
