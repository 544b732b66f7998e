/* SPDX-License-Identifier: MIT */
/*
 * A probe round (include/probe.h): snapshot, probe with no lock held,
 * apply.  Registrations are probed by the settings of their type; those
 * that share a mode and a timeout go in one batch (one probe_connect_each
 * or probe_csi_each call), and the batches of a round run at the same time,
 * the first on the calling thread and each other one on a thread of its
 * own, so a round is bounded by its largest timeout per window, not by
 * their sum.  Each registration's verdict is applied as its own probe ends
 * (probe_each), on the thread of its batch: a hung plugin delays the
 * verdict of no other.  A prober thread's round is one lane's, the
 * registrations of one mode (probe_round_lane): the connect probes of a
 * type never wait for its csi probes' round.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_internal.h"
#include "clock.h"

/* A round has at most one batch per (mode, timeout): with one setting per
 * type, at most as many as there are types plus the default. */
#define BATCH_MAX 32

struct round;

struct batch {
	enum reg_probe mode;
	unsigned timeout_ms;
	size_t n;
	const char **paths;
	const char **names; /* csi: the expected plugin names (NULL = none) */
	struct probe_result *res;
	size_t *idx; /* into the round's registrations */
	const bool *stop;
	struct round *round; /* NULL: nothing applied (probe_first) */
	int rc;
};

/* What a round's batches share to apply each verdict as it comes. */
struct round {
	struct registry *r;
	const struct probe_options *o;
	const struct probe_hooks *h;
	uint64_t mark;
	const struct reg_probe_targets *snap;
	const struct reg_probe_settings *set;
	size_t probed; /* atomic: the batches apply at the same time */
	bool connect_only; /* probe_start_connect: every one connected to only */
};

bool probe_enabled(const struct probe_options *o)
{
	const struct reg_probe_policy *p = &o->policy;

	if (p->dflt.mode != REG_PROBE_DEFAULT && p->dflt.mode != REG_PROBE_NONE)
		return true;
	for (size_t i = 0; i < p->n_types; i++)
		if (p->types[i].s.mode != REG_PROBE_DEFAULT && p->types[i].s.mode != REG_PROBE_NONE)
			return true;
	return false;
}

static int64_t probe_now(const struct probe_options *o)
{
	return o->now ? o->now(o->now_arg) : (int64_t)time(NULL);
}

static uint64_t n_ok, n_failed, n_rounds, last_round_ms; /* atomic: probe_stats */

void probe_stats(struct probe_stats *out)
{
	out->ok = __atomic_load_n(&n_ok, __ATOMIC_RELAXED);
	out->failed = __atomic_load_n(&n_failed, __ATOMIC_RELAXED);
	out->rounds = __atomic_load_n(&n_rounds, __ATOMIC_RELAXED);
	out->last_round_ms = __atomic_load_n(&last_round_ms, __ATOMIC_RELAXED);
}

/*
 * The csi probes of a batch.  libcurl makes its own connect(), which a
 * socket on a hung filesystem would block (the path lookup), so a connect
 * probe on the connector threads goes first: a socket that refuses, is
 * missing or hangs fails with that, and only those that accept are given
 * to libcurl, with a fresh budget (a hung one delays the others by at most
 * one timeout, and fails none of them).  A full backlog passes the connect
 * probe; libcurl's own connect then meets it too and fails, as any client's
 * call would.
 */
/* The verdict of the batch's j-th registration, its probe just ended:
 * applied at once (registry_set_runtime), unless an event's came after
 * the round's copy or the round is being stopped. */
