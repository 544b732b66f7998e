/* SPDX-License-Identifier: MIT */
/*
 * What a daemon hands to the next across a re-exec (fs/resume.c):
 * $PLUGFS_RESUME_FDS written and read back, refused when malformed or when
 * it names closed fds, and removed from the environment once read.  And
 * the view's side of a resume: nodeids the kernel may still hold that the
 * new process does not know answer nothing, and forgetting them is harmless.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs_internal.h"

static void test_round_trip(void **state)
{
	struct fs_handover h = {-1, -1, -1}, got;
	int p[2];

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	h.fuse_fd = p[0];
	h.init_fd = p[1];
	h.control_fd = dup(p[0]);
	assert_int_equal(fs_handover_to_env(&h), 0);
	/* Inherited by the exec. */
	assert_int_equal(fcntl(h.fuse_fd, F_GETFD) & FD_CLOEXEC, 0);
	assert_int_equal(fcntl(h.init_fd, F_GETFD) & FD_CLOEXEC, 0);
	assert_int_equal(fs_handover_from_env(&got), 1);
	assert_int_equal(got.fuse_fd, h.fuse_fd);
	assert_int_equal(got.init_fd, h.init_fd);
	assert_int_equal(got.control_fd, h.control_fd);
	assert_null(getenv(FS_RESUME_ENV));
	/* Without a control socket. */
	h.control_fd = -1;
	assert_int_equal(fs_handover_to_env(&h), 0);
	assert_int_equal(fs_handover_from_env(&got), 1);
	assert_int_equal(got.control_fd, -1);
	close(p[0]);
	close(p[1]);
}

static void test_absent_and_malformed(void **state)
{
	struct fs_handover got;
	const char *bad[] = {"fuse=",
			     "fuse=3",
			     "init=4",
			     "fuse=x,init=4",
			     "fuse=3,init=4,odd=5",
			     "fuse=-1,init=4",
			     "fuse=3;init=4",
			     "fuse=999,init=998"};

	(void)state;
	unsetenv(FS_RESUME_ENV);
	assert_int_equal(fs_handover_from_env(&got), 0);
	assert_int_equal(got.fuse_fd, -1);
	assert_int_equal(got.init_fd, -1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv(FS_RESUME_ENV, bad[i], 1);
		assert_int_equal(fs_handover_from_env(&got), -EINVAL);
		assert_int_equal(got.fuse_fd, -1);
		assert_null(getenv(FS_RESUME_ENV));
	}
}

static void test_unknown_nodeids(void **state)
{
	struct fs_view v;

	(void)state;
	assert_int_equal(fs_view_init(&v, "csi.sock"), 0);
	/* A plugin directory the kernel holds from before, gone meanwhile. */
	assert_null(fs_view_get(&v, FS_INO(41, FS_TAG_PLUGIN)));
	fs_view_forget(&v, FS_INO(41, FS_TAG_PLUGIN), 5);
	/* Forgets of the fixed nodes more often than this process counted. */
	fs_view_forget(&v, FS_INO_PLUGINS, 100);
	fs_view_forget(&v, FS_INO_ROOT, 100);
	assert_non_null(fs_view_get(&v, FS_INO_ROOT));
	assert_non_null(fs_view_get(&v, FS_INO_PLUGINS));
	fs_view_free(&v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_absent_and_malformed),
	    cmocka_unit_test(test_unknown_nodeids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
