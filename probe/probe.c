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

#include "probe_internal.h"

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
	default:
		probe_set_error(res, "%s", strerror(e));
		break;
	}
}

void probe_set_error(struct probe_result *res, const char *fmt, ...)
{
	va_list ap;

	res->ok = false;
	va_start(ap, fmt);
	vsnprintf(res->error, sizeof(res->error), fmt, ap);
	va_end(ap);
}

void probe_set_ok(struct probe_result *res)
{
	res->ok = true;
	res->error[0] = '\0';
}

int64_t probe_now_ms(void)
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
		probe_set_errno(res, ENAMETOOLONG);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		probe_set_errno(res, errno);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN) {
		/* Connected, or a full backlog: a listener is there. */
		probe_set_ok(res);
		close(fd);
		return -1;
	}
	if (errno == EINPROGRESS)
		return fd;
	probe_set_errno(res, errno);
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
		probe_set_ok(res);
	else
		probe_set_errno(res, e);
}

struct slot {
	size_t idx;	  /* into paths and out */
	int64_t deadline; /* monotonic ms */
};

int probe_connect_many(const char *const *paths, size_t n, unsigned timeout_ms,
		       struct probe_result *out)
{
	return probe_connect_until(paths, n, timeout_ms, out, NULL);
}

int probe_connect_until(const char *const *paths, size_t n, unsigned timeout_ms,
			struct probe_result *out, const bool *stop)
{
	struct pollfd pfd[PROBE_MAX_INFLIGHT];
	struct slot slot[PROBE_MAX_INFLIGHT];
	size_t next = 0, live = 0;

	while (next < n || live > 0) {
		int64_t t = probe_now_ms(), wait = -1;

		/* Fill the window. */
		while (next < n && live < PROBE_MAX_INFLIGHT) {
			int fd;

			out[next].took_ms = 0;
			fd = start_connect(paths[next], &out[next]);

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
		if (stop && wait > PROBE_STOP_CHECK_MS)
			wait = PROBE_STOP_CHECK_MS;
		if ((poll(pfd, live, (int)wait) < 0 && errno != EINTR) || probe_stopped(stop)) {
			int e = probe_stopped(stop) ? ECANCELED : errno;

			for (size_t i = 0; i < live; i++)
				close(pfd[i].fd);
			return -e;
		}
		t = probe_now_ms();
		for (size_t i = 0; i < live;) {
			bool done = true;

			if (pfd[i].revents || t >= slot[i].deadline)
				out[slot[i].idx].took_ms =
				    (unsigned)(t - (slot[i].deadline - timeout_ms));
			if (pfd[i].revents)
				finish_connect(pfd[i].fd, &out[slot[i].idx]);
			else if (t >= slot[i].deadline)
				probe_set_errno(&out[slot[i].idx], ETIMEDOUT);
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
