/* SPDX-License-Identifier: MIT */
/*
 * The control server: one thread, one poll() loop over non-blocking sockets
 * with a read and a write buffer per client, so a slow or stuck client never
 * holds up another one or the filesystem.
 *
 * Registry events arrive on whatever thread committed the change, with the
 * registry mutex held.  The callback only turns them into JSON, appends them
 * to a queue and pokes an eventfd; the loop hands them to watchers and to
 * pending waits, in commit order.  Nothing is written to a socket from the
 * callback.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "control_server_internal.h"
#include "log.h"
#include "version.h"

/* A client whose unsent output passes OUT_STALL is not read from until it
 * drains; one (a watcher that stopped reading) passing OUT_MAX is dropped. */
#define OUT_STALL (256 * 1024)
#define OUT_MAX (8 * 1024 * 1024)
#define READ_CHUNK (64 * 1024)
#define READ_ROUNDS 4

struct client {
	struct client *next;
	int fd;
	unsigned long long serial;
	struct ctl_peer peer;
	struct ctl_linebuf in;
	char *out;
	size_t out_off, out_len, out_cap;
	bool eof;     /* the client shut down its sending side */
	bool closing; /* close once the output is flushed */
	bool dead;    /* close now */
	bool watching;
	char **watch_types; /* NULL with watching: every type */
	size_t n_watch_types;
	bool waiting;
	bool resume; /* a wait ended: serve the lines held back */
	char *wait_type, *wait_name;
	json_t *wait_id;
	int64_t wait_deadline; /* monotonic ms, -1 = none */
	int64_t last_active;   /* monotonic ms */
};

struct ev_item {
	struct ev_item *next;
	char *type, *name;
	json_t *event;	/* the line watchers get */
	json_t *plugin; /* the plugin after the change, when it has registrations */
};

struct control_server {
	struct registry *reg;
	char *socket_path, *mountpoint, *state_path, *group;
	bool have_group;
	gid_t gid;
	unsigned max_clients, idle_timeout;
	int listen_fd, wake_fd;
	dev_t sock_dev;
	ino_t sock_ino;
	int sub_id;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t q_lock; /* guards the fields up to the next blank line */
	struct ev_item *q_head, **q_tail;
	bool stop;
	bool lost_events;

