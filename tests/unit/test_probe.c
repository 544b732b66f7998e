/* SPDX-License-Identifier: MIT */
/*
 * The connect probe against real sockets, the hysteresis, and a probe
 * round that moves the active registration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/resource.h>
#include <unistd.h>

#include "probe.h"
#include "registry.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/plugfs-probe-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* A socket bound at dir/name; listening with backlog when listen_ok. */
static int bound(const char *name, bool listen_ok, int backlog, char *path, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	snprintf(path, len, "%s/%s", dir, name);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (listen_ok)
		assert_int_equal(listen(fd, backlog), 0);
	return fd;
}

static void test_connect_outcomes(void **state)
{
	char live[108], refused[108], full[108], missing[108];
	int l = bound("live.sock", true, 16, live, sizeof(live));
	int r = bound("refused.sock", false, 0, refused, sizeof(refused));
	int f = bound("full.sock", true, 0, full, sizeof(full));
	const char *paths[] = {live, refused, full, missing, "/x/" /* not a socket */};
	struct probe_result res[5];
	int filler[4];

	(void)state;
	snprintf(missing, sizeof(missing), "%s/missing.sock", dir);
	/* Fill the backlog of full.sock: nobody accepts. */
	for (size_t i = 0; i < 4; i++) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};

		filler[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", full);
		(void)connect(filler[i], (struct sockaddr *)&sa, sizeof(sa));
	}
	assert_int_equal(probe_connect_many(paths, 5, 200, res), 0);
	assert_true(res[0].ok);
	assert_string_equal(res[0].error, "");
	assert_false(res[1].ok);
	assert_string_equal(res[1].error, "connection refused");
	assert_true(res[2].ok); /* EAGAIN: there, busy */
	assert_false(res[3].ok);
	assert_string_equal(res[3].error, "no such file");
	assert_false(res[4].ok);
	for (size_t i = 0; i < 4; i++)
		close(filler[i]);
	close(l);
	close(r);
	close(f);
}

/* More sockets than fit in one poll set. */
static void test_connect_many(void **state)
{
	enum { N = 3 * PROBE_MAX_INFLIGHT + 5 };
	static char path[N][108];
	const char *paths[N];
	struct probe_result res[N];
	int fd[N];

	(void)state;
	for (size_t i = 0; i < N; i++) {
		char name[32];

		snprintf(name, sizeof(name), "s%zu.sock", i);
		fd[i] = bound(name, i % 2 == 0, 4, path[i], sizeof(path[i]));
		paths[i] = path[i];
	}
	assert_int_equal(probe_connect_many(paths, N, 500, res), 0);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(res[i].ok, i % 2 == 0);
		close(fd[i]);
	}
	assert_int_equal(probe_connect_many(NULL, 0, 500, NULL), 0);
}

/* With no fd left, a probe learns nothing of the plugin: it is skipped and
 * an alive registration stays alive (a daemon at its fd limit must not
 * declare every plugin dead). */
static void test_out_of_fds_skipped(void **state)
{
	char live[108];
	int l = bound("live2.sock", true, 16, live, sizeof(live));
	const char *paths[] = {live};
	struct probe_result res[1];
	struct reg_runtime alive = {.health = REG_HEALTH_ALIVE, .probed_at = 5, .since = 3};
	struct reg_runtime rt;
	struct rlimit old, low;
	int fds[64], n = 0;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 64 && (fds[n] = dup(0)) >= 0)
		n++;
	assert_int_equal(errno, EMFILE);
	assert_int_equal(probe_connect_many(paths, 1, 200, res), 0);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_false(res[0].ok);
	assert_true(res[0].skipped);
	probe_next_runtime(&alive, &res[0], 1, 99, &rt);
	assert_int_equal(rt.health, REG_HEALTH_ALIVE);
	assert_int_equal(rt.failures, 0);
	assert_int_equal(rt.probed_at, 5);
	/* With fds again, the same socket probes alive. */
	assert_int_equal(probe_connect_many(paths, 1, 200, res), 0);
	assert_true(res[0].ok);
	assert_false(res[0].skipped);
	close(l);
}

static void test_hysteresis(void **state)
{
	const struct probe_result ok = {.ok = true};
	struct probe_result bad = {.ok = false};
	struct reg_runtime a = {0}, b;

	(void)state;
	snprintf(bad.error, sizeof(bad.error), "connection refused");
	/* Unknown, first probe fails: dead at once. */
	probe_next_runtime(&a, &bad, 3, 10, &b);
	assert_int_equal(b.health, REG_HEALTH_DEAD);
	assert_int_equal(b.failures, 1);
	assert_int_equal(b.since, 10);
	assert_int_equal(b.probed_at, 10);
	assert_string_equal(b.error, "connection refused");
	/* One success: alive again. */
	probe_next_runtime(&b, &ok, 3, 11, &a);
	assert_int_equal(a.health, REG_HEALTH_ALIVE);
	assert_int_equal(a.failures, 0);
	assert_int_equal(a.since, 11);
	assert_string_equal(a.error, "");
	/* Alive: dead only after 3 consecutive failures. */
	probe_next_runtime(&a, &bad, 3, 12, &b);
	assert_int_equal(b.health, REG_HEALTH_ALIVE);
	assert_int_equal(b.failures, 1);
	assert_int_equal(b.since, 11);
	probe_next_runtime(&b, &bad, 3, 13, &a);
	assert_int_equal(a.health, REG_HEALTH_ALIVE);
	probe_next_runtime(&a, &bad, 3, 14, &b);
	assert_int_equal(b.health, REG_HEALTH_DEAD);
	assert_int_equal(b.failures, 3);
	assert_int_equal(b.since, 14);
	/* A success in between resets the count. */
	probe_next_runtime(&b, &ok, 3, 15, &a);
	probe_next_runtime(&a, &bad, 3, 16, &b);
	probe_next_runtime(&b, &ok, 3, 17, &a);
	probe_next_runtime(&a, &bad, 3, 18, &b);
	assert_int_equal(b.health, REG_HEALTH_ALIVE);
	assert_int_equal(b.failures, 1);
	/* failures = 1: dead on the first failure. */
	probe_next_runtime(&a, &bad, 1, 19, &b);
	assert_int_equal(b.health, REG_HEALTH_DEAD);
}

