/* SPDX-License-Identifier: MIT */
/*
 * The `connect' probe and the hysteresis (include/probe.h).  No thread and
 * no lock here: the callers (the prober thread, the start-up round, the
 * control server's `register') decide where it runs.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "connector.h"
#include "clock.h"
#include "probe_internal.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; asm-generic (x86, arm, ...) */
#endif

void probe_set_errno(struct probe_result *res, int e)
{
	switch (e) {
	case ECONNREFUSED:
		probe_set_error(res, "connection refused");
		break;
	case ENOENT:
		probe_set_error(res, "no such file");
		break;
	case ETIMEDOUT:
		probe_set_error(res, "timeout");
		break;
	case EXDEV: /* the connectors' refusal (connector_set_own_mount) */
		probe_set_error(res, "socket path leads into plugfs's own mount: never probed "
				     "there");
		break;
	default:
		probe_set_error(res, "%s", strerror(e));
		break;
	}
}

void probe_set_error(struct probe_result *res, const char *fmt, ...)
{
	va_list ap;

	res->ok = false;
	res->skipped = false;
	va_start(ap, fmt);
	vsnprintf(res->error, sizeof(res->error), fmt, ap);
	va_end(ap);
}

void probe_set_ok(struct probe_result *res)
{
	res->ok = true;
	res->skipped = false;
	res->error[0] = '\0';
}

/* A connect's outcome: made, or a full backlog (EAGAIN: a listener is
 * there, busy) is alive; anything else is dead. */
static void set_outcome(struct probe_result *res, int e)
{
	if (e == 0 || e == EAGAIN)
		probe_set_ok(res);
	else
		probe_set_errno(res, e);
	/* Out of fds or memory ourselves (socket() on the connector failed):
	 * nothing learnt of the plugin (a daemon at its fd limit must not
	 * declare every plugin dead). */
	res->skipped = e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

/* The listener of a connected socket (probe.h, struct probe_result):
 * SO_PEERCRED's pid, checked against SO_PEERPIDFD where the kernel has it.
 * SO_PEERPIDFD names the very process that called listen(), no pid number:
 * a pidfd of it not exited makes the pid sure; one exited (Linux 6.16 and
 * later hand those out), or ESRCH or EINVAL (6.5 to 6.15: no such
 * process), means the socket is served by another process and nothing of
 * the pid is kept: the probes decide.  ENOPROTOOPT (before 6.5) or any
 * other error keeps the pid, not sure. */
static void peer_pid(int fd, struct probe_result *res)
{
	struct ucred uc = {0};
	socklen_t len = sizeof(uc);
	int pidfd = -1;

	res->pid = 0;
	res->pid_sure = false;
	if (!res->ok || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0 || uc.pid <= 0)
		return;
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
		struct pollfd p = {.fd = pidfd, .events = POLLIN};

		/* Readable: the process has exited. */
		if (poll(&p, 1, 0) == 0) {
			res->pid = uc.pid;
			res->pid_sure = true;
		}
		close(pidfd);
		return;
	}
	if (errno == ESRCH || errno == EINVAL)
		return;
	res->pid = uc.pid;
}

static void finish_connect(int fd, struct probe_result *res)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		e = errno;
	set_outcome(res, e);
	peer_pid(fd, res);
}

/* One probe in flight, by connector slot. */
struct slot {
	bool used;
	size_t idx;	  /* into paths and out */
	int64_t deadline; /* monotonic ms */
	int fd;		  /* -1 while its connect() is on a connector thread */
};

static void tell(const struct probe_each *each, size_t i)
{
	if (each)
		each->done(each->arg, i);
}

static void end_slot(struct slot *sl, struct probe_result *out, int64_t t, unsigned timeout_ms,
		     size_t *live, const struct probe_each *each)
{
	out[sl->idx].took_ms = (unsigned)(t - (sl->deadline - timeout_ms));
	sl->used = false;
	(*live)--;
	tell(each, sl->idx);
}

/* The connects that returned: finished, or in progress (their socket is
 * kept and polled). */
static void take_returned(struct connector_batch *b, struct slot *slot, struct probe_result *out,
			  int64_t t, unsigned timeout_ms, size_t *live,
			  const struct probe_each *each)
{
	unsigned s;
	int fd, e;

	while (connector_next(b, &s, &fd, &e)) {
		if (e == EINPROGRESS) {
			slot[s].fd = fd;
			continue;
		}
		set_outcome(&out[slot[s].idx], e);
		out[slot[s].idx].pid = 0;
		if (fd >= 0) {
			peer_pid(fd, &out[slot[s].idx]);
			close(fd);
		}
		end_slot(&slot[s], out, t, timeout_ms, live, each);
	}
}

int probe_connect_many(const char *const *paths, size_t n, unsigned timeout_ms,
		       struct probe_result *out)
{
	return probe_connect_until(paths, n, timeout_ms, out, NULL);
}

int probe_connect_until(const char *const *paths, size_t n, unsigned timeout_ms,
			struct probe_result *out, const bool *stop)
{
	return probe_connect_each(paths, n, timeout_ms, out, stop, NULL);
}