	/* Owned by the server thread. */
	struct client *clients;
	size_t n_clients;
	unsigned long long next_serial;
	int64_t started_mono;
	int64_t started_wall;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* --- the event queue (filled by the registry callback) --- */

static void ev_item_free(struct ev_item *it)
{
	if (!it)
		return;
	free(it->type);
	free(it->name);
	json_decref(it->event);
	json_decref(it->plugin);
	free(it);
}

static json_t *nullable_string(const char *s)
{
	return s ? json_string(s) : json_null();
}

static void on_event(const struct reg_event *ev, void *arg)
{
	struct control_server *srv = arg;
	struct ev_item *it = calloc(1, sizeof(*it));
	char when[32];
	uint64_t one = 1;
	int rc = -1;

	control_format_time(time(NULL), when, sizeof(when));
	if (!it)
		goto out;
	it->type = strdup(ev->plugin_type);
	it->name = strdup(ev->plugin_name);
	it->event = json_pack("{s:s, s:s, s:s, s:s}", "event", reg_event_name(ev->type), "type",
			      ev->plugin_type, "name", ev->plugin_name, "time", when);
	if (!it->type || !it->name || !it->event)
		goto out;
	if (ev->type == REG_EV_ACTIVE) {
		if (json_object_set_new(it->event, "old_alloc", nullable_string(ev->old_alloc)) ||
		    json_object_set_new(it->event, "new_alloc", nullable_string(ev->new_alloc)) ||
		    json_object_set_new(it->event, "socket",
					nullable_string(ev->reg ? ev->reg->socket : NULL)))
			goto out;
	} else if (ev->reg) {
		if (json_object_set_new(it->event, "alloc", json_string(ev->reg->alloc)) ||
		    json_object_set_new(it->event, "registration",
					control_json_registration(ev->reg)))
			goto out;
	}
	if (ev->type != REG_EV_DEREGISTERED && ev->plugin && ev->plugin->n_regs > 0) {
		it->plugin = control_json_plugin(ev->plugin);
		if (!it->plugin)
			goto out;
	}
	rc = 0;
out:
	pthread_mutex_lock(&srv->q_lock);
	if (rc == 0) {
		*srv->q_tail = it;
		srv->q_tail = &it->next;
		it = NULL;
	} else {
		srv->lost_events = true;
	}
	pthread_mutex_unlock(&srv->q_lock);
	ev_item_free(it);
	/* Never blocks: an eventfd counter does not fill up in practice, and
	 * the fd is non-blocking. */
	if (write(srv->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("control: cannot wake the server thread: %s", strerror(errno));
}

/* --- client output --- */

static size_t out_pending(const struct client *c)
{
	return c->out_len - c->out_off;
}

static void client_kill(struct client *c, const char *why)
{
	if (!c->dead && why)
		log_debug("control: closing client %llu (uid %u): %s", c->serial,
			  (unsigned)c->peer.uid, why);
	c->dead = true;
}

static void client_flush(struct client *c)
{
	while (!c->dead && out_pending(c) > 0) {
		ssize_t n =
		    send(c->fd, c->out + c->out_off, out_pending(c), MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				client_kill(c, strerror(errno));
			return;
		}
		c->out_off += (size_t)n;
		c->last_active = now_ms();
	}
	if (out_pending(c) == 0)
		c->out_off = c->out_len = 0;
}

static void client_write(struct client *c, const char *data, size_t n)
{
	if (c->dead)
		return;
	if (out_pending(c) + n > OUT_MAX) {
		log_warn("control: dropping client %llu (uid %u): it does not read its "
			 "output (%zu bytes pending)",
			 c->serial, (unsigned)c->peer.uid, out_pending(c));
		client_kill(c, NULL);
		return;
	}
	if (c->out_off > 0 && c->out_cap - c->out_len < n) {
		memmove(c->out, c->out + c->out_off, out_pending(c));
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_cap - c->out_len < n) {
		size_t ncap = c->out_cap ? c->out_cap : 4096;
		char *nbuf;

		while (ncap - c->out_len < n)
			ncap *= 2;
		nbuf = realloc(c->out, ncap);
		if (!nbuf) {
			client_kill(c, "out of memory");
			return;
		}
		c->out = nbuf;
		c->out_cap = ncap;
	}
	memcpy(c->out + c->out_len, data, n);
	c->out_len += n;
	client_flush(c);
}

/* Sends obj as one line and releases it. */
static void client_send(struct client *c, json_t *obj)
{
	size_t len = 0;
	char *line = obj ? ctl_dump_line(obj, &len) : NULL;

	if (!line) {
		static const char oom[] = "{\"ok\":false,\"error\":{\"code\":\"internal\","
					  "\"message\":\"out of memory\"}}\n";
		client_write(c, oom, sizeof(oom) - 1);
	} else {
		client_write(c, line, len);
	}
	free(line);
	json_decref(obj);
}

static void send_error(struct client *c, json_t *id, enum ctl_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void send_error(struct client *c, json_t *id, enum ctl_code code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	client_send(c, ctl_error_response(id, code, msg));
}

/* {"ok":true, key: val} (val is stolen), with id. */
static void send_ok(struct client *c, json_t *id, const char *key, json_t *val)
{
	json_t *o = ctl_ok_response(id);

	if (o && key && (!val || json_object_set_new(o, key, val))) {
		json_decref(o);
		o = NULL;
	} else if (!key) {
		json_decref(val);
	}
	client_send(c, o);
}

/* --- operations --- */

static bool type_known(struct control_server *srv, const char *type)
{
	const char *const *names = NULL;
	const int64_t *ids = NULL;
	size_t n = registry_types(srv->reg, &names, &ids);

	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], type) == 0)
			return true;
	return false;
}

/* 0, or sends invalid_argument naming the field and returns -EINVAL. */
static int check_type(struct control_server *srv, struct client *c, struct ctl_request *req,
		      const char *field, const char *type)
{
	const char *const *names = NULL;
	const int64_t *ids = NULL;
	size_t n = registry_types(srv->reg, &names, &ids);
	char list[512] = "";
	size_t len = 0;

	if (type_known(srv, type))
		return 0;
	for (size_t i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? ", " : "",
					names[i]);
	send_error(c, req->id, CTL_E_INVALID_ARGUMENT,
		   "%s: field `%s': unknown type `%.128s'; configured types (registry.types): %s",
		   ctl_op_name(req->op), field, type, list);
	return -EINVAL;
}

static int check_name(struct client *c, struct ctl_request *req)
{
	char err[REG_ERR_MAX];

	if (reg_validate_name("name", req->name, err, sizeof(err)) == 0)
		return 0;
	send_error(c, req->id, CTL_E_INVALID_ARGUMENT, "%s: %s", ctl_op_name(req->op), err);
	return -EINVAL;
}

static void send_registry_error(struct client *c, struct ctl_request *req, int rc, const char *err)
{
	log_info("control: %s from pid %d uid %u refused: %s", ctl_op_name(req->op),
		 (int)c->peer.pid, (unsigned)c->peer.uid, err[0] ? err : strerror(-rc));
	send_error(c, req->id, ctl_code_from_errno(rc), "%s: %s", ctl_op_name(req->op),
		   err[0] ? err : strerror(-rc));
}

static void op_register(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	char err[REG_ERR_MAX] = "";
	struct reg_spec spec = {
	    .name = req->name,
	    .alloc = req->alloc,
	    .socket = req->socket,
	    .version = req->version,
	    .kind = REG_KIND_UNSET,
	    .options = req->options,
	    .n_options = req->n_options,
	};
	json_t *plugins = NULL;
	int rc;

	if (req->kind && reg_kind_parse(req->kind, &spec.kind) != 0) {
		send_error(c, req->id, CTL_E_INVALID_ARGUMENT,
			   "register: field `kind' must be controller, node or monolith, got "
			   "`%.128s'",
			   req->kind);
		return;
	}
	rc = registry_register(srv->reg, req->types, req->n_types, &spec, err, sizeof(err));
	if (rc) {
		send_registry_error(c, req, rc, err);
		return;
	}
	/* Committed and applied: answer with the plugins as they are now. */
	plugins = json_array();
	for (size_t i = 0; plugins && i < req->n_types; i++) {
		struct reg_plugin p;

		memset(&p, 0, sizeof(p));
		if (registry_get_plugin(srv->reg, req->types[i], req->name, &p) == 0) {
			json_array_append_new(plugins, control_json_plugin(&p));
			reg_plugin_free_contents(&p);
		}
	}
	send_ok(c, req->id, "plugins", plugins);
}

static void op_deregister(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	char err[REG_ERR_MAX] = "";
	size_t removed = 0;
	int rc;

	if (req->type) {
		bool one = false;

		if (check_type(srv, c, req, "type", req->type) || check_name(c, req))
			return;
		rc = registry_deregister(srv->reg, req->type, req->name, req->alloc, &one, err,
					 sizeof(err));
		removed = one ? 1 : 0;
	} else {
		rc = registry_deregister_alloc(srv->reg, req->alloc, &removed, err, sizeof(err));
	}
	if (rc) {
		send_registry_error(c, req, rc, err);
		return;
	}
	send_ok(c, req->id, "removed", json_integer((json_int_t)removed));
}

static void op_list(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	struct reg_snapshot snap;
	json_t *o = NULL;
	int rc;

	if (req->type && check_type(srv, c, req, "type", req->type))
		return;
	memset(&snap, 0, sizeof(snap));
	rc = registry_snapshot(srv->reg, req->type, &snap);
	if (rc) {
		send_registry_error(c, req, rc, "");
		return;
	}
	o = control_json_snapshot(&snap);
	reg_snapshot_free(&snap);
	if (o && (json_object_set_new(o, "ok", json_true()) ||
		  (req->id && json_object_set(o, "id", req->id)))) {
		json_decref(o);
		o = NULL;
	}
	client_send(c, o);
}

static void op_show(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	struct reg_plugin p;
	int rc;

	if (check_type(srv, c, req, "type", req->type) || check_name(c, req))
		return;
	memset(&p, 0, sizeof(p));
	rc = registry_get_plugin(srv->reg, req->type, req->name, &p);
	if (rc == -ENOENT) {
		send_error(c, req->id, CTL_E_NOT_FOUND, "show: plugin %s/%s has no registration",
			   req->type, req->name);
		return;
	}
	if (rc) {
		send_registry_error(c, req, rc, "");
		return;
	}
	send_ok(c, req->id, "plugin", control_json_plugin(&p));
	reg_plugin_free_contents(&p);
}

static void process_events(struct control_server *srv);

static void op_wait(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	struct reg_plugin p;
	int rc;

	if (check_type(srv, c, req, "type", req->type) || check_name(c, req))
		return;
	/* Events already committed go out first; anything committed after the
	 * lookup below is still in the queue and completes the wait. */
	process_events(srv);
	memset(&p, 0, sizeof(p));
	rc = registry_get_plugin(srv->reg, req->type, req->name, &p);
	if (rc == 0) {
		send_ok(c, req->id, "plugin", control_json_plugin(&p));
		reg_plugin_free_contents(&p);
		return;
	}
	if (rc != -ENOENT) {
		send_registry_error(c, req, rc, "");
		return;
	}
	if (req->timeout == 0) {
		send_error(c, req->id, CTL_E_NOT_FOUND,
			   "wait: plugin %s/%s has no active registration (timeout 0 s)", req->type,
			   req->name);
		return;
	}
	c->wait_type = strdup(req->type);
	c->wait_name = strdup(req->name);
	if (!c->wait_type || !c->wait_name) {
		free(c->wait_type);
		free(c->wait_name);
		c->wait_type = c->wait_name = NULL;
		send_error(c, req->id, CTL_E_INTERNAL, "wait: out of memory");
		return;
	}
	c->wait_id = req->id ? json_incref(req->id) : NULL;
	c->wait_deadline = req->timeout < 0 ? -1 : now_ms() + (int64_t)(req->timeout * 1000);
	c->waiting = true;
}

static void wait_done(struct control_server *srv, struct client *c, json_t *plugin)
{
	if (plugin) {
		send_ok(c, c->wait_id, "plugin", json_incref(plugin));
	} else {
		send_error(c, c->wait_id, CTL_E_NOT_FOUND,
			   "wait: plugin %s/%s has no active registration: timed out", c->wait_type,
			   c->wait_name);
	}
	free(c->wait_type);
	free(c->wait_name);
	json_decref(c->wait_id);
	c->wait_type = c->wait_name = NULL;
	c->wait_id = NULL;
	c->waiting = false;
	c->last_active = now_ms();
	/* Requests sent after the wait were held back; the loop serves them
	 * (not from here: this may run inside process_events). */
	c->resume = true;
}

static void op_watch(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	json_t *types = json_array();

	for (size_t i = 0; i < req->n_types; i++)
		if (check_type(srv, c, req, "types", req->types[i]))
			goto out;
	/* Deliver what was committed before this request to earlier watchers
	 * only: this watcher sees the changes after its answer. */
	process_events(srv);
	for (size_t i = 0; i < c->n_watch_types; i++)
		free(c->watch_types[i]);
	free(c->watch_types);
	c->watch_types = NULL;
	c->n_watch_types = 0;
	if (req->n_types > 0) {
		c->watch_types = calloc(req->n_types, sizeof(char *));
		if (!c->watch_types)
			goto oom;
		for (size_t i = 0; i < req->n_types; i++) {
			c->watch_types[i] = strdup(req->types[i]);
			if (!c->watch_types[i])
				goto oom;
			c->n_watch_types++;
			json_array_append_new(types, json_string(req->types[i]));
		}
	} else {
		const char *const *names = NULL;
		const int64_t *ids = NULL;
		size_t n = registry_types(srv->reg, &names, &ids);

		for (size_t i = 0; i < n; i++)
			json_array_append_new(types, json_string(names[i]));
	}
	c->watching = true;
	send_ok(c, req->id, "types", types);
	return;
oom:
	send_error(c, req->id, CTL_E_INTERNAL, "watch: out of memory");
out:
	json_decref(types);
}

static void op_status(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	size_t n_plugins = 0, n_regs = 0, n_watchers = 0;
	char started[32];
	json_t *o;

	registry_counts(srv->reg, &n_plugins, &n_regs);
	for (struct client *k = srv->clients; k; k = k->next)
		n_watchers += k->watching;
	control_format_time(srv->started_wall, started, sizeof(started));
	o = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "ok", 1,
		      "version", PLUGFS_VERSION, "mountpoint", srv->mountpoint, "state",
		      srv->state_path, "socket", srv->socket_path, "started_at", started, "uptime",
		      (json_int_t)((now_ms() - srv->started_mono) / 1000), "plugins",
		      (json_int_t)n_plugins, "registrations", (json_int_t)n_regs, "clients",
		      (json_int_t)srv->n_clients, "watchers", (json_int_t)n_watchers, "pid",
		      (json_int_t)getpid());
	if (o && req->id)
		json_object_set(o, "id", req->id);
	client_send(c, o);
}

