/* SPDX-License-Identifier: MIT */
/*
 * The watches at work (probe_internal.h, live_start): a watcher
 * (watch.c) over every probed registration, kept by a registry
 * subscription, and the live thread, which probes the registrations the
 * watcher's events name and applies each verdict as its probe ends.  The
 * csi calls of the registrations probed by csi (those that accepted the
 * connect) go to a thread of their own, the live csi thread: a window of
 * plugins that accept and never answer (a whole timeout) holds back no
 * connect probe of an event (a listener's exit).
 *
 * An event is a hint, never the verdict (docs/design.md, "Semantics"):
 *   - a listener's exit is probed; a probe that fails turns the
 *     registration dead at once (an exit is a fact, not a flap: no
 *     `failures' hysteresis), one that succeeds (the process had handed
 *     its socket to a child) leaves it alive;
 *   - a socket created, removed or replaced is probed; a success makes it
 *     alive at once, a failure counts as any probe's; a socket bound and
 *     not listening yet (refused) is probed again after 1, 2, 4 ... 128 ms
 *     before the failure counts;
 *   - a probe that connected names its listener's pid (SO_PEERCRED): a
 *     pidfd of it is opened, and the registration probed once more to
 *     verify it (a pid gone and reused before pidfd_open names another
 *     process: the probe then fails, or names another pid).  The pid is
 *     the listener's own only where SO_PEERPIDFD says so (probe.h's
 *     pid_sure): then the verifying probe marks the pidfd sure
 *     (watch_sure_pid).  A listener that exited (a plugin that
 *     daemonised: the parent listened, forked the server and exited)
 *     names no pid, and with SO_PEERCRED alone the pid may be anyone's:
 *     neither pidfd is sure.
 * The rounds (round.c) go on for what no event shows, through the hooks:
 * a registration alive with a sure pidfd needs no connect in connect mode, a
 * missing socket whose path is watched none in any mode, and a round's
 * verdict older than an event's is not applied.
 *
 * Locks: l->mu (the queues, the verdicts' marks) taken alone; the watcher's
 * own mutex inside its calls; the registry mutex only through the registry
 * API, never with l->mu held.  The subscription callback, under the
 * registry mutex, only calls watch_add and watch_remove (which queue).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "clock.h"
#include "connector.h"
#include "err.h"
#include "fsutil.h"
#include "hash.h"
#include "log.h"
#include "probe_internal.h"
#include "rcstr.h"
#include "thread.h"
#include "watch.h"

/* Item flags beyond the watcher's WATCH_EV_*. */
#define L_PID 0x100u	/* a round's probe named the listener: watch it */
#define L_VERIFY 0x200u /* a pidfd of pid was opened: probe again, expect pid */

#define BATCH PROBE_MAX_INFLIGHT
#define REFUSED_RETRIES 8 /* 1 + 2 + ... + 128 ms */
#define VERIFY_TRIES 3

struct item {
	int64_t id;
	unsigned what;
	int pid;
	unsigned tries;
	int64_t at; /* monotonic ms: not before */
};

struct applied {
	struct htab_node node; /* the registration's id */
	uint64_t gen;
};

struct job;

struct live {
	struct registry *reg;
	const struct probe_options *o;
	struct watch *w;
	int sub;
	struct probe_hooks hooks;
	pthread_t thread, csi_thread;
	bool started, csi_started;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_cond_t csi_cond; /* the csi queue has jobs, or stop */
	bool stop; /* also the probes' stop flag (atomic) */
	struct item *q;
	size_t n, cap;
	/* The csi calls to make (the live csi thread's queue): jobs whose
	 * connect probe succeeded, each with its socket's reference. */
	struct job *cq;
	size_t cn, ccap;
	/* The verdicts the events applied, for the rounds (hook_newer). */
	uint64_t gen;
	struct htab applied;
	uint64_t marks[64]; /* of the rounds under way */
	size_t n_marks;
	uint64_t probes; /* atomic */
};

static int64_t wall_now(const struct probe_options *o)
{
	return o->now ? o->now(o->now_arg) : (int64_t)time(NULL);
}

