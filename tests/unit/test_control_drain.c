/* SPDX-License-Identifier: MIT */
/*
 * The control server's drain before a handover
 * (control_server_stop_keep_listener): a request read before it is
 * answered, a request sent after it fails at the client without being
 * taken, no connection is reset, and the kept listening socket serves the
 * next server, which answers what waited in its backlog.  The drain's own
 * counts (control_server_internal.h's test-only drain_report) show that the
 * request read during it was answered by it, not before it began.
 *
 * A register's first probe runs on a probe thread (control/firstprobe.c):
 * while one hangs the server answers the others, a later mutation of the
 * same plugin waits behind it (arrival order kept), and a drain gives up
 * on it after CTL_DRAIN_PROBE_MS, closing its client unanswered (nothing
 * stored: the client sends it again to the next server).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "control.h"
#include "control_server_internal.h"
#include "clock.h"

static const char *const types[] = {"csi-controller", "csi-node"};

/* The probe of alloc `slow' holds its probe thread until released, or until
 * the server cancels it. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool entered, released;
	unsigned cancelled; /* probes that ended by the server's cancel */
};

static void gate_probe(const char *type, const struct reg_spec *spec, const bool *cancel,
		       struct reg_runtime *out, void *arg)
{
	struct gate *g = arg;

	(void)type;
	*out = (struct reg_runtime){.health = REG_HEALTH_ALIVE};
	if (strcmp(spec->alloc, "slow") != 0)
		return;
	pthread_mutex_lock(&g->mu);
	g->entered = true;
	pthread_cond_broadcast(&g->cond);
	while (!g->released && !__atomic_load_n(cancel, __ATOMIC_ACQUIRE)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&g->cond, &g->mu, &ts);
	}
	if (!g->released)
		g->cancelled++;
	pthread_mutex_unlock(&g->mu);
}

static void gate_wait_entered(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	while (!g->entered)
		pthread_cond_wait(&g->cond, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static void gate_release(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->released = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->mu);
}

static struct control_server *start(struct registry *reg, const char *sock, struct gate *g,
				    int inherit_fd)
{
	struct control_options o = {
	    .socket_path = sock,
	    .group = "",
	    .max_clients = 16,
	    .mountpoint = "/mnt/test",
	    .state_path = ":memory:",
	    .inherit_listen_fd = inherit_fd >= 0,
	    .listen_fd = inherit_fd,
	    .probe = gate_probe,
	    .probe_arg = g,
	};
	struct control_server *srv = NULL;
	char err[512] = "";

	if (control_server_start(reg, &o, &srv, err, sizeof(err)) != 0)
		fail_msg("control_server_start: %s", err);
	return srv;
}

static int raw_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static char *reg_line(const char *alloc)
{
	static char buf[256];

	snprintf(
	    buf, sizeof(buf),
	    "{\"op\":\"register\",\"types\":[\"csi-node\"],\"name\":\"drain\",\"alloc\":\"%s\","
	    "\"socket\":\"/run/alloc/%s/csi.sock\"}\n",
	    alloc, alloc);
	return buf;
}

/* send() of n bytes: 0, or -errno. */
static int send_bytes(int fd, const char *s, size_t n)
{
	return send(fd, s, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -errno;
}

/* One answer line on fd: "ok", "error", "eof" or "reset" (10 s at most). */
static const char *answer(int fd)
{
	static char buf[65536];
	json_t *resp = NULL;
	char err[256];
	int rc = control_recv(fd, &resp, 10000, err, sizeof(err));
	const char *what;

	if (rc == 0) {
		what = control_response_error(resp, NULL) ? "error" : "ok";
		json_decref(resp);
		return what;
	}
	/* control_recv maps both to -ECONNABORTED: tell them apart. */
	if (rc == -ECONNABORTED) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		return n == 0 ? "eof" : errno == ECONNRESET ? "reset" : "closed";
	}
	fail_msg("recv: %s", err);
	return NULL;
}

/* A handover on its own thread (it returns once the drain is done). */
struct handover {
	struct control_server *srv;
	int fd; /* the kept listening socket */
	/* Set by the stopping thread once it asked for the drain. */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool asked;
};

static void stop_asked(void *arg)
{
	struct handover *h = arg;

	pthread_mutex_lock(&h->mu);
	h->asked = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->mu);
}

static void *stop_keep(void *arg)
{
	struct handover *h = arg;

	h->fd = control_server_stop_keep_listener(h->srv);
	return NULL;
}

/* The allocs registered under csi-node/drain, space separated, sorted by
 * the answer (seq, newest first). */
