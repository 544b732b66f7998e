/* SPDX-License-Identifier: MIT */
/*
 * The control server's drain before a handover
 * (control_server_stop_keep_listener): a request read before it is
 * answered, a request sent after it fails at the client without being
 * taken, no connection is reset, and the kept listening socket serves the
 * next server, which answers what waited in its backlog.  The drain's own
 * counts (control_server_internal.h's test-only drain_report) show that the
 * request read during it was answered by it, not before it began.
 */
#include <errno.h>
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

static const char *const types[] = {"csi-controller", "csi-node"};

/* The probe of alloc `slow' holds the server thread until released. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool entered, released;
};

static void gate_probe(const char *type, const struct reg_spec *spec, struct reg_runtime *out,
		       void *arg)
{
	struct gate *g = arg;

	(void)type;
	*out = (struct reg_runtime){.health = REG_HEALTH_ALIVE};
	if (strcmp(spec->alloc, "slow") != 0)
		return;
	pthread_mutex_lock(&g->mu);
	g->entered = true;
	pthread_cond_broadcast(&g->cond);
	while (!g->released)
		pthread_cond_wait(&g->cond, &g->mu);
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

static void test_drain_answers_what_was_read(void **state)
{
	char dir[] = "/tmp/plugfs-drain-XXXXXX", sock[128], got[256];
	struct registry_options ro = {
	    .types = types, .n_types = 2, .tombstone_ttl = 86400, .synchronous = "off"};
	struct gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};
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
		static const char st[] = "{\"op\":\"status\"}\n";

		assert_int_equal(send_bytes(fd[i], st, sizeof(st) - 1), 0);
		assert_string_equal(answer(fd[i]), "ok");
	}
	/* The server thread is held in a register's probe ... */
	slow = raw_connect(sock);
	assert_int_equal(send_bytes(slow, reg_line("slow"), strlen(reg_line("slow"))), 0);
	pthread_mutex_lock(&g.mu);
	while (!g.entered)
		pthread_cond_wait(&g.cond, &g.mu);
	pthread_mutex_unlock(&g.mu);
	/* ... while b1 sends a whole request and `half' half of one ... */
	assert_int_equal(send_bytes(b1, reg_line("b1"), strlen(reg_line("b1"))), 0);
	half_line = reg_line("h1");
	assert_int_equal(send_bytes(half, half_line, 20), 0);
	/* ... and the handover begins: the server stops at once when it may.
	 * The probe is released once the drain was asked for. */
	sk.srv->stop_asked = stop_asked;
	sk.srv->stop_asked_arg = &sk;
	sk.srv->drain_report = &report;
	assert_int_equal(pthread_create(&t, NULL, stop_keep, &sk), 0);
	pthread_mutex_lock(&sk.mu);
	while (!sk.asked)
		pthread_cond_wait(&sk.cond, &sk.mu);
	pthread_mutex_unlock(&sk.mu);
	pthread_mutex_lock(&g.mu);
	g.released = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.mu);
	pthread_join(t, NULL);
	assert_true(sk.fd >= 0);
	/* The drain found the four clients, answered b1's line (slow's was
	 * being served when it began) and dropped half's unfinished one. */
	assert_int_equal(report.clients, 4);
	assert_int_equal(report.served, 1);
	assert_int_equal(report.partial, 1);
	assert_int_equal(report.ended, 0);
	assert_int_equal(report.cut, 0);

	assert_string_equal(answer(slow), "ok");
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
	assert_string_equal(got, "l1 b1 slow");

	for (int *fd = (int[]){slow, b1, idle, half, later}, i = 0; i < 5; i++)
		close(fd[i]);
	control_server_stop(sk.srv);
	registry_close(reg);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_drain_answers_what_was_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
