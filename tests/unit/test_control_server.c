/* SPDX-License-Identifier: MIT */
/*
 * The control server against an in-memory registry, without a mount: every
 * operation through the client API, waits and watches, limits, and the
 * rules for creating the socket file.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "control.h"

struct fixture {
	char dir[64];
	char sock[128];
	struct registry *reg;
	struct control_server *srv;
};

static const char *const types[] = {"csi-controller", "csi-node"};

static int open_registry(struct fixture *f)
{
	struct registry_options ro = {
	    .types = types,
	    .n_types = 2,
	    .tombstone_ttl = 86400,
	    .synchronous = "off",
	};
	char err[512] = "";
	int rc = registry_open(":memory:", &ro, &f->reg, err, sizeof(err));

	if (rc)
		fprintf(stderr, "registry_open: %s\n", err);
	return rc;
}

static int start(struct fixture *f, unsigned max_clients, unsigned idle)
{
	struct control_options o = {
	    .socket_path = f->sock,
	    .group = "",
	    .max_clients = max_clients,
	    .idle_timeout = idle,
	    .mountpoint = "/mnt/test",
	    .state_path = ":memory:",
	};
	char err[512] = "";
	int rc = control_server_start(f->reg, &o, &f->srv, err, sizeof(err));

	if (rc)
		fprintf(stderr, "control_server_start: %s\n", err);
	return rc;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/plugfs-ctl-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->sock, sizeof(f->sock), "%s/ctl.sock", f->dir);
	if (open_registry(f) || start(f, 8, 0))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	control_server_stop(f->srv);
	registry_close(f->reg);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* One request, one answer. */
static json_t *call(struct fixture *f, const char *fmt, ...)
{
	json_error_t jerr;
	json_t *req, *resp = NULL;
	char err[512] = "";
	va_list ap;

	va_start(ap, fmt);
	req = json_vpack_ex(&jerr, 0, fmt, ap);
	va_end(ap);
	assert_non_null(req);
	if (control_call(f->sock, req, &resp, 5000, err, sizeof(err)) != 0)
		fail_msg("control_call: %s", err);
	json_decref(req);
	return resp;
}

static void assert_ok(json_t *resp)
{
	const char *msg = control_response_error(resp, NULL);

	if (msg)
		fail_msg("expected ok, got error: %s", msg);
}

static void assert_error(json_t *resp, const char *code, const char *needle)
{
	const char *got = NULL;
	const char *msg = control_response_error(resp, &got);

	if (!msg)
		fail_msg("expected error %s, got ok", code);
	if (strcmp(got, code) != 0 || !strstr(msg, needle))
		fail_msg("expected %s containing `%s', got %s: %s", code, needle, got, msg);
}

static json_t *reg_req(struct fixture *f, const char *type, const char *name, const char *alloc)
{
	char path[256];

	snprintf(path, sizeof(path), "/run/alloc/%s/csi.sock", alloc);
	return call(f, "{s:s, s:[s], s:s, s:s, s:s}", "op", "register", "types", type, "name", name,
		    "alloc", alloc, "socket", path);
}

static const char *active_of(json_t *plugin)
{
	return json_string_value(json_object_get(plugin, "active"));
}

