/* SPDX-License-Identifier: MIT */
/*
 * Admitting a client of the control server: accepting every pending
 * connection, making room at max_clients by closing the client idle longest
 * (with slots kept for root), and refusing with one `unavailable' line what
 * finds no room or arrives while the daemon is out of file descriptors; the
 * refusals' log is rate-limited.  Runs on the server thread only.
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
#include "err.h"
#include "log.h"

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

	if (ctl_ratelimit_ok(&srv->refuse_log, plugfs_mono_ms(), &more)) {
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
	srv->accept_resume = plugfs_mono_ms() + srv->accept_backoff_ms;
	{
		unsigned more = 0;

		if (ctl_ratelimit_ok(&srv->refuse_log, plugfs_mono_ms(), &more))
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
	unsigned reserve = srv->opt.max_clients / 8, cap;
	size_t all = 0, others = 0;
	struct client *victim = NULL;
	int64_t now = plugfs_mono_ms();
	bool root = peer->uid == 0;

	if (srv->opt.max_clients == 0)
		return true;
	cap = root ? srv->opt.max_clients : srv->opt.max_clients - reserve;
	for (struct client *c = srv->clients; c; c = c->next) {
		if (c->dead)
			continue;
		all++;
		others += c->peer.uid != 0;
	}
	if (all < srv->opt.max_clients && (root || others < cap))
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
				    srv->opt.max_clients);
		/* The line went out at once: nothing was pending, and it is
		 * far smaller than a socket buffer. */
		ctl_conn_kill(victim, "idle: closed to make room for a new client");
		return true;
	}
	if (all >= srv->opt.max_clients)
		plugfs_seterr(
		    msg, msglen,
		    "too many clients: %u connected, none idle (control.max_clients); try "
		    "again later",
		    srv->opt.max_clients);
	else
		plugfs_seterr(msg, msglen,
			      "too many clients: the %u slots not reserved for root are busy "
			      "(control.max_clients %u); try again later",
			      cap, srv->opt.max_clients);
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
				srv->accept_resume = plugfs_mono_ms() + 100;
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
		c->last_active = plugfs_mono_ms();
		c->peer = peer;
		log_debug("control: client %llu connected (pid %d, uid %u%s)", c->serial,
			  (int)c->peer.pid, (unsigned)c->peer.uid,
			  c->peer.may_mutate ? ", may change" : ", read-only");
		c->next = srv->clients;
		srv->clients = c;
		srv->n_clients++;
	}
}
