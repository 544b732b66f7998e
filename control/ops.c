/* SPDX-License-Identifier: MIT */
/*
 * The operations of the control protocol (docs/protocol.md), one function
 * each, their one table (ctl_ops: name, fields, function, whether it
 * mutates) and the dispatch of a request line by it.  Each answers its client
 * exactly once, now, at the end of the poll round (register, deregister:
 * commit.c; a register once its probe ended, firstprobe.c) or (wait) when
 * the wait ends.  Runs on the server thread.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control_server_internal.h"
#include "clock.h"
#include "fsutil.h"
#include "log.h"
#include "strutil.h"
#include "timefmt.h"

/* --- checks shared by the operations --- */

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
		      const char *type)
{
	const char *const *names = NULL;
	const int64_t *ids = NULL;
	size_t n = registry_types(srv->reg, &names, &ids);
	char list[512];

	if (type_known(srv, type))
		return 0;
	plugfs_join(list, sizeof(list), names, n, ", ");
	/* The registry's wording for the same mistake (register's). */
	ctl_refuse(c, req, CTL_E_INVALID_ARGUMENT,
		   "type `%.128s': must be one of the configured types (%s)", type, list);
	return -EINVAL;
}

static int check_name(struct client *c, struct ctl_request *req)
{
	char err[REG_ERR_MAX];

	if (reg_validate_name("name", req->name, err, sizeof(err)) == 0)
		return 0;
	ctl_refuse(c, req, CTL_E_INVALID_ARGUMENT, "%s", err);
	return -EINVAL;
}

/* check_type and check_name of the request's type and name. */
static int check_plugin(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	return check_type(srv, c, req, req->type) || check_name(c, req) ? -EINVAL : 0;
}

/* The checked mutation req of c on its way to the group commit
 * (ctl_first_add), or refused. */
static void add_mutation(struct control_server *srv, struct client *c, struct ctl_request *req,
			 const struct reg_spec *spec)
{
	int rc = ctl_first_add(srv, c, req, spec);

	if (rc == -EAGAIN)
		ctl_refuse(c, req, CTL_E_UNAVAILABLE, "cannot start a thread to probe the socket");
	else if (rc != 0)
		ctl_refuse(c, req, CTL_E_INTERNAL, "out of memory");
}

/*
 * 0, or refuses a socket whose path leads into the daemon's own mount
 * through a symlink or a bind mount (the lexical check above sees only
 * the path as written): its names resolved one at a time on a helper
 * thread, bounded, and never looked up in the mount.  A probe would look
 * it up there, and a thread of the daemon blocked in a request to its own
 * mount cannot be killed (docs/design.md, Hazards).
 */
static int check_socket_path(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	char via[PATH_MAX];
	int rc;

	if (!srv->opt.own_mount)
		return 0;
	rc = plugfs_own_mount_check_within(srv->opt.own_mount, req->socket, CTL_SOCKET_RESOLVE_MS,
					   via, sizeof(via));
	if (rc == 1) {
		ctl_refuse(c, req, CTL_E_INVALID_ARGUMENT,
			   "field `socket' must not lead into the plugfs mount %s (plugfs serves "
			   "links there, not sockets, and never looks a path up in its own "
			   "mount): `%.256s' leads to `%.256s'",
			   plugfs_own_mount_path(srv->opt.own_mount), req->socket, via);
		return -EINVAL;
	}
	/* 0, or a path the kernel would not resolve either (-ELOOP ...): the
	 * probe says so.  A walk that did not end in time (-ETIMEDOUT,
	 * -EBUSY: a filesystem on the way does not answer), -EAGAIN, -ENOMEM:
	 * accepted, as a socket on a hung filesystem always was (stored dead,
	 * `timeout'): its probe walks the path again on a connector thread
	 * and never enters the own mount either. */
	return 0;
}