static void handle_line(struct control_server *srv, struct client *c, const char *line, size_t len)
{
	struct ctl_request req;
	enum ctl_code code = CTL_E_INTERNAL;
	char err[REG_ERR_MAX + 128] = "";

	/* Blank lines are ignored (handy with interactive tools). */
	if (strspn(line, " \t\r") == len)
		return;
	if (ctl_parse_request(line, len, &req, &code, err, sizeof(err)) != 0) {
		client_send(c, ctl_error_response(req.id, code, err));
		goto out;
	}
	if (ctl_op_mutates(req.op) && !c->peer.may_mutate) {
		log_warn("control: %s from pid %d uid %u refused: permission denied",
			 ctl_op_name(req.op), (int)c->peer.pid, (unsigned)c->peer.uid);
		send_error(c, req.id, CTL_E_PERMISSION_DENIED,
			   "%s: changes need uid 0%s%s%s; this client runs as uid %u",
			   ctl_op_name(req.op), srv->have_group ? " or membership in group `" : "",
			   srv->have_group ? srv->group : "",
			   srv->have_group ? "' (control.group)" : " (control.group is not set)",
			   (unsigned)c->peer.uid);
		goto out;
	}
	switch (req.op) {
	case CTL_OP_REGISTER:
		op_register(srv, c, &req);
		break;
	case CTL_OP_DEREGISTER:
		op_deregister(srv, c, &req);
		break;
	case CTL_OP_LIST:
		op_list(srv, c, &req);
		break;
	case CTL_OP_SHOW:
		op_show(srv, c, &req);
		break;
	case CTL_OP_WAIT:
		op_wait(srv, c, &req);
		break;
	case CTL_OP_WATCH:
		op_watch(srv, c, &req);
		break;
	case CTL_OP_STATUS:
		op_status(srv, c, &req);
		break;
	}
out:
	ctl_request_free(&req);
}

