/* SPDX-License-Identifier: MIT */
/*
 * Per-client connections of the control server: accepting, reading into the
 * line buffer, serving lines one at a time, and non-blocking sending from a
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
#include "log.h"

#define READ_CHUNK (64 * 1024)
#define READ_ROUNDS 4

/* --- accepting and closing --- */

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

/* Sends one `unavailable' line to fd; best effort, never blocks. */
static void send_refusal(int fd, const char *msg)
{
	json_t *o = ctl_error_response(NULL, CTL_E_UNAVAILABLE, msg);
	size_t len = 0;
	char *line = o ? ctl_dump_line(o, &len) : NULL;

	/* Best effort, never blocks: a fresh socket has room for one line. */
	if (line && send(fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		log_debug("control: cannot send the rejection: %s", strerror(errno));
	free(line);
	json_decref(o);
}

static void reject_client(int fd, const char *msg)
{
	send_refusal(fd, msg);
	close(fd);
}

bool ctl_ratelimit_ok(struct ctl_ratelimit *rl, int64_t now_ms, unsigned *suppressed)
{
	if (rl->last_ms != 0 && now_ms - rl->last_ms < CTL_LOG_INTERVAL_MS) {
		rl->suppressed++;
		return false;
	}
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	rl->last_ms = now_ms;
	return true;
}

/* Logs a refusal, at most once per CTL_LOG_INTERVAL_MS. */
static void log_refusal(struct control_server *srv, const char *msg)
{
	unsigned more = 0;

	if (ctl_ratelimit_ok(&srv->refuse_log, ctl_now_ms(), &more)) {
		if (more)
			log_warn("control: %s (%u more refused since the last message)", msg, more);
		else
			log_warn("control: %s", msg);
	}
}

/* Refuses fd with a "too many clients" line; the warning is rate-limited. */
static void refuse_client(struct control_server *srv, int fd, const char *msg)
{
	srv->counters.refused++;
	log_refusal(srv, msg);
	reject_client(fd, msg);
}

/* accept4 failed with errno e, for want of a file descriptor (or of kernel
 * memory): gives the reserve fd up to take the client and refuse it, so
 * that it gets an answer and the listening socket stops being readable.
 * Returns true when the accept loop may go on, false when the daemon
 * cannot take even that client: then the listening socket rests (backing
 * off, 10 ms doubling to 1 s) instead of waking poll at once again. */
static bool out_of_fds(struct control_server *srv, int e)
{
	struct rlimit rl = {0};
	char msg[200];
	int fd = -1;

	/* Lost to another thread's open last time: take it back first. */
	if (srv->reserve_fd < 0)
		srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (srv->reserve_fd >= 0) {
		close(srv->reserve_fd);
		srv->reserve_fd = -1;
		fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	}
	if (fd >= 0) {
		getrlimit(RLIMIT_NOFILE, &rl);
		snprintf(msg, sizeof(msg),
			 "too many clients: the daemon is out of file descriptors (%s; %zu "
			 "connected, RLIMIT_NOFILE %llu); try again later",
			 strerror(e), srv->n_clients, (unsigned long long)rl.rlim_cur);
		srv->counters.refused++;
		log_refusal(srv, msg);
		send_refusal(fd, msg);
		/* The client's slot becomes the reserve at once: dup3 closes
		 * the socket and fills the slot in one step, so no other
		 * thread can take it between a close and an open. */
		if (dup3(srv->wake_fd, fd, O_CLOEXEC) >= 0) {
			srv->reserve_fd = fd;
		} else {
			close(fd);
			srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		}
	}
	if (fd >= 0 && srv->reserve_fd >= 0) {
		srv->accept_backoff_ms = 0;
		return true;
	}
	/* Nothing to refuse with: another thread took the fd, or none was
	 * left.  Rest, and try again later. */
	srv->accept_backoff_ms = srv->accept_backoff_ms ? srv->accept_backoff_ms * 2 : 10;
	if (srv->accept_backoff_ms > 1000)
		srv->accept_backoff_ms = 1000;
	srv->accept_resume = ctl_now_ms() + srv->accept_backoff_ms;
	{
		unsigned more = 0;

		if (ctl_ratelimit_ok(&srv->refuse_log, ctl_now_ms(), &more))
			log_warn("control: accept: %s; not accepting for %d ms (%u more refused "
				 "since the last message)",
				 strerror(e), srv->accept_backoff_ms, more);
	}
	return false;
}

/* Whether c may be closed to make room: idle for EVICT_IDLE_MS or more
 * (no whole request since; bytes without a newline do not count), no
 * watch, no wait, no answer on its way. */
static bool evictable(const struct client *c, int64_t now)
{
	return !c->dead && !c->closing && !c->watching && !c->waiting && !c->stream &&
	       !c->committing && ctl_out_pending(c) == 0 &&
	       now - c->last_active >= EVICT_IDLE_MS;
}

/* Makes room for a client of peer: the clients that count against its cap
 * (every client, or for a peer other than root the other non-root ones)
 * and, when the cap is reached, closes the one idle longest.  Returns
 * false (and fills msg) when every slot is busy. */
static bool make_room(struct control_server *srv, const struct ctl_peer *peer, char *msg,
		      size_t msglen)
{
	unsigned reserve = srv->max_clients / 8, cap;
	size_t all = 0, others = 0;
	struct client *victim = NULL;
	int64_t now = ctl_now_ms();
	bool root = peer->uid == 0;

	if (srv->max_clients == 0)
		return true;
	cap = root ? srv->max_clients : srv->max_clients - reserve;
	for (struct client *c = srv->clients; c; c = c->next) {
		if (c->dead)
			continue;
		all++;
		others += c->peer.uid != 0;
	}
	if (all < srv->max_clients && (root || others < cap))
		return true;
	for (struct client *c = srv->clients; c; c = c->next) {
		/* A client other than root makes room among its own class
		 * only: the reserve stays root's. */
		if ((root || c->peer.uid != 0) && evictable(c, now) &&
		    (!victim || c->last_active < victim->last_active))
			victim = c;
	}
	if (victim) {
		ctl_conn_send_error(victim, NULL, CTL_E_UNAVAILABLE,
				    "closing this idle connection (%lld s without a request) to "
				    "make room for a new client (control.max_clients %u)",
				    (long long)((now - victim->last_active) / 1000),
				    srv->max_clients);
		/* The line went out at once: nothing was pending, and it is
		 * far smaller than a socket buffer. */
		ctl_conn_kill(victim, "idle: closed to make room for a new client");
		return true;
	}
	if (all >= srv->max_clients)
		snprintf(msg, msglen,
			 "too many clients: %u connected, none idle (control.max_clients); try "
			 "again later",
			 srv->max_clients);
	else
		snprintf(msg, msglen,
			 "too many clients: the %u slots not reserved for root are busy "
			 "(control.max_clients %u); try again later",
			 cap, srv->max_clients);
	return false;
}

void ctl_conn_accept(struct control_server *srv)
{
	for (;;) {
		int fd;
		struct ctl_peer peer;
		struct client *c;
		char msg[200];

		/* The reserve comes before any client: when it was lost (to
		 * another thread) and an fd is free again, it takes that fd. */
		if (srv->reserve_fd < 0)
			srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			if (e == EINTR || e == ECONNABORTED)
				continue;
			if (e == EAGAIN || e == EWOULDBLOCK)
				return;
			if ((e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) &&
			    out_of_fds(srv, e))
				continue;
			if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM) {
				log_warn("control: accept: %s", strerror(e));
				srv->accept_resume = ctl_now_ms() + 100;
			}
			return;
		}
		srv->accept_backoff_ms = 0;
		if (ctl_peer_creds(fd, srv->gid, srv->have_group, &peer) != 0) {
			log_warn("control: cannot read the peer's credentials: %s",
				 strerror(errno));
			peer = (struct ctl_peer){.uid = (uid_t)-1, .may_mutate = false};
		}
		if (!make_room(srv, &peer, msg, sizeof(msg))) {
			refuse_client(srv, fd, msg);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			reject_client(fd, "out of memory");
			continue;
		}
		c->fd = fd;
		c->srv = srv;
		srv->counters.accepted++;
		c->serial = ++srv->next_serial;
		ctl_linebuf_init(&c->in, CONTROL_LINE_MAX);
		c->last_active = ctl_now_ms();
		c->peer = peer;
		log_debug("control: client %llu connected (pid %d, uid %u%s)", c->serial,
			  (int)c->peer.pid, (unsigned)c->peer.uid,
			  c->peer.may_mutate ? ", may change" : ", read-only");
		c->next = srv->clients;
		srv->clients = c;
		srv->n_clients++;
	}
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
		c->last_active = ctl_now_ms();
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
		c->last_active = ctl_now_ms();
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
		c->last_active = ctl_now_ms();
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
