/* SPDX-License-Identifier: MIT */
/*
 * What the control server sends a client, at the bottom of the server's
 * files (it calls none of them): a write buffer per client sent without
 * blocking, so that a slow or stuck client never holds up another one or
 * the filesystem; the answers (ok, error) and the refusals of an operation,
 * logged; the JSON of a plugin as answers carry it.  Runs on the server
 * thread only.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "control_server_internal.h"
#include "array.h"
#include "clock.h"
#include "log.h"

/* --- output --- */

void ctl_conn_kill(struct client *c, const char *why)
{
	if (!c->dead && why)
		log_debug("control: closing client %llu (uid %u): %s", c->serial,
			  (unsigned)c->peer.uid, why);
	c->dead = true;
}

void ctl_conn_flush(struct client *c)
{
	while (!c->dead && ctl_out_pending(c) > 0) {
		ssize_t n = send(c->fd, c->out + c->out_off, ctl_out_pending(c),
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				ctl_conn_kill(c, strerror(errno));
			return;
		}
		c->out_off += (size_t)n;
		c->last_active = plugfs_mono_ms();
	}
	if (ctl_out_pending(c) == 0)
		c->out_off = c->out_len = 0;
}

/* Appends n bytes to buf (len, cap); 0 or -ENOMEM. */
static int buf_append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
	if (PLUGFS_RESERVE(*buf, *cap, *len + n, 4096) != 0)
		return -ENOMEM;
	memcpy(*buf + *len, data, n);
	*len += n;
	return 0;
}

void ctl_conn_write_raw(struct client *c, const char *data, size_t n)
{
	if (c->dead || n == 0)
		return;
	if (c->out_off > 0 && c->out_cap - c->out_len < n) {
		memmove(c->out, c->out + c->out_off, ctl_out_pending(c));
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (buf_append(&c->out, &c->out_len, &c->out_cap, data, n) < 0) {
		ctl_conn_kill(c, "out of memory");
		return;
	}
	ctl_conn_flush(c);
}

void ctl_conn_write(struct client *c, const char *data, size_t n)
{
	if (c->dead)
		return;
	if (ctl_out_pending(c) + c->held_len + n > OUT_MAX) {
		log_warn("control: dropping client %llu (uid %u): it does not read its "
			 "output (%zu bytes pending)",
			 c->serial, (unsigned)c->peer.uid, ctl_out_pending(c) + c->held_len);
		ctl_conn_kill(c, NULL);
		return;
	}
	if (!c->stream) {
		ctl_conn_write_raw(c, data, n);
		return;
	}
	if (buf_append(&c->held, &c->held_len, &c->held_cap, data, n) < 0)
		ctl_conn_kill(c, "out of memory");
}

void ctl_conn_release_held(struct client *c)
{
	ctl_conn_write_raw(c, c->held, c->held_len);
	free(c->held);
	c->held = NULL;
	c->held_len = c->held_cap = 0;
}

/* Counts an answer (an object with "ok") for metrics. */
static void count_answer(struct client *c, json_t *obj)
{
	json_t *ok = obj ? json_object_get(obj, "ok") : NULL;
	const char *code;

	if (!c->srv || (obj && !ok))
		return;
	if (ok && json_is_true(ok)) {
		c->srv->counters.answers_ok++;
		return;
	}
	code = obj ? json_string_value(json_object_get(json_object_get(obj, "error"), "code"))
		   : "internal";
	for (int k = 0; k < CTL_E_COUNT; k++) {
		if (code && strcmp(code, ctl_code_name((enum ctl_code)k)) == 0) {
			c->srv->counters.answers_error[k]++;
			return;
		}
	}
	c->srv->counters.answers_error[CTL_E_INTERNAL]++;
}

void ctl_conn_send(struct client *c, json_t *obj)
{
	size_t len = 0;
	char *line = obj ? ctl_dump_line(obj, &len) : NULL;

	count_answer(c, obj);
	if (!line) {
		static const char oom[] = "{\"ok\":false,\"error\":{\"code\":\"internal\","
					  "\"message\":\"out of memory\"}}\n";
		ctl_conn_write(c, oom, sizeof(oom) - 1);
	} else {
		ctl_conn_write(c, line, len);
	}
	free(line);
	json_decref(obj);
}

void ctl_conn_send_error(struct client *c, json_t *id, enum ctl_code code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctl_conn_send(c, ctl_error_response(id, code, msg));
}

void ctl_conn_send_ok(struct client *c, json_t *id, const char *key, json_t *val)
{
	json_t *o = ctl_ok_response(id);

	if (o && key && (!val || json_object_set_new(o, key, val))) {
		json_decref(o);
		o = NULL;
	} else if (!key) {
		json_decref(val);
	}
	ctl_conn_send(c, o);
}

/* --- refusals --- */

void ctl_refuse(struct client *c, struct ctl_request *req, enum ctl_code code, const char *fmt, ...)
{
	bool theirs = code == CTL_E_INVALID_ARGUMENT || code == CTL_E_NOT_FOUND ||
		      code == CTL_E_PERMISSION_DENIED;
	enum plugfs_log_level l = !theirs	       ? PLOG_ERROR
				  : req->desc->mutates ? PLOG_NOTICE
						       : PLOG_DEBUG;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	plog(l, "control: %s from pid %d uid %u %s: %s", req->desc->name, (int)c->peer.pid,
	     (unsigned)c->peer.uid, theirs ? "refused" : "failed", msg);
	ctl_conn_send_error(c, req->id, code, "%s: %s", req->desc->name, msg);
}

void ctl_refuse_registry(struct client *c, struct ctl_request *req, int rc, const char *err)
{
	ctl_refuse(c, req, ctl_code_from_errno(rc), "%s", err && err[0] ? err : strerror(-rc));
}

/* --- what answers carry --- */

json_t *ctl_plugin_json(struct control_server *srv, const struct reg_plugin *p)
{
	json_t *j = control_json_plugin(p);

	if (j && srv->opt.probe && control_json_add_health(j, p) < 0) {
		json_decref(j);
		j = NULL;
	}
	return j;
}
