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
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "connector.h"
#include "clock.h"
#include "probe.h"
#include "probe_internal.h"
#include "registry.h"
#include "watch.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

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

/* Whether this kernel has SO_PEERPIDFD (Linux 6.5). */
static bool have_peerpidfd(void)
{
	int sv[2], pidfd = -1, rc;
	socklen_t len = sizeof(pidfd);

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	rc = getsockopt(sv[0], SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len);
	if (rc == 0)
		close(pidfd);
	close(sv[0]);
	close(sv[1]);
	return rc == 0;
}

/* The listener a probe names: this process, listening, is sure; a plugin
 * that daemonised (the process that called listen() forked the server and
 * exited, reaped) names no pid where SO_PEERPIDFD says it exited, and its
 * stale pid, not sure, with SO_PEERCRED alone. */
static void test_listener_identity(void **state)
{
	char mine[108], forked[108];
	int l = bound("mine.sock", true, 16, mine, sizeof(mine));
	const char *paths[] = {mine, forked};
	struct probe_result res[2];
	int pfd[2], life[2], st;
	pid_t parent, server = 0;

	(void)state;
	snprintf(forked, sizeof(forked), "%s/forked.sock", dir);
	assert_int_equal(pipe(pfd), 0);
	/* The server reads life[0] until this process closes life[1] or
	 * exits: none is left behind by a failed assertion. */
	assert_int_equal(pipe(life), 0);
	parent = fork();
	assert_true(parent >= 0);
	if (parent == 0) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		pid_t child;

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", forked);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
		    listen(fd, 16) != 0)
			_exit(1);
		child = fork();
		if (child == 0) {
			char c;

			close(pfd[1]);
			close(life[1]);
			_exit(read(life[0], &c, 1) < 0);
		}
		_exit(write(pfd[1], &child, sizeof(child)) == sizeof(child) ? 0 : 1);
	}
	close(pfd[1]);
	close(life[0]);
	assert_int_equal(read(pfd[0], &server, sizeof(server)), (ssize_t)sizeof(server));
	close(pfd[0]);
	assert_int_equal(waitpid(parent, &st, 0), parent);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	assert_int_equal(probe_connect_many(paths, 2, 1000, res), 0);
	assert_true(res[0].ok);
	assert_int_equal(res[0].pid, getpid());
	assert_true(res[1].ok); /* the server serves */
	assert_false(res[1].pid_sure);
	if (have_peerpidfd()) {
		assert_true(res[0].pid_sure);
		assert_int_equal(res[1].pid, 0); /* its listener exited */
	} else {
		assert_false(res[0].pid_sure);
		assert_int_equal(res[1].pid, parent); /* stale: anyone's by now */
	}
	close(life[1]);
	close(l);
}