static void apply_one(struct batch *b, size_t j)
{
	struct round *rd = b->round;
	const struct probe_result *res = &b->res[j];
	const struct reg_probe_target *g;
	struct reg_runtime rt;
	char err[REG_ERR_MAX];

	if (res->ok)
		__atomic_fetch_add(&n_ok, 1, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&n_failed, 1, __ATOMIC_RELAXED);
	if (!rd || probe_stopped(b->stop))
		return;
	g = &rd->snap->t[b->idx[j]];
	__atomic_fetch_add(&rd->probed, 1, __ATOMIC_RELAXED);
	/* A csi registration that accepts is not known alive by a connect:
	 * its call comes with the prober's first round. */
	if (rd->connect_only && res->ok && rd->set[b->idx[j]].mode != REG_PROBE_CONNECT)
		return;
	/* An event's verdict came after this round's copy. */
	if (rd->h && rd->h->newer(rd->h->arg, g->id, rd->mark))
		return;
	probe_next_runtime(&g->runtime, res, rd->set[b->idx[j]].failures, probe_now(rd->o), &rt);
	/* -ENOENT: deregistered meanwhile; nothing to do. */
	(void)registry_set_runtime(rd->r, g->type, g->name, g->alloc, &rt, NULL, err, sizeof(err));
	if (rd->h)
		rd->h->result(rd->h->arg, g->id, res);
}

static void batch_done(void *arg, size_t j)
{
	apply_one(arg, j);
}

/* A csi batch's stages: the connect probe (a failure is the verdict), then
 * the gRPC calls of those that accepted. */
struct csi_stage {
	struct batch *b;
	struct probe_result *pre;
	const size_t *at; /* the csi call's i: the batch's at[i] */
	const struct probe_result *res;
};

static void csi_connected(void *arg, size_t i)
{
	struct csi_stage *cs = arg;

	if (cs->pre[i].ok)
		return; /* its csi call comes next */
	cs->b->res[i] = cs->pre[i];
	apply_one(cs->b, i);
}

static void csi_answered(void *arg, size_t i)
{
	struct csi_stage *cs = arg;
	size_t j = cs->at[i];

	cs->b->res[j] = cs->res[i];
	cs->b->res[j].took_ms += cs->pre[j].took_ms;
	apply_one(cs->b, j);
}

static int csi_batch(struct batch *b)
{
	struct probe_result *pre = calloc(b->n, sizeof(*pre));
	const char **paths = calloc(b->n, sizeof(*paths));
	const char **names = calloc(b->n, sizeof(*names));
	struct probe_result *res = calloc(b->n, sizeof(*res));
	size_t *at = calloc(b->n, sizeof(*at));
	struct csi_stage cs = {.b = b, .pre = pre, .at = at, .res = res};
	const struct probe_each conn_each = {.done = csi_connected, .arg = &cs};
	const struct probe_each csi_each = {.done = csi_answered, .arg = &cs};
	size_t k = 0;
	int rc = -ENOMEM;

	if (!pre || !paths || !names || !res || !at)
		goto out;
	if ((rc = probe_connect_each(b->paths, b->n, b->timeout_ms, pre, b->stop, &conn_each)) < 0)
		goto out;
	for (size_t i = 0; i < b->n; i++) {
		if (!pre[i].ok)
			continue;
		paths[k] = b->paths[i];
		names[k] = b->names ? b->names[i] : NULL;
		at[k++] = i;
	}
	if (k > 0 &&
	    (rc = probe_csi_each(paths, names, k, b->timeout_ms, res, b->stop, &csi_each)) < 0)
		goto out;
	rc = 0;
out:
	free(pre);
	free(paths);
	free(names);
	free(res);
	free(at);
	return rc;
}

/* Probes the batch, each verdict applied as its probe ends. */
static int run_batch(struct batch *b)
{
	const struct probe_each each = {.done = batch_done, .arg = b};

	switch (b->mode) {
	case REG_PROBE_CONNECT:
		return probe_connect_each(b->paths, b->n, b->timeout_ms, b->res, b->stop, &each);
	case REG_PROBE_CSI:
		return csi_batch(b);
	case REG_PROBE_DEFAULT: /* never: reg_probe_settings_of resolves it */
	case REG_PROBE_NONE:
		break;
	}
	return 0;
}

static void *batch_thread(void *arg)
{
	struct batch *b = arg;

	b->rc = run_batch(b);
	return NULL;
}

