/* SPDX-License-Identifier: MIT */
/*
 * The `connect' probe and the hysteresis (include/probe.h).  No thread and
 * no lock here: the callers (the prober thread, the start-up round, the
 * control server's `register') decide where it runs.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "connector.h"
#include "probe.h"

static void set_error(struct probe_result *res, int e)
{
	const char *what;

	res->ok = false;
	switch (e) {
	case ECONNREFUSED:
		what = "connection refused";
		break;
	case ENOENT:
		what = "no such file";
		break;
	case ETIMEDOUT:
		what = "timeout";
		break;
	default:
		what = strerror(e);
		break;
	}
	snprintf(res->error, sizeof(res->error), "%s", what);
}

static void set_ok(struct probe_result *res)
{
	res->ok = true;
	res->error[0] = '\0';
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A connect's outcome: made, or a full backlog (EAGAIN: a listener is
 * there, busy) is alive; anything else is dead. */
static void set_outcome(struct probe_result *res, int e)
{
	if (e == 0 || e == EAGAIN)
		set_ok(res);
	else
		set_error(res, e);
}

/* A connect in progress became writable: its outcome. */
static void finish_connect(int fd, struct probe_result *res)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		e = errno;
	set_outcome(res, e);
}

/* One probe in flight, by connector slot. */
struct slot {
	bool used;
	size_t idx;	  /* into paths and out */
	int64_t deadline; /* monotonic ms */
	int fd;		  /* -1 while its connect() is on a connector thread */
};

/* The connects that returned: finished (set *done), or in progress (their
 * socket is kept and polled). */
static void take_returned(struct connector_batch *b, struct slot *slot, struct probe_result *out,
			  size_t *live)
{
	unsigned s;
	int fd, e;

	while (connector_next(b, &s, &fd, &e)) {
		if (e == EINPROGRESS) {
			slot[s].fd = fd;
			continue;
		}
		set_outcome(&out[slot[s].idx], e);
		if (fd >= 0)
			close(fd);
		slot[s].used = false;
		(*live)--;
	}
}

int probe_connect_many(const char *const *paths, size_t n, unsigned timeout_ms,
		       struct probe_result *out)
{
	struct pollfd pfd[PROBE_MAX_INFLIGHT + 1];
	unsigned pslot[PROBE_MAX_INFLIGHT + 1];
	struct slot slot[PROBE_MAX_INFLIGHT] = {0};
	struct connector_batch *b;
	size_t next = 0, live = 0;
	int rc = 0;