static void push(struct live *l, int64_t id, unsigned what, int pid, unsigned tries, int64_t at)
{
	pthread_mutex_lock(&l->mu);
	if (PLUGFS_GROW(l->q, l->cap, l->n, 64) == 0) {
		l->q[l->n++] = (struct item){.id = id, .what = what, .pid = pid, .tries = tries, .at = at};
		pthread_cond_signal(&l->cond);
	}
	pthread_mutex_unlock(&l->mu);
}

/* The watcher's callback (its loop or adder thread): queue, nothing else. */
static void on_watch_event(void *arg, int64_t id, unsigned what)
{
	push(arg, id, what, 0, 0, 0);
}

/* ---- the registry's side ------------------------------------------------ */

static void watch_reg(struct live *l, const struct registration *g)
{
	struct reg_probe_settings s;

	reg_probe_settings_of(&l->o->policy, g->type, g->probe, &s);
	if (s.mode == REG_PROBE_NONE)
		watch_remove(l->w, g->id);
	else
		(void)watch_add(l->w, g->id, g->socket);
}

/* Under the registry mutex: only the watcher's queueing calls. */
static void on_reg_event(const struct reg_event *ev, void *arg)
{
	struct live *l = arg;

	switch (ev->type) {
	case REG_EV_REGISTERED:
	case REG_EV_UPDATED:
		watch_reg(l, ev->reg);
		break;
	case REG_EV_DEREGISTERED:
		watch_remove(l->w, ev->reg->id);
		break;
	case REG_EV_ACTIVE:
	case REG_EV_RUNTIME:
		break;
	}
}

static int add_plugin(void *arg, const struct reg_plugin *p)
{
	for (size_t i = 0; i < p->n_regs; i++)
		watch_reg(arg, &p->regs[i]);
	return 0;
}

/* Subscribes and watches every registration there is, atomically. */
static void subscribe_locked(struct registry *r, void *arg)
{
	struct live *l = arg;

	l->sub = registry_subscribe(r, on_reg_event, l);
	if (l->sub > 0)
		(void)registry_each_plugin(r, add_plugin, l);
}

/* The probe override and health of (type, name, alloc): 0 or -ENOENT. */
static int lookup(struct live *l, const char *type, const char *name, const char *alloc,
		  enum reg_probe *probe, struct reg_runtime *rt)
{
	struct registration g;

	/* The one registration, not its plugin's list (a plugin may have a
	 * thousand). */
	if (registry_get_registration(l->reg, type, name, alloc, &g) < 0)
		return -ENOENT;
	*probe = g.probe;
	*rt = g.runtime;
	registration_free_contents(&g);
	return 0;
}

/* ---- the verdicts' marks (the rounds' hooks) ---------------------------- */

static void mark_applied(struct live *l, int64_t id)
{
	struct htab_node *n;
	struct applied *a;

	pthread_mutex_lock(&l->mu);
	l->gen++;
	n = htab_find(&l->applied, (uint64_t)id, NULL);
	if (n) {
		htab_entry(n, struct applied, node)->gen = l->gen;
	} else if (l->n_marks > 0 && (a = calloc(1, sizeof(*a)))) {
		/* Kept only while a round is under way: none to tell otherwise. */
		a->gen = l->gen;
		if (htab_insert(&l->applied, &a->node, (uint64_t)id) < 0)
			free(a);
	}
	pthread_mutex_unlock(&l->mu);
}

static uint64_t hook_begin(void *arg)
{
	struct live *l = arg;
	uint64_t m;

	pthread_mutex_lock(&l->mu);
	m = l->gen;
	if (l->n_marks < sizeof(l->marks) / sizeof(l->marks[0]))
		l->marks[l->n_marks++] = m;
	pthread_mutex_unlock(&l->mu);
	return m;
}

static void hook_end(void *arg, uint64_t mark)
{
	struct live *l = arg;
	uint64_t least = UINT64_MAX;
	size_t pos = 0;
	struct htab_node *n;

	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->n_marks; i++) {
		if (l->marks[i] == mark) {
			l->marks[i] = l->marks[--l->n_marks];
			break;
		}
	}
	for (size_t i = 0; i < l->n_marks; i++)
		if (l->marks[i] < least)
			least = l->marks[i];
	/* What no round under way can ask of any more. */
	n = htab_next(&l->applied, &pos, NULL);
	while (n) {
		struct applied *a = htab_entry(n, struct applied, node);

		n = htab_next(&l->applied, &pos, n);
		if (l->n_marks == 0 || a->gen <= least) {
			htab_remove(&l->applied, &a->node);
			free(a);
		}
	}
	pthread_mutex_unlock(&l->mu);
}

