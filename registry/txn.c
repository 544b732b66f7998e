/* SPDX-License-Identifier: MIT */
/*
 * One mutation of the registry, in steps: plan (compute the changes and
 * copy what they store), prepare (allocate everything the apply step needs
 * and enter new plugins in the index), persist (one SQLite transaction),
 * apply to memory (cannot fail), emit the events.  A failed transaction
 * undoes the preparation and leaves memory as it was: "persist, then
 * apply".  The registry mutex is released while the transaction runs (its
 * COMMIT waits for the disk): r->commit_mu keeps every other mutation out
 * from planning to applying, and what a reader can see meanwhile is the
 * state before the mutation (a new plugin is in the index but empty, so
 * unseen, like one whose list emptied).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "array.h"

void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		registration_free_contents(&b->c[i].nr);
	free(b->c);
	free(b->ev);
	for (size_t i = 0; i < b->n_dead_regs; i++)
		registration_free_contents(&b->dead_regs[i]);
	free(b->dead_regs);
	memset(b, 0, sizeof(*b));
}

static struct change *batch_add(struct batch *b)
{
	if (PLUGFS_GROW(b->c, b->cap, b->n, 4) != 0)
		return NULL;
	memset(&b->c[b->n], 0, sizeof(b->c[0]));
	return &b->c[b->n++];
}

/* Undoes what prepare() did to the indexes (the mutation failed). */
static void unprepare(struct registry *r, struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		struct change *c = &b->c[i];

		if (c->op != CH_INSERT)
			continue;
		if (c->set) {
			/* Several changes may share one set: look it up again,
			 * an earlier iteration may have freed it. */
			struct alloc_set *s = index_alloc_set(&r->ix, c->nr.alloc);

			c->set = NULL;
			if (s) {
				s->pending = 0;
				index_alloc_set_drop_if_empty(&r->ix, c->nr.alloc, s);
			}
		}
		if (c->new_plugin && c->p) {
			r->ix.n_empty--;
			index_del_plugin(&r->ix, c->p);
			plugin_node_free(c->p);
			c->p = NULL;
			c->new_plugin = false;
		}
	}
}

/* Allocates everything apply() will need, so that nothing can fail after
 * the commit.  New plugins enter the index empty (counted in n_empty):
 * getters pass over them while the commit runs without the mutex, and
 * unprepare() removes them on failure. */
static int prepare(struct registry *r, struct batch *b, char *err, size_t errlen)
{
	size_t n_removes = 0;

	b->ev = calloc(2 * b->n, sizeof(*b->ev));
	for (size_t i = 0; i < b->n; i++)
		n_removes += b->c[i].op == CH_REMOVE;
	b->dead_regs = calloc(n_removes ? n_removes : 1, sizeof(*b->dead_regs));
	if (!b->ev || !b->dead_regs)
		goto nomem;
	for (size_t i = 0; i < b->n; i++) {
		struct change *c = &b->c[i];

		if (c->op != CH_INSERT)
			continue;
		if (!c->p) {
			c->p = plugin_node_new(r->types[c->type_idx], c->nr.name, c->type_idx);
			if (!c->p)
				goto nomem;
			c->new_plugin = true;
			if (index_add_plugin(&r->ix, c->p) < 0) {
				plugin_node_free(c->p);
				c->p = NULL;
				c->new_plugin = false;
				goto nomem;
			}
			r->ix.n_empty++; /* unseen until it has a registration */
		}
		if (plugin_reserve(c->p, c->p->pub.n_regs + 1) < 0)
			goto nomem;
		c->set = index_alloc_set_get_or_create(&r->ix, &c->nr);
		if (!c->set)
			goto nomem;
		c->set->pending++;
		if (alloc_set_reserve(c->set, c->set->n + c->set->pending) < 0)
			goto nomem;
	}
	for (size_t i = 0; i < b->n; i++)
		if (b->c[i].set)
			b->c[i].set->pending = 0;
	return 0;
nomem:
	unprepare(r, b);
	return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
}