/* Serves the complete lines read so far, one at a time, holding back while
 * a wait is pending or the client is not reading its answers. */
static void serve_lines(struct control_server *srv, struct client *c)
{
	for (;;) {
		enum ctl_line_result r;
		char *line = NULL;
		size_t len = 0;

		if (c->dead || c->closing || c->waiting || out_pending(c) > OUT_STALL)
			return;
		r = ctl_linebuf_next(&c->in, &line, &len);
		if (r == CTL_LINE_NONE && c->eof)
			r = ctl_linebuf_flush(&c->in, &line, &len);
		if (r == CTL_LINE_NONE) {
			/* The client sent everything it will send. */
			if (c->eof && !c->watching)
				c->closing = true;
			return;
		}
		if (r == CTL_LINE_OVERLONG) {
			send_error(c, NULL, CTL_E_INVALID_ARGUMENT,
				   "request line longer than %d bytes (CONTROL_LINE_MAX); it was "
				   "discarded up to its newline",
				   CONTROL_LINE_MAX);
			continue;
		}
		handle_line(srv, c, line, len);
	}
}

static void client_read(struct control_server *srv, struct client *c)
{
	/* A bounded number of reads per poll round: one busy client cannot
	 * keep the loop from the others. */
	for (int round = 0; round < READ_ROUNDS; round++) {
		size_t avail = 0;
		char *p = ctl_linebuf_space(&c->in, READ_CHUNK, &avail);
		ssize_t n;

		if (!p) {
			client_kill(c, "out of memory");
			return;
		}
		n = recv(c->fd, p, avail, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				client_kill(c, strerror(errno));
			break;
		}
		if (n == 0) {
			c->eof = true;
			break;
		}
		ctl_linebuf_commit(&c->in, (size_t)n);
		c->last_active = now_ms();
		/* Serve between reads so that input stays bounded. */
		serve_lines(srv, c);
		if (c->dead || c->waiting || out_pending(c) > OUT_STALL)
			return;
	}
	serve_lines(srv, c);
}

