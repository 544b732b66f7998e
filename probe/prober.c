/* SPDX-License-Identifier: MIT */
/*
 * The prober: two threads per type (each type has its own interval), the
 * lanes of its connect probes (and of its registrations not probed) and of
 * its csi probes, each a round of its lane every interval until stopped:
 * the connect probes' cadence never waits for the csi probes' round (a
 * window of hung plugins takes a whole timeout).  A thread takes the
 * registry mutex only inside the registry calls of a round (snapshot,
 * set_runtime), never while a probe is in flight; it touches nothing of the
 * filesystem or the control server but through the registry's events.
 * With o->first_round, each thread's first round runs at once (the
 * daemon's start round, once the mount serves) and the last one to end
 * says so.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "clock.h"
#include "log.h"
#include "probe_internal.h"

/* The lanes of a type: each a thread. */
static const enum reg_probe lanes[] = {REG_PROBE_CONNECT, REG_PROBE_CSI};
#define N_LANES (sizeof(lanes) / sizeof(lanes[0]))

struct prober_thread {
	struct prober *p;
	const char *type;     /* NULL: every registration */
	enum reg_probe lane;  /* the registrations of this mode */
	unsigned interval_ms; /* its type's */
	pthread_t thread;
	bool started;
};

struct prober {
	struct registry *reg;
	struct probe_options opts;    /* opts.policy.types points at types below */
	struct reg_probe_type *types; /* copies, with their own strings */
	struct prober_thread *threads;
	size_t n_threads;
	struct live *live; /* the watches; NULL when off */
	pthread_mutex_t mu; /* guards stop; taken alone */
	pthread_cond_t cond;
	bool stop;
	bool cancel; /* opts.stop: set (atomically) by prober_stop, read by rounds */
	char *exclude; /* opts.watch_exclude's copy */
	/* The first rounds (opts.first_round), under mu: threads yet to end
	 * theirs, the registrations they probed (or the first -errno). */
	size_t first_left;
	int first_n;
	int64_t t_start; /* monotonic ms: prober_start */
};

/* A thread's first round ended with rc: the last one tells the caller. */
static void first_round_done(struct prober *p, int rc)
{
	bool last;
	int n;

	pthread_mutex_lock(&p->mu);
	if (p->first_n >= 0)
		p->first_n = rc < 0 ? rc : p->first_n + rc;
	last = --p->first_left == 0 && !p->stop;
	n = p->first_n;
	pthread_mutex_unlock(&p->mu);
	if (last)
		p->opts.first_round(p->opts.first_round_arg, n, plugfs_mono_ms() - p->t_start);
}

static void *prober_main(void *arg)
{
	struct prober_thread *t = arg;
	struct prober *p = t->p;
	bool first = p->opts.first_round != NULL;
	int rc;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		int64_t at = plugfs_mono_ms() + t->interval_ms;

		while (!first && !p->stop &&
		       plugfs_cond_wait_until(&p->cond, &p->mu, at) != ETIMEDOUT)
			;
		if (p->stop)
			break;
		pthread_mutex_unlock(&p->mu);
		rc = probe_round_lane(p->reg, &p->opts, t->type, t->lane);
		if (rc < 0 && rc != -ECANCELED)
			log_warn("probe: a round%s%s failed: %s", t->type ? " of " : "",
				 t->type ? t->type : "", strerror(-rc));
		if (first)
			first_round_done(p, rc);
		first = false;
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void prober_free(struct prober *p)
{
	for (size_t i = 0; p->types && i < p->opts.policy.n_types; i++)
		free((char *)p->types[i].type);
	free(p->types);
	free(p->threads);
	free(p->exclude);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

int prober_start(struct registry *r, const struct probe_options *o, struct prober **out, char *err,
		 size_t errlen)
{
	struct prober *p;
	int rc = -ENOMEM;
	size_t n;

	*out = NULL;
	if (!probe_enabled(o))
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return plugfs_errf(err, errlen, -ENOMEM, "probe: out of memory");
	p->reg = r;
	p->opts = *o;
	pthread_mutex_init(&p->mu, NULL);
	plugfs_cond_init_mono(&p->cond);
	n = o->policy.n_types;
	p->types = calloc(n ? n : 1, sizeof(*p->types));
	p->threads = calloc((n ? n : 1) * N_LANES, sizeof(*p->threads));
	if (!p->types || !p->threads)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		p->types[i] = o->policy.types[i];
		p->types[i].type = strdup(o->policy.types[i].type);
		if (!p->types[i].type)
			goto fail;
	}
	p->opts.policy.types = p->types;
	p->opts.stop = &p->cancel;
	p->opts.hooks = NULL;
	p->opts.watch_exclude = NULL; /* the caller's: not kept */
	if (o->watch) {
		p->exclude = o->watch_exclude ? strdup(o->watch_exclude) : NULL;
		p->opts.watch_exclude = p->exclude;
		rc = live_start(r, &p->opts, &p->live, err, errlen);
		if (rc < 0) {
			prober_stop(p);
			return rc;
		}
		p->opts.hooks = live_hooks(p->live);
	}
	for (size_t i = 0; i < (n ? n : 1); i++) {
		const char *type = n ? p->types[i].type : NULL;
		struct reg_probe_settings s;

		reg_probe_settings_of(&p->opts.policy, type, REG_PROBE_DEFAULT, &s);
		for (size_t k = 0; k < N_LANES; k++)
			p->threads[p->n_threads++] = (struct prober_thread){
			    .p = p, .type = type, .lane = lanes[k], .interval_ms = s.interval_ms};
	}
	p->first_left = p->n_threads;
	p->t_start = plugfs_mono_ms();
	for (size_t i = 0; i < p->n_threads; i++) {
		rc = -pthread_create(&p->threads[i].thread, NULL, prober_main, &p->threads[i]);
		if (rc != 0)
			goto fail;
		p->threads[i].started = true;
	}
	*out = p;
	return 0;
fail:
	prober_stop(p);
	if (rc == -ENOMEM)
		return plugfs_errf(err, errlen, rc, "probe: out of memory");
	return plugfs_errf(err, errlen, rc, "probe: cannot start a thread: %s", strerror(-rc));
}

void prober_stop(struct prober *p)
{
	if (!p)
		return;
	__atomic_store_n(&p->cancel, true, __ATOMIC_RELEASE);
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->mu);
	for (size_t i = 0; i < p->n_threads; i++)
		if (p->threads[i].started)
			pthread_join(p->threads[i].thread, NULL);
	live_stop(p->live); /* after the rounds: they call its hooks */
	prober_free(p);
}

void prober_watch_stats(struct prober *p, struct probe_watch_stats *out)
{
	live_stats(p ? p->live : NULL, out);
}
