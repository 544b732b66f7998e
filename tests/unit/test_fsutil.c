/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

static char base[64];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/plugfs-fsutil-XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	return st.st_mode & 07777;
}

static void test_creates_parents_with_mode(void **state)
{
	char path[128], mid[128], err[256] = "";
	mode_t old = umask(077);

	(void)state;
	snprintf(mid, sizeof(mid), "%s/a", base);
	snprintf(path, sizeof(path), "%s/a/b/c", base);
	assert_int_equal(plugfs_mkdir_p(path, 0755, err, sizeof(err)), 0);
	umask(old);
	/* The umask (077) does not narrow what was created. */
	assert_int_equal(mode_of(path), 0755);
	assert_int_equal(mode_of(mid), 0755);
	/* Again: everything exists, nothing changes. */
	assert_int_equal(chmod(mid, 0700), 0);
	assert_int_equal(plugfs_mkdir_p(path, 0755, err, sizeof(err)), 0);
	assert_int_equal(mode_of(mid), 0700);
	/* A trailing slash is fine. */
	snprintf(path, sizeof(path), "%s/d/", base);
	assert_int_equal(plugfs_mkdir_p(path, 0711, err, sizeof(err)), 0);
	assert_int_equal(mode_of(path), 0711);
}

static void test_names_what_failed(void **state)
{
	char file[128], path[160], err[256] = "";
	FILE *f;

	(void)state;
	snprintf(file, sizeof(file), "%s/file", base);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/x/y", file);
	assert_int_equal(plugfs_mkdir_p(path, 0755, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "/file/x: "));
	assert_int_equal(plugfs_mkdir_p("", 0755, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "`': not a usable path");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_creates_parents_with_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_names_what_failed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