static void allocs(const char *sock, char *out, size_t len)
{
	json_t *req =
	    json_pack("{s:s, s:s, s:s}", "op", "show", "type", "csi-node", "name", "drain");
	json_t *resp = NULL, *r;
	char err[256];
	size_t i;

	assert_int_equal(control_call(sock, req, &resp, 5000, err, sizeof(err)), 0);
	out[0] = '\0';
	json_array_foreach(json_object_get(json_object_get(resp, "plugin"), "registrations"), i, r)
	{
		size_t l = strlen(out);

		snprintf(out + l, len - l, "%s%s", l ? " " : "",
			 json_string_value(json_object_get(r, "alloc")));
	}
	json_decref(resp);
	json_decref(req);
}

/* A line of another request: {"op":OP} plus the rest. */
static int send_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int send_line(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return send_bytes(fd, buf, (size_t)n);
}

/* Whether fd has nothing to read for ms. */
static bool quiet_for(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ms) == 0;
}

/* The answer's "removed". */
static long long removed_of(int fd)
{
	json_t *resp = NULL;
	char err[256];
	long long n;

	assert_int_equal(control_recv(fd, &resp, 10000, err, sizeof(err)), 0);
	n = json_integer_value(json_object_get(resp, "removed"));
	json_decref(resp);
	return n;
}

static const char status_line[] = "{\"op\":\"status\"}\n";

/* How many requests of op the server parsed (its metrics). */
static long requests_of(const char *sock, const char *op)
{
	json_t *req = json_pack("{s:s}", "op", "metrics"), *resp = NULL;
	char err[256], want[128];
	const char *text, *at;
	long n = -1;

	assert_int_equal(control_call(sock, req, &resp, 5000, err, sizeof(err)), 0);
	text = json_string_value(json_object_get(resp, "metrics"));
	assert_non_null(text);
	snprintf(want, sizeof(want), "plugfs_control_requests_total{op=\"%s\"} ", op);
	at = strstr(text, want);
	if (at)
		n = strtol(at + strlen(want), NULL, 10);
	json_decref(resp);
	json_decref(req);
	return n;
}

/* Waits (5 s at most) until the server parsed n requests of op: a line
 * sent on another connection after it comes after it. */
static void wait_requests(const char *sock, const char *op, long n)
{
	for (int i = 0; i < 500 && requests_of(sock, op) < n; i++)
		usleep(10000);
	assert_int_equal(requests_of(sock, op), n);
}

static void test_drain_answers_what_was_read(void **state)
{
	char dir[] = "/tmp/plugfs-drain-XXXXXX", sock[128], got[256], two[512];
	struct registry_options ro = {
	    .types = types, .n_types = 2, .tombstone_ttl = 86400, .synchronous = "off"};
	struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0};
	struct registry *reg = NULL;
	struct handover sk = {NULL, -1, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
	struct ctl_drain report = {0};
	pthread_t t;
	char err[512];
	int slow, b1, idle, half, later;
	const char *half_line;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/ctl.sock", dir);
	assert_int_equal(registry_open(":memory:", &ro, &reg, err, sizeof(err)), 0);
	sk.srv = start(reg, sock, &g, -1);

	/* Three clients the server accepted (a status round trip each). */
	b1 = raw_connect(sock);
	idle = raw_connect(sock);
	half = raw_connect(sock);
	for (int *fd = (int[]){b1, idle, half}, i = 0; i < 3; i++) {
		assert_int_equal(send_bytes(fd[i], status_line, sizeof(status_line) - 1), 0);
		assert_string_equal(answer(fd[i]), "ok");
	}
	/* A register's probe holds its probe thread ... */
	slow = raw_connect(sock);
	assert_int_equal(send_bytes(slow, reg_line("slow"), strlen(reg_line("slow"))), 0);
	gate_wait_entered(&g);
	/* ... not the server: b1 is answered meanwhile ... */
	assert_int_equal(send_bytes(b1, status_line, sizeof(status_line) - 1), 0);
	assert_string_equal(answer(b1), "ok");
	/* ... and sends two registers of the plugin: the first waits behind
	 * slow's (arrival order), the second in b1's input behind it ... */
	snprintf(two, sizeof(two), "%s", reg_line("b0"));
	snprintf(two + strlen(two), sizeof(two) - strlen(two), "%s", reg_line("b1"));
	assert_int_equal(send_bytes(b1, two, strlen(two)), 0);
	wait_requests(sock, "register", 2);
	assert_true(quiet_for(b1, 100));
	/* ... `half' sends half of one ... */
	half_line = reg_line("h1");
	assert_int_equal(send_bytes(half, half_line, 20), 0);
	/* ... and the handover begins.  The probe is released once the drain
	 * was asked for: slow, then b0 are committed, then b1's second line is
	 * served by the drain. */
	sk.srv->stop_asked = stop_asked;
	sk.srv->stop_asked_arg = &sk;
	sk.srv->drain_report = &report;
	assert_int_equal(pthread_create(&t, NULL, stop_keep, &sk), 0);
	pthread_mutex_lock(&sk.mu);
	while (!sk.asked)
		pthread_cond_wait(&sk.cond, &sk.mu);
	pthread_mutex_unlock(&sk.mu);
	gate_release(&g);
	pthread_join(t, NULL);
	assert_true(sk.fd >= 0);
	/* The drain found the four clients, answered b1's second line (read
	 * after its first was answered) and dropped half's unfinished one. */
	assert_int_equal(report.clients, 4);
	assert_int_equal(report.served, 1);
	assert_int_equal(report.partial, 1);
	assert_int_equal(report.ended, 0);
	assert_int_equal(report.cut, 0);
	assert_int_equal(report.abandoned, 0);

	assert_string_equal(answer(slow), "ok");
	assert_string_equal(answer(b1), "ok");
	assert_string_equal(answer(b1), "ok");
	/* Sent after the fence: refused at the client, closed without a reset. */
	assert_int_equal(send_bytes(idle, reg_line("i1"), strlen(reg_line("i1"))), -EPIPE);
	assert_string_equal(answer(idle), "eof");
	assert_int_equal(send_bytes(half, half_line + 20, strlen(half_line) - 20), -EPIPE);
	assert_string_equal(answer(half), "eof");

	/* Meanwhile a client waits in the kept socket's backlog. */
	later = raw_connect(sock);
	assert_int_equal(send_bytes(later, reg_line("l1"), strlen(reg_line("l1"))), 0);
	sk.srv = start(reg, sock, &g, sk.fd);
	assert_string_equal(answer(later), "ok");
	allocs(sock, got, sizeof(got));
	assert_string_equal(got, "l1 b1 b0 slow");

	for (int *fd = (int[]){slow, b1, idle, half, later}, i = 0; i < 5; i++)
		close(fd[i]);
	control_server_stop(sk.srv);
	registry_close(reg);
	rmdir(dir);
}