/* The SQL of every change, in one transaction.  Runs without the registry
 * mutex (r->commit_mu held): it writes only the batch (a new plugin's id
 * goes to c->plugin_id, set in memory by apply) and reads what only a
 * mutation changes. */
static int persist(struct registry *r, struct batch *b, int64_t t, int64_t *last_seq, char *err,
		   size_t errlen)
{
	int64_t seq = r->last_seq;
	int rc;

	if ((rc = store_begin(&r->st, err, errlen)) < 0)
		return rc;
	for (size_t i = 0; i < b->n; i++) {
		struct change *c = &b->c[i];
		struct registration *old = c->op == CH_INSERT ? NULL : &c->p->pub.regs[c->idx];

		switch (c->op) {
		case CH_INSERT:
			if (!c->new_plugin)
				c->plugin_id = c->p->pub.id;
			else if ((rc = store_insert_plugin(&r->st, r->type_ids[c->type_idx],
							   c->nr.name, &c->plugin_id, err,
							   errlen)) < 0)
				goto fail;
			if ((rc = store_take_tombstone(&r->st, c->nr.type, c->nr.name, c->nr.alloc,
						       t - r->ttl, &c->nr.seq, err, errlen)) < 0)
				goto fail;
			if (c->nr.seq == 0)
				c->nr.seq = ++seq;
			if ((rc = store_insert_reg(&r->st, c->plugin_id, &c->nr, err, errlen)) < 0)
				goto fail;
			break;
		case CH_UPDATE:
			if ((rc = store_update_reg(&r->st, &c->nr, err, errlen)) < 0)
				goto fail;
			break;
		case CH_REMOVE:
			/* The plugins row stays when the list empties: its id
			 * (an inode source) is the (type, name)'s for good. */
			if ((rc = store_delete_reg(&r->st, old, t, err, errlen)) < 0)
				goto fail;
			break;
		}
	}
	if (seq != r->last_seq && (rc = store_set_seq(&r->st, seq, err, errlen)) < 0)
		goto fail;
	if ((rc = store_commit(&r->st, err, errlen)) < 0)
		return rc;
	*last_seq = seq;
	return 0;
fail:
	store_rollback(&r->st);
	return rc;
}

static void add_event(struct batch *b, enum reg_event_type type, struct plugin_node *p,
		      bool emptied, const struct registration *reg, const char *old_alloc,
		      const char *new_alloc)
{
	b->ev[b->n_ev++] = (struct reg_event){
	    .type = type,
	    .plugin_type = p->pub.type,
	    .plugin_name = p->pub.name,
	    .plugin_id = p->pub.id,
	    .reg = reg,
	    .old_alloc = old_alloc,
	    .new_alloc = new_alloc,
	    .plugin = emptied ? NULL : &p->pub,
	};
}

/* Elects p's active registration again after a change and adds an ACTIVE
 * event when it is not old_alloc's (NULL: none was active). */
static void reelect(struct batch *b, struct plugin_node *p, bool emptied, const char *old_alloc)
{
	const struct registration *now;

	plugin_elect_active(p);
	now = reg_plugin_active(&p->pub);
	if (!old_alloc && !now)
		return;
	if (old_alloc && now && strcmp(old_alloc, now->alloc) == 0)
		return;
	add_event(b, REG_EV_ACTIVE, p, emptied, now, old_alloc, now ? now->alloc : NULL);
}

static const char *active_alloc(const struct plugin_node *p)
{
	const struct registration *a = reg_plugin_active(&p->pub);

	return a ? a->alloc : NULL;
}

static void apply_insert(struct registry *r, struct batch *b, struct change *c)
{
	struct plugin_node *p = c->p;
	struct registration *v = p->pub.regs;
	const char *old_active = active_alloc(p);
	size_t pos = 0;

	if (c->new_plugin)
		p->pub.id = c->plugin_id;
	if (p->pub.n_regs == 0)
		r->ix.n_empty--; /* new, or an emptied plugin registers again (same id) */
	while (pos < p->pub.n_regs && v[pos].seq > c->nr.seq)
		pos++;
	memmove(&v[pos + 1], &v[pos], (p->pub.n_regs - pos) * sizeof(*v));
	v[pos] = c->nr;
	memset(&c->nr, 0, sizeof(c->nr));
	p->pub.n_regs++;
	r->ix.n_regs++;
	c->set->v[c->set->n++] = p;
	add_event(b, REG_EV_REGISTERED, p, false, &v[pos], NULL, NULL);
	reelect(b, p, false, old_active);
}