int probe_connect_each(const char *const *paths, size_t n, unsigned timeout_ms,
		       struct probe_result *out, const bool *stop, const struct probe_each *each)
{
	struct pollfd pfd[PROBE_MAX_INFLIGHT + 1];
	unsigned pslot[PROBE_MAX_INFLIGHT + 1];
	struct slot slot[PROBE_MAX_INFLIGHT] = {0};
	unsigned qslot[PROBE_MAX_INFLIGHT];
	const char *qpath[PROBE_MAX_INFLIGHT];
	int qrc[PROBE_MAX_INFLIGHT];
	struct connector_batch *b;
	size_t next = 0, live = 0, nq;
	int rc = 0;

	_Static_assert(PROBE_MAX_INFLIGHT <= CONNECTOR_BATCH_SLOTS, "a slot per probe");
	if (n == 0)
		return 0;
	if (!(b = connector_batch_new())) {
		int e = errno;

		for (size_t i = 0; i < n; i++) {
			out[i].took_ms = 0;
			set_outcome(&out[i], e); /* EMFILE: skipped, nothing learnt */
			tell(each, i);
		}
		return 0;
	}
	while (next < n || live > 0) {
		int64_t t = plugfs_mono_ms(), wait = -1;
		nfds_t np = 1;

		/* Fill the window: each connect() runs on a connector thread,
		 * the window's new jobs queued under one lock. */
		nq = 0;
		for (unsigned s = 0; next + nq < n && live + nq < PROBE_MAX_INFLIGHT; s++) {
			if (slot[s].used)
				continue;
			qslot[nq] = s;
			qpath[nq] = paths[next + nq];
			nq++;
		}
		connector_start_many(b, qslot, qpath, nq, qrc);
		for (size_t i = 0; i < nq; i++, next++) {
			out[next].took_ms = 0;
			out[next].pid = 0;
			if (qrc[i] < 0) {
				set_outcome(&out[next], -qrc[i]);
				tell(each, next);
				continue;
			}
			slot[qslot[i]] = (struct slot){
			    .used = true, .idx = next, .deadline = t + timeout_ms, .fd = -1};
			live++;
		}
		if (live == 0)
			continue;
		pfd[0] = (struct pollfd){.fd = connector_batch_fd(b), .events = POLLIN};
		for (unsigned s = 0; s < PROBE_MAX_INFLIGHT; s++) {
			int64_t left;

			if (!slot[s].used)
				continue;
			left = slot[s].deadline - t;
			if (left < 0)
				left = 0;
			if (wait < 0 || left < wait)
				wait = left;
			if (slot[s].fd >= 0) {
				pfd[np] = (struct pollfd){.fd = slot[s].fd, .events = POLLOUT};
				pslot[np++] = s;
			}
		}
		/* Wake to kick the connectors (a hung path) and to look at stop. */
		if (wait > CONNECTOR_STUCK_MS)
			wait = CONNECTOR_STUCK_MS;
		if ((poll(pfd, np, (int)wait) < 0 && errno != EINTR) || probe_stopped(stop)) {
			rc = probe_stopped(stop) ? -ECANCELED : -errno;
			break;
		}
		t = plugfs_mono_ms();
		for (nfds_t i = 1; i < np; i++) {
			struct slot *sl = &slot[pslot[i]];

			if (!pfd[i].revents)
				continue;
			finish_connect(sl->fd, &out[sl->idx]);
			close(sl->fd);
			end_slot(sl, out, t, timeout_ms, &live, each);
		}
		take_returned(b, slot, out, t, timeout_ms, &live, each);
		connector_kick();
		for (unsigned s = 0; s < PROBE_MAX_INFLIGHT; s++) {
			if (!slot[s].used || t < slot[s].deadline)
				continue;
			probe_set_errno(&out[slot[s].idx], ETIMEDOUT);
			if (slot[s].fd >= 0)
				close(slot[s].fd);
			else
				connector_abandon(b, s); /* stuck in connect(): a hung path */
			end_slot(&slot[s], out, t, timeout_ms, &live, each);
		}
	}
	for (unsigned s = 0; s < PROBE_MAX_INFLIGHT; s++)
		if (slot[s].used && slot[s].fd >= 0)
			close(slot[s].fd);
	connector_batch_free(b);
	return rc;
}

void probe_next_runtime(const struct reg_runtime *old, const struct probe_result *res,
			unsigned failures, int64_t now, struct reg_runtime *out)
{
	*out = *old;
	if (res->skipped)
		return;
	out->probed_at = now;
	if (res->ok) {
		out->health = REG_HEALTH_ALIVE;
		out->failures = 0;
		out->error = NULL;
	} else {
		out->failures = old->failures + 1;
		out->error = reg_error_intern(res->error);
		if (old->health != REG_HEALTH_ALIVE || out->failures >= failures)
			out->health = REG_HEALTH_DEAD;
	}
	if (out->health != old->health)
		out->since = now;
}

void probe_set_own_mount(struct plugfs_own_mount *m)
{
	connector_set_own_mount(m);
}
