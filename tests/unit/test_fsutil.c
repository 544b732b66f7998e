/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "pathtrust.h"

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

/* plugfs_path_trust on what a user can make without root: modes and
 * symlinks (other owners: test_path_trust, as nobody). */
static void test_path_trust(void **state)
{
	char ww[128], sticky[128], p[256], link[256], err[512] = "";

	(void)state;
	snprintf(ww, sizeof(ww), "%s/ww", base);
	snprintf(sticky, sizeof(sticky), "%s/sticky", base);
	assert_int_equal(mkdir(ww, 0700), 0);
	assert_int_equal(chmod(ww, 0777), 0);
	assert_int_equal(mkdir(sticky, 0700), 0);
	assert_int_equal(chmod(sticky, 01777), 0);

	/* A file below a directory writable by others, not sticky. */
	snprintf(p, sizeof(p), "%s/x/state.db", ww);
	assert_int_equal(plugfs_path_trust("state.path", p, 0, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others (mode 0777) without the sticky bit"));
	assert_non_null(strstr(err, ww));
	/* Also as the parent of a mountpoint; sticky is fine; missing is fine. */
	snprintf(p, sizeof(p), "%s/mnt", ww);
	assert_int_equal(plugfs_path_trust("m", p, PLUGFS_TRUST_PARENTS_ONLY, err, sizeof(err)),
			 -EPERM);
	snprintf(p, sizeof(p), "%s/state.db", sticky);
	assert_int_equal(plugfs_path_trust("state.path", p, 0, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/no/such/state.db", base);
	assert_int_equal(plugfs_path_trust("state.path", p, 0, err, sizeof(err)), 0);
	/* A symlink at the path itself is refused; one of ours on the way is
	 * followed, and its target checked. */
	snprintf(link, sizeof(link), "%s/state.db", sticky);
	assert_int_equal(symlink("/etc/passwd", link), 0);
	assert_int_equal(plugfs_path_trust("state.path", link, 0, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "is a symlink"));
	snprintf(link, sizeof(link), "%s/to-ww", base);
	assert_int_equal(symlink(ww, link), 0);
	snprintf(p, sizeof(p), "%s/to-ww/state.db", base);
	assert_int_equal(plugfs_path_trust("state.path", p, 0, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(chmod(ww, 0755), 0);
	assert_int_equal(plugfs_path_trust("state.path", p, 0, err, sizeof(err)), 0);
	assert_int_equal(plugfs_path_trust("state.path", "rel/state.db", 0, err, sizeof(err)),
			 -EINVAL);
}

/* Root is needed to give a directory to another user and to mount: as
 * anyone else the test says why and skips, but never under CI=true (the
 * CI runs the tests as root). */
static bool need_root(void)
{
	const char *ci = getenv("CI");

	if (geteuid() == 0)
		return true;
	if (ci && strcmp(ci, "true") == 0)
		fail_msg("not running as root (CI=true: not skipping)");
	print_message("not running as root: skipped\n");
	return false;
}

/* A directory of mode at base/rel. */
static void dir_at(const char *rel, mode_t mode, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s/%s", base, rel);
	assert_int_equal(mkdir(out, mode), 0);
	assert_int_equal(chmod(out, mode), 0);
}

/* plugfs_root_dir_open: each directory above the one opened is root's
 * and writable by no one else unless sticky; no symlink on the way; each
 * break named with the directory and the rule; the one opened itself not
 * judged. */
static void test_root_dir_open(void **state)
{
	char u[128], w[128], root[128], p[512], err[1024] = "";
	struct stat st, want;
	int fd;

	(void)state;
	if (!need_root())
		skip();
	dir_at("u", 0755, u, sizeof(u));
	dir_at("u/w", 0755, w, sizeof(w));
	dir_at("u/w/plugins", 0755, root, sizeof(root));

	fd = plugfs_root_dir_open("[discover.t] root", root, &st, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(stat(root, &want), 0);
	assert_int_equal(st.st_ino, want.st_ino);
	assert_int_equal(st.st_dev, want.st_dev);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	/* The one opened is the caller's to judge. */
	assert_int_equal(chmod(root, 0777), 0);
	fd = plugfs_root_dir_open("[discover.t] root", root, NULL, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);

	/* A directory above it another user's: its owner could rename w. */
	assert_int_equal(chown(u, 65534, 65534), 0);
	assert_int_equal(plugfs_root_dir_open("[discover.t] root", root, NULL, err, sizeof(err)),
			 -EPERM);
	print_message("%s\n", err);
	snprintf(p, sizeof(p),
		 "[discover.t] root `%s': directory `%s' above it is owned by uid "
		 "65534, not root: its owner could rename what is in it",
		 root, u);
	assert_non_null(strstr(err, p));
	assert_non_null(strstr(err, "expected every directory above it owned by root and "
				    "writable by no one else (or sticky, like /tmp)"));
	assert_int_equal(chown(u, 0, 0), 0);
	/* Writable by others, by its group (even root's), without sticky. */
	assert_int_equal(chmod(w, 0777), 0);
	assert_int_equal(plugfs_root_dir_open("r", root, NULL, err, sizeof(err)), -EPERM);
	snprintf(p, sizeof(p),
		 "directory `%s' above it is writable by others (mode 0777) "
		 "without the sticky bit",
		 w);
	assert_non_null(strstr(err, p));
	assert_int_equal(chmod(w, 0775), 0);
	assert_int_equal(plugfs_root_dir_open("r", root, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "writable by its group (mode 0775) without the sticky bit"));
	/* Sticky, like /tmp: others cannot rename root's entries. */
	assert_int_equal(chmod(w, 01777), 0);
	fd = plugfs_root_dir_open("r", root, NULL, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(w, 0755), 0);

	/* A symlink on the way, even root's, or at the end. */
	snprintf(p, sizeof(p), "%s/l", base);
	assert_int_equal(symlink(u, p), 0);
	snprintf(p, sizeof(p), "%s/l/w/plugins", base);
	assert_int_equal(plugfs_root_dir_open("r", p, NULL, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "/l' above it is a symlink: refusing to follow it"));
	snprintf(p, sizeof(p), "%s/l", base);
	assert_int_equal(plugfs_root_dir_open("r", p, NULL, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "/l' is a symlink; expected a directory"));
	/* Not a directory, on the way or at the end; missing. */
	snprintf(p, sizeof(p), "%s/f", u);
	assert_int_equal(close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	assert_int_equal(plugfs_root_dir_open("r", p, NULL, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "/f' is not a directory"));
	snprintf(p, sizeof(p), "%s/f/x", u);
	assert_int_equal(plugfs_root_dir_open("r", p, NULL, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "/f' above it is not a directory"));
	snprintf(p, sizeof(p), "%s/missing/x", u);
	assert_int_equal(plugfs_root_dir_open("r", p, NULL, err, sizeof(err)), -ENOENT);
	assert_int_equal(plugfs_root_dir_open("r", "rel/x", NULL, err, sizeof(err)), -EINVAL);
}

/* plugfs_open_here: a mount point is refused (-EXDEV) before anything of
 * its mount is asked; the rest opened as openat with O_NOFOLLOW. */
static void test_open_here(void **state)
{
	char d[128], m[128], p[256];
	struct stat st;
	int dfd, fd;

	(void)state;
	if (!need_root())
		skip();
	dir_at("d", 0755, d, sizeof(d));
	dir_at("d/m", 0755, m, sizeof(m));
	dfd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(mount("plugfs-test", m, "tmpfs", 0, "size=64k"), 0);
	assert_int_equal(plugfs_open_here(dfd, d, "m", O_PATH), -EXDEV);
	assert_int_equal(plugfs_open_here(dfd, d, "m", O_RDONLY | O_DIRECTORY), -EXDEV);
	assert_int_equal(umount(m), 0);
	fd = plugfs_open_here(dfd, d, "m", O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	close(fd);
	/* A symlink: the link itself with O_PATH, refused otherwise. */
	snprintf(p, sizeof(p), "%s/l", d);
	assert_int_equal(symlink("/", p), 0);
	fd = plugfs_open_here(dfd, d, "l", O_PATH);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	close(fd);
	assert_int_equal(plugfs_open_here(dfd, d, "l", O_RDONLY), -ELOOP);
	assert_int_equal(plugfs_open_here(dfd, d, "nope", O_PATH), -ENOENT);
	assert_int_equal(plugfs_open_here(dfd, d, "..", O_PATH), -EINVAL);
	assert_int_equal(plugfs_open_here(dfd, d, "m/x", O_PATH), -EINVAL);
	assert_int_equal(plugfs_open_here(dfd, d, "", O_PATH), -EINVAL);
	close(dfd);
}

/* A file of n bytes (byte i is i % 251, NULs among them) at base/name,
 * opened for reading. */
static int file_of(const char *name, size_t n)
{
	char p[128];
	char *data = malloc(n ? n : 1);
	int fd;

	assert_non_null(data);
	for (size_t i = 0; i < n; i++)
		data[i] = (char)(i % 251);
	snprintf(p, sizeof(p), "%s/%s", base, name);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	free(data);
	return fd;
}

/* The whole file, NULs and all, NUL-terminated; larger than the first
 * buffer, so the buffer grows on the way. */
static void test_read_fd_whole(void **state)
{
	size_t n = 300 * 1000, len = 1;
	char *buf = NULL;
	int fd = file_of("big", n);

	(void)state;
	assert_int_equal(plugfs_read_fd(fd, 1 << 20, &buf, &len), 0);
	assert_int_equal(len, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal((unsigned char)buf[i], i % 251);
	assert_int_equal(buf[n], '\0');
	free(buf);
	close(fd);
}

/* max bytes are read, max + 1 refused, with nothing handed back. */
static void test_read_fd_bound(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	int fd;

	(void)state;
	fd = file_of("max", 100);
	assert_int_equal(plugfs_read_fd(fd, 100, &buf, &len), 0);
	assert_int_equal(len, 100);
	free(buf);
	close(fd);
	fd = file_of("over", 101);
	buf = (char *)&len;
	assert_int_equal(plugfs_read_fd(fd, 100, &buf, &len), -EFBIG);
	assert_null(buf);
	assert_int_equal(len, 0);
	close(fd);
	/* The same past the first buffer. */
	fd = file_of("over-big", 200 * 1000 + 1);
	assert_int_equal(plugfs_read_fd(fd, 200 * 1000, &buf, &len), -EFBIG);
	assert_null(buf);
	close(fd);
	fd = file_of("empty", 0);
	assert_int_equal(plugfs_read_fd(fd, 0, &buf, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(buf, "");
	free(buf);
	close(fd);
}

/* A pipe (no size to go by) is read to its end; a read error is read's. */
static void test_read_fd_pipe_and_error(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "{\"a\": 1}\n", 9), 9);
	close(p[1]);
	assert_int_equal(plugfs_read_fd(p[0], 64, &buf, &len), 0);
	assert_string_equal(buf, "{\"a\": 1}\n");
	assert_int_equal(len, 9);
	free(buf);
	close(p[0]);
	assert_int_equal(plugfs_read_fd(p[0], 64, &buf, &len), -EBADF);
	assert_null(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_creates_parents_with_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_names_what_failed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_path_trust, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_root_dir_open, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_open_here, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_fd_whole, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_fd_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_fd_pipe_and_error, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