static void apply_update(struct batch *b, struct change *c)
{
	struct registration *g = &c->p->pub.regs[c->idx];
	struct registration old = *g;
	const char *old_active = active_alloc(c->p); /* alive until old is freed */

	/* The new entry carries the same id, type, name, alloc and seq;
	 * swap it in and free the old contents.  Its health is the one now
	 * (a probe may have changed it while the commit ran). */
	c->nr.runtime = g->runtime;
	*g = c->nr;
	memset(&c->nr, 0, sizeof(c->nr));
	add_event(b, REG_EV_UPDATED, c->p, false, g, NULL, NULL);
	reelect(b, c->p, false, old_active);
	registration_free_contents(&old);
}

static void apply_remove(struct registry *r, struct batch *b, struct change *c)
{
	struct plugin_node *p = c->p;
	struct registration *dead = &b->dead_regs[b->n_dead_regs++];
	const char *old_active = active_alloc(p); /* dead stays alive until emitted */
	bool emptied;

	*dead = p->pub.regs[c->idx];
	memmove(&p->pub.regs[c->idx], &p->pub.regs[c->idx + 1],
		(p->pub.n_regs - c->idx - 1) * sizeof(*p->pub.regs));
	p->pub.n_regs--;
	r->ix.n_regs--;
	index_alloc_set_remove(&r->ix, dead->alloc, p);
	emptied = p->pub.n_regs == 0;
	if (emptied)
		r->ix.n_empty++; /* stays in the index, unseen, keeping its id */
	add_event(b, REG_EV_DEREGISTERED, p, emptied, dead, NULL, NULL);
	reelect(b, p, emptied, old_active);
}

int txn_execute(struct registry *r, struct batch *b, int64_t t, char *err, size_t errlen)
{
	int64_t last_seq = r->last_seq;
	int rc = 0;

	if (b->n == 0)
		goto out;
	if ((rc = prepare(r, b, err, errlen)) < 0)
		goto out;
	/* The disk's wait without the mutex: getters, the prober's health
	 * and the event callbacks' readers go on meanwhile. */
	unlock(r);
	rc = persist(r, b, t, &last_seq, err, errlen);
	lock(r);
	r->commit_stats = r->st.commits;
	if (rc < 0) {
		unprepare(r, b);
		goto out;
	}
	r->last_seq = last_seq;
	for (size_t i = 0; i < b->n; i++) {
		struct change *c = &b->c[i];

		if (c->op == CH_INSERT)
			apply_insert(r, b, c);
		else if (c->op == CH_UPDATE)
			apply_update(b, c);
		else
			apply_remove(r, b, c);
	}
	registry_emit(r, b->ev, b->n_ev);
	r->emits++;
out:
	batch_free(b);
	return rc;
}

int txn_plan_register(struct registry *r, struct batch *b, size_t ti, const struct reg_spec *spec,
		      int64_t t)
{
	struct plugin_node *p = index_find_plugin(&r->ix, r->types[ti], spec->name);
	ssize_t idx = p ? plugin_find_alloc(p, spec->alloc) : -1;
	const struct registration want = {
	    .type = r->types[ti],
	    .name = (char *)spec->name,
	    .alloc = (char *)spec->alloc,
	    .socket = (char *)spec->socket,
	    .version = (char *)spec->version,
	    .kind = spec->kind ? spec->kind : reg_kind_for_type(r->types[ti]),
	    .options = (struct reg_option *)spec->options,
	    .n_options = spec->n_options,
	    .probe = spec->probe,
	    .csi_name = (char *)spec->csi_name,
	    .source = (char *)spec->source,
	    .registered_at = t,
	    .updated_at = t,
	};
	struct registration nr;
	struct change *c;

	if (registration_copy(&want, &nr) < 0)
		return -ENOMEM;
	reg_options_sort(nr.options, nr.n_options);
	if (idx >= 0) {
		const struct registration *old = &p->pub.regs[idx];

		if (registration_same_data(old, &nr)) {
			registration_free_contents(&nr);
			return 0;
		}
		nr.id = old->id;
		nr.seq = old->seq;
		nr.registered_at = old->registered_at;
		nr.runtime = old->runtime;
	} else if (spec->runtime) {
		nr.runtime = *spec->runtime;
		nr.runtime.error = reg_error_intern(spec->runtime->error);
	}
	c = batch_add(b);
	if (!c)
		goto nomem;
	c->op = idx >= 0 ? CH_UPDATE : CH_INSERT;
	c->type_idx = ti;
	c->p = p;
	c->idx = idx >= 0 ? (size_t)idx : 0;
	c->nr = nr;
	return 0;
nomem:
	registration_free_contents(&nr);
	return -ENOMEM;
}

