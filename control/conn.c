/* SPDX-License-Identifier: MIT */
/*
 * A connection of the control server, above everything a client's lines
 * reach (accepting it: accept.c; its output: reply.c): reading into its
 * line buffer, serving the lines one at a time (the operations, ops.c),
 * and freeing it with its stream, watch and wait.  Runs on the server
 * thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control_server_internal.h"
#include "clock.h"

#define READ_CHUNK (64 * 1024)
#define READ_ROUNDS 4

/* --- its end --- */

void ctl_conn_free(struct client *c)
{
	ctl_first_forget(c);
	if (c->fd >= 0)
		close(c->fd);
	ctl_linebuf_free(&c->in);
	free(c->out);
	ctl_stream_release(c);
	free(c->held);
	ctl_events_release(c);
	free(c);
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
		if (c->dead || c->waiting || c->stream || c->committing ||
		    ctl_out_pending(c) > OUT_STALL)
			return;
	}
	ctl_conn_serve(srv, c);
}
