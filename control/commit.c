/* SPDX-License-Identifier: MIT */
/*
 * Group commit of the control socket's mutations.  `register' and
 * `deregister' are checked when their line is served (ops.c) and then wait
 * here, their client's further lines held back, until the end of the poll
 * round: the server thread then hands every waiting mutation of every client
 * to registry_mutate at once (one transaction, one fsync for all of them,
 * each validated alone so that a bad one fails alone), and answers each
 * client with its own result, in the order the lines were served.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control_server_internal.h"
#include "array.h"

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
	struct ctl_pending *p;

	if (srv->n_pending == srv->cap_pending) {
		/* Two arrays of one capacity: it counts once both grew. */
		size_t cap = srv->cap_pending, cap_m = srv->cap_pending;

		if (PLUGFS_GROW(srv->pending, cap, srv->n_pending, 16) != 0 ||
		    PLUGFS_GROW(srv->pending_m, cap_m, srv->n_pending, 16) != 0)
			return -ENOMEM;
		srv->cap_pending = cap;
	}
	p = &srv->pending[srv->n_pending];
	memset(p, 0, sizeof(*p));
	p->c = c;
	/* The request moves here (its strings live in its JSON root). */
	p->req = *req;
	memset(req, 0, sizeof(*req));
	if (spec) {
		/* Its pointers into the slot are set by ctl_commit_run: the
		 * slots may move until then. */
		p->spec = *spec;
		if (spec->runtime) {
			p->first = *spec->runtime;
			p->have_first = true;
		}
	}
	srv->n_pending++;
	if (c)
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
		  (srv->opt.probe && have_mine &&
		   json_object_set_new(o, "health", control_json_health(&mine))))) {
		json_decref(o);
		o = NULL;
	} else if (!o) {
		json_decref(plugins);
	}
	ctl_conn_send(c, o);
}

void ctl_commit_run(struct control_server *srv)
{
	size_t n = srv->n_pending;
	struct reg_mutation *m = srv->pending_m;

	if (n == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct ctl_request *req = &srv->pending[i].req;

		memset(&m[i], 0, sizeof(m[i]));
		if (req->op == CTL_OP_REGISTER) {
			srv->pending[i].spec.options = req->options;
			srv->pending[i].spec.runtime =
			    srv->pending[i].have_first ? &srv->pending[i].first : NULL;
			m[i].op = REG_MUT_REGISTER;
			m[i].types = req->types;
			m[i].n_types = req->n_types;
			m[i].spec = &srv->pending[i].spec;
		} else {
			m[i].op = req->type ? REG_MUT_DEREGISTER : REG_MUT_DEREGISTER_ALLOC;
			m[i].type = req->type;
			m[i].name = req->name;
			m[i].alloc = req->alloc;
		}
	}
	registry_mutate(srv->reg, m, n);
	srv->counters.commit_groups++;
	srv->counters.commit_grouped += n;
	for (size_t i = 0; i < n; i++) {
		struct ctl_pending *p = &srv->pending[i];
		struct client *c = p->c;

		if (c) {
			c->committing = false;
			c->resume = true; /* serve the lines held back */
		}
		if (!c || c->dead) {
			; /* gone: the mutation stands, nobody to tell */
		} else if (m[i].rc != 0) {
			ctl_refuse_registry(c, &p->req, m[i].rc, m[i].err);
		} else if (p->req.op == CTL_OP_REGISTER) {
			answer_register(srv, c, &p->req);
		} else {
			ctl_conn_send_ok(c, p->req.id, "removed",
					 json_integer((json_int_t)m[i].removed));
		}
		ctl_request_free(&p->req);
	}
	srv->n_pending = 0;
}

void ctl_commit_drop(struct control_server *srv)
{
	for (size_t i = 0; i < srv->n_pending; i++)
		ctl_request_free(&srv->pending[i].req);
	free(srv->pending);
	free(srv->pending_m);
	srv->pending = NULL;
	srv->pending_m = NULL;
	srv->n_pending = srv->cap_pending = 0;
}
