/* SPDX-License-Identifier: MIT */
/*
 * A register's first probe, off the server thread.  A `register' is checked
 * whole on the server thread (ops.c), then its socket is probed on a probe
 * thread (at most CTL_PROBE_THREADS, started on demand, joined at the
 * server's stop) while the server serves every other client; its client is
 * parked meanwhile (its further lines held back, as for a commit).  The
 * probe thread hands the request back (the done list, the wake eventfd) and
 * the server thread puts it in the group commit (commit.c), which answers.
 *
 * Order.  Mutations are committed in the order they arrived, per plugin: a
 * mutation of a plugin that an earlier register still being probed (or an
 * earlier mutation waiting behind one) names waits behind it here, so a
 * slow probe never lets a later registration of the same plugin take the
 * older seq.  Every other mutation goes to the group commit at once.
 *
 * A handover's drain gives the probes in flight CTL_DRAIN_PROBE_MS, then
 * gives up on them (ctl_first_abandon): a register not committed is not
 * acknowledged, so its client is closed unanswered and sends it again to
 * the next server, as a request the fence kept out.  The probes are
 * cancelled (their stop flag) and end within 50 ms.
 *
 * Threads: the jobs' lists todo and done, and a job's state, are under
 * first_mu (taken alone, never across a probe or another lock); a job's
 * client and its place in the order belong to the server thread; a probe
 * thread reads only the request's strings and writes only the job's
 * result, between taking it from todo and putting it in done.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control_server_internal.h"
#include "log.h"
#include "thread.h"

enum job_state {
	JOB_QUEUED,  /* in todo */
	JOB_RUNNING, /* a probe thread probes it */
	JOB_DONE,    /* in done, not collected yet */
	JOB_READY,   /* probed (or nothing to probe): waits for its turn */
};

struct ctl_job {
	struct ctl_job *next;	    /* todo or done (first_mu) */
	struct ctl_job *next_order; /* the order (server thread) */
	struct client *c;	    /* NULL once its client is gone */
	struct ctl_request req;	    /* owned */
	struct reg_spec spec;	    /* register: its strings in req's JSON */
	struct reg_runtime first;   /* the probe's result */
	enum job_state state;	    /* first_mu */
	bool probe;		    /* a register the daemon probes */
	bool abandoned;		    /* a drain gave up on it (server thread) */
	bool ready;		    /* probed, or nothing to probe (server thread) */
	bool release;		    /* its turn came (ctl_first_collect) */
};

static void job_free(struct ctl_job *j)
{
	if (j->c)
		j->c->job = NULL;
	ctl_request_free(&j->req);
	free(j);
}

/* --- the probe threads --- */

static void *probe_thread(void *arg)
{
	struct control_server *srv = arg;
	struct ctl_first *f = &srv->first;
	uint64_t one = 1;

	pthread_mutex_lock(&f->first_mu);
	for (;;) {
		struct ctl_job *j;

		while (!f->stop && !f->todo) {
			f->idle++;
			pthread_cond_wait(&f->cond, &f->first_mu);
			f->idle--;
		}
		if (f->stop)
			break;
		j = f->todo;
		f->todo = j->next;
		if (!f->todo)
			f->todo_tail = &f->todo;
		j->state = JOB_RUNNING;
		pthread_mutex_unlock(&f->first_mu);

		srv->opt.probe(j->req.types[0], &j->spec, &f->cancel, &j->first,
			       srv->opt.probe_arg);

		pthread_mutex_lock(&f->first_mu);
		j->state = JOB_DONE;
		j->next = NULL;
		*f->done_tail = j;
		f->done_tail = &j->next;
		if (write(srv->wake_fd, &one, sizeof(one)) < 0)
			log_warn("control: cannot wake the server thread: %s", strerror(errno));
	}
	pthread_mutex_unlock(&f->first_mu);
	return NULL;
}

/* A thread for one more job when none is idle: 0, or -EAGAIN when none
 * could start and none runs.  Server thread. */
