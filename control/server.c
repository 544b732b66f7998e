/* SPDX-License-Identifier: MIT */
/*
 * The control server: one thread, one poll() loop over non-blocking sockets
 * (the wake eventfd, the listening socket, every client), the timers of
 * waits and idle clients, and starting and stopping it all.  Connections are
 * conn.c, the operations ops.c, events, watchers and waits events.c, the
 * probe threads of a register's first probe firstprobe.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "control_server_internal.h"
#include "array.h"
#include "clock.h"
#include "fsutil.h"
#include "log.h"
#include "pathtrust.h"
#include "thread.h"

/* --- the loop and its timers --- */

/* Expires waits and idle clients; returns the poll timeout in ms. */
static int check_timers(struct control_server *srv)
{
	int64_t now = plugfs_mono_ms(), next = -1;

	for (struct client *c = srv->clients; c; c = c->next) {
		int64_t deadline = -1;

		if (c->dead)
			continue;
		if (c->waiting && c->wait_deadline >= 0) {
			if (now >= c->wait_deadline)
				ctl_wait_done(c, NULL);
			else
				deadline = c->wait_deadline;
		}
		if (!c->waiting && !c->watching && !c->committing && !c->dead &&
		    srv->opt.idle_timeout > 0) {
			int64_t idle_end = c->last_active + (int64_t)srv->opt.idle_timeout * 1000;

			if (now >= idle_end) {
				if (ctl_linebuf_pending(&c->in) > 0)
					ctl_conn_send_error(
					    c, NULL, CTL_E_UNAVAILABLE,
					    "closing the connection: a request was not completed "
					    "(no newline) within %u s (control.idle_timeout)",
					    srv->opt.idle_timeout);
				else
					ctl_conn_send_error(
					    c, NULL, CTL_E_UNAVAILABLE,
					    "closing the connection after %u s without activity "
					    "(control.idle_timeout)",
					    srv->opt.idle_timeout);
				ctl_conn_kill(c, "idle");
				continue;
			}
			if (deadline < 0 || idle_end < deadline)
				deadline = idle_end;
		}
		if (deadline >= 0 && (next < 0 || deadline < next))
			next = deadline;
	}
	for (struct client *c = srv->clients; c; c = c->next)
		if ((c->resume || ctl_stream_ready(c)) && !c->dead)
			return 0;
	if (srv->accept_resume > 0) {
		if (now >= srv->accept_resume)
			srv->accept_resume = 0;
		else if (next < 0 || srv->accept_resume < next)
			next = srv->accept_resume;
	}
	if (next < 0)
		return -1;
	return next - now > 60000 ? 60000 : (int)(next - now) + 1;
}