/* Runs every batch at once; 0 or the first batch's error. */
static int run_batches(struct batch *b, size_t nb)
{
	pthread_t th[BATCH_MAX];
	bool started[BATCH_MAX] = {false};
	int rc = 0;

	for (size_t i = 1; i < nb; i++)
		started[i] = pthread_create(&th[i], NULL, batch_thread, &b[i]) == 0;
	if (nb > 0)
		b[0].rc = run_batch(&b[0]);
	for (size_t i = 1; i < nb; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		else
			b[i].rc = run_batch(&b[i]); /* no thread: after the others */
	}
	for (size_t i = 0; i < nb && rc == 0; i++)
		rc = b[i].rc;
	return rc;
}

static void free_batches(struct batch *b, size_t nb)
{
	for (size_t i = 0; i < nb; i++) {
		free(b[i].paths);
		free(b[i].names);
		free(b[i].res);
		free(b[i].idx);
	}
}

/* The batch of (mode, timeout), added when new; NULL when BATCH_MAX are
 * taken (cannot happen with one setting per type) or out of memory. */
static struct batch *batch_of(struct batch *b, size_t *nb, size_t cap, enum reg_probe mode,
			      unsigned timeout_ms, const bool *stop, struct round *rd)
{
	for (size_t i = 0; i < *nb; i++)
		if (b[i].mode == mode && b[i].timeout_ms == timeout_ms)
			return &b[i];
	if (*nb == BATCH_MAX)
		return NULL;
	b[*nb] = (struct batch){.mode = mode, .timeout_ms = timeout_ms, .stop = stop, .round = rd};
	b[*nb].paths = calloc(cap, sizeof(*b[*nb].paths));
	b[*nb].names = calloc(cap, sizeof(*b[*nb].names));
	b[*nb].res = calloc(cap, sizeof(*b[*nb].res));
	b[*nb].idx = calloc(cap, sizeof(*b[*nb].idx));
	(*nb)++;
	if (!b[*nb - 1].paths || !b[*nb - 1].names || !b[*nb - 1].res || !b[*nb - 1].idx)
		return NULL;
	return &b[*nb - 1];
}

struct keep_arg {
	const struct probe_options *o;
	const struct probe_hooks *h;
	enum reg_probe lane;
};

/* Whether a registration of mode is one of lane's (those not probed are
 * the connect lane's: it sets them back to unknown). */
static bool in_lane(enum reg_probe lane, enum reg_probe mode)
{
	return lane == REG_PROBE_DEFAULT || mode == lane ||
	       (lane == REG_PROBE_CONNECT && mode == REG_PROBE_NONE);
}

/* Under the registry mutex: another lane's, and what the watches see, is
 * not even copied. */
static bool keep_target(void *arg, const char *type, const struct registration *g)
{
	const struct keep_arg *k = arg;
	struct reg_probe_settings s;

	reg_probe_settings_of(&k->o->policy, type, g->probe, &s);
	if (!in_lane(k->lane, s.mode))
		return false;
	return s.mode == REG_PROBE_NONE || !k->h ||
	       !k->h->skip(k->h->arg, g->id, s.mode, &g->runtime);
}

static int round_of(struct registry *r, const struct probe_options *o, const char *type,
		    enum reg_probe lane, bool connect_only)
{
	const struct probe_hooks *h = o->hooks;
	struct reg_probe_targets snap = {0};
	struct reg_probe_settings *set = NULL;
	bool *seen = NULL; /* what the watches see: not probed this round */
	struct batch batches[BATCH_MAX];
	size_t n, nb = 0;
	uint64_t mark = h ? h->begin(h->arg) : 0;
	struct round rd = {
	    .r = r, .o = o, .h = h, .mark = mark, .snap = &snap, .connect_only = connect_only};
	int64_t t0;
	int rc;

	struct keep_arg ka = {.o = o, .h = h, .lane = lane};