static int64_t fixed_now(void *arg)
{
	(void)arg;
	return 1000;
}

static const char *active_of(struct registry *r)
{
	static char buf[64];
	struct reg_plugin p;

	assert_int_equal(registry_get_plugin(r, "csi-node", "p", &p), 0);
	snprintf(buf, sizeof(buf), "%s", reg_plugin_active(&p)->alloc);
	reg_plugin_free_contents(&p);
	return buf;
}

static void test_round_moves_active(void **state)
{
	static const char *const types[] = {"csi-node"};
	const struct registry_options ro = {
	    .types = types, .n_types = 1, .tombstone_ttl = 60, .synchronous = "off"};
	struct probe_options po = {.enabled = true,
				   .interval_ms = 100,
				   .timeout_ms = 200,
				   .failures = 2,
				   .now = fixed_now};
	char a0[108], a1[108], err[REG_ERR_MAX] = "";
	struct registry *r = NULL;
	int l0 = bound("a0.sock", true, 4, a0, sizeof(a0));
	int l1 = bound("a1.sock", true, 4, a1, sizeof(a1));
	struct reg_spec s0 = {.name = "p", .alloc = "a0", .socket = a0};
	struct reg_spec s1 = {.name = "p", .alloc = "a1", .socket = a1};
	struct reg_runtime rt;

	(void)state;
	assert_int_equal(registry_open(":memory:", &ro, &r, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, types, 1, &s0, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, types, 1, &s1, err, sizeof(err)), 0);
	assert_int_equal(probe_round(r, &po), 2);
	assert_string_equal(active_of(r), "a1");
	/* a1 dies: after `failures' rounds a0 takes over. */
	close(l1);
	unlink(a1);
	assert_int_equal(probe_round(r, &po), 2);
	assert_string_equal(active_of(r), "a1");
	assert_int_equal(probe_round(r, &po), 2);
	assert_string_equal(active_of(r), "a0");
	/* It comes back on the same socket: one round switches back. */
	l1 = bound("a1.sock", true, 4, a1, sizeof(a1));
	assert_int_equal(probe_round(r, &po), 2);
	assert_string_equal(active_of(r), "a1");
	/* probe_first of a missing socket: dead at once. */
	probe_first("/nonexistent/x.sock", &po, &rt);
	assert_int_equal(rt.health, REG_HEALTH_DEAD);
	assert_string_equal(rt.error, "no such file");
	assert_int_equal(rt.probed_at, 1000);
	probe_first(a0, &po, &rt);
	assert_int_equal(rt.health, REG_HEALTH_ALIVE);
	registry_close(r);
	close(l0);
	close(l1);
}

static void test_prober_thread(void **state)
{
	static const char *const types[] = {"csi-node"};
	const struct registry_options ro = {
	    .types = types, .n_types = 1, .tombstone_ttl = 60, .synchronous = "off"};
	struct probe_options po = {
	    .enabled = true, .interval_ms = 50, .timeout_ms = 100, .failures = 1};
	char a0[108], err[REG_ERR_MAX] = "";
	struct registry *r = NULL;
	struct prober *p = NULL;
	int l0 = bound("t0.sock", true, 4, a0, sizeof(a0));
	struct reg_spec s0 = {.name = "p", .alloc = "a0", .socket = a0};
	struct reg_spec s1 = {.name = "p", .alloc = "a1", .socket = "/nonexistent/a1.sock"};

	(void)state;
	assert_int_equal(registry_open(":memory:", &ro, &r, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, types, 1, &s0, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, types, 1, &s1, err, sizeof(err)), 0);
	assert_string_equal(active_of(r), "a1"); /* unknown counts as alive */
	assert_int_equal(prober_start(r, &po, &p, err, sizeof(err)), 0);
	assert_non_null(p);
	for (int i = 0; i < 100 && strcmp(active_of(r), "a0") != 0; i++)
		usleep(20000);
	assert_string_equal(active_of(r), "a0");
	prober_stop(p);
	/* Disabled: no thread. */
	po.enabled = false;
	assert_int_equal(prober_start(r, &po, &p, err, sizeof(err)), 0);
	assert_null(p);
	prober_stop(NULL);
	registry_close(r);
	close(l0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_connect_outcomes), cmocka_unit_test(test_connect_many),
	    cmocka_unit_test(test_out_of_fds_skipped),
	    cmocka_unit_test(test_hysteresis),	     cmocka_unit_test(test_round_moves_active),
	    cmocka_unit_test(test_prober_thread),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