/* --- the operations --- */

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
	int rc;

	if (req->probe && reg_probe_parse(req->probe, &spec.probe) != 0) {
		ctl_conn_send_error(c, req->id, CTL_E_INVALID_ARGUMENT,
				    "register: field `probe' must be none, connect or csi, got "
				    "`%.128s'",
				    req->probe);
		return;
	}
	spec.csi_name = req->csi_name;
	if (reg_validate_probe(spec.probe, spec.csi_name, err, sizeof(err)) < 0) {
		ctl_conn_send_error(c, req->id, CTL_E_INVALID_ARGUMENT, "register: %s", err);
		return;
	}
	if (!srv->opt.probe && spec.probe != REG_PROBE_DEFAULT && spec.probe != REG_PROBE_NONE) {
		ctl_conn_send_error(c, req->id, CTL_E_INVALID_ARGUMENT,
				    "register: field `probe' is %s, but this daemon probes "
				    "nothing ([probe] mode = none for every type); set [probe] "
				    "mode or a [probe.TYPE] section",
				    reg_probe_name(spec.probe));
		return;
	}
	if (req->kind && reg_kind_parse(req->kind, &spec.kind) != 0) {
		ctl_refuse(c, req, CTL_E_INVALID_ARGUMENT,
			   "field `kind' must be controller, node or monolith, got `%.128s'",
			   req->kind);
		return;
	}
	/* plugfs serves links there, not sockets, and no thread of the
	 * daemon may look up a path on its own mount (a probe would). */
	if (srv->opt.mountpoint[0] && reg_path_under(req->socket, srv->opt.mountpoint)) {
		ctl_refuse(
		    c, req, CTL_E_INVALID_ARGUMENT,
		    "field `socket' must not be under the plugfs mountpoint %s (plugfs serves "
		    "links there, not sockets), got `%.256s'",
		    srv->opt.mountpoint, req->socket);
		return;
	}
	/* Every rule the commit checks, before anything acts on the request:
	 * a refused socket (outside the socket roots, relative, with `..') is
	 * never connected to, let alone written to, by the probe below. */
	if ((rc = registry_check_register(srv->reg, req->types, req->n_types, &spec, err,
					  sizeof(err))) != 0) {
		ctl_refuse_registry(c, req, rc, err);
		return;
	}
	if (check_socket_path(srv, c, req) != 0)
		return;
	/* Probed before it is stored, on a probe thread (firstprobe.c): a new
	 * registration whose socket is dead is stored dead and never takes
	 * over.  Then committed with the other mutations of its poll round
	 * (commit.c), which answers. */
	add_mutation(srv, c, req, &spec);
}

static void op_deregister(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	if (req->type && (check_type(srv, c, req, req->type) || check_name(c, req)))
		return;
	/* Committed with the other mutations of this poll round (commit.c),
	 * after a register of the plugin still being probed (firstprobe.c). */
	add_mutation(srv, c, req, NULL);
}

/* Streamed (stream.c): the answer is produced a chunk at a time while the
 * client reads, between the other clients' requests. */
static void op_list(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	int rc;

	if (req->type && check_type(srv, c, req, req->type))
		return;
	rc = ctl_stream_begin(srv, c, req);
	if (rc)
		ctl_refuse_registry(c, req, rc, "");
}

static void op_show(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	struct reg_plugin p;
	int rc;

	if (check_plugin(srv, c, req))
		return;
	memset(&p, 0, sizeof(p));
	rc = registry_get_plugin(srv->reg, req->type, req->name, &p);
	if (rc == -ENOENT) {
		ctl_refuse(c, req, CTL_E_NOT_FOUND, "plugin %s/%s has no registration", req->type,
			   req->name);
		return;
	}
	if (rc) {
		ctl_refuse_registry(c, req, rc, "");
		return;
	}
	ctl_conn_send_ok(c, req->id, "plugin", ctl_plugin_json(srv, &p));
	reg_plugin_free_contents(&p);
}