static bool hook_newer(void *arg, int64_t id, uint64_t mark)
{
	struct live *l = arg;
	struct htab_node *n;
	bool newer;

	pthread_mutex_lock(&l->mu);
	n = htab_find(&l->applied, (uint64_t)id, NULL);
	newer = n && htab_entry(n, struct applied, node)->gen > mark;
	pthread_mutex_unlock(&l->mu);
	return newer;
}

bool live_may_skip(enum reg_probe mode, const struct reg_runtime *rt, unsigned m)
{
	if (!(m & WATCH_HAS_DIR))
		return false;
	/* Missing, and its creation would be seen. */
	if (rt->health == REG_HEALTH_DEAD && rt->error && strcmp(rt->error, "no such file") == 0)
		return true;
	/* Listening, and its exit or its replacement would be seen; a csi
	 * probe also asks whether it answers (a hung plugin lives).  The
	 * pidfd must be the listener's own (SO_PEERPIDFD), not that of
	 * whoever has its pid now. */
	return mode == REG_PROBE_CONNECT && rt->health == REG_HEALTH_ALIVE && rt->failures == 0 &&
	       (m & WATCH_HAS_PIDFD) && (m & WATCH_PID_SURE);
}

static bool hook_skip(void *arg, int64_t id, enum reg_probe mode, const struct reg_runtime *rt)
{
	struct live *l = arg;

	return live_may_skip(mode, rt, watch_of(l->w, id));
}

static void hook_result(void *arg, int64_t id, const struct probe_result *res)
{
	struct live *l = arg;

	if (res->ok && res->pid > 0 &&
	    !(watch_of(l->w, id) & (WATCH_HAS_PIDFD | WATCH_PID_REFUSED)))
		push(l, id, L_PID, res->pid, 0, 0);
}

/* ---- the live thread ---------------------------------------------------- */

struct job {
	struct item it;
	char *sock; /* a reference from the watcher */
	struct reg_probe_settings s; /* s.mode: how it is probed */
	struct probe_result res;
};

/* Watches pid for id; a pidfd opened is verified by a probe.  Returns
 * watch_set_pid's answer (0: id has a pidfd of pid already). */
static int take_pid(struct live *l, int64_t id, int pid, unsigned tries)
{
	int rc = watch_set_pid(l->w, id, pid);

	if (rc == 1)
		push(l, id, L_VERIFY, pid, tries, 0);
	return rc;
}

/* Applies a job's verdict and takes its listener's pid. */
static void apply(struct live *l, struct job *j)
{
	const char *type = reg_strings_at(j->sock, REG_STR_TYPE);
	const char *name = reg_strings_at(j->sock, REG_STR_NAME);
	const char *alloc = reg_strings_at(j->sock, REG_STR_ALLOC);
	const struct probe_result *res = &j->res;
	unsigned what = j->it.what, failures = j->s.failures;
	struct reg_runtime old, rt;
	enum reg_probe probe;
	char err[REG_ERR_MAX];

	if (res->skipped)
		return;
	if (!res->ok && (what & WATCH_EV_SOCKET) && !(what & (WATCH_EV_EXIT | L_VERIFY)) &&
	    j->it.tries < REFUSED_RETRIES && strcmp(res->error, "connection refused") == 0) {
		/* Bound, perhaps not listening yet: look again shortly. */
		push(l, j->it.id, what, 0, j->it.tries + 1, plugfs_mono_ms() + (1 << j->it.tries));
		return;
	}
	if (lookup(l, type, name, alloc, &probe, &old) < 0)
		return; /* deregistered meanwhile */
	if (!res->ok && (what & (WATCH_EV_EXIT | L_VERIFY)))
		failures = 1; /* the listener is gone: a fact, not a flap */
	probe_next_runtime(&old, res, failures, wall_now(l->o), &rt);
	if (registry_set_runtime(l->reg, type, name, alloc, &rt, NULL, err, sizeof(err)) == 0)
		mark_applied(l, j->it.id);
	if (res->ok && res->pid > 0) {
		unsigned m = watch_of(l->w, j->it.id);

		if (what & L_VERIFY) {
			if (res->pid != j->it.pid && j->it.tries + 1 < VERIFY_TRIES)
				(void)take_pid(l, j->it.id, res->pid, j->it.tries + 1);
			else if (res->pid == j->it.pid && res->pid_sure)
				(void)watch_sure_pid(l->w, j->it.id, res->pid);
		} else if (!(m & (WATCH_HAS_PIDFD | WATCH_PID_REFUSED))) {
			(void)take_pid(l, j->it.id, res->pid, 0);
		} else if (res->pid_sure && (m & WATCH_HAS_PIDFD) && !(m & WATCH_PID_SURE) &&
			   take_pid(l, j->it.id, res->pid, 0) == 0) {
			/* A pidfd opened before this probe, of the listener
			 * it found alive (after its socket changed, say). */
			(void)watch_sure_pid(l->w, j->it.id, res->pid);
		}
	} else if (what & L_VERIFY) {
		(void)watch_set_pid(l->w, j->it.id, 0);
	}
}