static void reap_clients(struct control_server *srv)
{
	struct client **pp = &srv->clients;

	while (*pp) {
		struct client *c = *pp;

		if (c->closing && ctl_out_pending(c) == 0)
			c->dead = true;
		if (c->dead) {
			*pp = c->next;
			srv->n_clients--;
			ctl_conn_free(c);
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
		bool stop, drain;

		for (struct client *c = srv->clients; c; c = c->next) {
			if (c->resume) {
				c->resume = false;
				ctl_conn_serve(srv, c);
			}
		}
		/* The mutations of every client served since the last round,
		 * and the registers whose probe ended, in one commit, before
		 * any client is freed. */
		ctl_first_collect(srv);
		ctl_commit_run(srv);
		timeout = ctl_drain_timeout(srv, check_timers(srv));
		if (srv->first.ready) /* held back by this round's commit only */
			timeout = 0;
		ctl_events_count_listeners(srv);
		reap_clients(srv);
		/* The lines served above may have ended the drain's last client
		 * (its commit answered, then its end of input): no poll for it. */
		if (srv->draining && ctl_drain_step(srv))
			break;
		if (cap < srv->n_clients + 2) {
			/* Two arrays of one capacity: it counts once both grew. */
			size_t cap_p = cap, cap_w = cap;

			if (PLUGFS_RESERVE(pfds, cap_p, srv->n_clients + 2, 16) != 0 ||
			    PLUGFS_RESERVE(who, cap_w, srv->n_clients + 2, 16) != 0) {
				log_error("control: out of memory; retrying");
				sleep(1);
				continue;
			}
			cap = cap_p;
		}
		pfds[0] = (struct pollfd){.fd = srv->wake_fd, .events = POLLIN};
		/* Resting after accept found no fd, or draining for a handover:
		 * not polled (clients wait in the backlog). */
		pfds[1] = (struct pollfd){
		    .fd = srv->accept_resume > 0 || srv->draining ? -1 : srv->listen_fd,
		    .events = POLLIN};
		for (struct client *c = srv->clients; c; c = c->next) {
			short ev = 0;

			/* A listing client is not read until its list ends, nor
			 * one whose mutation waits for its group's commit: the
			 * lines it sends meanwhile wait in the socket. */
			if (!c->eof && !c->waiting && !c->stream && !c->committing &&
			    ctl_out_pending(c) <= OUT_STALL)
				ev |= POLLIN;
			if (ctl_out_pending(c) > 0)
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
		drain = srv->drain;
		pthread_mutex_unlock(&srv->q_lock);
		if (stop)
			break;
		if (drain && !srv->draining)
			ctl_drain_begin(srv);
		ctl_events_deliver(srv);
		for (i = 2; i < n; i++) {
			struct client *c = who[i];
			short re = pfds[i].revents;

			if (c->dead || re == 0)
				continue;
			if (re & POLLOUT)
				ctl_conn_flush(c);
			if (re & POLLIN)
				ctl_conn_read(srv, c);
			else if (re & (POLLHUP | POLLERR | POLLNVAL))
				ctl_conn_kill(c, "hung up");
			if (!c->dead && ctl_out_pending(c) <= OUT_STALL)
				ctl_conn_serve(srv, c);
		}
		if (pfds[1].fd >= 0 && (pfds[1].revents & POLLIN) && !srv->draining)
			ctl_conn_accept(srv);
		/* One chunk per listing client per round, after every other
		 * client was served: a list of any size holds the loop for one
		 * chunk at a time. */
		for (struct client *c = srv->clients; c; c = c->next)
			if (ctl_stream_ready(c))
				ctl_stream_step(srv, c);
		if (srv->draining && ctl_drain_step(srv))
			break;
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
	/* The probe threads first: a probe in flight is cancelled (50 ms). */
	ctl_first_stop(srv);
	while (srv->clients) {
		struct client *c = srv->clients;

		srv->clients = c->next;
		ctl_conn_free(c);
	}
	ctl_events_drop_queue(srv);
	ctl_commit_drop(srv);
	if (srv->listen_fd >= 0) {
		close(srv->listen_fd);
		ctl_unlink_if_ours(srv->opt.socket_path, srv->sock_dev, srv->sock_ino);
	}
	if (srv->wake_fd >= 0)
		close(srv->wake_fd);
	if (srv->reserve_fd >= 0)
		close(srv->reserve_fd);
	if (srv->path_fd >= 0)
		close(srv->path_fd);
	pthread_mutex_destroy(&srv->q_lock);
	free((char *)srv->opt.socket_path);
	free((char *)srv->opt.mountpoint);
	free((char *)srv->opt.state_path);
	free((char *)srv->opt.group);
	plugfs_own_mount_unref(srv->opt.own_mount);
	free(srv);
}

/* Takes over an inherited listening socket: checks it listens, makes it
 * non-blocking and close-on-exec, and remembers the socket file it serves
 * (removed at stop only while it is still that file). */
static int adopt_listener(struct control_server *srv, int fd, char *err, size_t errlen)
{
	struct stat st;
	int on = 0, fl;
	socklen_t len = sizeof(on);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0 || !on) {
		plugfs_seterr(err, errlen, "control: inherited fd %d is not a listening socket",
			      fd);
		return -ENOTSOCK;
	}
	/* listen() again makes this process the socket's listener for
	 * SO_PEERCRED: a connection names the process that last called it,
	 * which after a restart from systemd's store is the one killed, and
	 * `plugfs reload --pid' accepts only a socket its process listens on. */
	if (listen(fd, 128) != 0) {
		int e = errno;

		plugfs_seterr(err, errlen, "control: inherited fd %d: listen(): %s", fd,
			      strerror(e));
		return -e;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
		int e = errno;

		plugfs_seterr(err, errlen, "control: inherited fd %d: %s", fd, strerror(e));
		return -e;
	}
	if (lstat(srv->opt.socket_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		srv->sock_dev = st.st_dev;
		srv->sock_ino = st.st_ino;
	}
	srv->listen_fd = fd;
	return 0;
}

/* The socket file held by an O_PATH descriptor (srv->path_fd), when it is
 * still the one this server listens on: `plugfs reload --pid PID' finds
 * it in /proc/PID/fd after the config's [control] socket moved.  None is
 * no error (the config's path still reaches the daemon). */
static void hold_path(struct control_server *srv)
{
	struct stat st;
	int fd = open(srv->opt.socket_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_dev != srv->sock_dev ||
	    st.st_ino != srv->sock_ino) {
		close(fd);
		return;
	}
	srv->path_fd = fd;
}

int control_server_start(struct registry *reg, const struct control_options *opts,
			 struct control_server **out, char *err, size_t errlen)
{
	struct control_server *srv = NULL;
	int rc;

	*out = NULL;
	if (!reg || !opts || !opts->socket_path) {
		plugfs_seterr(err, errlen, "control: a registry and control.socket are required");
		return -EINVAL;
	}
	srv = calloc(1, sizeof(*srv));
	if (!srv) {
		plugfs_seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	srv->reg = reg;
	srv->listen_fd = srv->wake_fd = srv->reserve_fd = srv->path_fd = -1;
	srv->sub_id = -1;
	srv->q_tail = &srv->q_head;
	pthread_mutex_init(&srv->q_lock, NULL);
	ctl_first_init(srv);
	/* The options, with copies of their strings (all four set before
	 * any check: server_free frees them). */
	srv->opt = *opts;
	srv->opt.own_mount = plugfs_own_mount_ref(opts->own_mount);
	srv->opt.socket_path = strdup(opts->socket_path);
	srv->opt.mountpoint = strdup(opts->mountpoint ? opts->mountpoint : "");
	srv->opt.state_path = strdup(opts->state_path ? opts->state_path : "");
	srv->opt.group = strdup(opts->group ? opts->group : "");
	if (!srv->opt.socket_path || !srv->opt.mountpoint || !srv->opt.state_path ||
	    !srv->opt.group) {
		rc = -ENOMEM;
		plugfs_seterr(err, errlen, "out of memory");
		goto out;
	}
	srv->started_mono = plugfs_mono_ms();
	srv->started_wall = time(NULL);
	if (srv->opt.group[0]) {
		rc = ctl_resolve_group(srv->opt.group, &srv->gid, err, errlen);
		if (rc)
			goto out;
		srv->have_group = true;
	}
	srv->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (srv->reserve_fd < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "control: opening a reserve fd (/dev/null): %s",
			      strerror(errno));
		goto out;
	}
	srv->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (srv->wake_fd < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "control: eventfd: %s", strerror(errno));
		goto out;
	}
	if (opts->inherit_listen_fd)
		rc = adopt_listener(srv, opts->listen_fd, err, errlen);
	else if ((rc = plugfs_path_trust("control.socket", srv->opt.socket_path,
					 PLUGFS_TRUST_PARENTS_ONLY, err, errlen)) < 0)
		; /* another user could move our socket aside and bind its own */
	else
		rc = ctl_listen(srv->opt.socket_path, srv->have_group, srv->gid, &srv->listen_fd,
				&srv->sock_dev, &srv->sock_ino, err, errlen);
	if (rc)
		goto out;
	hold_path(srv);
	rc = registry_subscribe(reg, ctl_events_on_registry, srv);
	if (rc < 0) {
		plugfs_seterr(err, errlen, "control: cannot subscribe to registry events: %s",
			      strerror(-rc));
		goto out;
	}
	srv->sub_id = rc;
	/* Signals belong to the main thread (SIGTERM, SIGHUP). */
	rc = plugfs_thread_start(&srv->thread, NULL, server_thread, srv);
	if (rc) {
		plugfs_seterr(err, errlen, "control: cannot start the server thread: %s",
			      strerror(-rc));
		goto out;
	}
	srv->thread_started = true;
	log_info("control: listening on %s (mode 0660%s%s, max_clients %u, idle_timeout %u s)",
		 srv->opt.socket_path, srv->have_group ? ", group " : "", srv->opt.group,
		 srv->opt.max_clients, srv->opt.idle_timeout);
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

/* Unsubscribes and joins the server thread; with drain, the thread first
 * answers what it read (drain.c). */
static void stop_thread(struct control_server *srv, bool drain)
{
	uint64_t one = 1;

	/* After this returns no callback runs (callbacks run under the
	 * registry mutex, which unsubscribe takes). */
	if (srv->sub_id >= 0)
		registry_unsubscribe(srv->reg, srv->sub_id);
	srv->sub_id = -1;
	if (srv->thread_started) {
		pthread_mutex_lock(&srv->q_lock);
		if (drain)
			srv->drain = true;
		else
			srv->stop = true;
		pthread_mutex_unlock(&srv->q_lock);
		if (write(srv->wake_fd, &one, sizeof(one)) < 0)
			log_warn("control: cannot wake the server thread: %s", strerror(errno));
		if (srv->stop_asked)
			srv->stop_asked(srv->stop_asked_arg);
		pthread_join(srv->thread, NULL);
		srv->thread_started = false;
	}
}

void control_server_stop(struct control_server *srv)
{
	if (!srv)
		return;
	stop_thread(srv, false);
	server_free(srv);
}

int control_server_stop_keep_listener(struct control_server *srv)
{
	int fd;

	if (!srv)
		return -1;
	stop_thread(srv, true);
	fd = srv->listen_fd;
	srv->listen_fd = -1;
	server_free(srv);
	return fd;
}

int control_server_listen_fd(const struct control_server *srv)
{
	return srv ? srv->listen_fd : -1;
}