/* Whether a round may leave a registration out (the watches' word). */
static void test_may_skip(void **state)
{
	const unsigned dir_w = WATCH_HAS_DIR, pidfd = WATCH_HAS_PIDFD, sure = WATCH_PID_SURE;
	struct reg_runtime alive = {.health = REG_HEALTH_ALIVE};
	struct reg_runtime failing = {
	    .health = REG_HEALTH_ALIVE, .failures = 1, .error = "connection refused"};
	struct reg_runtime missing = {
	    .health = REG_HEALTH_DEAD, .failures = 3, .error = "no such file"};
	struct reg_runtime refused = {
	    .health = REG_HEALTH_DEAD, .failures = 3, .error = "connection refused"};

	(void)state;
	/* Alive with the listener's own pidfd and a watched name. */
	assert_true(live_may_skip(REG_PROBE_CONNECT, &alive, dir_w | pidfd | sure));
	/* A pidfd of a pid alone (SO_PEERCRED, the listener perhaps gone and
	 * its pid reused, or not verified yet): connected to. */
	assert_false(live_may_skip(REG_PROBE_CONNECT, &alive, dir_w | pidfd));
	assert_false(live_may_skip(REG_PROBE_CONNECT, &alive, dir_w | pidfd | WATCH_PID_REFUSED));
	/* sure without a pidfd held says nothing. */
	assert_false(live_may_skip(REG_PROBE_CONNECT, &alive, dir_w | sure));
	/* No watched name, a failure counted, a csi probe (does it answer?). */
	assert_false(live_may_skip(REG_PROBE_CONNECT, &alive, pidfd | sure));
	assert_false(live_may_skip(REG_PROBE_CONNECT, &failing, dir_w | pidfd | sure));
	assert_false(live_may_skip(REG_PROBE_CSI, &alive, dir_w | pidfd | sure));
	/* Missing with its name watched: its creation would be seen. */
	assert_true(live_may_skip(REG_PROBE_CONNECT, &missing, dir_w));
	assert_true(live_may_skip(REG_PROBE_CSI, &missing, dir_w));
	assert_false(live_may_skip(REG_PROBE_CONNECT, &missing, 0));
	assert_false(live_may_skip(REG_PROBE_CONNECT, &refused, dir_w | pidfd | sure));
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

/* A connector keeps the socket of a connect that failed (missing,
 * refused) for its next connect: after failures, a live socket is still
 * connected for real (its listener accepts the connection) and a refused
 * or missing one still fails, in every order, over several rounds. */
static void test_connect_after_failures(void **state)
{
	enum { N = 2 * PROBE_MAX_INFLIGHT + 3 };
	static char path[N][108];
	const char *paths[N];
	struct probe_result res[N];
	int fd[N];

	(void)state;
	for (size_t i = 0; i < N; i++) {
		char name[32];

		snprintf(name, sizeof(name), "after%zu.sock", i);
		paths[i] = path[i];
		fd[i] = -1;
		if (i % 3 == 0) /* missing */
			snprintf(path[i], sizeof(path[i]), "%s/%s", dir, name);
		else /* live (i % 3 == 1) or refused (bound, not listening) */
			fd[i] = bound(name, i % 3 == 1, 4, path[i], sizeof(path[i]));
	}
	for (int round = 0; round < 3; round++) {
		assert_int_equal(probe_connect_many(paths, N, 1000, res), 0);
		for (size_t i = 0; i < N; i++) {
			assert_int_equal(res[i].ok, i % 3 == 1);
			assert_string_equal(res[i].error, i % 3 == 0   ? "no such file"
							  : i % 3 == 2 ? "connection refused"
								       : "");
			if (i % 3 == 1) {
				/* The probe's connection reached the listener. */
				struct pollfd p = {.fd = fd[i], .events = POLLIN};
				int c;

				assert_int_equal(poll(&p, 1, 5000), 1);
				c = accept(fd[i], NULL, NULL);
				assert_true(c >= 0);
				close(c);
			}
		}
	}
	for (size_t i = 0; i < N; i++)
		if (fd[i] >= 0)
			close(fd[i]);
}

/* The connects of a round that keeps up run on few connector threads (one,
 * unless one of them was slow), not one thread per connect; a job given up
 * while queued or running is freed by its thread (ASan checks). */
static void test_connector_threads(void **state)
{
	enum { N = 4 * PROBE_MAX_INFLIGHT };
	static char path[N][108];
	const char *paths[N];
	struct probe_result res[N];
	struct connector_batch *b;
	unsigned threads, busy, slot;
	int fd, e;

	(void)state;
	for (size_t i = 0; i < N; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/none%zu.sock", dir, i);
		paths[i] = path[i];
	}
	assert_int_equal(probe_connect_many(paths, N, 1000, res), 0);
	for (size_t i = 0; i < N; i++) {
		assert_false(res[i].ok);
		assert_string_equal(res[i].error, "no such file");
	}
	connector_counts(&threads, &busy);
	assert_in_range(threads, 1, 4);
	assert_int_equal(busy, 0);

	b = connector_batch_new();
	assert_non_null(b);
	assert_int_equal(connector_start(b, 0, path[0]), 0);
	assert_int_equal(connector_start(b, 0, path[1]), -EINVAL); /* slot taken */
	assert_int_equal(connector_start(b, CONNECTOR_BATCH_SLOTS, path[1]), -EINVAL);
	for (unsigned s = 1; s < CONNECTOR_BATCH_SLOTS; s++)
		assert_int_equal(connector_start(b, s, path[s]), 0);
	connector_abandon(b, 1);
	/* The rest return, each once, with its errno. */
	for (unsigned got = 0; got < CONNECTOR_BATCH_SLOTS - 1;) {
		struct pollfd p = {.fd = connector_batch_fd(b), .events = POLLIN};

		assert_true(poll(&p, 1, 5000) == 1);
		while (connector_next(b, &slot, &fd, &e)) {
			assert_int_not_equal(slot, 1);
			assert_int_equal(fd, -1);
			assert_int_equal(e, ENOENT);
			got++;
		}
	}
	assert_false(connector_next(b, &slot, &fd, &e));
	/* Many under one lock: each job's own outcome. */
	{
		const unsigned sl[] = {3, 3, CONNECTOR_BATCH_SLOTS, 4};
		const char *p[] = {path[3], path[4], path[5], path[6]};
		int rc[4];

		connector_start_many(b, sl, p, 4, rc);
		assert_int_equal(rc[0], 0);
		assert_int_equal(rc[1], -EINVAL); /* slot 3 taken by the first */
		assert_int_equal(rc[2], -EINVAL);
		assert_int_equal(rc[3], 0);
		for (unsigned got = 0; got < 2;) {
			struct pollfd pl = {.fd = connector_batch_fd(b), .events = POLLIN};

			assert_true(poll(&pl, 1, 5000) == 1);
			while (connector_next(b, &slot, &fd, &e)) {
				assert_true(slot == 3 || slot == 4);
				assert_int_equal(e, ENOENT);
				got++;
			}
		}
	}
	assert_int_equal(connector_start(b, 2, path[2]), 0);
	connector_batch_free(b); /* abandons slot 2 */
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
	assert_null(a.error);
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
	struct probe_options po = {.policy = {.dflt = {REG_PROBE_CONNECT, 100, 200, 2}},
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
	probe_first("csi-node", "/nonexistent/x.sock", REG_PROBE_DEFAULT, NULL, &po, &rt);
	assert_int_equal(rt.health, REG_HEALTH_DEAD);
	assert_string_equal(rt.error, "no such file");
	assert_int_equal(rt.probed_at, 1000);
	probe_first("csi-node", a0, REG_PROBE_DEFAULT, NULL, &po, &rt);
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
	struct probe_options po = {.policy = {.dflt = {REG_PROBE_CONNECT, 50, 100, 1}}};
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
	po.policy.dflt.mode = REG_PROBE_NONE;
	assert_int_equal(prober_start(r, &po, &p, err, sizeof(err)), 0);
	assert_null(p);
	prober_stop(NULL);
	registry_close(r);
	close(l0);
}

/* The health of alloc of type/p. */
static enum reg_health health_of(struct registry *r, const char *type, const char *alloc)
{
	enum reg_health h = REG_HEALTH_UNKNOWN;
	struct reg_plugin p;

	assert_int_equal(registry_get_plugin(r, type, "p", &p), 0);
	for (size_t i = 0; i < p.n_regs; i++)
		if (strcmp(p.regs[i].alloc, alloc) == 0)
			h = p.regs[i].runtime.health;
	reg_plugin_free_contents(&p);
	return h;
}

/* Each type by its own settings: csi-node connect with failures 1,
 * csi-controller connect with failures 3, csi-other none (never probed). */
static void test_round_per_type(void **state)
{
	static const char *const types[] = {"csi-node", "csi-controller", "csi-other"};
	const struct registry_options ro = {
	    .types = types, .n_types = 3, .tombstone_ttl = 60, .synchronous = "off"};
	const struct reg_probe_type to[] = {
	    {"csi-node", {REG_PROBE_CONNECT, 100, 200, 1}},
	    {"csi-controller", {REG_PROBE_CONNECT, 100, 300, 3}},
	    {"csi-other", {REG_PROBE_NONE, 100, 200, 1}},
	};
	struct probe_options po = {
	    .policy = {.dflt = {REG_PROBE_CSI, 5000, 1000, 7}, .types = to, .n_types = 3},
	    .now = fixed_now};
	struct reg_probe_settings st;
	char a0[108], err[REG_ERR_MAX] = "";
	struct registry *r = NULL;
	struct prober *p = NULL;
	int l0 = bound("pt.sock", true, 4, a0, sizeof(a0));
	struct reg_spec s0 = {.name = "p", .alloc = "a0", .socket = a0};
	struct reg_runtime rt;

	(void)state;
	reg_probe_settings_of(&po.policy, "csi-controller", REG_PROBE_DEFAULT, &st);
	assert_int_equal(st.mode, REG_PROBE_CONNECT);
	assert_int_equal(st.timeout_ms, 300);
	assert_int_equal(st.failures, 3);
	reg_probe_settings_of(&po.policy, "not-listed", REG_PROBE_DEFAULT, &st);
	assert_int_equal(st.mode, REG_PROBE_CSI);
	assert_int_equal(st.interval_ms, 5000);
	assert_int_equal(st.failures, 7);
	assert_true(probe_enabled(&po));
	assert_int_equal(registry_open(":memory:", &ro, &r, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, types, 3, &s0, err, sizeof(err)), 0);
	/* csi-other is not probed: 2 of 3. */
	assert_int_equal(probe_round(r, &po), 2);
	assert_int_equal(health_of(r, "csi-node", "a0"), REG_HEALTH_ALIVE);
	assert_int_equal(health_of(r, "csi-controller", "a0"), REG_HEALTH_ALIVE);
	assert_int_equal(health_of(r, "csi-other", "a0"), REG_HEALTH_UNKNOWN);
	close(l0);
	unlink(a0);
	assert_int_equal(probe_round_type(r, &po, "csi-node"), 1);
	assert_int_equal(health_of(r, "csi-node", "a0"), REG_HEALTH_DEAD);
	assert_int_equal(health_of(r, "csi-controller", "a0"), REG_HEALTH_ALIVE);
	assert_int_equal(probe_round(r, &po), 2);
	assert_int_equal(health_of(r, "csi-controller", "a0"), REG_HEALTH_ALIVE); /* 1 of 3 */
	assert_int_equal(probe_round(r, &po), 2);
	assert_int_equal(health_of(r, "csi-controller", "a0"), REG_HEALTH_ALIVE); /* 2 of 3 */
	assert_int_equal(probe_round(r, &po), 2);
	assert_int_equal(health_of(r, "csi-controller", "a0"), REG_HEALTH_DEAD);
	assert_int_equal(health_of(r, "csi-other", "a0"), REG_HEALTH_UNKNOWN);
	/* The first probe of a type whose mode is none: unknown, not probed. */
	rt.health = REG_HEALTH_DEAD;
	probe_first("csi-other", "/nonexistent/x.sock", REG_PROBE_DEFAULT, NULL, &po, &rt);
	assert_int_equal(rt.health, REG_HEALTH_UNKNOWN);
	assert_int_equal(rt.probed_at, 0);
	/* The prober: threads for the probed types only; all none: nothing. */
	assert_int_equal(prober_start(r, &po, &p, err, sizeof(err)), 0);
	assert_non_null(p);
	prober_stop(p);
	po.policy.dflt.mode = REG_PROBE_NONE;
	po.policy.n_types = 1;
	po.policy.types = &to[2];
	assert_false(probe_enabled(&po));
	assert_int_equal(prober_start(r, &po, &p, err, sizeof(err)), 0);
	assert_null(p);
	registry_close(r);
}

/* The mode a registration of type with its own probe is probed with. */
static enum reg_probe mode_of(const struct probe_options *o, const char *type, enum reg_probe own)
{
	struct reg_probe_settings s;

	reg_probe_settings_of(&o->policy, type, own, &s);
	return s.mode;
}

/* A registration's own mode over its type's: connect in a type whose mode
 * is none is probed; none in a probed type is not, and goes back to
 * unknown. */
static void test_round_override(void **state)
{
	static const char *const types[] = {"csi-node", "csi-other"};
	const struct registry_options ro = {
	    .types = types, .n_types = 2, .tombstone_ttl = 60, .synchronous = "off"};
	const struct reg_probe_type to[] = {
	    {"csi-node", {REG_PROBE_CONNECT, 100, 200, 1}},
	    {"csi-other", {REG_PROBE_NONE, 100, 200, 1}},
	};
	struct probe_options po = {
	    .policy = {.dflt = {REG_PROBE_NONE, 100, 200, 1}, .types = to, .n_types = 2},
	    .now = fixed_now};
	char err[REG_ERR_MAX] = "";
	struct registry *r = NULL;
	struct reg_spec s0 = {.name = "p",
			      .alloc = "a0",
			      .socket = "/nonexistent/o.sock",
			      .probe = REG_PROBE_CONNECT};
	struct reg_runtime rt;

	(void)state;
	assert_int_equal(mode_of(&po, "csi-other", REG_PROBE_DEFAULT), REG_PROBE_NONE);
	assert_int_equal(mode_of(&po, "csi-other", REG_PROBE_CSI), REG_PROBE_CSI);
	assert_int_equal(mode_of(&po, "csi-node", REG_PROBE_NONE), REG_PROBE_NONE);
	assert_int_equal(registry_open(":memory:", &ro, &r, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, &types[1], 1, &s0, err, sizeof(err)), 0);
	assert_int_equal(probe_round(r, &po), 1);
	assert_int_equal(health_of(r, "csi-other", "a0"), REG_HEALTH_DEAD);
	/* Registered again with probe none: not probed, back to unknown. */
	s0.probe = REG_PROBE_NONE;
	assert_int_equal(registry_register(r, &types[1], 1, &s0, err, sizeof(err)), 0);
	assert_int_equal(health_of(r, "csi-other", "a0"), REG_HEALTH_DEAD); /* kept by the update */
	assert_int_equal(probe_round(r, &po), 0);
	assert_int_equal(health_of(r, "csi-other", "a0"), REG_HEALTH_UNKNOWN);
	/* The same in a probed type. */
	assert_int_equal(registry_register(r, &types[0], 1, &s0, err, sizeof(err)), 0);
	assert_int_equal(probe_round_type(r, &po, "csi-node"), 0);
	assert_int_equal(health_of(r, "csi-node", "a0"), REG_HEALTH_UNKNOWN);
	/* probe_first by the override. */
	probe_first("csi-other", "/nonexistent/x.sock", REG_PROBE_CONNECT, NULL, &po, &rt);
	assert_int_equal(rt.health, REG_HEALTH_DEAD);
	probe_first("csi-node", "/nonexistent/x.sock", REG_PROBE_NONE, NULL, &po, &rt);
	assert_int_equal(rt.health, REG_HEALTH_UNKNOWN);
	registry_close(r);
}

/* prober_stop does not wait for a round of hung probes: a csi probe of a
 * socket that takes its connection and request and never answers has a
 * 30 s timeout; the stop comes back long before it (the margin: a third of
 * it, a functional bound, not a timing). */
static void test_stop_cancels_hung_round(void **state)
{
	static const char *const types[] = {"csi-node"};
	const struct registry_options ro = {
	    .types = types, .n_types = 1, .tombstone_ttl = 60, .synchronous = "off"};
	struct probe_options po = {.policy = {.dflt = {REG_PROBE_CSI, 50, 30000, 1}}};
	char h0[108], err[REG_ERR_MAX] = "";
	struct registry *r = NULL;
	struct prober *p = NULL;
	int l0 = bound("hung.sock", true, 16, h0, sizeof(h0));
	struct reg_spec s0 = {.name = "p", .alloc = "a0", .socket = h0};
	struct pollfd pfd = {.events = POLLIN};
	char preface[24];
	int64_t t0;
	int c0;

	(void)state;
	assert_int_equal(probe_global_init(), 0);
	assert_int_equal(registry_open(":memory:", &ro, &r, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, types, 1, &s0, err, sizeof(err)), 0);
	assert_int_equal(prober_start(r, &po, &p, err, sizeof(err)), 0);
	/* A round is under way: its probe connected (the connect probe's
	 * connection first, closed at once, then libcurl's) and sent its
	 * request, HTTP/2's client preface first, which nobody answers. */
	pfd.fd = l0;
	for (int i = 0;; i++) {
		assert_true(i < 16);
		assert_int_equal(poll(&pfd, 1, 20000), 1);
		c0 = accept(l0, NULL, NULL);
		assert_true(c0 >= 0);
		if (recv(c0, preface, sizeof(preface), MSG_WAITALL) == (ssize_t)sizeof(preface))
			break;
		close(c0); /* the connect probe's */
	}
	assert_memory_equal(preface, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", sizeof(preface));
	t0 = plugfs_mono_ms();
	prober_stop(p);
	assert_true(plugfs_mono_ms() - t0 < 10000);
	assert_int_equal(health_of(r, "csi-node", "a0"), REG_HEALTH_UNKNOWN); /* nothing applied */
	registry_close(r);
	close(c0);
	close(l0);
	probe_global_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_connect_outcomes),
	    cmocka_unit_test(test_listener_identity),
	    cmocka_unit_test(test_may_skip),
	    cmocka_unit_test(test_connect_many),
	    cmocka_unit_test(test_connect_after_failures),
	    cmocka_unit_test(test_connector_threads),
	    cmocka_unit_test(test_out_of_fds_skipped),
	    cmocka_unit_test(test_hysteresis),
	    cmocka_unit_test(test_round_moves_active),
	    cmocka_unit_test(test_prober_thread),
	    cmocka_unit_test(test_round_per_type),
	    cmocka_unit_test(test_round_override),
	    cmocka_unit_test(test_stop_cancels_hung_round),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