static void test_register_show_list_deregister(void **state)
{
	struct fixture *f = *state;
	json_t *r;

	r = reg_req(f, "csi-node", "ebs", "a0");
	assert_ok(r);
	assert_string_equal(active_of(json_array_get(json_object_get(r, "plugins"), 0)), "a0");
	json_decref(r);
	r = reg_req(f, "csi-node", "ebs", "a1");
	assert_ok(r);
	json_decref(r);

	r = call(f, "{s:s, s:s, s:s}", "op", "show", "type", "csi-node", "name", "ebs");
	assert_ok(r);
	assert_string_equal(active_of(json_object_get(r, "plugin")), "a1");
	assert_int_equal(
	    json_array_size(json_object_get(json_object_get(r, "plugin"), "registrations")), 2);
	json_decref(r);

	r = call(f, "{s:s}", "op", "list");
	assert_ok(r);
	assert_int_equal(json_array_size(json_object_get(r, "plugins")), 1);
	json_decref(r);
	r = call(f, "{s:s, s:s}", "op", "list", "type", "csi-controller");
	assert_ok(r);
	assert_int_equal(json_array_size(json_object_get(r, "plugins")), 0);
	json_decref(r);

	/* Scenario 4: deregister the active one, the older one comes back. */
	r = call(f, "{s:s, s:s, s:s, s:s}", "op", "deregister", "type", "csi-node", "name", "ebs",
		 "alloc", "a1");
	assert_ok(r);
	assert_int_equal(json_integer_value(json_object_get(r, "removed")), 1);
	json_decref(r);
	r = call(f, "{s:s, s:s, s:s}", "op", "show", "type", "csi-node", "name", "ebs");
	assert_string_equal(active_of(json_object_get(r, "plugin")), "a0");
	json_decref(r);
	/* Unknown alloc: ok, nothing removed. */
	r = call(f, "{s:s, s:s, s:s, s:s}", "op", "deregister", "type", "csi-node", "name", "ebs",
		 "alloc", "zz");
	assert_ok(r);
	assert_int_equal(json_integer_value(json_object_get(r, "removed")), 0);
	json_decref(r);
	r = call(f, "{s:s, s:s}", "op", "deregister", "alloc", "a0");
	assert_ok(r);
	assert_int_equal(json_integer_value(json_object_get(r, "removed")), 1);
	json_decref(r);
	r = call(f, "{s:s, s:s, s:s}", "op", "show", "type", "csi-node", "name", "ebs");
	assert_error(r, "not_found", "csi-node/ebs has no registration");
	json_decref(r);
}

static void test_errors(void **state)
{
	struct fixture *f = *state;
	json_t *r;

	r = reg_req(f, "csi-nope", "ebs", "a0");
	assert_error(r, "invalid_argument", "csi-nope");
	json_decref(r);
	r = reg_req(f, "csi-node", "../x", "a0");
	assert_error(r, "invalid_argument", "name");
	json_decref(r);
	r = call(f, "{s:s, s:[s], s:s, s:s, s:s}", "op", "register", "types", "csi-node", "name",
		 "ebs", "alloc", "a0", "socket", "relative/csi.sock");
	assert_error(r, "invalid_argument", "socket");
	json_decref(r);
	r = call(f, "{s:s, s:[s], s:s, s:s, s:s, s:s}", "op", "register", "types", "csi-node",
		 "name", "ebs", "alloc", "a0", "socket", "/s", "kind", "sideways");
	assert_error(r, "invalid_argument", "field `kind' must be controller, node or monolith");
	json_decref(r);
	r = call(f, "{s:s, s:s}", "op", "list", "type", "nope");
	assert_error(r, "invalid_argument",
		     "type `nope': must be one of the configured types (csi-controller, csi-node)");
	json_decref(r);
	r = call(f, "{s:s, s:s, s:s}", "op", "show", "type", "csi-node", "name", "a/b");
	assert_error(r, "invalid_argument", "name");
	json_decref(r);
	r = call(f, "{s:s, s:i}", "op", "bogus", "id", 42);
	assert_error(r, "invalid_argument", "unknown op `bogus'");
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 42);
	json_decref(r);
	/* Nothing was stored by any of them. */
	r = call(f, "{s:s}", "op", "status");
	assert_ok(r);
	assert_int_equal(json_integer_value(json_object_get(r, "registrations")), 0);
	assert_string_equal(json_string_value(json_object_get(r, "mountpoint")), "/mnt/test");
	/* The version is the project's (project(VERSION) in CMakeLists.txt). */
	assert_string_equal(json_string_value(json_object_get(r, "version")),
			    PLUGFS_PROJECT_VERSION);
	json_decref(r);
}

static int raw_connect(struct fixture *f)
{
	int fd = -1;
	char err[256];

	assert_int_equal(control_connect(f->sock, &fd, err, sizeof(err)), 0);
	return fd;
}

static void raw_send(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);

		assert_true(k > 0);
		s += k;
		n -= (size_t)k;
	}
}

