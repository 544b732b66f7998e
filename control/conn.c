/* SPDX-License-Identifier: MIT */
/*
 * Per-client connections of the control server (accepting them: accept.c):
 * closing, reading into the line buffer, serving lines one at a time, and non-blocking sending from a
 * write buffer per client, so a slow or stuck client never holds up another
 * one or the filesystem.  Runs on the server thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control_server_internal.h"
#include "clock.h"
#include "log.h"

#define READ_CHUNK (64 * 1024)
#define READ_ROUNDS 4

/* --- closing --- */

void ctl_conn_free(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	ctl_linebuf_free(&c->in);
	free(c->out);
	ctl_stream_release(c);
	free(c->held);
	ctl_events_release(c);
	free(c);
}


void ctl_conn_kill(struct client *c, const char *why)
{
	if (!c->dead && why)
		log_debug("control: closing client %llu (uid %u): %s", c->serial,
			  (unsigned)c->peer.uid, why);
	c->dead = true;
}

/* --- output --- */

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
	if (*cap - *len < n) {
		size_t ncap = *cap ? *cap : 4096;
		char *nbuf;

		while (ncap - *len < n)
			ncap *= 2;
		nbuf = realloc(*buf, ncap);
		if (!nbuf)
			return -ENOMEM;
		*buf = nbuf;
		*cap = ncap;
	}
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

/* --- input --- */

void ctl_conn_serve(struct control_server *srv, struct client *c)
{
	for (;;) {
		enum ctl_line_result r;
		char *line = NULL;
		size_t len = 0;

		if (c->dead || c->closing || c->waiting || c->stream || c->committing ||
		    ctl_out_pending(c) > OUT_STALL)
			return;
		r = ctl_linebuf_next(&c->in, &line, &len);
		if (r == CTL_LINE_NONE && c->eof && c->fenced)
			ctl_drain_drop_partial(srv, c);
		if (r == CTL_LINE_NONE && c->eof)
			r = ctl_linebuf_flush(&c->in, &line, &len);
		if (r == CTL_LINE_NONE) {
			/* The client sent everything it will send. */
			if (c->eof && !c->watching)
				c->closing = true;
			return;
		}
		c->last_active = plugfs_mono_ms();
		if (r == CTL_LINE_OVERLONG) {
			ctl_conn_send_error(c, NULL, CTL_E_INVALID_ARGUMENT,
					    "request line longer than %d bytes (CONTROL_LINE_MAX); "
					    "it was discarded up to its newline",
					    CONTROL_LINE_MAX);
			continue;
		}
		if (srv->draining)
			srv->drain_st.served++;
		ctl_ops_handle_line(srv, c, line, len);
		c->last_active = plugfs_mono_ms();
	}
}

void ctl_conn_read(struct control_server *srv, struct client *c)
{
	/* A bounded number of reads per poll round: one busy client cannot
	 * keep the loop from the others. */
	for (int round = 0; round < READ_ROUNDS; round++) {
		size_t avail = 0;
		char *p = ctl_linebuf_space(&c->in, READ_CHUNK, &avail);
		ssize_t n;

		if (!p) {
			ctl_conn_kill(c, "out of memory");
			return;
		}
		n = recv(c->fd, p, avail, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				ctl_conn_kill(c, strerror(errno));
			break;
		}
		if (n == 0) {
			c->eof = true;
			break;
		}
		/* Bytes alone are not activity: only a whole request line
		 * (ctl_conn_serve) restarts the idle timer, so a request must be
		 * complete within control.idle_timeout of its first byte. */
		ctl_linebuf_commit(&c->in, (size_t)n);
		/* Serve between reads so that input stays bounded. */
		ctl_conn_serve(srv, c);
		if (c->dead || c->waiting || c->stream || c->committing || ctl_out_pending(c) > OUT_STALL)
			return;
	}
	ctl_conn_serve(srv, c);
}