static int change_cmp(const void *a, const void *b)
{
	const struct change *x = a, *y = b;

	if (x->type_idx != y->type_idx)
		return x->type_idx < y->type_idx ? -1 : 1;
	return strcmp(x->p->pub.name, y->p->pub.name);
}

int txn_plan_remove(struct batch *b, struct plugin_node *p, size_t idx)
{
	struct change *c = batch_add(b);

	if (!c)
		return -ENOMEM;
	c->op = CH_REMOVE;
	c->p = p;
	c->idx = idx;
	c->type_idx = p->type_idx;
	return 0;
}

/* The plugin and the alloc a planned change touches. */
static void change_keys(const struct change *c, const char **name, const char **alloc)
{
	*name = c->p ? c->p->pub.name : c->nr.name;
	*alloc = c->op == CH_REMOVE ? c->p->pub.regs[c->idx].alloc : c->nr.alloc;
}

bool txn_conflicts(const struct batch *g, const struct batch *one)
{
	for (size_t i = 0; i < one->n; i++) {
		const char *name, *alloc;

		change_keys(&one->c[i], &name, &alloc);
		for (size_t j = 0; j < g->n; j++) {
			const char *gname, *galloc;

			change_keys(&g->c[j], &gname, &galloc);
			if (strcmp(alloc, galloc) == 0 ||
			    (one->c[i].type_idx == g->c[j].type_idx && strcmp(name, gname) == 0))
				return true;
		}
	}
	return false;
}

bool txn_touches(const struct batch *g, ssize_t type_idx, const char *name, const char *alloc)
{
	for (size_t j = 0; j < g->n; j++) {
		const char *gname, *galloc;

		change_keys(&g->c[j], &gname, &galloc);
		if (strcmp(alloc, galloc) == 0 ||
		    (name && (ssize_t)g->c[j].type_idx == type_idx && strcmp(name, gname) == 0))
			return true;
	}
	return false;
}

int txn_join(struct batch *g, struct batch *one)
{
	size_t n = g->n + one->n;

	if (PLUGFS_RESERVE(g->c, g->cap, n, 16) != 0)
		return -ENOMEM;
	memcpy(&g->c[g->n], one->c, one->n * sizeof(*one->c));
	g->n = n;
	free(one->c);
	memset(one, 0, sizeof(*one));
	return 0;
}

void txn_sort(struct batch *b)
{
	if (b->n > 1)
		qsort(b->c, b->n, sizeof(*b->c), change_cmp);
}

void txn_set_runtime(struct registry *r, struct plugin_node *p, size_t idx,
		     const struct reg_runtime *rt)
{
	struct reg_event ev[2];
	struct batch b = {.ev = ev};
	const char *old_active = active_alloc(p);
	struct reg_runtime old = p->pub.regs[idx].runtime;

	p->pub.regs[idx].runtime = *rt;
	add_event(&b, REG_EV_RUNTIME, p, false, &p->pub.regs[idx], NULL, NULL);
	b.ev[b.n_ev - 1].old_runtime = &old;
	reelect(&b, p, false, old_active);
	registry_emit(r, b.ev, b.n_ev);
	r->emits++;
}