	_Static_assert(PROBE_MAX_INFLIGHT <= CONNECTOR_BATCH_SLOTS, "a slot per probe");
	if (n == 0)
		return 0;
	if (!(b = connector_batch_new()))
		return -errno;
	while (next < n || live > 0) {
		int64_t t = now_ms(), wait = -1;
		nfds_t np = 1;

		/* Fill the window: each connect() runs on a connector thread. */
		for (unsigned s = 0; next < n && live < PROBE_MAX_INFLIGHT; s++) {
			int e;

			if (slot[s].used)
				continue;
			e = connector_start(b, s, paths[next]);
			if (e < 0) {
				set_error(&out[next], -e);
			} else {
				slot[s] = (struct slot){.used = true,
							.idx = next,
							.deadline = t + timeout_ms,
							.fd = -1};
				live++;
			}
			next++;
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
		if (wait > CONNECTOR_STUCK_MS)
			wait = CONNECTOR_STUCK_MS; /* to kick the connectors (a hung path) */
		if (poll(pfd, np, (int)wait) < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
		t = now_ms();
		for (nfds_t i = 1; i < np; i++) {
			struct slot *sl = &slot[pslot[i]];

			if (!pfd[i].revents)
				continue;
			finish_connect(sl->fd, &out[sl->idx]);
			close(sl->fd);
			sl->used = false;
			live--;
		}
		take_returned(b, slot, out, &live);
		connector_kick();
		for (unsigned s = 0; s < PROBE_MAX_INFLIGHT; s++) {
			if (!slot[s].used || t < slot[s].deadline)
				continue;
			set_error(&out[slot[s].idx], ETIMEDOUT);
			if (slot[s].fd >= 0)
				close(slot[s].fd);
			else
				connector_abandon(b, s); /* stuck in connect(): a hung path */
			slot[s].used = false;
			live--;
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
	out->probed_at = now;
	if (res->ok) {
		out->health = REG_HEALTH_ALIVE;
		out->failures = 0;
		out->error[0] = '\0';
	} else {
		out->failures = old->failures + 1;
		snprintf(out->error, sizeof(out->error), "%s", res->error);
		if (old->health != REG_HEALTH_ALIVE || out->failures >= failures)
			out->health = REG_HEALTH_DEAD;
	}
	if (out->health != old->health)
		out->since = now;
}

static uint64_t n_ok, n_failed, n_rounds, last_round_ms; /* atomic: probe_stats */

static void count_results(const struct probe_result *res, size_t n)
{
	uint64_t ok = 0;

	for (size_t i = 0; i < n; i++)
		ok += res[i].ok;
	__atomic_fetch_add(&n_ok, ok, __ATOMIC_RELAXED);
	__atomic_fetch_add(&n_failed, n - ok, __ATOMIC_RELAXED);
}

void probe_stats(struct probe_stats *out)
{
	out->ok = __atomic_load_n(&n_ok, __ATOMIC_RELAXED);
	out->failed = __atomic_load_n(&n_failed, __ATOMIC_RELAXED);
	out->rounds = __atomic_load_n(&n_rounds, __ATOMIC_RELAXED);
	out->last_round_ms = __atomic_load_n(&last_round_ms, __ATOMIC_RELAXED);
}

static int64_t probe_now(const struct probe_options *o)
{
	return o->now ? o->now(o->now_arg) : (int64_t)time(NULL);
}

void probe_first(const char *socket, const struct probe_options *o, struct reg_runtime *rt)
{
	const struct reg_runtime unknown = {0};
	struct probe_result res = {0};

	if (probe_connect_many(&socket, 1, o->timeout_ms, &res) < 0) {
		*rt = unknown; /* could not probe: stays unknown */
		return;
	}
	count_results(&res, 1);
	probe_next_runtime(&unknown, &res, o->failures, probe_now(o), rt);
}

int probe_round(struct registry *r, const struct probe_options *o)
{
	struct reg_snapshot snap = {0};
	const struct registration **regs = NULL;
	const char **paths = NULL;
	struct probe_result *res = NULL;
	size_t n = 0, k = 0;
	int64_t now, t0;
	int rc;

	if ((rc = registry_snapshot(r, NULL, &snap)) < 0)
		return rc;
	for (size_t i = 0; i < snap.n_plugins; i++)
		n += snap.plugins[i].n_regs;
	regs = calloc(n ? n : 1, sizeof(*regs));
	paths = calloc(n ? n : 1, sizeof(*paths));
	res = calloc(n ? n : 1, sizeof(*res));
	rc = -ENOMEM;
	if (!regs || !paths || !res)
		goto out;
	for (size_t i = 0; i < snap.n_plugins; i++) {
		for (size_t j = 0; j < snap.plugins[i].n_regs; j++) {
			regs[k] = &snap.plugins[i].regs[j];
			paths[k] = regs[k]->socket;
			k++;
		}
	}
	/* No lock held while probing. */
	t0 = now_ms();
	if ((rc = probe_connect_many(paths, n, o->timeout_ms, res)) < 0)
		goto out;
	count_results(res, n);
	__atomic_fetch_add(&n_rounds, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&last_round_ms, (uint64_t)(now_ms() - t0), __ATOMIC_RELAXED);
	now = probe_now(o);
	for (size_t i = 0; i < n; i++) {
		struct reg_runtime rt;
		char err[REG_ERR_MAX];

		probe_next_runtime(&regs[i]->runtime, &res[i], o->failures, now, &rt);
		/* -ENOENT: deregistered meanwhile; nothing to do. */
		(void)registry_set_runtime(r, regs[i]->type, regs[i]->name, regs[i]->alloc, &rt,
					   NULL, err, sizeof(err));
	}
	rc = (int)n;
out:
	free(regs);
	free(paths);
	free(res);
	reg_snapshot_free(&snap);
	return rc;
}