static bool stopped(struct live *l)
{
	return __atomic_load_n(&l->stop, __ATOMIC_ACQUIRE);
}

/* Hands j (its socket's reference with it) to the live csi thread; a job
 * of the same registration still queued takes j's events instead. */
static void queue_csi(struct live *l, struct job *j)
{
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->cn; i++) {
		if (l->cq[i].it.id != j->it.id)
			continue;
		l->cq[i].it.what |= j->it.what;
		if (j->it.what & L_VERIFY)
			l->cq[i].it.pid = j->it.pid, l->cq[i].it.tries = j->it.tries;
		l->cq[i].res.pid = j->res.pid;
		l->cq[i].res.pid_sure = j->res.pid_sure;
		pthread_mutex_unlock(&l->mu);
		rcstr_unref(j->sock);
		j->sock = NULL;
		return;
	}
	if (PLUGFS_GROW(l->cq, l->ccap, l->cn, 64) == 0) {
		l->cq[l->cn++] = *j;
		j->sock = NULL;
		pthread_cond_signal(&l->csi_cond);
	}
	pthread_mutex_unlock(&l->mu);
	if (j->sock) { /* out of memory: not probed */
		rcstr_unref(j->sock);
		j->sock = NULL;
	}
}

struct stage {
	struct live *l;
	struct job *j;
	const struct probe_result *res;
	const size_t *at; /* the csi call's i: j[at[i]] */
};

/* A connect probe ended: its verdict, or the csi call to make next. */
static void connected(void *arg, size_t i)
{
	struct stage *st = arg;
	struct job *j = &st->j[i];

	j->res = st->res[i];
	if (j->s.mode == REG_PROBE_CSI && j->res.ok)
		queue_csi(st->l, j);
	else if (!stopped(st->l))
		apply(st->l, j);
}

/* A csi call ended: its verdict (the listener's pid, the connect's). */
static void answered(void *arg, size_t i)
{
	struct stage *st = arg;
	struct job *j = &st->j[st->at[i]];
	int pid = j->res.pid;
	bool sure = j->res.pid_sure;

	j->res = st->res[i];
	j->res.pid = j->res.ok ? pid : 0;
	j->res.pid_sure = j->res.ok && sure;
	if (!stopped(st->l))
		apply(st->l, j);
}

/* Probes the jobs' sockets with no lock held (connect), each verdict
 * applied as its probe ends; the csi calls are queued for their thread. */
static void probe_jobs(struct live *l, struct job *j, size_t n)
{
	const char *paths[BATCH];
	struct probe_result res[BATCH];
	struct stage st = {.l = l, .j = j, .res = res};
	const struct probe_each each = {.done = connected, .arg = &st};
	unsigned tmax = 0;

	for (size_t i = 0; i < n; i++) {
		paths[i] = j[i].sock;
		if (j[i].s.timeout_ms > tmax)
			tmax = j[i].s.timeout_ms;
	}
	(void)probe_connect_each(paths, n, tmax, res, &l->stop, &each);
	__atomic_fetch_add(&l->probes, n, __ATOMIC_RELAXED);
}

/* The live csi thread: the csi calls queued, BATCH at a time, each
 * verdict applied as its call ends. */
