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

#include "probe.h"

static void set_error(struct probe_result *res, int e)
{
	const char *what;

	res->ok = false;
	res->skipped = false;
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
	res->skipped = false;
	res->error[0] = '\0';
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Starts the probe of path: -1 when it finished at once (res set), else
 * the socket of a connect in progress.
 */
static int start_connect(const char *path, struct probe_result *res)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		set_error(res, ENAMETOOLONG);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int e = errno;

		set_error(res, e);
		/* Out of fds or memory ourselves: nothing learnt of the plugin
		 * (a daemon at its fd limit must not declare every plugin dead). */
		res->skipped = e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN) {
		/* Connected, or a full backlog: a listener is there. */
		set_ok(res);
		close(fd);
		return -1;
	}
	if (errno == EINPROGRESS)
		return fd;
	set_error(res, errno);
	close(fd);
	return -1;
}

/* A connect in progress became writable: its outcome. */
static void finish_connect(int fd, struct probe_result *res)
{
	int e = 0;
	socklen_t len = sizeof(e);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		e = errno;
	if (e == 0 || e == EAGAIN)
		set_ok(res);
	else
		set_error(res, e);
}

struct slot {
	size_t idx;	  /* into paths and out */
	int64_t deadline; /* monotonic ms */
};

int probe_connect_many(const char *const *paths, size_t n, unsigned timeout_ms,
		       struct probe_result *out)
{
	struct pollfd pfd[PROBE_MAX_INFLIGHT];
	struct slot slot[PROBE_MAX_INFLIGHT];
	size_t next = 0, live = 0;

	while (next < n || live > 0) {
		int64_t t = now_ms(), wait = -1;

		/* Fill the window. */
		while (next < n && live < PROBE_MAX_INFLIGHT) {
			int fd = start_connect(paths[next], &out[next]);

			if (fd >= 0) {
				pfd[live] = (struct pollfd){.fd = fd, .events = POLLOUT};
				slot[live] = (struct slot){.idx = next, .deadline = t + timeout_ms};
				live++;
			}
			next++;
		}
		if (live == 0)
			continue;
		for (size_t i = 0; i < live; i++) {
			int64_t left = slot[i].deadline - t;

			if (left < 0)
				left = 0;
			if (wait < 0 || left < wait)
				wait = left;
		}
		if (poll(pfd, live, (int)wait) < 0 && errno != EINTR)
			return -errno;
		t = now_ms();
		for (size_t i = 0; i < live;) {
			bool done = true;

			if (pfd[i].revents)
				finish_connect(pfd[i].fd, &out[slot[i].idx]);
			else if (t >= slot[i].deadline)
				set_error(&out[slot[i].idx], ETIMEDOUT);
			else
				done = false;
			if (!done) {
				pfd[i].revents = 0;
				i++;
				continue;
			}
			close(pfd[i].fd);
			live--;
			pfd[i] = pfd[live];
			slot[i] = slot[live];
		}
	}
	return 0;
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
	probe_next_runtime(&unknown, &res, o->failures, probe_now(o), rt);
}

int probe_round(struct registry *r, const struct probe_options *o)
{
	struct reg_snapshot snap = {0};
	const struct registration **regs = NULL;
	const char **paths = NULL;
	struct probe_result *res = NULL;
	size_t n = 0, k = 0;
	int64_t now;
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
	if ((rc = probe_connect_many(paths, n, o->timeout_ms, res)) < 0)
		goto out;
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