/* --- events --- */

static bool watches(const struct client *c, const char *type)
{
	if (!c->watching || c->dead)
		return false;
	if (!c->watch_types)
		return true;
	for (size_t i = 0; i < c->n_watch_types; i++)
		if (strcmp(c->watch_types[i], type) == 0)
			return true;
	return false;
}

static void process_events(struct control_server *srv)
{
	struct ev_item *list;
	bool lost;

	pthread_mutex_lock(&srv->q_lock);
	list = srv->q_head;
	srv->q_head = NULL;
	srv->q_tail = &srv->q_head;
	lost = srv->lost_events;
	srv->lost_events = false;
	pthread_mutex_unlock(&srv->q_lock);

	while (list) {
		struct ev_item *it = list;
		size_t len = 0;
		char *line = ctl_dump_line(it->event, &len);

		list = it->next;
		for (struct client *c = srv->clients; c; c = c->next) {
			if (line && watches(c, it->type))
				client_write(c, line, len);
			if (it->plugin && c->waiting && !c->dead &&
			    strcmp(c->wait_type, it->type) == 0 &&
			    strcmp(c->wait_name, it->name) == 0)
				wait_done(srv, c, it->plugin);
		}
		if (!line)
			lost = true;
		free(line);
		ev_item_free(it);
	}
	if (lost) {
		/* A watcher must never miss an event silently. */
		log_error("control: out of memory while queueing events; closing watchers");
		for (struct client *c = srv->clients; c; c = c->next) {
			if (!c->watching)
				continue;
			send_error(c, NULL, CTL_E_INTERNAL,
				   "events were lost (out of memory); watch again");
			c->closing = true;
		}
	}
}