static json_t *recv_one(int fd, int ms)
{
	json_t *r = NULL;
	char err[256] = "";

	if (control_recv(fd, &r, ms, err, sizeof(err)) != 0)
		fail_msg("control_recv: %s", err);
	return r;
}

/* The next line on fd (within 5 s) is an ok answer. */
static void recv_ok(int fd)
{
	json_t *r = recv_one(fd, 5000);

	assert_ok(r);
	json_decref(r);
}

/* The next line on fd (within 5 s) is error `code' with needle in its message. */
static void recv_error(int fd, const char *code, const char *needle)
{
	json_t *r = recv_one(fd, 5000);

	assert_error(r, code, needle);
	json_decref(r);
}

/* Overlong line: an error, the rest of it discarded, the connection serves on. */
static void test_overlong_line(void **state)
{
	struct fixture *f = *state;
	size_t n = CONTROL_LINE_MAX + 100;
	char *big = malloc(n + 1);
	int fd = raw_connect(f);
	json_t *r;

	assert_non_null(big);
	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	big[n] = '\n';
	raw_send(fd, big, n + 1);
	raw_send(fd, "{\"op\":\"status\",\"id\":\"after\"}\n", 29);
	recv_error(fd, "invalid_argument", "longer than 65536 bytes");
	r = recv_one(fd, 5000);
	assert_ok(r);
	assert_string_equal(json_string_value(json_object_get(r, "id")), "after");
	json_decref(r);
	/* Malformed JSON, then a good request on the same connection. */
	raw_send(fd, "{\"op\":\n{\"op\":\"list\"}\n", 21);
	recv_error(fd, "invalid_argument", "malformed JSON");
	recv_ok(fd);
	close(fd);
	free(big);
}

/* wait answers when another client registers; a short timeout fails. */
static void test_wait(void **state)
{
	struct fixture *f = *state;
	int fd = raw_connect(f), fd2 = raw_connect(f);
	json_t *r;
	char err[256];
	json_t *req = json_pack("{s:s, s:s, s:s, s:i, s:s}", "op", "wait", "type", "csi-node",
				"name", "late", "timeout", 10, "id", "w1");

	assert_int_equal(control_send(fd, req, err, sizeof(err)), 0);
	json_decref(req);
	/* A request queued behind the wait is answered after it. */
	raw_send(fd, "{\"op\":\"status\",\"id\":\"s\"}\n", 25);
	/* Nothing yet. */
	assert_int_equal(control_recv(fd, &r, 300, err, sizeof(err)), -ETIMEDOUT);
	/* Other clients are served meanwhile. */
	r = call(f, "{s:s}", "op", "status");
	assert_ok(r);
	json_decref(r);
	r = reg_req(f, "csi-node", "late", "a5");
	assert_ok(r);
	json_decref(r);
	r = recv_one(fd, 5000);
	assert_ok(r);
	assert_string_equal(json_string_value(json_object_get(r, "id")), "w1");
	assert_string_equal(active_of(json_object_get(r, "plugin")), "a5");
	json_decref(r);
	r = recv_one(fd, 5000);
	assert_string_equal(json_string_value(json_object_get(r, "id")), "s");
	json_decref(r);

	/* Already registered: at once.  Missing with a timeout: not_found. */
	req = json_pack("{s:s, s:s, s:s, s:f}", "op", "wait", "type", "csi-node", "name", "never",
			"timeout", 0.3);
	assert_int_equal(control_send(fd2, req, err, sizeof(err)), 0);
	json_decref(req);
	recv_error(fd2, "not_found", "timed out");
	close(fd);
	close(fd2);
}

static const char *ev(json_t *e)
{
	return json_string_value(json_object_get(e, "event"));
}

