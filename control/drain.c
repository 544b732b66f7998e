/* SPDX-License-Identifier: MIT */
/*
 * The drain before a handover (SIGUSR2, or a stop that keeps the mount):
 * the server answers every request it had read before it hands the
 * listening socket to the next program, so that a restart breaks no
 * client.
 *
 * The fence is shutdown(SHUT_RD) of each client's socket.  For a Unix
 * stream socket the kernel checks it under the same lock that queues a
 * sender's data: every byte a client sent before is in our receive queue
 * (read to its end, then recv returns 0), every send after fails with
 * EPIPE at the client.  So a request is either read and answered here, or
 * never taken, and the client knows which: an answer, or a connection
 * closed before one (sent again, to the next server, by the CLI).  Nothing
 * is left unread in a socket we close, so no client sees ECONNRESET.  A
 * register whose probe has not ended CTL_DRAIN_PROBE_MS into the drain is
 * closed unanswered too, not committed (firstprobe.c): the drain never
 * waits for a socket that hangs.
 * Runs on the server thread only.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "control_server_internal.h"
#include "clock.h"
#include "log.h"

/* Closes c without an answer: its request (a wait) is sent again to the
 * next server, a watch ends (the CLI exits 3, as when the daemon goes). */
static void end_long_request(struct control_server *srv, struct client *c)
{
	srv->drain_st.ended++;
	ctl_conn_kill(c, c->waiting ? "handover: the wait is sent again to the next server"
				    : "handover: the watch ends");
}

void ctl_drain_begin(struct control_server *srv)
{
	int64_t now = plugfs_mono_ms();

	srv->draining = true;
	srv->drain_st = (struct ctl_drain){.started = now, .deadline = now + CTL_DRAIN_MAX_MS};
	for (struct client *c = srv->clients; c; c = c->next) {
		if (c->dead)
			continue;
		srv->drain_st.clients++;
		if (c->waiting || c->watching) {
			end_long_request(srv, c);
			continue;
		}
		if (shutdown(c->fd, SHUT_RD) != 0) {
			ctl_conn_kill(c, strerror(errno));
			continue;
		}
		c->fenced = true;
	}
}

void ctl_drain_drop_partial(struct control_server *srv, struct client *c)
{
	/* The rest of the line failed at the client (EPIPE), which sends it
	 * again: served here, its first half would be a request of its own. */
	if (ctl_linebuf_pending(&c->in) == 0)
		return;
	srv->drain_st.partial++;
	ctl_linebuf_drop(&c->in);
}

/* Alive for the drain: not closed, and not closing with its answers sent. */
static bool pending(const struct client *c)
{
	return !c->dead && !(c->closing && ctl_out_pending(c) == 0);
}

bool ctl_drain_step(struct control_server *srv)
{
	int64_t now = plugfs_mono_ms();
	struct ctl_drain *d = &srv->drain_st;
	bool left = false;

	/* Registers still probing after CTL_DRAIN_PROBE_MS are not waited
	 * for: closed unanswered, sent again to the next server. */
	if (ctl_first_busy(srv) && now >= d->started + CTL_DRAIN_PROBE_MS)
		ctl_first_abandon(srv);
	for (struct client *c = srv->clients; c; c = c->next) {
		if (!c->dead && (c->waiting || c->watching))
			end_long_request(srv, c);
		left |= pending(c);
	}
	if (left && now < d->deadline)
		return false;
	/* The mutations served this round are committed and answered, not
	 * dropped: a client whose answer then does not go out has its
	 * registration all the same (as one that hung up).  A register still
	 * probing is not: it was not acknowledged. */
	ctl_first_abandon(srv);
	ctl_commit_run(srv);
	d->abandoned = srv->first.abandoned;
	for (struct client *c = srv->clients; c; c = c->next) {
		if (!c->dead && ctl_out_pending(c) > 0)
			ctl_conn_flush(c);
		if (!pending(c))
			continue;
		/* Answered, but not at its end of input yet: closed all the
		 * same.  Else what it was owed is lost: said below. */
		if (ctl_out_pending(c) > 0 || c->stream || c->committing ||
		    ctl_linebuf_pending(&c->in) > 0)
			d->cut++;
		ctl_conn_kill(c, "handover: closed at the drain's deadline");
	}
	if (d->cut)
		log_warn("control: handover: closed %u client(s) that did not take their answers "
			 "within %d ms",
			 d->cut, CTL_DRAIN_MAX_MS);
	log_info("control: handover: answered %u request(s) of %u client(s) (%u wait(s) and "
		 "watch(es) ended, %u unfinished line(s) dropped, %u register(s) still probing "
		 "closed unanswered) in %lld ms",
		 d->served, d->clients, d->ended, d->partial, d->abandoned,
		 (long long)(now - d->started));
	if (srv->drain_report)
		*srv->drain_report = *d;
	return true;
}

int ctl_drain_timeout(const struct control_server *srv, int timeout)
{
	int64_t left;

	if (!srv->draining)
		return timeout;
	left = srv->drain_st.deadline - plugfs_mono_ms();
	if (ctl_first_busy(srv) &&
	    srv->drain_st.started + CTL_DRAIN_PROBE_MS - plugfs_mono_ms() < left)
		left = srv->drain_st.started + CTL_DRAIN_PROBE_MS - plugfs_mono_ms();
	if (left < 0)
		left = 0;
	return timeout < 0 || left < timeout ? (int)left + 1 : timeout;
}
