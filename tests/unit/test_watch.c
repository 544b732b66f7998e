/* SPDX-License-Identifier: MIT */
/*
 * The watcher (probe/watch.c) against the real kernel: directories and
 * sockets made and removed in a temporary directory, listeners in child
 * processes killed, and each fallback (no pidfd, the watch limit,
 * descriptors short, the excluded mount).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "rcstr.h"
#include "watch.h"

#define SETTLE_MS 5000

struct seen {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int64_t keys[256];
	unsigned what[256];
	size_t n;
};

struct fx {
	char dir[64];
	struct watch *w;
	struct seen seen;
	char *socks[128]; /* rcstr texts given to the watcher */
	size_t n_socks;
};

static void on_event(void *arg, int64_t key, unsigned what)
{
	struct seen *s = arg;

	pthread_mutex_lock(&s->mu);
	if (s->n < 256) {
		s->keys[s->n] = key;
		s->what[s->n++] = what;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

/* How many events of key with what (0: any) were seen. */
static size_t seen_count(struct fx *f, int64_t key, unsigned what)
{
	size_t c = 0;

	pthread_mutex_lock(&f->seen.mu);
	for (size_t i = 0; i < f->seen.n; i++)
		c += f->seen.keys[i] == key && (!what || f->seen.what[i] == what);
	pthread_mutex_unlock(&f->seen.mu);
	return c;
}

static void seen_clear(struct fx *f)
{
	pthread_mutex_lock(&f->seen.mu);
	f->seen.n = 0;
	pthread_mutex_unlock(&f->seen.mu);
}

/* Waits for an event of key with what (a hang guard of 5 s, not a bound). */
static bool wait_event(struct fx *f, int64_t key, unsigned what)
{
	struct timespec at;
	bool ok = false;

	clock_gettime(CLOCK_REALTIME, &at);
	at.tv_sec += 5;
	pthread_mutex_lock(&f->seen.mu);
	for (;;) {
		for (size_t i = 0; i < f->seen.n && !ok; i++)
			ok = f->seen.keys[i] == key && f->seen.what[i] == what;
		if (ok || pthread_cond_timedwait(&f->seen.cond, &f->seen.mu, &at) != 0)
			break;
	}
	for (size_t i = 0; i < f->seen.n && !ok; i++)
		ok = f->seen.keys[i] == key && f->seen.what[i] == what;
	pthread_mutex_unlock(&f->seen.mu);
	return ok;
}

static void start(struct fx *f, struct watch_options *o)
{
	char err[256];

	o->event = on_event;
	o->arg = &f->seen;
	assert_int_equal(watch_start(o, &f->w, err, sizeof(err)), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/plugfs-watch-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	pthread_mutex_init(&f->seen.mu, NULL);
	pthread_cond_init(&f->seen.cond, NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	watch_stop(f->w);
	for (size_t i = 0; i < f->n_socks; i++)
		rcstr_unref(f->socks[i]);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	pthread_mutex_destroy(&f->seen.mu);
	pthread_cond_destroy(&f->seen.cond);
	free(f);
	return 0;
}

/* "<dir>/<fmt...>" as an rcstr the fixture frees. */
__attribute__((format(printf, 2, 3))) static char *path(struct fx *f, const char *fmt, ...)
{
	char rel[1024], full[PATH_MAX];
	va_list ap;
	char *s;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "%s/%s", f->dir, rel);
	s = rcstr_new(full);
	assert_non_null(s);
	assert_true(f->n_socks < 128);
	f->socks[f->n_socks++] = s;
	return s;
}

/* A socket bound (and listening when listen_too) at p; its fd. */
static int bind_at(const char *p, bool listen_too)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", p);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	if (listen_too)
		assert_int_equal(listen(fd, 8), 0);
	return fd;
}

/* A child that listens on p until killed; its pid once it listens. */
static pid_t listener(const char *p)
{
	int ready[2];
	char c;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)bind_at(p, true);
		(void)!write(ready[1], "x", 1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	return pid;
}

static void test_socket_created_in_watched_dir(void **state)
{
	struct fx *f = *state;
	struct watch_options o = {0};
	struct watch_counts c;
	char *s = path(f, "csi.sock");
	int fd;

	start(f, &o);
	assert_int_equal(watch_add(f->w, 7, s), 0);
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(watch_of(f->w, 7), WATCH_HAS_DIR);
	watch_counts(f->w, &c);
	assert_int_equal(c.inotify, 1);
	assert_int_equal(c.dirs, 1);
	assert_int_equal(seen_count(f, 7, 0), 0); /* missing: nothing due */

	/* Another name in the directory is nobody's event. */
	close(bind_at(path(f, "other.sock"), false));
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(seen_count(f, 7, 0), 0);

	fd = bind_at(s, true);
	assert_true(wait_event(f, 7, WATCH_EV_SOCKET));
	close(fd);

	/* Removed, then created again: both seen. */
	seen_clear(f);
	assert_int_equal(unlink(s), 0);
	assert_true(wait_event(f, 7, WATCH_EV_SOCKET));
	seen_clear(f);
	fd = bind_at(s, true);
	assert_true(wait_event(f, 7, WATCH_EV_SOCKET));
	close(fd);

	/* Replaced by a rename over it. */
	seen_clear(f);
	close(bind_at(path(f, "new.sock"), true));
	assert_int_equal(rename(f->socks[f->n_socks - 1], s), 0);
	assert_true(wait_event(f, 7, WATCH_EV_SOCKET));
}

static void test_existing_socket_is_due(void **state)
{
	struct fx *f = *state;
	struct watch_options o = {0};
	char *s = path(f, "csi.sock");
	int fd = bind_at(s, true);

	start(f, &o);
	assert_int_equal(watch_add(f->w, 3, s), 0);
	/* It may have appeared between the caller's probe and the watch. */
	assert_true(wait_event(f, 3, WATCH_EV_SOCKET));
	close(fd);
}

static void test_missing_dirs_watched_from_above(void **state)
{
	struct fx *f = *state;
	struct watch_options o = {0};
	struct watch_counts c;
	char *s = path(f, "alloc/a1/csi.sock");
	char *a = path(f, "alloc"), *a1 = path(f, "alloc/a1");
	int fd;

	start(f, &o);
	assert_int_equal(watch_add(f->w, 1, s), 0);
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(watch_of(f->w, 1), WATCH_HAS_DIR);
	watch_counts(f->w, &c);
	assert_int_equal(c.dirs, 1); /* the temporary directory */

	assert_int_equal(mkdir(a, 0755), 0);
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	watch_counts(f->w, &c);
	assert_int_equal(c.dirs, 1); /* moved down: alloc/, the top one dropped */
	assert_int_equal(mkdir(a1, 0755), 0);
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(seen_count(f, 1, 0), 0);

	fd = bind_at(s, true);
	assert_true(wait_event(f, 1, WATCH_EV_SOCKET));
	close(fd);

	/* The directory goes with its socket: seen, and watched from above
	 * again; made anew, its socket is seen again. */
	seen_clear(f);
	assert_int_equal(unlink(s), 0);
	assert_int_equal(rmdir(a1), 0);
	assert_true(wait_event(f, 1, WATCH_EV_SOCKET));
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(watch_of(f->w, 1), WATCH_HAS_DIR);
	seen_clear(f);
	assert_int_equal(mkdir(a1, 0755), 0);
	fd = bind_at(s, true);
	assert_true(wait_event(f, 1, WATCH_EV_SOCKET));
	close(fd);
}

static void test_one_watch_per_directory(void **state)
{
	struct fx *f = *state;
	struct watch_options o = {0};
	struct watch_counts c;

	start(f, &o);
	for (int i = 0; i < 100; i++)
		assert_int_equal(watch_add(f->w, 100 + i, path(f, "s%d.sock", i)), 0);
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	watch_counts(f->w, &c);
	assert_int_equal(c.dirs, 1);
	assert_int_equal(c.inotify, 100);
	/* Only the socket created is due. */
	close(bind_at(f->socks[42], true));
	assert_true(wait_event(f, 142, WATCH_EV_SOCKET));
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(seen_count(f, 141, 0) + seen_count(f, 143, 0), 0);
	for (int i = 0; i < 100; i++)
		watch_remove(f->w, 100 + i);
	watch_counts(f->w, &c);
	assert_int_equal(c.dirs, 0);
	assert_int_equal(c.inotify + c.poll + c.pidfd, 0);
}

static void test_listener_exit(void **state)
{
	struct fx *f = *state;
	struct watch_options o = {0};
	struct watch_counts c;
	char *s = path(f, "csi.sock");
	pid_t pid = listener(s);

	start(f, &o);
	assert_int_equal(watch_add(f->w, 9, s), 0);
	assert_int_equal(watch_set_pid(f->w, 9, pid), 1);
	assert_int_equal(watch_set_pid(f->w, 9, pid), 0); /* has it */
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(watch_of(f->w, 9), WATCH_HAS_PIDFD | WATCH_HAS_DIR);
	/* A probe's word that its listener is pid (SO_PEERPIDFD): sure, not
	 * for another pid. */
	assert_int_equal(watch_sure_pid(f->w, 9, pid + 1), 0);
	assert_int_equal(watch_of(f->w, 9), WATCH_HAS_PIDFD | WATCH_HAS_DIR);
	assert_int_equal(watch_sure_pid(f->w, 9, pid), 1);
	assert_int_equal(watch_of(f->w, 9), WATCH_HAS_PIDFD | WATCH_HAS_DIR | WATCH_PID_SURE);
	assert_int_equal(watch_sure_pid(f->w, 12345, pid), -ENOENT);
	watch_counts(f->w, &c);
	assert_int_equal(c.pidfd, 1);
	assert_int_equal(c.inotify, 0);
	assert_int_equal(seen_count(f, 9, WATCH_EV_EXIT), 0);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_true(wait_event(f, 9, WATCH_EV_EXIT));
	/* The pidfd closed, sure goes with it. */
	assert_int_equal(watch_of(f->w, 9), WATCH_HAS_DIR);
	assert_int_equal(watch_sure_pid(f->w, 9, pid), 0);
	watch_counts(f->w, &c);
	assert_int_equal(c.pidfd, 0);
	assert_int_equal(c.inotify, 1);
	/* A gone pid has no pidfd. */
	assert_int_equal(watch_set_pid(f->w, 9, pid), -ESRCH);
	assert_int_equal(watch_set_pid(f->w, 12345, getpid()), -ENOENT);
}

static void test_no_pidfd_fallback(void **state)
{
	struct fx *f = *state;
	struct watch_options o = {.no_pidfd = true};
	struct watch_counts c;
	char *s = path(f, "csi.sock");

	start(f, &o);
	assert_int_equal(watch_add(f->w, 5, s), 0);
	assert_int_equal(watch_set_pid(f->w, 5, getpid()), -EPERM);
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(watch_of(f->w, 5), WATCH_HAS_DIR | WATCH_PID_REFUSED);
	watch_counts(f->w, &c);
	assert_int_equal(c.no_pidfd, 1);
	assert_int_equal(c.pidfd, 0);
	assert_int_equal(c.inotify, 1);
}

static void test_fds_short_fallback(void **state)
{
	struct fx *f = *state;
	struct rlimit rl;
	struct watch_options o = {0};
	struct watch_counts c;
	char *s = path(f, "csi.sock");

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	o.fd_reserve = (unsigned)rl.rlim_cur; /* nothing left for a pidfd */
	start(f, &o);
	assert_int_equal(watch_add(f->w, 6, s), 0);
	assert_int_equal(watch_set_pid(f->w, 6, getpid()), -EMFILE);
	watch_counts(f->w, &c);
	assert_int_equal(c.fds_short, 1);
	assert_int_equal(c.pidfd, 0);
}

static void test_watch_limit_fallback(void **state)
{
	struct fx *f = *state;
	struct watch_options o = {.max_watches = 1};
	struct watch_counts c;
	char *a = path(f, "a"), *b = path(f, "b");
	char *sa = path(f, "a/csi.sock"), *sb = path(f, "b/csi.sock");

	assert_int_equal(mkdir(a, 0755), 0);
	assert_int_equal(mkdir(b, 0755), 0);
	start(f, &o);
	assert_int_equal(watch_add(f->w, 1, sa), 0);
	assert_int_equal(watch_add(f->w, 2, sb), 0);
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(watch_of(f->w, 1), WATCH_HAS_DIR);
	assert_int_equal(watch_of(f->w, 2), 0);
	watch_counts(f->w, &c);
	assert_int_equal(c.dirs, 1);
	assert_int_equal(c.inotify, 1);
	assert_int_equal(c.poll, 1);
	assert_int_equal(c.watch_limit, 1);
	/* The one left out sees nothing: the rounds' to find. */
	close(bind_at(sb, true));
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(seen_count(f, 2, 0), 0);
}

static void test_excluded_mount(void **state)
{
	struct fx *f = *state;
	struct watch_options o = {0};
	struct watch_counts c;
	char *m = path(f, "mnt");
	char *s = path(f, "mnt/plugins/t/n/csi.sock");
	char *near = path(f, "mnt2/csi.sock");

	o.exclude = m;
	start(f, &o);
	assert_int_equal(watch_add(f->w, 1, s), 0);
	assert_int_equal(watch_add(f->w, 2, near), 0); /* a name that only begins so */
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(watch_of(f->w, 1), 0);
	assert_int_equal(watch_of(f->w, 2), WATCH_HAS_DIR);
	watch_counts(f->w, &c);
	assert_int_equal(c.poll, 1);
}

static void test_readd_other_socket(void **state)
{
	struct fx *f = *state;
	struct watch_options o = {0};
	char *s1 = path(f, "one.sock"), *s2 = path(f, "two.sock");
	pid_t pid = listener(s1);

	start(f, &o);
	assert_int_equal(watch_add(f->w, 1, s1), 0);
	assert_int_equal(watch_set_pid(f->w, 1, pid), 1);
	/* The same socket again keeps the pidfd; another one drops it. */
	assert_int_equal(watch_add(f->w, 1, s1), 0);
	assert_int_equal(watch_of(f->w, 1) & WATCH_HAS_PIDFD, WATCH_HAS_PIDFD);
	/* Its socket replaced: perhaps another listener, the pidfd is kept
	 * but no longer sure. */
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(watch_sure_pid(f->w, 1, pid), 1);
	seen_clear(f);
	assert_int_equal(unlink(s1), 0);
	close(bind_at(s1, true));
	assert_true(wait_event(f, 1, WATCH_EV_SOCKET));
	assert_int_equal(watch_of(f->w, 1) & (WATCH_HAS_PIDFD | WATCH_PID_SURE), WATCH_HAS_PIDFD);
	assert_int_equal(watch_add(f->w, 1, s2), 0);
	assert_int_equal(watch_of(f->w, 1) & WATCH_HAS_PIDFD, 0);
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	seen_clear(f);
	close(bind_at(s2, true));
	assert_true(wait_event(f, 1, WATCH_EV_SOCKET));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(watch_settle(f->w, SETTLE_MS), 0);
	assert_int_equal(seen_count(f, 1, WATCH_EV_EXIT), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_socket_created_in_watched_dir, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_existing_socket_is_due, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_dirs_watched_from_above, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_one_watch_per_directory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_listener_exit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_pidfd_fallback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fds_short_fallback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_watch_limit_fallback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_excluded_mount, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_readd_other_socket, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