static void test_watch(void **state)
{
	struct fixture *f = *state;
	int fd = raw_connect(f);
	json_t *r, *req = json_pack("{s:s, s:[s]}", "op", "watch", "types", "csi-node");
	char err[256];

	assert_int_equal(control_send(fd, req, err, sizeof(err)), 0);
	json_decref(req);
	recv_ok(fd);
	json_decref(reg_req(f, "csi-node", "w", "a0"));
	json_decref(reg_req(f, "csi-controller", "w", "c0")); /* filtered out */
	json_decref(reg_req(f, "csi-node", "w", "a1"));
	json_decref(call(f, "{s:s, s:s}", "op", "deregister", "alloc", "a1"));

	r = recv_one(fd, 5000);
	assert_string_equal(ev(r), "registered");
	assert_string_equal(json_string_value(json_object_get(r, "alloc")), "a0");
	json_decref(r);
	r = recv_one(fd, 5000);
	assert_string_equal(ev(r), "active");
	assert_true(json_is_null(json_object_get(r, "old_alloc")));
	assert_string_equal(json_string_value(json_object_get(r, "new_alloc")), "a0");
	json_decref(r);
	r = recv_one(fd, 5000);
	assert_string_equal(ev(r), "registered");
	assert_string_equal(json_string_value(json_object_get(r, "alloc")), "a1");
	json_decref(r);
	r = recv_one(fd, 5000);
	assert_string_equal(ev(r), "active");
	assert_string_equal(json_string_value(json_object_get(r, "old_alloc")), "a0");
	assert_string_equal(json_string_value(json_object_get(r, "new_alloc")), "a1");
	json_decref(r);
	r = recv_one(fd, 5000);
	assert_string_equal(ev(r), "deregistered");
	assert_string_equal(json_string_value(json_object_get(r, "type")), "csi-node");
	json_decref(r);
	r = recv_one(fd, 5000);
	assert_string_equal(ev(r), "active");
	assert_string_equal(json_string_value(json_object_get(r, "new_alloc")), "a0");
	json_decref(r);
	assert_int_equal(control_recv(fd, &r, 200, err, sizeof(err)), -ETIMEDOUT);
	close(fd);
}

/* A client that floods requests and never reads its answers, and one that
 * stops in the middle of a line, hold up nobody else. */
static void test_stuck_clients(void **state)
{
	struct fixture *f = *state;
	static const char req[] = "{\"op\":\"list\"}\n";
	int flood = raw_connect(f), partial = raw_connect(f);
	size_t sent = 0;
	json_t *r;

	raw_send(partial, "{\"op\":", 6);
	assert_int_equal(fcntl(flood, F_SETFL, O_NONBLOCK), 0);
	/* Until the kernel buffers are full: the daemon stopped reading. */
	for (int idle_rounds = 0; idle_rounds < 20 && sent < 64u * 1024 * 1024;) {
		ssize_t n = send(flood, req, sizeof(req) - 1, MSG_NOSIGNAL);

		if (n < 0) {
			assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
			idle_rounds++;
			usleep(10000);
			continue;
		}
		sent += (size_t)n;
	}
	assert_true(sent < 64u * 1024 * 1024);
	/* Others are served at once. */
	r = call(f, "{s:s}", "op", "status");
	assert_ok(r);
	assert_int_equal(json_integer_value(json_object_get(r, "clients")), 3);
	json_decref(r);
	r = reg_req(f, "csi-node", "busy", "a0");
	assert_ok(r);
	json_decref(r);
	close(flood);
	close(partial);
}

/* A watcher that stops reading is dropped once its backlog passes the cap
 * (8 MiB); everyone else goes on. */
static void test_stuck_watcher_dropped(void **state)
{
	struct fixture *f = *state;
	int w = raw_connect(f);
	char big[1001], key[8];
	json_t *r, *opts = json_object();

	raw_send(w, "{\"op\":\"watch\"}\n", 15);
	recv_ok(w);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		json_object_set_new(opts, key, json_string(big));
	}
	/* About 8.5 KB per `updated' event: 1500 of them pass the cap. */
	for (int i = 0; i < 1500; i++) {
		r = call(f, "{s:s, s:[s], s:s, s:s, s:s, s:s, s:O}", "op", "register", "types",
			 "csi-node", "name", "flood", "alloc", "a0", "socket", "/run/a0.sock",
			 "version", i % 2 ? "v1" : "v2", "options", opts);
		assert_ok(r);
		json_decref(r);
	}
	json_decref(opts);
	r = call(f, "{s:s}", "op", "status");
	assert_ok(r);
	assert_int_equal(json_integer_value(json_object_get(r, "watchers")), 0);
	assert_int_equal(json_integer_value(json_object_get(r, "clients")), 1);
	json_decref(r);
	close(w);
}

