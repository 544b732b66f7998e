/* SPDX-License-Identifier: MIT */
/* daemon/discover_scan.c: a discovery root's trust, the directories below
 * it and their sockets, on a real directory tree with real sockets (the
 * tests run as root: they make files of root and of nobody). */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "discover_scan.h"
#include "fsutil.h"

struct fx {
	char dir[64]; /* the test's own directory, the root below it */
	char root[96];
	struct plugfs_discover sec;
	int socks[8];
	int n_socks;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/plugfs-discover-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->root, sizeof(f->root), "%s/plugins", f->dir);
	assert_int_equal(mkdir(f->root, 0755), 0);
	assert_int_equal(chmod(f->root, 0755), 0);
	f->sec = (struct plugfs_discover){
	    .name = "t", .root = f->root, .socket = "csi.sock", .forget_after = 3600};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	for (int i = 0; i < f->n_socks; i++)
		close(f->socks[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* ROOT/rel made a directory of mode. */
static void mkdir_in(struct fx *f, const char *rel, mode_t mode)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(mkdir(p, mode), 0);
	assert_int_equal(chmod(p, mode), 0);
}

/* A listening Unix socket bound at path. */
static void sock_at(struct fx *f, const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	f->socks[f->n_socks++] = fd;
}

/* ROOT/alloc/csi.sock, a socket, in a trusted directory. */
static void alloc_with_socket(struct fx *f, const char *alloc)
{
	char p[256];

	mkdir_in(f, alloc, 0700);
	snprintf(p, sizeof(p), "%s/%s/csi.sock", f->root, alloc);
	sock_at(f, p);
}

/* Waits until the file system's clock moved past the change time of path
 * (it ticks coarsely: two files made one after the other may share one),
 * by changing a scratch file of its own until its ctime is later. */
static void clock_past(struct fx *f, const char *path)
{
	struct stat a, b;
	char scratch[128];

	assert_int_equal(stat(path, &a), 0);
	snprintf(scratch, sizeof(scratch), "%s/tick", f->dir);
	for (int mode = 0600;; mode ^= 1) {
		int fd = open(scratch, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);

		assert_true(fd >= 0);
		assert_int_equal(fchmod(fd, (mode_t)mode), 0);
		assert_int_equal(fstat(fd, &b), 0);
		close(fd);
		if (b.st_ctim.tv_sec > a.st_ctim.tv_sec ||
		    (b.st_ctim.tv_sec == a.st_ctim.tv_sec && b.st_ctim.tv_nsec > a.st_ctim.tv_nsec))
			return;
	}
}

/* discover_scan_root of f's root, opened by its trust rule. */
static int scan_root(struct fx *f, struct discover_scan *s, char *err, size_t errlen)
{
	int fd = discover_open_root(&f->sec, NULL, NULL, err, errlen), rc;

	memset(s, 0, sizeof(*s));
	if (fd < 0)
		return fd;
	rc = discover_scan_root(&f->sec, fd, s, err, errlen);
	close(fd);
	return rc;
}

static bool skipped_has(const struct discover_scan *s, const char *want)
{
	for (size_t i = 0; i < s->n_skipped; i++)
		if (strstr(s->skipped[i], want))
			return true;
	return false;
}

/* Sockets found in the order they were created, not by name; what is not
 * an allocation with a socket is neither found nor skipped. */
static void test_found_in_creation_order(void **state)
{
	struct fx *f = *state;
	struct discover_scan s;
	char err[256] = "", p[256];

	alloc_with_socket(f, "zz");
	snprintf(p, sizeof(p), "%s/zz/csi.sock", f->root);
	clock_past(f, p);
	alloc_with_socket(f, "aa");
	snprintf(p, sizeof(p), "%s/aa/csi.sock", f->root);
	clock_past(f, p);
	alloc_with_socket(f, "mm");
	mkdir_in(f, "nosocket", 0755); /* a plugin that has not started yet */
	snprintf(p, sizeof(p), "%s/a-file", f->root);
	assert_int_equal(close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);

	assert_int_equal(scan_root(f, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n_found, 3);
	assert_string_equal(s.found[0].alloc, "zz");
	assert_string_equal(s.found[1].alloc, "aa");
	assert_string_equal(s.found[2].alloc, "mm");
	snprintf(p, sizeof(p), "%s/aa/csi.sock", f->root);
	assert_string_equal(s.found[1].socket, p);
	{
		struct stat st;

		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(s.found[1].ino, st.st_ino);
		assert_int_equal(s.found[1].dev, st.st_dev);
	}
	assert_int_equal(s.n_skipped, 0);
	discover_scan_free(&s);
	assert_null(s.found);
}

/* Bad entries under a good root: each skipped with its reason, named; the
 * good one beside them found. */
static void test_bad_entries_skipped(void **state)
{
	struct fx *f = *state;
	struct discover_scan s;
	char err[256] = "", p[256], q[256];

	alloc_with_socket(f, "good");
	/* A symlink where a directory is expected, to a trusted directory
	 * with a socket outside the root: not followed. */
	snprintf(p, sizeof(p), "%s/outside", f->dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(q, sizeof(q), "%s/outside/csi.sock", f->dir);
	sock_at(f, q);
	snprintf(q, sizeof(q), "%s/link", f->root);
	assert_int_equal(symlink(p, q), 0);
	/* Writable by anyone; owned by nobody. */
	mkdir_in(f, "open", 0777);
	snprintf(p, sizeof(p), "%s/open/csi.sock", f->root);
	sock_at(f, p);
	mkdir_in(f, "nobodys", 0755);
	snprintf(p, sizeof(p), "%s/nobodys", f->root);
	assert_int_equal(chown(p, 65534, 65534), 0);
	mkdir_in(f, "groupw", 0775);
	/* A socket that is a symlink, one that is a file. */
	mkdir_in(f, "sockl", 0755);
	snprintf(p, sizeof(p), "%s/sockl/csi.sock", f->root);
	assert_int_equal(symlink(q, p), 0);
	mkdir_in(f, "sockf", 0755);
	snprintf(p, sizeof(p), "%s/sockf/csi.sock", f->root);
	assert_int_equal(close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	/* A name the registry refuses. */
	mkdir_in(f, ".hidden", 0755);

	assert_int_equal(scan_root(f, &s, err, sizeof(err)), 0);
	assert_int_equal(s.n_found, 1);
	assert_string_equal(s.found[0].alloc, "good");
	assert_int_equal(s.n_skipped, 7);
	for (size_t i = 0; i < s.n_skipped; i++)
		print_message("%s\n", s.skipped[i]);
	snprintf(p, sizeof(p), "%s/link: a symlink where a directory is expected; skipped",
		 f->root);
	assert_true(skipped_has(&s, p));
	assert_true(skipped_has(&s, "/open: writable by users other than root"));
	assert_true(skipped_has(&s, "/groupw: writable by users other than root"));
	assert_true(skipped_has(&s, "/nobodys: owned by a user other than root; skipped"));
	assert_true(skipped_has(&s, "/sockl: its csi.sock is a symlink; expected a socket"));
	assert_true(skipped_has(&s, "/sockf: its csi.sock is not a socket; skipped"));
	assert_true(skipped_has(&s, "/.hidden: the directory's name is not a name"));
	discover_scan_free(&s);
}

/* A mount point below the root, a directory or a socket: skipped, never
 * entered (it could be a bind mount of plugfs's own mount, whose lookups
 * nobody answers while a re-exec starts); what is mounted there is not
 * found. */
static void test_mount_points_skipped(void **state)
{
	struct fx *f = *state;
	struct discover_scan s;
	char err[256] = "", m[160], b[160], p[256];
	bool mounted_m = false, mounted_b = false;

	alloc_with_socket(f, "good");
	/* A tmpfs on ROOT/m, with an allocation of its own inside. */
	mkdir_in(f, "m", 0755);
	snprintf(m, sizeof(m), "%s/m", f->root);
	assert_int_equal(mount("plugfs-test", m, "tmpfs", 0, "size=64k,mode=0755"), 0);
	mounted_m = true;
	snprintf(p, sizeof(p), "%s/csi.sock", m);
	sock_at(f, p);
	/* ROOT/b/csi.sock, a file with good's socket bind-mounted on it. */
	mkdir_in(f, "b", 0755);
	snprintf(b, sizeof(b), "%s/b/csi.sock", f->root);
	assert_int_equal(close(open(b, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	snprintf(p, sizeof(p), "%s/good/csi.sock", f->root);
	assert_int_equal(mount(p, b, NULL, MS_BIND, NULL), 0);
	mounted_b = true;

	assert_int_equal(scan_root(f, &s, err, sizeof(err)), 0);
	for (size_t i = 0; i < s.n_skipped; i++)
		print_message("%s\n", s.skipped[i]);
	if (mounted_m)
		assert_int_equal(umount2(m, MNT_DETACH), 0);
	if (mounted_b)
		assert_int_equal(umount2(b, MNT_DETACH), 0);
	assert_int_equal(s.n_found, 1);
	assert_string_equal(s.found[0].alloc, "good");
	assert_int_equal(s.n_skipped, 2);
	assert_true(skipped_has(&s,
				"/m: a mount point (another file system mounted on the "
				"directory, plugfs's own mount perhaps): never entered; expected a "
				"directory of the root's file system; skipped"));
	assert_true(skipped_has(&s, "/b: its csi.sock is a mount point (another file system "
				    "mounted on it): never entered; expected a socket; skipped"));
	/* m is not watched (not in dirs); b is, its socket skipped. */
	assert_int_equal(s.n_dirs, 2);
	discover_scan_free(&s);
}

/* A root that is a symlink, writable by others, not root's, missing, or
 * not a directory: refused, named, nothing scanned. */
static void test_bad_roots(void **state)
{
	struct fx *f = *state;
	struct discover_scan s;
	char err[512] = "", p[128];

	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), 0);
	assert_int_equal(chmod(f->root, 0777), 0);
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "[discover.t] root `"));
	assert_non_null(strstr(err, "' is writable by users other than root (group or other "
				    "write bit); expected a directory owned by root that only root "
				    "may write"));
	assert_int_equal(scan_root(f, &s, err, sizeof(err)), -EPERM);
	assert_int_equal(s.n_found, 0);
	assert_int_equal(chmod(f->root, 01777), 0); /* sticky does not help */
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), -EPERM);
	assert_int_equal(chmod(f->root, 0755), 0);
	assert_int_equal(chown(f->root, 65534, 0), 0);
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "is owned by a user other than root"));
	assert_int_equal(chown(f->root, 0, 0), 0);
	/* A symlink to a good directory. */
	snprintf(p, sizeof(p), "%s/via-link", f->dir);
	assert_int_equal(symlink(f->root, p), 0);
	f->sec.root = p;
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "/via-link' is a symlink; expected a directory"));
	snprintf(p, sizeof(p), "%s/missing", f->dir);
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/missing': `"));
	assert_non_null(strstr(err, "/missing': No such file or directory"));
	snprintf(p, sizeof(p), "%s/file", f->dir);
	assert_int_equal(close(open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "/file' is not a directory"));
}

