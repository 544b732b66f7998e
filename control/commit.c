/* SPDX-License-Identifier: MIT */
/*
 * Group commit of the control socket's mutations.  `register' and
 * `deregister' are checked when their line is served (ops.c) and then wait
 * here, their client's further lines held back: once per poll round the
 * server thread hands every mutation queued since the last group went out
 * to the committer thread as one group (registry_mutate: one transaction,
 * one fsync for all of them, each validated alone so that a bad one fails
 * alone), and goes on reading, serving and queueing the next group while
 * the committer waits for the disk; when the committer is done, the server
 * thread answers each client of the group with its own result, in the
 * order the lines were served.  One group is out at a time, so groups
 * commit in the order they were made.  A lone mutation with the committer
 * idle is committed on the server thread itself: one client, one
 * registration at a time, pays no hand-off between two threads.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control_server_internal.h"

struct ctl_pending {
	struct client *c;
	struct ctl_request req; /* owned */
	struct reg_spec spec;	/* register: its strings in req's JSON */
	struct reg_runtime first;
	bool have_first;
};

/* The slots stay allocated from one round to the next (a request is some
 * KiB: allocating one per mutation shows in a profile). */
int ctl_commit_add(struct control_server *srv, struct client *c, struct ctl_request *req,
		   const struct reg_spec *spec)
{
	struct ctl_group *g = &srv->collect;
	struct ctl_pending *p;

	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;
		struct ctl_pending *v = realloc(g->p, cap * sizeof(*v));
		struct reg_mutation *m;

		if (!v)
			return -ENOMEM;
		g->p = v;
		m = realloc(g->m, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		g->m = m;
		g->cap = cap;
	}
	p = &g->p[g->n];
	memset(p, 0, sizeof(*p));
	p->c = c;
	/* The request moves here (its strings live in its JSON root). */
	p->req = *req;
	memset(req, 0, sizeof(*req));
	if (spec) {
		/* Its pointers into the slot are set by prepare: the slots may
		 * move until then. */
		p->spec = *spec;
		if (spec->runtime) {
			p->first = *spec->runtime;
			p->have_first = true;
		}
	}
	g->n++;
	c->committing = true;
	return 0;
}

/* The answer of a register that was committed: the plugins as they are now
 * and the health of the registration (that of its first type). */
static void answer_register(struct control_server *srv, struct client *c, struct ctl_request *req)
{
	json_t *plugins = json_array(), *o;
	struct reg_runtime mine = {0};
	bool have_mine = false;

	for (size_t i = 0; plugins && i < req->n_types; i++) {
		struct reg_plugin p;

		memset(&p, 0, sizeof(p));
		if (registry_get_plugin(srv->reg, req->types[i], req->name, &p) != 0)
			continue;
		for (size_t j = 0; i == 0 && j < p.n_regs; j++) {
			if (strcmp(p.regs[j].alloc, req->alloc) == 0) {
				mine = p.regs[j].runtime;
				have_mine = true;
			}
		}
		if (json_array_append_new(plugins, ctl_plugin_json(srv, &p))) {
			json_decref(plugins);
			plugins = NULL;
		}
		reg_plugin_free_contents(&p);
	}
	o = ctl_ok_response(req->id);
	if (o && (json_object_set_new(o, "plugins", plugins) ||
		  (srv->probe && have_mine &&
		   json_object_set_new(o, "health", control_json_health(&mine))))) {
		json_decref(o);
		o = NULL;
	} else if (!o) {
		json_decref(plugins);
	}
	ctl_conn_send(c, o);
}

/* Fills g's registry_mutate array from its requests (the slots stay put
 * from here until the group is answered). */
static void prepare(struct ctl_group *g)
{
	for (size_t i = 0; i < g->n; i++) {
		struct ctl_pending *p = &g->p[i];
		struct ctl_request *req = &p->req;
		struct reg_mutation *m = &g->m[i];

		memset(m, 0, sizeof(*m));
		if (req->op == CTL_OP_REGISTER) {
			p->spec.options = req->options;
			p->spec.runtime = p->have_first ? &p->first : NULL;
			m->op = REG_MUT_REGISTER;
			m->types = req->types;
			m->n_types = req->n_types;
			m->spec = &p->spec;
		} else {
			m->op = req->type ? REG_MUT_DEREGISTER : REG_MUT_DEREGISTER_ALLOC;
			m->type = req->type;
			m->name = req->name;
			m->alloc = req->alloc;
		}
	}
}

/* Answers every client of the committed group g with its own result and
 * empties g (its slots kept for the next group). */
static void answer(struct control_server *srv, struct ctl_group *g)
{
	srv->counters.commit_groups++;
	srv->counters.commit_grouped += g->n;
	for (size_t i = 0; i < g->n; i++) {
		struct ctl_pending *p = &g->p[i];
		struct client *c = p->c;

		c->committing = false;
		c->resume = true; /* serve the lines held back */
		if (c->dead) {
			; /* gone: the mutation stands, nobody to tell */
		} else if (g->m[i].rc != 0) {
			ctl_refuse_registry(c, &p->req, g->m[i].rc, g->m[i].err);
		} else if (p->req.op == CTL_OP_REGISTER) {
			answer_register(srv, c, &p->req);
		} else {
			ctl_conn_send_ok(c, p->req.id, "removed",
					 json_integer((json_int_t)g->m[i].removed));
		}
		ctl_request_free(&p->req);
	}
	g->n = 0;
}