static void test_socket_mode(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	assert_int_equal(lstat(f->sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
}

static void test_refuses_live_and_non_socket(void **state)
{
	struct fixture *f = *state;
	struct control_server *other = NULL;
	struct control_options o = {.socket_path = f->sock, .max_clients = 4};
	char err[512] = "", path[160];
	int fd;

	/* A live daemon answers on the path. */
	assert_int_equal(control_server_start(f->reg, &o, &other, err, sizeof(err)), -EADDRINUSE);
	assert_non_null(strstr(err, "a daemon is answering"));
	/* A regular file is never replaced. */
	snprintf(path, sizeof(path), "%s/file", f->dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	o.socket_path = path;
	assert_int_equal(control_server_start(f->reg, &o, &other, err, sizeof(err)), -EEXIST);
	assert_non_null(strstr(err, "is not a socket"));
	unlink(path);
	/* An unknown group is a start error. */
	o.group = "plugfs-no-such-group";
	assert_int_not_equal(control_server_start(f->reg, &o, &other, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "unknown group `plugfs-no-such-group'"));
	/* A relative path is refused. */
	o.group = NULL;
	o.socket_path = "ctl.sock";
	assert_int_equal(control_server_start(f->reg, &o, &other, err, sizeof(err)), -EINVAL);
}

static void test_replaces_stale_socket(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct control_server *other = NULL;
	struct control_options o = {.max_clients = 4};
	char err[512] = "";
	json_t *r, *req;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/stale.sock", f->dir);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd); /* bound, never listened: connect is refused */
	o.socket_path = sa.sun_path;
	assert_int_equal(control_server_start(f->reg, &o, &other, err, sizeof(err)), 0);
	req = json_pack("{s:s}", "op", "status");
	assert_int_equal(control_call(sa.sun_path, req, &r, 5000, err, sizeof(err)), 0);
	json_decref(req);
	assert_ok(r);
	json_decref(r);
	control_server_stop(other);
	/* Stopping removed the socket it created. */
	assert_int_equal(access(sa.sun_path, F_OK), -1);
}

static void test_max_clients(void **state)
{
	struct fixture *f = *state;
	int fds[8];
	json_t *r;

	for (int i = 0; i < 8; i++)
		fds[i] = raw_connect(f);
	/* The ninth client gets one line and is closed. */
	r = call(f, "{s:s}", "op", "status");
	assert_error(r, "unavailable", "control.max_clients");
	json_decref(r);
	for (int i = 0; i < 8; i++)
		close(fds[i]);
}

static void test_idle_timeout(void **state)
{
	struct fixture *f = *state;
	int idle, watcher;
	json_t *r;
	char err[256];

	control_server_stop(f->srv);
	assert_int_equal(start(f, 8, 1), 0);
	idle = raw_connect(f);
	watcher = raw_connect(f);
	raw_send(watcher, "{\"op\":\"watch\"}\n", 15);
	recv_ok(watcher);
	recv_error(idle, "unavailable", "control.idle_timeout");
	assert_int_equal(control_recv(idle, &r, 2000, err, sizeof(err)), -ECONNABORTED); /* closed, no byte of a line */
	/* The watcher is still served after the idle time. */
	json_decref(reg_req(f, "csi-node", "idle", "a0"));
	r = recv_one(watcher, 5000);
	assert_string_equal(ev(r), "registered");
	json_decref(r);
	close(idle);
	close(watcher);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_register_show_list_deregister, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_overlong_line, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_wait, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_watch, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stuck_clients, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stuck_watcher_dropped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_socket_mode, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refuses_live_and_non_socket, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_replaces_stale_socket, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_max_clients, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