/* The directories above a root: one another user's, or writable by
 * others without the sticky bit, or a symlink on the way, refuses the
 * root, the field, the path and the directory named with the rule; the
 * same tree root's is good. */
static void test_root_ancestors(void **state)
{
	struct fx *f = *state;
	char err[1024] = "", u[128], root[160], link[128], p[512];
	struct stat st, want;
	int fd;

	snprintf(u, sizeof(u), "%s/u", f->dir);
	snprintf(root, sizeof(root), "%s/u/w/plugins", f->dir);
	assert_int_equal(mkdir(u, 0755), 0);
	snprintf(p, sizeof(p), "%s/u/w", f->dir);
	assert_int_equal(mkdir(p, 0755), 0);
	assert_int_equal(mkdir(root, 0755), 0);
	f->sec.root = root;
	fd = discover_open_root(&f->sec, NULL, &st, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(stat(root, &want), 0);
	assert_int_equal(st.st_ino, want.st_ino);
	close(fd);

	assert_int_equal(chown(u, 65534, 65534), 0);
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), -EPERM);
	print_message("%s\n", err);
	snprintf(p, sizeof(p),
		 "[discover.t] root `%s': directory `%s' above it is owned by uid "
		 "65534, not root",
		 root, u);
	assert_non_null(strstr(err, p));
	assert_int_equal(chown(u, 0, 0), 0);
	assert_int_equal(chmod(u, 0777), 0);
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), -EPERM);
	assert_non_null(strstr(err, "above it is writable by others (mode 0777) without the "
				    "sticky bit"));
	assert_int_equal(chmod(u, 01777), 0); /* like /tmp */
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), 0);
	assert_int_equal(chmod(u, 0755), 0);
	/* A symlink above the root, root's own: refused too. */
	snprintf(link, sizeof(link), "%s/l", f->dir);
	assert_int_equal(symlink(u, link), 0);
	snprintf(p, sizeof(p), "%s/l/w/plugins", f->dir);
	f->sec.root = p;
	assert_int_equal(discover_check_root(&f->sec, NULL, err, sizeof(err)), -ELOOP);
	assert_non_null(strstr(err, "/l' above it is a symlink: refusing to follow it"));
}