static int thread_for_one_more(struct control_server *srv)
{
	struct ctl_first *f = &srv->first;
	unsigned queued = 0;
	bool start;
	int rc;

	pthread_mutex_lock(&f->first_mu);
	for (struct ctl_job *j = f->todo; j; j = j->next)
		queued++;
	start = f->idle <= queued && f->n_threads < CTL_PROBE_THREADS;
	pthread_mutex_unlock(&f->first_mu);
	if (!start)
		return 0;
	/* Only this thread starts them: n_threads is not changed meanwhile. */
	rc = plugfs_thread_start(&f->threads[f->n_threads], NULL, probe_thread, srv);
	if (rc == 0) {
		pthread_mutex_lock(&f->first_mu);
		f->n_threads++;
		pthread_mutex_unlock(&f->first_mu);
		return 0;
	}
	log_error("control: cannot start a probe thread: %s", strerror(-rc));
	return f->n_threads > 0 ? 0 : -EAGAIN;
}

void ctl_first_init(struct control_server *srv)
{
	struct ctl_first *f = &srv->first;

	pthread_mutex_init(&f->first_mu, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->todo_tail = &f->todo;
	f->done_tail = &f->done;
	f->order_tail = &f->order;
}

/* --- the order --- */

static bool has_type(const struct ctl_request *r, const char *type)
{
	for (size_t i = 0; i < r->n_types; i++)
		if (strcmp(r->types[i], type) == 0)
			return true;
	return false;
}

/* Whether a and b must be committed in the order they came: one is a
 * register and both name one plugin (a deregister by alloc: its alloc). */
static bool conflict(const struct ctl_request *a, const struct ctl_request *b)
{
	const struct ctl_request *r = a->op == CTL_OP_REGISTER ? a : b, *o = r == a ? b : a;

	if (r->op != CTL_OP_REGISTER)
		return false; /* two deregisters: the same result in any order */
	if (o->op == CTL_OP_DEREGISTER && !o->type)
		return strcmp(r->alloc, o->alloc) == 0;
	if (strcmp(r->name, o->name) != 0)
		return false;
	if (o->op == CTL_OP_DEREGISTER)
		return has_type(r, o->type);
	for (size_t i = 0; i < o->n_types; i++)
		if (has_type(r, o->types[i]))
			return true;
	return false;
}

/* Whether a job before stop (in the order) holds req back. */
static bool held_back(const struct control_server *srv, const struct ctl_request *req,
		      const struct ctl_job *stop)
{
	for (const struct ctl_job *j = srv->first.order; j && j != stop; j = j->next_order)
		if (conflict(&j->req, req))
			return true;
	return false;
}

/* Hands j (out of the order) to the group commit. */
static void release(struct control_server *srv, struct ctl_job *j)
{
	struct client *c = j->c;

	if (c)
		c->job = NULL;
	j->c = NULL;
	if (j->req.op == CTL_OP_REGISTER) {
		j->spec.options = j->req.options;
		j->spec.runtime = j->probe ? &j->first : NULL;
	}
	if (ctl_commit_add(srv, c, &j->req, j->req.op == CTL_OP_REGISTER ? &j->spec : NULL) != 0 &&
	    c) {
		c->committing = false;
		c->resume = true;
		ctl_refuse(c, &j->req, CTL_E_INTERNAL, "out of memory");
	}
	job_free(j);
}

void ctl_first_collect(struct control_server *srv)
{
	struct ctl_first *f = &srv->first;
	struct ctl_job *done = NULL, **pp;

	if (!f->order && !f->n_threads)
		return;
	pthread_mutex_lock(&f->first_mu);
	done = f->done;
	f->done = NULL;
	f->done_tail = &f->done;
	for (struct ctl_job *j = done; j; j = j->next)
		j->state = JOB_READY;
	pthread_mutex_unlock(&f->first_mu);
	while (done) {
		struct ctl_job *j = done;

		done = j->next;
		j->ready = true;
		if (j->abandoned)
			job_free(j); /* out of the order already */
		else
			f->ready = true;
	}
	if (!f->ready)
		return;
	f->ready = false;
	/* Against the order as it is before any is released: of two of one
	 * plugin the second waits for the next round's commit (the registry
	 * plans every member of a group on the state before the group: a
	 * deregister behind a register of its alloc in one group would find
	 * nothing to remove). */
	for (struct ctl_job *j = f->order; j; j = j->next_order)
		j->release = j->ready && !held_back(srv, &j->req, j);
	pp = &f->order;
	while (*pp) {
		struct ctl_job *j = *pp;

		if (j->release) {
			*pp = j->next_order;
			release(srv, j);
			f->ready = true; /* the next round may release more */
		} else {
			pp = &j->next_order;
		}
	}
	f->order_tail = pp;
	f->ready = f->ready && f->order;
}

bool ctl_first_busy(const struct control_server *srv)
{
	return srv->first.order != NULL;
}

int ctl_first_add(struct control_server *srv, struct client *c, struct ctl_request *req,
		  const struct reg_spec *spec)
{
	struct ctl_first *f = &srv->first;
	bool probe = spec && srv->opt.probe;
	struct ctl_job *j;
	int rc;

	if (probe && __atomic_load_n(&f->cancel, __ATOMIC_ACQUIRE)) {
		/* The drain gave up on the probes: not taken, sent again. */
		f->abandoned++;
		ctl_conn_kill(c, "handover: the register is sent again to the next server");
		return 0;
	}
	if (!probe && !held_back(srv, req, NULL))
		return ctl_commit_add(srv, c, req, spec);
	if (probe && (rc = thread_for_one_more(srv)) != 0)
		return rc;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->c = c;
	j->req = *req;
	memset(req, 0, sizeof(*req));
	if (spec) {
		j->spec = *spec;
		j->spec.options = j->req.options;
		j->spec.runtime = NULL;
	}
	j->probe = probe;
	j->state = probe ? JOB_QUEUED : JOB_READY;
	j->ready = !probe;
	*f->order_tail = j;
	f->order_tail = &j->next_order;
	c->committing = true;
	c->job = j;
	if (probe) {
		pthread_mutex_lock(&f->first_mu);
		*f->todo_tail = j;
		f->todo_tail = &j->next;
		pthread_cond_signal(&f->cond);
		pthread_mutex_unlock(&f->first_mu);
	}
	return 0;
}

unsigned ctl_first_abandon(struct control_server *srv)
{
	struct ctl_first *f = &srv->first;
	struct ctl_job *order, *gone = NULL;
	unsigned closed = 0;

	ctl_first_collect(srv);
	__atomic_store_n(&f->cancel, true, __ATOMIC_RELEASE);
	if (!f->order)
		return 0;
	order = f->order;
	f->order = NULL;
	f->order_tail = &f->order;
	pthread_mutex_lock(&f->first_mu);
	f->todo = NULL; /* the queued ones are all in the order */
	f->todo_tail = &f->todo;
	while (order) {
		struct ctl_job *j = order;

		order = j->next_order;
		if (j->c) {
			ctl_conn_kill(j->c,
				      "handover: the register is sent again to the next server");
			j->c->job = NULL;
			j->c = NULL;
			closed++;
		}
		if (j->state == JOB_RUNNING || j->state == JOB_DONE) {
			j->abandoned = true; /* freed when collected */
		} else {
			j->next_order = gone;
			gone = j;
		}
	}
	pthread_mutex_unlock(&f->first_mu);
	while (gone) {
		struct ctl_job *j = gone;

		gone = j->next_order;
		job_free(j);
	}
	f->abandoned += closed;
	return closed;
}

void ctl_first_forget(struct client *c)
{
	if (c->job)
		c->job->c = NULL;
	c->job = NULL;
}

void ctl_first_stop(struct control_server *srv)
{
	struct ctl_first *f = &srv->first;

	pthread_mutex_lock(&f->first_mu);
	f->stop = true;
	__atomic_store_n(&f->cancel, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->first_mu);
	for (unsigned i = 0; i < f->n_threads; i++)
		pthread_join(f->threads[i], NULL);
	f->n_threads = 0;
	/* What a drain gave up on is in done only; the rest is in the order. */
	while (f->done) {
		struct ctl_job *j = f->done;

		f->done = j->next;
		if (j->abandoned)
			job_free(j);
	}
	while (f->order) {
		struct ctl_job *j = f->order;

		f->order = j->next_order;
		job_free(j);
	}
	f->todo = NULL;
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->first_mu);
}