static void op_wait(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	struct reg_plugin p;
	int rc;

	char err[REG_ERR_MAX];
	const struct registration *active;

	if (check_plugin(srv, c, req))
		return;
	if (req->alloc && reg_validate_name("alloc", req->alloc, err, sizeof(err)) != 0) {
		ctl_refuse(c, req, CTL_E_INVALID_ARGUMENT, "%s", err);
		return;
	}
	/* Events already committed go out first; anything committed after the
	 * lookup below is still in the queue and completes the wait (queued:
	 * this wait counts as a listener from now on). */
	__atomic_add_fetch(&srv->listeners, 1, __ATOMIC_SEQ_CST);
	ctl_events_deliver(srv);
	memset(&p, 0, sizeof(p));
	rc = registry_get_plugin(srv->reg, req->type, req->name, &p);
	active = rc == 0 ? reg_plugin_active(&p) : NULL;
	if (active && (!req->alloc || (strcmp(active->alloc, req->alloc) == 0 &&
				       active->runtime.health != REG_HEALTH_DEAD))) {
		ctl_conn_send_ok(c, req->id, "plugin", ctl_plugin_json(srv, &p));
		reg_plugin_free_contents(&p);
		return;
	}
	reg_plugin_free_contents(&p);
	if (rc != 0 && rc != -ENOENT) {
		ctl_refuse_registry(c, req, rc, "");
		return;
	}
	if (req->timeout == 0) {
		if (req->alloc)
			ctl_refuse(c, req, CTL_E_NOT_FOUND,
				   "alloc %s is not the active registration of plugin %s/%s "
				   "(timeout 0 s)",
				   req->alloc, req->type, req->name);
		else
			ctl_refuse(c, req, CTL_E_NOT_FOUND,
				   "plugin %s/%s has no active registration (timeout 0 s)",
				   req->type, req->name);
		return;
	}
	if (ctl_wait_begin(c, req->type, req->name, req->alloc, req->id, req->timeout) != 0)
		ctl_refuse(c, req, CTL_E_INTERNAL, "out of memory");
}

static void op_watch(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	const char *const *names = NULL;
	const int64_t *ids = NULL;
	size_t n;
	json_t *types = NULL;

	for (size_t i = 0; i < req->n_types; i++)
		if (check_type(srv, c, req, req->types[i]))
			return;
	/* Deliver what was committed before this request to earlier watchers
	 * only: this watcher sees the changes after its answer. */
	ctl_events_deliver(srv);
	if (ctl_watch_begin(c, req->types, req->n_types) != 0) {
		ctl_refuse(c, req, CTL_E_INTERNAL, "out of memory");
		return;
	}
	/* The answer names the types watched: those asked for, or all. */
	if (req->n_types > 0) {
		names = req->types;
		n = req->n_types;
	} else {
		n = registry_types(srv->reg, &names, &ids);
	}
	types = json_array();
	for (size_t i = 0; types && i < n; i++)
		json_array_append_new(types, json_string(names[i]));
	ctl_conn_send_ok(c, req->id, "types", types);
}

/* status: "health": {"alive","unknown","dead" registrations, "none_alive"
 * plugins whose every registration is dead}. */
struct health_counts {
	json_int_t n[3], none_alive;
};

/* registry_each_plugin: counts without copying the registry. */
static int count_health(void *arg, const struct reg_plugin *p)
{
	struct health_counts *hc = arg;
	size_t dead = 0;

	for (size_t j = 0; j < p->n_regs; j++) {
		unsigned h = (unsigned)p->regs[j].runtime.health;

		hc->n[h < 3 ? h : 0]++;
		dead += h == REG_HEALTH_DEAD;
	}
	hc->none_alive += p->n_regs > 0 && dead == p->n_regs;
	return 0;
}

static int add_health_counts(struct control_server *srv, json_t *o)
{
	struct health_counts hc = {{0}, 0};
	int rc = registry_each_plugin(srv->reg, count_health, &hc);

	if (rc < 0)
		return rc;
	return json_object_set_new(o, "health",
				   json_pack("{s:I, s:I, s:I, s:I}", "alive",
					     hc.n[REG_HEALTH_ALIVE], "unknown",
					     hc.n[REG_HEALTH_UNKNOWN], "dead",
					     hc.n[REG_HEALTH_DEAD], "none_alive", hc.none_alive))
		   ? -ENOMEM
		   : 0;
}

/* o.types: the configured types, in the registry's order (for completion). */
static int add_types(struct control_server *srv, json_t *o)
{
	const char *const *names = NULL;
	const int64_t *ids = NULL;
	size_t n = registry_types(srv->reg, &names, &ids);
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(names[i]))) {
			json_decref(a);
			a = NULL;
		}
	return a && json_object_set_new(o, "types", a) == 0 ? 0 : -ENOMEM;
}