/* A root whose path leads into the own mount (its mountpoint, or a bind
 * mount of it, on the way) is refused by its path: nothing there is
 * looked up (the mountpoint here is a plain directory, as plugfs's would
 * be to a lookup nobody answers). */
static void test_root_in_own_mount(void **state)
{
	struct fx *f = *state;
	struct plugfs_own_mount *own = NULL;
	char err[1024] = "", mp[128], p[256];

	snprintf(mp, sizeof(mp), "%s/mnt", f->dir);
	assert_int_equal(plugfs_own_mount_new(mp, &own, err, sizeof(err)), 0);
	snprintf(p, sizeof(p), "%s/mnt/plugins/csi-node", f->dir);
	f->sec.root = p;
	assert_int_equal(discover_check_root(&f->sec, own, err, sizeof(err)), -EXDEV);
	print_message("%s\n", err);
	assert_non_null(strstr(err, "' leads into plugfs's own mount (at `"));
	/* The fixture's root, beside it: good. */
	f->sec.root = f->root;
	assert_int_equal(discover_check_root(&f->sec, own, err, sizeof(err)), 0);
	plugfs_own_mount_unref(own);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_found_in_creation_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_entries_skipped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mount_points_skipped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_roots, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_root_ancestors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_root_in_own_mount, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