/* While a register's probe hangs, the mutations of its plugin wait behind
 * it in arrival order, those of other plugins and the reads do not. */
static void test_probe_keeps_the_order(void **state)
{
	char dir[] = "/tmp/plugfs-drain-XXXXXX", sock[128], got[256];
	struct registry_options ro = {
	    .types = types, .n_types = 2, .tombstone_ttl = 86400, .synchronous = "off"};
	struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0};
	struct registry *reg = NULL;
	struct control_server *srv;
	char err[512];
	int slow, fast, other, dereg, fast2;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/ctl.sock", dir);
	assert_int_equal(registry_open(":memory:", &ro, &reg, err, sizeof(err)), 0);
	srv = start(reg, sock, &g, -1);

	slow = raw_connect(sock);
	assert_int_equal(send_bytes(slow, reg_line("slow"), strlen(reg_line("slow"))), 0);
	gate_wait_entered(&g);
	/* Of the plugin: each waits behind slow, in its order. */
	fast = raw_connect(sock);
	assert_int_equal(send_bytes(fast, reg_line("fast"), strlen(reg_line("fast"))), 0);
	wait_requests(sock, "register", 2);
	dereg = raw_connect(sock);
	assert_int_equal(
	    send_line(dereg, "{\"op\":\"deregister\",\"type\":\"csi-node\",\"name\":\"drain\","
			     "\"alloc\":\"fast\"}\n"),
	    0);
	wait_requests(sock, "deregister", 1);
	fast2 = raw_connect(sock);
	assert_int_equal(send_bytes(fast2, reg_line("fast2"), strlen(reg_line("fast2"))), 0);
	/* Of another plugin: answered while slow's probe hangs. */
	other = raw_connect(sock);
	assert_int_equal(
	    send_line(other, "{\"op\":\"register\",\"types\":[\"csi-node\"],\"name\":\"other\","
			     "\"alloc\":\"o1\",\"socket\":\"/run/alloc/o1/csi.sock\"}\n"),
	    0);
	assert_string_equal(answer(other), "ok");
	assert_int_equal(send_bytes(other, status_line, sizeof(status_line) - 1), 0);
	assert_string_equal(answer(other), "ok");
	for (int *fd = (int[]){slow, fast, dereg, fast2}, i = 0; i < 4; i++)
		assert_true(quiet_for(fd[i], i == 0 ? 100 : 0));
	allocs(sock, got, sizeof(got));
	assert_string_equal(got, "");

	gate_release(&g);
	assert_string_equal(answer(slow), "ok");
	assert_string_equal(answer(fast), "ok");
	assert_int_equal(removed_of(dereg), 1);
	assert_string_equal(answer(fast2), "ok");
	/* slow, then fast (removed after it), then fast2: the newest. */
	allocs(sock, got, sizeof(got));
	assert_string_equal(got, "fast2 slow");
	assert_int_equal(g.cancelled, 0);

	for (int *fd = (int[]){slow, fast, dereg, fast2, other}, i = 0; i < 5; i++)
		close(fd[i]);
	control_server_stop(srv);
	registry_close(reg);
	rmdir(dir);
}