/* Commits and answers what is queued, on the server thread. */
static void run_here(struct control_server *srv)
{
	struct ctl_group *g = &srv->collect;

	if (g->n == 0)
		return;
	prepare(g);
	registry_mutate(srv->reg, g->m, g->n);
	answer(srv, g);
}

/* The committer's state; cm_mu taken. */
static enum ctl_cm_state cm_state(struct control_server *srv)
{
	enum ctl_cm_state st;

	pthread_mutex_lock(&srv->cm_mu);
	st = srv->cm_state;
	pthread_mutex_unlock(&srv->cm_mu);
	return st;
}

static void cm_set(struct control_server *srv, enum ctl_cm_state st)
{
	pthread_mutex_lock(&srv->cm_mu);
	srv->cm_state = st;
	pthread_cond_broadcast(&srv->cm_cond);
	pthread_mutex_unlock(&srv->cm_mu);
}

void ctl_commit_run(struct control_server *srv)
{
	enum ctl_cm_state st;
	struct ctl_group t;

	if (!srv->committer_started) {
		run_here(srv);
		return;
	}
	st = cm_state(srv);
	if (st == CTL_CM_DONE) {
		answer(srv, &srv->inflight);
		cm_set(srv, st = CTL_CM_IDLE);
	}
	if (st != CTL_CM_IDLE || srv->collect.n == 0)
		return;
	if (srv->collect.n == 1) {
		run_here(srv);
		return;
	}
	/* The collected group goes out; its slots and the empty ones of the
	 * group answered trade places. */
	t = srv->inflight;
	srv->inflight = srv->collect;
	srv->collect = t;
	prepare(&srv->inflight);
	cm_set(srv, CTL_CM_RUNNING);
}

/* Waits for the committer's group, if one is out, and answers it. */
static void finish_inflight(struct control_server *srv)
{
	if (srv->committer_started) {
		enum ctl_cm_state st;

		pthread_mutex_lock(&srv->cm_mu);
		while (srv->cm_state == CTL_CM_RUNNING)
			pthread_cond_wait(&srv->cm_done, &srv->cm_mu);
		st = srv->cm_state;
		pthread_mutex_unlock(&srv->cm_mu);
		if (st == CTL_CM_DONE) {
			answer(srv, &srv->inflight);
			cm_set(srv, CTL_CM_IDLE);
		}
	}
}

void ctl_commit_flush(struct control_server *srv)
{
	finish_inflight(srv);
	run_here(srv);
}

static void *committer_main(void *arg)
{
	struct control_server *srv = arg;
	const uint64_t one = 1;

	pthread_mutex_lock(&srv->cm_mu);
	for (;;) {
		while (srv->cm_state != CTL_CM_RUNNING && !srv->cm_stop)
			pthread_cond_wait(&srv->cm_cond, &srv->cm_mu);
		if (srv->cm_state != CTL_CM_RUNNING)
			break; /* stopped with no group out */
		pthread_mutex_unlock(&srv->cm_mu);
		registry_mutate(srv->reg, srv->inflight.m, srv->inflight.n);
		pthread_mutex_lock(&srv->cm_mu);
		srv->cm_state = CTL_CM_DONE;
		pthread_cond_broadcast(&srv->cm_done);
		/* The server thread answers it in its next round. */
		if (write(srv->wake_fd, &one, sizeof(one)) < 0) {
			/* EAGAIN: an eventfd at its maximum is readable already */
		}
	}
	pthread_mutex_unlock(&srv->cm_mu);
	return NULL;
}

int ctl_committer_start(struct control_server *srv)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	int e;

	pthread_mutex_init(&srv->cm_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_cond_init(&srv->cm_cond, &ca);
	pthread_cond_init(&srv->cm_done, &ca);
	pthread_condattr_destroy(&ca);
	srv->cm_state = CTL_CM_IDLE;
	srv->cm_stop = false;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	e = pthread_create(&srv->committer, NULL, committer_main, srv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		pthread_cond_destroy(&srv->cm_cond);
		pthread_cond_destroy(&srv->cm_done);
		pthread_mutex_destroy(&srv->cm_mu);
		return -e;
	}
	srv->committer_started = true;
	return 0;
}

void ctl_committer_stop(struct control_server *srv)
{
	if (!srv->committer_started)
		return;
	/* The group out is committed whatever happens: answered if its
	 * clients are still there.  What was queued since is dropped, as
	 * before a stop without a committer (ctl_commit_drop). */
	finish_inflight(srv);
	pthread_mutex_lock(&srv->cm_mu);
	srv->cm_stop = true;
	pthread_cond_broadcast(&srv->cm_cond);
	pthread_mutex_unlock(&srv->cm_mu);
	pthread_join(srv->committer, NULL);
	srv->committer_started = false;
	pthread_cond_destroy(&srv->cm_cond);
	pthread_cond_destroy(&srv->cm_done);
	pthread_mutex_destroy(&srv->cm_mu);
}

static void group_drop(struct ctl_group *g)
{
	for (size_t i = 0; i < g->n; i++)
		ctl_request_free(&g->p[i].req);
	free(g->p);
	free(g->m);
	memset(g, 0, sizeof(*g));
}

void ctl_commit_drop(struct control_server *srv)
{
	group_drop(&srv->collect);
	group_drop(&srv->inflight);
}