static void op_status(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	size_t n_plugins = 0, n_regs = 0, n_watchers = 0;
	char started[32];
	json_t *o;

	registry_counts(srv->reg, &n_plugins, &n_regs);
	for (struct client *k = srv->clients; k; k = k->next)
		n_watchers += k->watching;
	plugfs_format_time(srv->started_wall, -1, started, sizeof(started));
	o = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "ok", 1,
		      "version", PLUGFS_VERSION, "mountpoint", srv->opt.mountpoint, "state",
		      srv->opt.state_path, "socket", srv->opt.socket_path, "started_at", started,
		      "uptime", (json_int_t)((plugfs_mono_ms() - srv->started_mono) / 1000),
		      "plugins", (json_int_t)n_plugins, "registrations", (json_int_t)n_regs,
		      "clients", (json_int_t)srv->n_clients, "watchers", (json_int_t)n_watchers,
		      "pid", (json_int_t)getpid());
	if (o && add_types(srv, o) < 0) {
		json_decref(o);
		o = NULL;
	}
	if (o && srv->opt.probe && add_health_counts(srv, o) < 0) {
		json_decref(o);
		o = NULL;
	}
	if (o && req->id)
		json_object_set(o, "id", req->id);
	ctl_conn_send(c, o);
}

/* reload: the daemon reads its config again (control_options.reload). */
static void op_reload(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	char err[CTL_RELOAD_ERR_MAX] = "";
	json_t *info = NULL, *o = NULL;
	int rc;

	if (!srv->opt.reload) {
		ctl_refuse(c, req, CTL_E_UNAVAILABLE,
			   "this daemon does not reload over the socket");
		return;
	}
	rc = srv->opt.reload(srv->opt.reload_arg, &info, err, sizeof(err));
	if (rc != 0) {
		/* The daemon logged it at error already. */
		ctl_conn_send_error(c, req->id, ctl_code_from_errno(rc),
				    "reload: %s; the running config is kept",
				    err[0] ? err : strerror(-rc));
		json_decref(info);
		return;
	}
	o = ctl_ok_response(req->id);
	if (o && info && json_object_update(o, info) != 0) {
		json_decref(o);
		o = NULL;
	}
	json_decref(info);
	ctl_conn_send(c, o);
}

/* --- the op table and the dispatch --- */

/* `metrics' names its counts of requests after the rows of the table. */
static void op_metrics(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	ctl_op_metrics(srv, c, req, ctl_ops);
}

const struct ctl_op_desc ctl_ops[CTL_OP_COUNT] = {
    [CTL_OP_REGISTER] = {"register",
			 {"types", "name", "alloc", "socket", "version", "kind", "options", "probe",
			  "csi_name", NULL},
			 op_register,
			 true},
    [CTL_OP_DEREGISTER] = {"deregister", {"type", "name", "alloc", NULL}, op_deregister, true},
    [CTL_OP_LIST] = {"list", {"type", "stream", NULL}, op_list, false},
    [CTL_OP_SHOW] = {"show", {"type", "name", NULL}, op_show, false},
    [CTL_OP_WAIT] = {"wait", {"type", "name", "alloc", "timeout", NULL}, op_wait, false},
    [CTL_OP_WATCH] = {"watch", {"types", NULL}, op_watch, false},
    [CTL_OP_STATUS] = {"status", {NULL}, op_status, false},
    [CTL_OP_RELOAD] = {"reload", {NULL}, op_reload, true},
    [CTL_OP_METRICS] = {"metrics", {NULL}, op_metrics, false},
};

void ctl_ops_handle_line(struct control_server *srv, struct client *c, const char *line, size_t len)
{
	struct ctl_request req;
	enum ctl_code code = CTL_E_INTERNAL;
	char err[REG_ERR_MAX + 128] = "";

	/* Blank lines are ignored (handy with interactive tools). */
	if (strspn(line, " \t\r") == len)
		return;
	if (ctl_parse_request(ctl_ops, line, len, &req, &code, err, sizeof(err)) != 0) {
		ctl_conn_send(c, ctl_error_response(req.id, code, err));
		goto out;
	}
	srv->counters.requests[req.op]++;
	if (req.desc->mutates && !c->peer.may_mutate) {
		log_warn("control: %s from pid %d uid %u refused: permission denied",
			 req.desc->name, (int)c->peer.pid, (unsigned)c->peer.uid);
		ctl_conn_send_error(
		    c, req.id, CTL_E_PERMISSION_DENIED,
		    "%s: changes need uid 0%s%s%s; this client runs as uid %u", req.desc->name,
		    srv->have_group ? " or membership in group `" : "",
		    srv->have_group ? srv->opt.group : "",
		    srv->have_group ? "' (control.group)" : " (control.group is not set)",
		    (unsigned)c->peer.uid);
		goto out;
	}
	req.desc->run(srv, c, &req);
out:
	ctl_request_free(&req);
}