/* A drain gives up on a probe that hangs after CTL_DRAIN_PROBE_MS: its
 * register and the one waiting behind it are closed unanswered and
 * nothing of them is stored; the next server takes them when sent again. */
static void test_drain_gives_up_on_a_hung_probe(void **state)
{
	char dir[] = "/tmp/plugfs-drain-XXXXXX", sock[128], got[256];
	struct registry_options ro = {
	    .types = types, .n_types = 2, .tombstone_ttl = 86400, .synchronous = "off"};
	struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0};
	struct registry *reg = NULL;
	struct handover sk = {NULL, -1, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
	struct ctl_drain report = {0};
	int64_t t0, took;
	char err[512];
	int slow, behind, again;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/ctl.sock", dir);
	assert_int_equal(registry_open(":memory:", &ro, &reg, err, sizeof(err)), 0);
	sk.srv = start(reg, sock, &g, -1);

	slow = raw_connect(sock);
	assert_int_equal(send_bytes(slow, reg_line("slow"), strlen(reg_line("slow"))), 0);
	gate_wait_entered(&g);
	behind = raw_connect(sock);
	assert_int_equal(send_bytes(behind, reg_line("b0"), strlen(reg_line("b0"))), 0);
	wait_requests(sock, "register", 2);
	assert_true(quiet_for(behind, 100));

	sk.srv->drain_report = &report;
	t0 = plugfs_mono_ms();
	sk.fd = control_server_stop_keep_listener(sk.srv);
	took = plugfs_mono_ms() - t0;
	assert_true(sk.fd >= 0);
	print_message("drain with a hung probe: %lld ms\n", (long long)took);
	assert_true(took >= CTL_DRAIN_PROBE_MS - 10);
	assert_true(took < CTL_DRAIN_MAX_MS);
	assert_int_equal(report.clients, 2);
	assert_int_equal(report.abandoned, 2);
	assert_int_equal(report.cut, 0);
	assert_int_equal(g.cancelled, 1);
	assert_string_equal(answer(slow), "eof");
	assert_string_equal(answer(behind), "eof");

	/* Sent again to the next server, whose probe answers. */
	gate_release(&g);
	sk.srv = start(reg, sock, &g, sk.fd);
	allocs(sock, got, sizeof(got));
	assert_string_equal(got, "");
	again = raw_connect(sock);
	assert_int_equal(send_bytes(again, reg_line("slow"), strlen(reg_line("slow"))), 0);
	assert_string_equal(answer(again), "ok");
	allocs(sock, got, sizeof(got));
	assert_string_equal(got, "slow");

	for (int *fd = (int[]){slow, behind, again}, i = 0; i < 3; i++)
		close(fd[i]);
	control_server_stop(sk.srv);
	registry_close(reg);
	rmdir(dir);
}

/* A stop (no drain) with a probe in flight cancels it and stores nothing. */
static void test_stop_cancels_a_probe(void **state)
{
	char dir[] = "/tmp/plugfs-drain-XXXXXX", sock[128];
	struct registry_options ro = {
	    .types = types, .n_types = 2, .tombstone_ttl = 86400, .synchronous = "off"};
	struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0};
	struct registry *reg = NULL;
	struct control_server *srv;
	size_t n_plugins = 9, n_regs = 9;
	int64_t t0;
	char err[512];
	int slow;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/ctl.sock", dir);
	assert_int_equal(registry_open(":memory:", &ro, &reg, err, sizeof(err)), 0);
	srv = start(reg, sock, &g, -1);
	slow = raw_connect(sock);
	assert_int_equal(send_bytes(slow, reg_line("slow"), strlen(reg_line("slow"))), 0);
	gate_wait_entered(&g);
	t0 = plugfs_mono_ms();
	control_server_stop(srv);
	assert_true(plugfs_mono_ms() - t0 < CTL_DRAIN_MAX_MS);
	assert_int_equal(g.cancelled, 1);
	registry_counts(reg, &n_plugins, &n_regs);
	assert_int_equal(n_regs, 0);
	close(slow);
	registry_close(reg);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_drain_answers_what_was_read),
	    cmocka_unit_test(test_probe_keeps_the_order),
	    cmocka_unit_test(test_drain_gives_up_on_a_hung_probe),
	    cmocka_unit_test(test_stop_cancels_a_probe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