	if ((rc = registry_probe_targets_kept(
		 r, type, h || lane != REG_PROBE_DEFAULT ? keep_target : NULL, &ka, &snap)) < 0)
		goto out;
	n = snap.n;
	set = calloc(n ? n : 1, sizeof(*set));
	seen = calloc(n ? n : 1, sizeof(*seen));
	rc = -ENOMEM;
	if (!set || !seen)
		goto out;
	rd.set = set;
	for (size_t k = 0; k < n; k++) {
		const struct reg_probe_target *g = &snap.t[k];
		struct batch *b;

		reg_probe_settings_of(&o->policy, g->type, g->probe, &set[k]);
		if (set[k].mode == REG_PROBE_NONE)
			continue;
		if (h && h->skip(h->arg, g->id, set[k].mode, &g->runtime)) {
			seen[k] = true;
			continue;
		}
		b = batch_of(batches, &nb, n, connect_only ? REG_PROBE_CONNECT : set[k].mode,
			     set[k].timeout_ms, o->stop, &rd);
		if (!b)
			goto out;
		b->paths[b->n] = g->socket;
		b->names[b->n] = set[k].mode == REG_PROBE_CSI && !connect_only && *g->csi_name
				     ? g->csi_name
				     : NULL;
		b->idx[b->n] = k;
		b->n++;
	}
	/* No lock held while probing; each verdict applied as its probe
	 * ends (apply_one). */
	t0 = plugfs_mono_ms();
	if ((rc = run_batches(batches, nb)) < 0)
		goto out;
	if (nb > 0) {
		__atomic_fetch_add(&n_rounds, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&last_round_ms, (uint64_t)(plugfs_mono_ms() - t0),
				 __ATOMIC_RELAXED);
	}
	/* Not probed (any more): back to unknown, which counts as alive. */
	for (size_t i = 0; i < n && !connect_only; i++) {
		const struct reg_runtime unknown = {0};
		const struct reg_probe_target *g = &snap.t[i];
		char err[REG_ERR_MAX];

		if (set[i].mode == REG_PROBE_NONE && !seen[i] &&
		    g->runtime.health != REG_HEALTH_UNKNOWN)
			(void)registry_set_runtime(r, g->type, g->name, g->alloc, &unknown, NULL,
						   err, sizeof(err));
	}
	rc = (int)__atomic_load_n(&rd.probed, __ATOMIC_RELAXED);
out:
	if (h)
		h->end(h->arg, mark);
	free_batches(batches, nb);
	free(set);
	free(seen);
	reg_probe_targets_free(&snap);
	return rc;
}

int probe_round(struct registry *r, const struct probe_options *o)
{
	return round_of(r, o, NULL, REG_PROBE_DEFAULT, false);
}

int probe_round_type(struct registry *r, const struct probe_options *o, const char *type)
{
	return round_of(r, o, type, REG_PROBE_DEFAULT, false);
}

int probe_round_lane(struct registry *r, const struct probe_options *o, const char *type,
		     enum reg_probe lane)
{
	return round_of(r, o, type, lane, false);
}

int probe_start_connect(struct registry *r, const struct probe_options *o)
{
	return round_of(r, o, NULL, REG_PROBE_DEFAULT, true);
}

void probe_first(const char *type, const char *socket, enum reg_probe probe, const char *csi_name,
		 const struct probe_options *o, struct reg_runtime *rt)
{
	const struct reg_runtime unknown = {0};
	struct reg_probe_settings s;
	struct batch b = {0};
	struct probe_result res = {0};

	reg_probe_settings_of(&o->policy, type, probe, &s);
	*rt = unknown; /* not probed, or could not probe: stays unknown */
	if (s.mode == REG_PROBE_NONE)
		return;
	if (csi_name && !*csi_name)
		csi_name = NULL;
	b = (struct batch){.mode = s.mode,
			   .timeout_ms = s.timeout_ms,
			   .n = 1,
			   .paths = &socket,
			   .names = s.mode == REG_PROBE_CSI ? &csi_name : NULL,
			   .res = &res,
			   .stop = o->stop};
	if (run_batch(&b) < 0)
		return;
	probe_next_runtime(&unknown, &res, s.failures, probe_now(o), rt);
}
