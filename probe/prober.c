/* SPDX-License-Identifier: MIT */
/*
 * The prober thread: probe_round every interval until stopped.  It takes
 * the registry mutex only inside the registry calls of a round (snapshot,
 * set_runtime), never while a probe is in flight; it touches nothing of the
 * filesystem or the control server but through the registry's events.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "log.h"
#include "probe.h"

struct prober {
	struct registry *reg;
	struct probe_options opts;
	pthread_t thread;
	pthread_mutex_t mu; /* guards stop; taken alone */
	pthread_cond_t cond;
	bool stop;
};

static void *prober_main(void *arg)
{
	struct prober *p = arg;
	struct timespec at;
	int rc;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += p->opts.interval_ms / 1000;
		at.tv_nsec += (long)(p->opts.interval_ms % 1000) * 1000000L;
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
		while (!p->stop && pthread_cond_timedwait(&p->cond, &p->mu, &at) != ETIMEDOUT)
			;
		if (p->stop)
			break;
		pthread_mutex_unlock(&p->mu);
		rc = probe_round(p->reg, &p->opts);
		if (rc < 0)
			log_warn("probe: a round failed: %s", strerror(-rc));
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int prober_start(struct registry *r, const struct probe_options *o, struct prober **out, char *err,
		 size_t errlen)
{
	struct prober *p;
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (o->mode == PROBE_MODE_NONE)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return plugfs_errf(err, errlen, -ENOMEM, "probe: out of memory");
	p->reg = r;
	p->opts = *o;
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&p->thread, NULL, prober_main, p);
	if (rc != 0) {
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return plugfs_errf(err, errlen, -rc, "probe: cannot start the thread: %s",
				   strerror(rc));
	}
	*out = p;
	return 0;
}

void prober_stop(struct prober *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