static void csi_jobs(struct live *l, struct job *j, size_t k)
{
	const char *paths[BATCH], *names[BATCH];
	struct probe_result res[BATCH];
	size_t at[BATCH];
	struct stage st = {.l = l, .j = j, .res = res, .at = at};
	const struct probe_each each = {.done = answered, .arg = &st};
	unsigned tmax = 0;

	for (size_t i = 0; i < k; i++) {
		const char *cn = reg_strings_at(j[i].sock, REG_STR_CSI_NAME);

		paths[i] = j[i].sock;
		names[i] = *cn ? cn : NULL;
		at[i] = i;
		if (j[i].s.timeout_ms > tmax)
			tmax = j[i].s.timeout_ms;
	}
	(void)probe_csi_each(paths, names, k, tmax, res, &l->stop, &each);
}

static void *live_csi_main(void *arg)
{
	struct live *l = arg;
	struct job batch[BATCH];

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		size_t k = l->cn < BATCH ? l->cn : BATCH;

		if (k == 0) {
			pthread_cond_wait(&l->csi_cond, &l->mu);
			continue;
		}
		memcpy(batch, l->cq, k * sizeof(*batch));
		memmove(l->cq, l->cq + k, (l->cn - k) * sizeof(*l->cq));
		l->cn -= k;
		pthread_mutex_unlock(&l->mu);
		csi_jobs(l, batch, k);
		for (size_t i = 0; i < k; i++)
			rcstr_unref(batch[i].sock);
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* A batch of items: the pids to watch, then the probes. */
static void run_batch(struct live *l, struct item *it, size_t n)
{
	struct job *j = calloc(n, sizeof(*j));
	size_t k = 0;

	if (!j)
		return;
	for (size_t i = 0; i < n; i++) {
		char *sock;
		enum reg_probe probe;
		struct reg_runtime rt;
		const char *type;

		if (it[i].what == L_PID) {
			if (!(watch_of(l->w, it[i].id) & (WATCH_HAS_PIDFD | WATCH_PID_REFUSED)))
				take_pid(l, it[i].id, it[i].pid, 0);
			continue;
		}
		if (!(sock = watch_socket(l->w, it[i].id)))
			continue;
		type = reg_strings_at(sock, REG_STR_TYPE);
		if (lookup(l, type, reg_strings_at(sock, REG_STR_NAME),
			   reg_strings_at(sock, REG_STR_ALLOC), &probe, &rt) < 0) {
			rcstr_unref(sock);
			continue;
		}
		j[k] = (struct job){.it = it[i], .sock = sock};
		reg_probe_settings_of(&l->o->policy, type, probe, &j[k].s);
		if (j[k].s.mode == REG_PROBE_NONE) {
			rcstr_unref(sock);
			continue;
		}
		k++;
	}
	if (k > 0)
		probe_jobs(l, j, k);
	for (size_t i = 0; i < k; i++)
		if (j[i].sock) /* not handed to the live csi thread */
			rcstr_unref(j[i].sock);
	free(j);
}

static void *live_main(void *arg)
{
	struct live *l = arg;
	struct item batch[BATCH];

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		int64_t now = plugfs_mono_ms(), next = INT64_MAX;
		size_t n = 0;

		/* The items due, merged by id (one probe each). */
		for (size_t i = 0; i < l->n;) {
			struct item *x = &l->q[i];
			size_t m;

			if (x->at > now) {
				if (x->at < next)
					next = x->at;
				i++;
				continue;
			}
			for (m = 0; m < n; m++)
				if (batch[m].id == x->id && (batch[m].what == L_PID) == (x->what == L_PID))
					break;
			if (m < n) {
				batch[m].what |= x->what;
				if (x->what & L_VERIFY)
					batch[m].pid = x->pid, batch[m].tries = x->tries;
			} else if (n < BATCH) {
				batch[n++] = *x;
			} else {
				i++;
				next = now;
				continue;
			}
			l->q[i] = l->q[--l->n];
		}
		if (l->n == 0 && l->cap > 4096) {
			free(l->q);
			l->q = NULL;
			l->cap = 0;
		}
		if (n == 0) {
			if (next == INT64_MAX) {
				pthread_cond_wait(&l->cond, &l->mu);
			} else {
				(void)plugfs_cond_wait_until(&l->cond, &l->mu, next);
			}
			continue;
		}
		pthread_mutex_unlock(&l->mu);
		run_batch(l, batch, n);
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* ---- start and stop ----------------------------------------------------- */

int live_start(struct registry *r, const struct probe_options *o, struct live **out, char *err,
	       size_t errlen)
{
	struct live *l = calloc(1, sizeof(*l));
	struct watch_options wo = {
	    .exclude = o->watch_exclude,
	    .fd_reserve = o->fd_reserve,
	    .max_watches = o->max_watches,
	    .no_pidfd = o->no_pidfd,
	    .event = on_watch_event,
	};
	int rc;

	*out = NULL;
	if (!l)
		return plugfs_errf(err, errlen, -ENOMEM, "watch: out of memory");
	l->reg = r;
	l->o = o;
	pthread_mutex_init(&l->mu, NULL);
	plugfs_cond_init_mono(&l->cond);
	pthread_cond_init(&l->csi_cond, NULL);
	l->hooks = (struct probe_hooks){.arg = l,
					.begin = hook_begin,
					.end = hook_end,
					.skip = hook_skip,
					.newer = hook_newer,
					.result = hook_result};
	wo.arg = l;
	/* The connectors' own mount: the adder resolves a socket's path the
	 * same way before it watches its directory. */
	wo.own = connector_own_mount();
	rc = watch_start(&wo, &l->w, err, errlen);
	plugfs_own_mount_unref(wo.own);
	if (rc < 0)
		goto fail;
	if ((rc = plugfs_thread_start(&l->thread, NULL, live_main, l)) < 0) {
		plugfs_seterr(err, errlen, "watch: cannot start a thread: %s", strerror(-rc));
		goto fail;
	}
	l->started = true;
	if ((rc = plugfs_thread_start(&l->csi_thread, NULL, live_csi_main, l)) < 0) {
		plugfs_seterr(err, errlen, "watch: cannot start a thread: %s", strerror(-rc));
		goto fail;
	}
	l->csi_started = true;
	registry_locked(r, subscribe_locked, l);
	if (l->sub < 0) {
		rc = plugfs_errf(err, errlen, l->sub, "watch: cannot subscribe to the registry: %s",
				 strerror(-l->sub));
		l->sub = 0;
		goto fail;
	}
	*out = l;
	return 0;
fail:
	live_stop(l);
	return rc;
}

const struct probe_hooks *live_hooks(struct live *l)
{
	return &l->hooks;
}

void live_stop(struct live *l)
{
	size_t pos = 0;
	struct htab_node *n;

	if (!l)
		return;
	if (l->sub > 0)
		registry_unsubscribe(l->reg, l->sub);
	pthread_mutex_lock(&l->mu);
	__atomic_store_n(&l->stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&l->cond);
	pthread_cond_broadcast(&l->csi_cond);
	pthread_mutex_unlock(&l->mu);
	if (l->started)
		pthread_join(l->thread, NULL);
	if (l->csi_started)
		pthread_join(l->csi_thread, NULL);
	for (size_t i = 0; i < l->cn; i++)
		rcstr_unref(l->cq[i].sock);
	free(l->cq);
	watch_stop(l->w);
	n = htab_next(&l->applied, &pos, NULL);
	while (n) {
		struct applied *a = htab_entry(n, struct applied, node);

		n = htab_next(&l->applied, &pos, n);
		free(a);
	}
	htab_free(&l->applied);
	free(l->q);
	pthread_cond_destroy(&l->csi_cond);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

void live_stats(struct live *l, struct probe_watch_stats *out)
{
	struct watch_counts c;

	*out = (struct probe_watch_stats){0};
	if (!l)
		return;
	watch_counts(l->w, &c);
	*out = (struct probe_watch_stats){
	    .on = true,
	    .pidfd = c.pidfd,
	    .inotify = c.inotify,
	    .poll = c.poll,
	    .dirs = c.dirs,
	    .events = c.events,
	    .probes = __atomic_load_n(&l->probes, __ATOMIC_RELAXED),
	    .no_pidfd = c.no_pidfd,
	    .watch_limit = c.watch_limit,
	    .fds_short = c.fds_short,
	};
}
