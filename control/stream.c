/* SPDX-License-Identifier: MIT */
/*
 * `list' as a stream (docs/protocol.md, "list"): the answer is produced a
 * chunk at a time from a cursor (control_cursor_*), and only while the
 * client has read what was sent before (less than STREAM_LOW unsent), so the
 * daemon holds one chunk per listing client, never the whole answer, and a
 * slow reader slows only its own list.  The server loop (server.c) makes one
 * step per listing client per round, between serving the other clients.
 * Runs on the server thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control_server_internal.h"
#include "array.h"
#include "clock.h"
#include "log.h"

struct ctl_stream {
	struct control_cursor *cur;
	bool lines;  /* "stream": true: a line per plugin and an end line */
	json_t *id;  /* the request's id (a reference), or NULL */
	size_t sent; /* plugins sent */
	size_t regs; /* their registrations */
	char *buf;   /* one chunk, reused */
	size_t len, cap;
	bool prepared; /* the names taken and sorted */
	int64_t t0;    /* monotonic ms at the request */
};

static int buf_add(struct ctl_stream *s, const char *data, size_t n)
{
	if (PLUGFS_RESERVE(s->buf, s->cap, s->len + n, STREAM_CHUNK_BYTES * 2) != 0)
		return -ENOMEM;
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	return 0;
}

/* {"ok":true[,"id":ID]} without its closing brace and newline: the start
 * of the header (lines) or of the one-line answer. */
static int add_ok_prefix(struct ctl_stream *s)
{
	json_t *o = ctl_ok_response(s->id);
	size_t len = 0;
	char *line = o ? ctl_dump_line(o, &len) : NULL;
	int rc = line && len >= 2 ? buf_add(s, line, len - 2) : -ENOMEM;

	free(line);
	json_decref(o);
	return rc;
}

static void stream_free(struct ctl_stream *s)
{
	if (!s)
		return;
	control_cursor_free(s->cur);
	json_decref(s->id);
	free(s->buf);
	free(s);
}

/* Sends the chunk built in s->buf and empties it. */
static void send_chunk(struct client *c, struct ctl_stream *s)
{
	ctl_conn_write_raw(c, s->buf, s->len);
	s->len = 0;
}

/* Ends c's stream: what was held back while it ran (events) goes out, and
 * the lines c sent meanwhile are served. */
static void stream_end(struct client *c)
{
	stream_free(c->stream);
	c->stream = NULL;
	ctl_conn_release_held(c);
	c->resume = true;
}

int ctl_stream_begin(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	struct ctl_stream *s = calloc(1, sizeof(*s));
	int64_t t0 = plugfs_mono_ms();
	int rc;

	if (!s)
		return -ENOMEM;
	s->lines = req->stream;
	s->id = req->id ? json_incref(req->id) : NULL;
	rc = control_cursor_open(srv->reg, req->type, &s->cur);
	s->t0 = t0;
	if (rc == 0)
		rc = add_ok_prefix(s);
	if (rc == 0)
		rc = s->lines ? buf_add(s, ",\"stream\":true}\n", 16)
			      : buf_add(s, ",\"plugins\":[", 12);
	if (rc < 0) {
		stream_free(s);
		return rc;
	}
	c->stream = s;
	send_chunk(c, s);
	return 0;
}

bool ctl_stream_ready(const struct client *c)
{
	return c->stream && !c->dead && ctl_out_pending(c) < STREAM_LOW;
}

/* The end of a stream: the end line (lines) or the array's close. */
static int add_end(struct control_server *srv, struct client *c, struct ctl_stream *s, int err)
{
	json_t *o;
	size_t len = 0;
	char *line;
	int rc;

	if (!s->lines) {
		if (err)
			return err;
		srv->counters.answers_ok++;
		return buf_add(s, "]}\n", 3);
	}
	if (err)
		o = ctl_error_response(s->id, ctl_code_from_errno(err), "list: out of memory");
	else
		o = json_pack("{s:b, s:b, s:I, s:I}", "end", 1, "ok", 1, "plugins",
			      (json_int_t)s->sent, "registrations", (json_int_t)s->regs);
	if (o && err)
		json_object_set_new(o, "end", json_true());
	if (o && !err && s->id && json_object_set(o, "id", s->id)) {
		json_decref(o);
		o = NULL;
	}
	line = o ? ctl_dump_line(o, &len) : NULL;
	json_decref(o);
	if (!line)
		return -ENOMEM;
	rc = buf_add(s, line, len);
	free(line);
	if (rc == 0) {
		if (err)
			srv->counters.answers_error[ctl_code_from_errno(err)]++;
		else
			srv->counters.answers_ok++;
	}
	(void)c;
	return rc;
}

void ctl_stream_step(struct control_server *srv, struct client *c)
{
	struct ctl_stream *s = c->stream;
	size_t n = 0;
	int rc = 0, more = 1;

	/* Taking and sorting the names are steps of their own, a few per
	 * round, before the first plugin. */
	if (!s->prepared) {
		rc = control_cursor_prepare(s->cur, STREAM_PREPARE_STEPS);
		if (rc == 0)
			return;
		if (rc > 0) {
			s->prepared = true;
			log_debug("control: list for client %llu: %zu names taken and sorted in "
				  "%lld ms",
				  c->serial, control_cursor_total(s->cur),
				  (long long)(plugfs_mono_ms() - s->t0));
			rc = 0;
		}
	}
	while (rc == 0 && n < STREAM_CHUNK_PLUGINS && s->len < STREAM_CHUNK_BYTES) {
		struct reg_plugin p;
		json_t *j;
		char *text;

		more = control_cursor_next(s->cur, &p);
		if (more <= 0) {
			rc = more;
			break;
		}
		j = ctl_plugin_json(srv, &p);
		text = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
		if (!text) {
			rc = -ENOMEM;
		} else if (s->lines) {
			rc = buf_add(s, "{\"plugin\":", 10);
			rc = rc ? rc : buf_add(s, text, strlen(text));
			rc = rc ? rc : buf_add(s, "}\n", 2);
		} else {
			rc = s->sent ? buf_add(s, ",", 1) : 0;
			rc = rc ? rc : buf_add(s, text, strlen(text));
		}
		free(text);
		if (rc == 0) {
			s->sent++;
			s->regs += p.n_regs;
		}
		reg_plugin_free_contents(&p);
		n++;
	}
	if (more > 0 && rc == 0) {
		send_chunk(c, s);
		return;
	}
	/* The end, or a failure: an answer a client can tell from a whole one. */
	if (rc < 0)
		log_error("control: list for client %llu: %s; the answer is cut short",
			  c->serial, strerror(-rc));
	if (add_end(srv, c, s, rc) < 0) {
		/* Nothing can say it in the one-line answer: the client sees
		 * the connection closed in the middle of it. */
		ctl_conn_kill(c, "list: out of memory");
		stream_end(c);
		return;
	}
	send_chunk(c, s);
	stream_end(c);
}

void ctl_stream_release(struct client *c)
{
	stream_free(c->stream);
	c->stream = NULL;
}