/* --- the loop --- */

static void client_free(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	ctl_linebuf_free(&c->in);
	free(c->out);
	for (size_t i = 0; i < c->n_watch_types; i++)
		free(c->watch_types[i]);
	free(c->watch_types);
	free(c->wait_type);
	free(c->wait_name);
	json_decref(c->wait_id);
	free(c);
}

static void reject_client(int fd, const char *msg)
{
	json_t *o = ctl_error_response(NULL, CTL_E_UNAVAILABLE, msg);
	size_t len = 0;
	char *line = o ? ctl_dump_line(o, &len) : NULL;

	/* Best effort, never blocks: a fresh socket has room for one line. */
	if (line && send(fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("control: cannot send the rejection: %s", strerror(errno));
	free(line);
	json_decref(o);
	close(fd);
}

static void accept_clients(struct control_server *srv)
{
	for (;;) {
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct client *c;
		char msg[160];

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_warn("control: accept: %s", strerror(errno));
			return;
		}
		if (srv->max_clients > 0 && srv->n_clients >= srv->max_clients) {
			snprintf(msg, sizeof(msg),
				 "too many clients: %u connected (control.max_clients); try again "
				 "later",
				 srv->max_clients);
			log_warn("control: %s", msg);
			reject_client(fd, msg);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			reject_client(fd, "out of memory");
			continue;
		}
		c->fd = fd;
		c->serial = ++srv->next_serial;
		ctl_linebuf_init(&c->in, CONTROL_LINE_MAX);
		c->last_active = now_ms();
		if (ctl_peer_creds(fd, srv->gid, srv->have_group, &c->peer) != 0) {
			log_warn("control: cannot read the peer's credentials: %s",
				 strerror(errno));
			c->peer.may_mutate = false;
		}
		log_debug("control: client %llu connected (pid %d, uid %u%s)", c->serial,
			  (int)c->peer.pid, (unsigned)c->peer.uid,
			  c->peer.may_mutate ? ", may change" : ", read-only");
		c->next = srv->clients;
		srv->clients = c;
		srv->n_clients++;
	}
}

/* Expires waits and idle clients; returns the poll timeout in ms. */
static int check_timers(struct control_server *srv)
{
	int64_t now = now_ms(), next = -1;

	for (struct client *c = srv->clients; c; c = c->next) {
		int64_t deadline = -1;

		if (c->dead)
			continue;
		if (c->waiting && c->wait_deadline >= 0) {
			if (now >= c->wait_deadline)
				wait_done(srv, c, NULL);
			else
				deadline = c->wait_deadline;
		}
		if (!c->waiting && !c->watching && !c->dead && srv->idle_timeout > 0) {
			int64_t idle_end = c->last_active + (int64_t)srv->idle_timeout * 1000;

			if (now >= idle_end) {
				send_error(c, NULL, CTL_E_UNAVAILABLE,
					   "closing the connection after %u s without activity "
					   "(control.idle_timeout)",
					   srv->idle_timeout);
				client_kill(c, "idle");
				continue;
			}
			if (deadline < 0 || idle_end < deadline)
				deadline = idle_end;
		}
		if (deadline >= 0 && (next < 0 || deadline < next))
			next = deadline;
	}
	for (struct client *c = srv->clients; c; c = c->next)
		if (c->resume && !c->dead)
			return 0;
	if (next < 0)
		return -1;
	return next - now > 60000 ? 60000 : (int)(next - now) + 1;
}

static void reap_clients(struct control_server *srv)
{
	struct client **pp = &srv->clients;

	while (*pp) {
		struct client *c = *pp;

		if (c->closing && out_pending(c) == 0)
			c->dead = true;
		if (c->dead) {
			*pp = c->next;
			srv->n_clients--;
			client_free(c);
		} else {
			pp = &c->next;
		}
	}
}

static void *server_thread(void *arg)
{
	struct control_server *srv = arg;
	struct pollfd *pfds = NULL;
	struct client **who = NULL;
	size_t cap = 0;

	for (;;) {
		size_t n = 2, i;
		int timeout, rc;
		bool stop;

		for (struct client *c = srv->clients; c; c = c->next) {
			if (c->resume) {
				c->resume = false;
				serve_lines(srv, c);
			}
		}
		timeout = check_timers(srv);
		reap_clients(srv);
		if (cap < srv->n_clients + 2) {
			size_t ncap = srv->n_clients + 16;
			struct pollfd *np = realloc(pfds, ncap * sizeof(*np));
			struct client **nw;

			if (np)
				pfds = np;
			nw = np ? realloc(who, ncap * sizeof(*nw)) : NULL;
			if (nw)
				who = nw;
			if (!np || !nw) {
				log_error("control: out of memory; retrying");
				sleep(1);
				continue;
			}
			cap = ncap;
		}
		pfds[0] = (struct pollfd){.fd = srv->wake_fd, .events = POLLIN};
		pfds[1] = (struct pollfd){.fd = srv->listen_fd, .events = POLLIN};
		for (struct client *c = srv->clients; c; c = c->next) {
			short ev = 0;

			if (!c->eof && !c->waiting && out_pending(c) <= OUT_STALL)
				ev |= POLLIN;
			if (out_pending(c) > 0)
				ev |= POLLOUT;
			pfds[n] = (struct pollfd){.fd = c->fd, .events = ev};
			who[n++] = c;
		}
		rc = poll(pfds, n, timeout);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			log_error("control: poll: %s", strerror(errno));
			sleep(1);
			continue;
		}
		if (pfds[0].revents & POLLIN) {
			uint64_t v;

			if (read(srv->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_warn("control: eventfd read: %s", strerror(errno));
		}
		pthread_mutex_lock(&srv->q_lock);
		stop = srv->stop;
		pthread_mutex_unlock(&srv->q_lock);
		if (stop)
			break;
		process_events(srv);
		for (i = 2; i < n; i++) {
			struct client *c = who[i];
			short re = pfds[i].revents;

			if (c->dead || re == 0)
				continue;
			if (re & POLLOUT)
				client_flush(c);
			if (re & POLLIN)
				client_read(srv, c);
			else if (re & (POLLHUP | POLLERR | POLLNVAL))
				client_kill(c, "hung up");
			if (!c->dead && out_pending(c) <= OUT_STALL)
				serve_lines(srv, c);
		}
		if (pfds[1].revents & POLLIN)
			accept_clients(srv);
	}
	free(pfds);
	free(who);
	return NULL;
}

/* --- start and stop --- */

static void server_free(struct control_server *srv)
{
	if (!srv)
		return;
	while (srv->clients) {
		struct client *c = srv->clients;

		srv->clients = c->next;
		client_free(c);
	}
	while (srv->q_head) {
		struct ev_item *it = srv->q_head;

		srv->q_head = it->next;
		ev_item_free(it);
	}
	if (srv->listen_fd >= 0) {
		close(srv->listen_fd);
		ctl_unlink_if_ours(srv->socket_path, srv->sock_dev, srv->sock_ino);
	}
	if (srv->wake_fd >= 0)
		close(srv->wake_fd);
	pthread_mutex_destroy(&srv->q_lock);
	free(srv->socket_path);
	free(srv->mountpoint);
	free(srv->state_path);
	free(srv->group);
	free(srv);
}

int control_server_start(struct registry *reg, const struct control_options *opts,
			 struct control_server **out, char *err, size_t errlen)
{
	struct control_server *srv = NULL;
	sigset_t all, old;
	int rc;

	*out = NULL;
	if (!reg || !opts || !opts->socket_path) {
		seterr(err, errlen, "control: a registry and control.socket are required");
		return -EINVAL;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	srv->reg = reg;
	srv->listen_fd = srv->wake_fd = -1;
	srv->sub_id = -1;
	srv->q_tail = &srv->q_head;
	pthread_mutex_init(&srv->q_lock, NULL);
	srv->max_clients = opts->max_clients;
	srv->idle_timeout = opts->idle_timeout;
	srv->socket_path = strdup(opts->socket_path);
	srv->mountpoint = strdup(opts->mountpoint ? opts->mountpoint : "");
	srv->state_path = strdup(opts->state_path ? opts->state_path : "");
	srv->group = strdup(opts->group ? opts->group : "");
	if (!srv->socket_path || !srv->mountpoint || !srv->state_path || !srv->group) {
		rc = -ENOMEM;
		seterr(err, errlen, "out of memory");
		goto out;
	}
	srv->started_mono = now_ms();
	srv->started_wall = time(NULL);
	if (srv->group[0]) {
		rc = ctl_resolve_group(srv->group, &srv->gid, err, errlen);
		if (rc)
			goto out;
		srv->have_group = true;
	}
	srv->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (srv->wake_fd < 0) {
		rc = -errno;
		seterr(err, errlen, "control: eventfd: %s", strerror(errno));
		goto out;
	}
	rc = ctl_listen(srv->socket_path, srv->have_group, srv->gid, &srv->listen_fd,
			&srv->sock_dev, &srv->sock_ino, err, errlen);
	if (rc)
		goto out;
	rc = registry_subscribe(reg, on_event, srv);
	if (rc < 0) {
		seterr(err, errlen, "control: cannot subscribe to registry events: %s",
		       strerror(-rc));
		goto out;
	}
	srv->sub_id = rc;
	/* Signals belong to the main thread (SIGTERM, SIGHUP). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&srv->thread, NULL, server_thread, srv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		seterr(err, errlen, "control: cannot start the server thread: %s", strerror(-rc));
		goto out;
	}
	srv->thread_started = true;
	log_info("control: listening on %s (mode 0660%s%s, max_clients %u, idle_timeout %u s)",
		 srv->socket_path, srv->have_group ? ", group " : "", srv->group, srv->max_clients,
		 srv->idle_timeout);
	*out = srv;
	srv = NULL;
	rc = 0;
out:
	if (srv) {
		if (srv->sub_id >= 0)
			registry_unsubscribe(reg, srv->sub_id);
		server_free(srv);
	}
	return rc;
}

void control_server_stop(struct control_server *srv)
{
	uint64_t one = 1;

	if (!srv)
		return;
	/* After this returns no callback runs (callbacks run under the
	 * registry mutex, which unsubscribe takes). */
	if (srv->sub_id >= 0)
		registry_unsubscribe(srv->reg, srv->sub_id);
	srv->sub_id = -1;
	if (srv->thread_started) {
		pthread_mutex_lock(&srv->q_lock);
		srv->stop = true;
		pthread_mutex_unlock(&srv->q_lock);
		if (write(srv->wake_fd, &one, sizeof(one)) < 0)
			log_warn("control: cannot wake the server thread: %s", strerror(errno));
		pthread_join(srv->thread, NULL);
	}
	server_free(srv);
}
