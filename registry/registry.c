/* SPDX-License-Identifier: MIT */
/*
 * The registry: per (type, name) lists ordered by seq, kept in memory and
 * persisted first ("persist, then apply").  Every mutation runs in four
 * steps: plan (validate, compute the changes, allocate everything the apply
 * step needs), one SQLite transaction, apply to memory (cannot fail), emit
 * events.  A failed transaction undoes the plan and leaves memory as it was.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash.h"
#include "internal.h"
#include "store.h"

struct plugin_node {
	struct reg_plugin pub; /* regs ordered by seq, highest first */
	size_t cap;
	size_t type_idx;
};

/* The plugins holding a registration of one alloc. */
struct alloc_set {
	struct plugin_node **v;
	size_t n, cap;
	size_t pending; /* inserts planned by the current mutation */
};

struct subscriber {
	int id;
	reg_event_cb cb; /* NULL once unsubscribed during an emission */
	void *arg;
};

struct registry {
	pthread_mutex_t mu; /* recursive: getters work from event callbacks */
	struct store st;
	char **types;
	int64_t *type_ids;
	size_t n_types;
	char **roots;
	size_t n_roots;
	int64_t ttl;
	bool read_only;
	int64_t (*now)(void *arg);
	void *now_arg;
	int64_t last_seq;
	struct hash plugins; /* "type/name" -> struct plugin_node */
	struct hash allocs;  /* alloc -> struct alloc_set */
	size_t n_regs;
	struct subscriber *subs;
	size_t n_subs, cap_subs;
	int next_sub_id;
	int emitting;
};

enum change_op { CH_INSERT, CH_UPDATE, CH_REMOVE };

struct change {
	enum change_op op;
	size_t type_idx;
	struct plugin_node *p;	/* NULL before planning an INSERT of a new plugin */
	bool new_plugin;	/* p was created by this mutation */
	size_t idx;		/* UPDATE, REMOVE: index in p->pub.regs */
	struct registration nr; /* INSERT, UPDATE: the new entry (owned) */
	struct alloc_set *set;	/* INSERT: the set p joins */
};

/* What one mutation needs after its commit, allocated before it. */
struct batch {
	struct change *c;
	size_t n, cap;
	struct reg_event *ev; /* 2 per change at most */
	size_t n_ev;
	struct registration *dead_regs; /* removed entries, alive until emitted */
	size_t n_dead_regs;
	struct plugin_node **dead_plugins;
	size_t n_dead_plugins;
};

static int64_t now(struct registry *r)
{
	return r->now ? r->now(r->now_arg) : (int64_t)time(NULL);
}

static void lock(struct registry *r)
{
	pthread_mutex_lock(&r->mu);
}

static void unlock(struct registry *r)
{
	pthread_mutex_unlock(&r->mu);
}

/* "type/name": neither may contain '/' (validated), so keys are unique.
 * Returns false when the key does not fit (such a plugin cannot exist). */
static bool plugin_key(char *buf, size_t len, const char *type, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", type, name);

	return n >= 0 && (size_t)n < len;
}

#define PLUGIN_KEY_MAX (2 * REG_NAME_MAX + 2)

static struct plugin_node *find_plugin(struct registry *r, const char *type, const char *name)
{
	char key[PLUGIN_KEY_MAX];

	if (!plugin_key(key, sizeof(key), type, name))
		return NULL;
	return hash_get(&r->plugins, key);
}

/* Index of alloc in p, or -1.  Lists hold the few allocs of one plugin
 * running at once, so this scan is short. */
static ssize_t find_alloc(const struct plugin_node *p, const char *alloc)
{
	for (size_t i = 0; i < p->pub.n_regs; i++)
		if (strcmp(p->pub.regs[i].alloc, alloc) == 0)
			return (ssize_t)i;
	return -1;
}

static void plugin_node_free(struct plugin_node *p)
{
	if (!p)
		return;
	reg_plugin_free_contents(&p->pub);
	free(p);
}

static struct plugin_node *plugin_node_new(const char *type, const char *name, size_t type_idx)
{
	struct plugin_node *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->type_idx = type_idx;
	p->pub.type = strdup(type);
	p->pub.name = strdup(name);
	p->pub.regs = calloc(1, sizeof(*p->pub.regs));
	p->cap = 1;
	if (!p->pub.type || !p->pub.name || !p->pub.regs) {
		plugin_node_free(p);
		return NULL;
	}
	return p;
}

static int plugin_reserve(struct plugin_node *p, size_t n)
{
	struct registration *v;
	size_t cap = p->cap ? p->cap : 1;

	if (n <= p->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	v = realloc(p->pub.regs, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->pub.regs = v;
	p->cap = cap;
	return 0;
}

static int set_reserve(struct alloc_set *s, size_t n)
{
	struct plugin_node **v;
	size_t cap = s->cap ? s->cap : 2;

	if (n <= s->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	v = realloc(s->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

static struct alloc_set *set_get_or_create(struct registry *r, const char *alloc)
{
	struct alloc_set *s = hash_get(&r->allocs, alloc);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (hash_put(&r->allocs, alloc, s) < 0) {
		free(s);
		return NULL;
	}
	return s;
}

static void set_drop_if_empty(struct registry *r, const char *alloc, struct alloc_set *s)
{
	if (s->n != 0)
		return;
	hash_del(&r->allocs, alloc);
	free(s->v);
	free(s);
}

static void set_remove(struct registry *r, const char *alloc, struct plugin_node *p)
{
	struct alloc_set *s = hash_get(&r->allocs, alloc);

	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i] == p) {
			s->v[i] = s->v[--s->n];
			break;
		}
	}
	set_drop_if_empty(r, alloc, s);
}

/* ---- events ------------------------------------------------------------ */

static void emit(struct registry *r, const struct reg_event *ev, size_t n)
{
	/* Only those subscribed before: one that subscribes from a callback
	 * can already read this mutation's state, so none of its events may
	 * reach it.  Subscribing appends and unsubscribing only marks the slot
	 * while emitting, so these indexes stay valid (r->subs may move). */
	size_t n_subs = r->n_subs, w = 0;

	r->emitting++;
	for (size_t e = 0; e < n; e++)
		for (size_t i = 0; i < n_subs; i++)
			if (r->subs[i].cb)
				r->subs[i].cb(&ev[e], r->subs[i].arg);
	r->emitting--;
	if (r->emitting)
		return;
	for (size_t i = 0; i < r->n_subs; i++)
		if (r->subs[i].cb)
			r->subs[w++] = r->subs[i];
	r->n_subs = w;
}

int registry_subscribe(struct registry *r, reg_event_cb cb, void *arg)
{
	int id = -ENOMEM;

	if (!cb)
		return -EINVAL;
	lock(r);
	if (r->n_subs == r->cap_subs) {
		size_t cap = r->cap_subs ? r->cap_subs * 2 : 4;
		struct subscriber *v = realloc(r->subs, cap * sizeof(*v));

		if (!v)
			goto out;
		r->subs = v;
		r->cap_subs = cap;
	}
	id = ++r->next_sub_id;
	r->subs[r->n_subs++] = (struct subscriber){.id = id, .cb = cb, .arg = arg};
out:
	unlock(r);
	return id;
}

void registry_unsubscribe(struct registry *r, int id)
{
	lock(r);
	for (size_t i = 0; i < r->n_subs; i++) {
		if (r->subs[i].id == id) {
			/* During an emission the array is being walked: mark
			 * the slot, emit() compacts it afterwards. */
			r->subs[i].cb = NULL;
			if (!r->emitting) {
				memmove(&r->subs[i], &r->subs[i + 1],
					(r->n_subs - i - 1) * sizeof(*r->subs));
				r->n_subs--;
			}
			break;
		}
	}
	unlock(r);
}

void registry_locked(struct registry *r, void (*fn)(struct registry *r, void *arg), void *arg)
{
	lock(r);
	fn(r, arg);
	unlock(r);
}

/* ---- the mutation machinery -------------------------------------------- */

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		registration_free_contents(&b->c[i].nr);
	free(b->c);
	free(b->ev);
	for (size_t i = 0; i < b->n_dead_regs; i++)
		registration_free_contents(&b->dead_regs[i]);
	free(b->dead_regs);
	for (size_t i = 0; i < b->n_dead_plugins; i++)
		plugin_node_free(b->dead_plugins[i]);
	free(b->dead_plugins);
	memset(b, 0, sizeof(*b));
}

static struct change *batch_add(struct batch *b)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4;
		struct change *v = realloc(b->c, cap * sizeof(*v));

		if (!v)
			return NULL;
		b->c = v;
		b->cap = cap;
	}
	memset(&b->c[b->n], 0, sizeof(b->c[0]));
	return &b->c[b->n++];
}

/* Undoes what prepare() did to the indexes (the mutation failed). */
static void unprepare(struct registry *r, struct batch *b)
{
	char key[PLUGIN_KEY_MAX];

	for (size_t i = 0; i < b->n; i++) {
		struct change *c = &b->c[i];

		if (c->op != CH_INSERT)
			continue;
		if (c->set) {
			/* Several changes may share one set: look it up again,
			 * an earlier iteration may have freed it. */
			struct alloc_set *s = hash_get(&r->allocs, c->nr.alloc);

			c->set = NULL;
			if (s) {
				s->pending = 0;
				set_drop_if_empty(r, c->nr.alloc, s);
			}
		}
		if (c->new_plugin && c->p) {
			if (plugin_key(key, sizeof(key), c->p->pub.type, c->p->pub.name))
				hash_del(&r->plugins, key);
			plugin_node_free(c->p);
			c->p = NULL;
			c->new_plugin = false;
		}
	}
}

/* Allocates everything apply() will need, so that nothing can fail after
 * the commit.  New plugins enter the index empty; nobody can see them
 * before the mutex is released, and unprepare() removes them on failure. */
static int prepare(struct registry *r, struct batch *b, char *err, size_t errlen)
{
	char key[PLUGIN_KEY_MAX];
	size_t n_removes = 0;

	b->ev = calloc(2 * b->n, sizeof(*b->ev));
	for (size_t i = 0; i < b->n; i++)
		n_removes += b->c[i].op == CH_REMOVE;
	b->dead_regs = calloc(n_removes ? n_removes : 1, sizeof(*b->dead_regs));
	b->dead_plugins = calloc(n_removes ? n_removes : 1, sizeof(*b->dead_plugins));
	if (!b->ev || !b->dead_regs || !b->dead_plugins)
		goto nomem;
	for (size_t i = 0; i < b->n; i++) {
		struct change *c = &b->c[i];

		if (c->op != CH_INSERT)
			continue;
		if (!c->p) {
			c->p = plugin_node_new(c->nr.type, c->nr.name, c->type_idx);
			if (!c->p)
				goto nomem;
			c->new_plugin = true;
			if (!plugin_key(key, sizeof(key), c->nr.type, c->nr.name) ||
			    hash_put(&r->plugins, key, c->p) < 0) {
				plugin_node_free(c->p);
				c->p = NULL;
				c->new_plugin = false;
				goto nomem;
			}
		}
		if (plugin_reserve(c->p, c->p->pub.n_regs + 1) < 0)
			goto nomem;
		c->set = set_get_or_create(r, c->nr.alloc);
		if (!c->set)
			goto nomem;
		c->set->pending++;
		if (set_reserve(c->set, c->set->n + c->set->pending) < 0)
			goto nomem;
	}
	for (size_t i = 0; i < b->n; i++)
		if (b->c[i].set)
			b->c[i].set->pending = 0;
	return 0;
nomem:
	unprepare(r, b);
	return reg_errf(err, errlen, -ENOMEM, "out of memory");
}

/* The SQL of every change, in one transaction. */
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
			if (c->new_plugin &&
			    (rc = store_insert_plugin(&r->st, r->type_ids[c->type_idx], c->nr.name,
						      &c->p->pub.id, err, errlen)) < 0)
				goto fail;
			if ((rc = store_take_tombstone(&r->st, c->nr.type, c->nr.name, c->nr.alloc,
						       t - r->ttl, &c->nr.seq, err, errlen)) < 0)
				goto fail;
			if (c->nr.seq == 0)
				c->nr.seq = ++seq;
			if ((rc = store_insert_reg(&r->st, c->p->pub.id, &c->nr, err, errlen)) < 0)
				goto fail;
			break;
		case CH_UPDATE:
			if ((rc = store_update_reg(&r->st, &c->nr, err, errlen)) < 0)
				goto fail;
			break;
		case CH_REMOVE:
			if ((rc = store_delete_reg(&r->st, old, t, err, errlen)) < 0)
				goto fail;
			if (c->p->pub.n_regs == 1 &&
			    (rc = store_delete_plugin(&r->st, c->p->pub.id, err, errlen)) < 0)
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

/* The registry's one rule for which registration of p is active: today
 * the most recent (regs[0]).  Readers go through reg_plugin_active. */
static void elect_active(struct plugin_node *p)
{
	p->pub.active = 0;
}

/* Elects p's active registration again after a change and adds an ACTIVE
 * event when it is not old_alloc's (NULL: none was active). */
static void reelect(struct batch *b, struct plugin_node *p, bool emptied, const char *old_alloc)
{
	const struct registration *now;

	elect_active(p);
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

	while (pos < p->pub.n_regs && v[pos].seq > c->nr.seq)
		pos++;
	memmove(&v[pos + 1], &v[pos], (p->pub.n_regs - pos) * sizeof(*v));
	v[pos] = c->nr;
	memset(&c->nr, 0, sizeof(c->nr));
	p->pub.n_regs++;
	r->n_regs++;
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
	 * swap it in and free the old contents. */
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
	char key[PLUGIN_KEY_MAX];
	bool emptied;

	*dead = p->pub.regs[c->idx];
	memmove(&p->pub.regs[c->idx], &p->pub.regs[c->idx + 1],
		(p->pub.n_regs - c->idx - 1) * sizeof(*p->pub.regs));
	p->pub.n_regs--;
	r->n_regs--;
	set_remove(r, dead->alloc, p);
	emptied = p->pub.n_regs == 0;
	if (emptied) {
		if (plugin_key(key, sizeof(key), p->pub.type, p->pub.name))
			hash_del(&r->plugins, key);
		b->dead_plugins[b->n_dead_plugins++] = p;
	}
	add_event(b, REG_EV_DEREGISTERED, p, emptied, dead, NULL, NULL);
	reelect(b, p, emptied, old_active);
}

/* Runs a planned batch: prepare, persist, apply, emit.  Consumes b. */
static int execute(struct registry *r, struct batch *b, int64_t t, char *err, size_t errlen)
{
	int64_t last_seq = r->last_seq;
	int rc = 0;

	if (b->n == 0)
		goto out;
	if ((rc = prepare(r, b, err, errlen)) < 0)
		goto out;
	if ((rc = persist(r, b, t, &last_seq, err, errlen)) < 0) {
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
	emit(r, b->ev, b->n_ev);
out:
	batch_free(b);
	return rc;
}

/* -EROFS for every mutation of a registry opened read-only. */
static int refuse_read_only(struct registry *r, const char *what, char *err, size_t errlen)
{
	if (!r->read_only)
		return 0;
	return reg_errf(err, errlen, -EROFS,
			"state file `%s': opened read-only (registry_options.read_only); %s "
			"is refused",
			r->st.path, what);
}

static int refuse_in_callback(struct registry *r, char *err, size_t errlen)
{
	if (!r->emitting)
		return 0;
	return reg_errf(err, errlen, -EDEADLK,
			"registry: a mutation cannot run from an event callback");
}

/* Finds type among the configured types: 0 and *idx (may be NULL), or
 * -EINVAL naming them. */
static int find_type(const struct registry *r, const char *type, size_t *idx, char *err,
		     size_t errlen)
{
	return reg_find_type(type, (const char *const *)r->types, r->n_types, idx, err, errlen);
}

/* Plans registering spec under types[ti] into b; no change when identical. */
static int plan_register(struct registry *r, struct batch *b, size_t ti,
			 const struct reg_spec *spec, int64_t t)
{
	struct plugin_node *p = find_plugin(r, r->types[ti], spec->name);
	ssize_t idx = p ? find_alloc(p, spec->alloc) : -1;
	const struct registration want = {
	    .type = r->types[ti],
	    .name = (char *)spec->name,
	    .alloc = (char *)spec->alloc,
	    .socket = (char *)spec->socket,
	    .version = (char *)spec->version,
	    .kind = spec->kind ? spec->kind : reg_kind_for_type(r->types[ti]),
	    .options = (struct reg_option *)spec->options,
	    .n_options = spec->n_options,
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

int registry_register(struct registry *r, const char *const *types, size_t n_types,
		      const struct reg_spec *spec, char *err, size_t errlen)
{
	struct batch b = {0};
	char q[128];
	int64_t t;
	int rc;

	if ((rc = refuse_read_only(r, "registering", err, errlen)) < 0)
		return rc;
	if (!spec)
		return reg_errf(err, errlen, -EINVAL, "registration: missing");
	if (n_types == 0 || !types)
		return reg_errf(err, errlen, -EINVAL, "type: at least one type is required");
	lock(r);
	if ((rc = refuse_in_callback(r, err, errlen)) < 0)
		goto out;
	for (size_t i = 0; i < n_types; i++) {
		if ((rc = find_type(r, types[i], NULL, err, errlen)) < 0)
			goto out;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(types[i], types[j]) == 0) {
				rc = reg_errf(err, errlen, -EINVAL,
					      "type `%s': given more than once",
					      reg_quote(q, sizeof(q), types[i]));
				goto out;
			}
		}
	}
	if ((rc = reg_validate_spec(spec, (const char *const *)r->roots, r->n_roots, err, errlen)) <
	    0)
		goto out;
	t = now(r);
	for (size_t i = 0; i < n_types; i++) {
		size_t ti = 0;

		(void)find_type(r, types[i], &ti, NULL, 0); /* found above */
		if ((rc = plan_register(r, &b, ti, spec, t)) < 0) {
			rc = reg_errf(err, errlen, rc, "out of memory");
			batch_free(&b);
			goto out;
		}
	}
	rc = execute(r, &b, t, err, errlen);
out:
	unlock(r);
	return rc;
}

int registry_deregister(struct registry *r, const char *type, const char *name, const char *alloc,
			char *err, size_t errlen)
{
	struct batch b = {0};
	struct plugin_node *p;
	struct change *c;
	ssize_t idx;
	int rc;

	if ((rc = refuse_read_only(r, "deregistering", err, errlen)) < 0)
		return rc;
	lock(r);
	if ((rc = refuse_in_callback(r, err, errlen)) < 0)
		goto out;
	if ((rc = find_type(r, type, NULL, err, errlen)) < 0 ||
	    (rc = reg_validate_name("name", name, err, errlen)) < 0 ||
	    (rc = reg_validate_name("alloc", alloc, err, errlen)) < 0)
		goto out;
	p = find_plugin(r, type, name);
	idx = p ? find_alloc(p, alloc) : -1;
	if (idx < 0)
		goto out; /* unknown: success, no event */
	c = batch_add(&b);
	if (!c) {
		rc = reg_errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	c->op = CH_REMOVE;
	c->p = p;
	c->idx = (size_t)idx;
	c->type_idx = p->type_idx;
	rc = execute(r, &b, now(r), err, errlen);
out:
	unlock(r);
	return rc;
}

static int change_cmp(const void *a, const void *b)
{
	const struct change *x = a, *y = b;

	if (x->type_idx != y->type_idx)
		return x->type_idx < y->type_idx ? -1 : 1;
	return strcmp(x->p->pub.name, y->p->pub.name);
}

int registry_deregister_alloc(struct registry *r, const char *alloc, size_t *removed, char *err,
			      size_t errlen)
{
	struct batch b = {0};
	struct alloc_set *s;
	size_t n = 0;
	int rc;

	if ((rc = refuse_read_only(r, "deregistering an alloc", err, errlen)) < 0) {
		if (removed)
			*removed = 0;
		return rc;
	}
	lock(r);
	if ((rc = refuse_in_callback(r, err, errlen)) < 0 ||
	    (rc = reg_validate_name("alloc", alloc, err, errlen)) < 0)
		goto out;
	s = hash_get(&r->allocs, alloc);
	for (size_t i = 0; s && i < s->n; i++) {
		struct change *c = batch_add(&b);
		ssize_t idx = find_alloc(s->v[i], alloc);

		if (!c) {
			batch_free(&b);
			rc = reg_errf(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
		if (idx < 0) { /* cannot happen: the set mirrors the lists */
			b.n--;
			continue;
		}
		c->op = CH_REMOVE;
		c->p = s->v[i];
		c->idx = (size_t)idx;
		c->type_idx = s->v[i]->type_idx;
	}
	/* Events in a stable order: by type as configured, then name. */
	if (b.n > 1)
		qsort(b.c, b.n, sizeof(*b.c), change_cmp);
	n = b.n;
	rc = execute(r, &b, now(r), err, errlen);
	if (rc < 0)
		n = 0;
out:
	if (removed)
		*removed = n;
	unlock(r);
	return rc;
}

int registry_import_legacy_json(struct registry *r, const char *json, size_t *imported, char *err,
				size_t errlen)
{
	struct legacy_entry *e = NULL;
	struct batch b = {0};
	char msg[REG_ERR_MAX];
	size_t n = 0, changed = 0;
	int64_t t;
	int rc;

	if ((rc = refuse_read_only(r, "importing legacy JSON", err, errlen)) < 0) {
		if (imported)
			*imported = 0;
		return rc;
	}
	lock(r);
	if ((rc = refuse_in_callback(r, err, errlen)) < 0)
		goto out;
	if (!json) {
		rc = reg_errf(err, errlen, -EINVAL, "legacy JSON: missing");
		goto out;
	}
	if ((rc = legacy_parse(r->st.db, json, &e, &n, err, errlen)) < 0)
		goto out;
	t = now(r);
	for (size_t i = 0; i < n; i++) {
		struct reg_spec spec = legacy_spec(&e[i]);
		size_t ti = 0;

		if ((rc = legacy_validate(&e[i], (const char *const *)r->types, r->n_types,
					  (const char *const *)r->roots, r->n_roots, &ti, msg,
					  sizeof(msg))) < 0) {
			rc = reg_errf(err, errlen, rc, "legacy JSON: %s", msg);
			goto out;
		}
		if ((rc = plan_register(r, &b, ti, &spec, t)) < 0) {
			rc = reg_errf(err, errlen, rc, "out of memory");
			goto out;
		}
	}
	changed = b.n;
	rc = execute(r, &b, t, err, errlen);
	if (rc < 0)
		changed = 0;
out:
	batch_free(&b);
	legacy_free(e, n);
	if (imported)
		*imported = changed;
	unlock(r);
	return rc;
}

/* ---- getters ----------------------------------------------------------- */

static int plugin_cmp(const void *a, const void *b)
{
	const struct reg_plugin *x = a, *y = b;
	int c = strcmp(x->type, y->type);

	return c ? c : strcmp(x->name, y->name);
}

int registry_snapshot(struct registry *r, const char *type, struct reg_snapshot *out)
{
	struct hash_entry *e = NULL;
	size_t pos = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	lock(r);
	out->plugins = calloc(r->plugins.n ? r->plugins.n : 1, sizeof(*out->plugins));
	if (!out->plugins) {
		rc = -ENOMEM;
		goto out;
	}
	while ((e = hash_next(&r->plugins, &pos, e))) {
		const struct plugin_node *p = e->value;

		if (type && strcmp(type, p->pub.type) != 0)
			continue;
		if ((rc = reg_plugin_copy(&p->pub, &out->plugins[out->n_plugins])) < 0)
			goto out;
		out->n_plugins++;
	}
	if (out->n_plugins > 1)
		qsort(out->plugins, out->n_plugins, sizeof(*out->plugins), plugin_cmp);
out:
	unlock(r);
	if (rc < 0)
		reg_snapshot_free(out);
	return rc;
}

int registry_get_plugin(struct registry *r, const char *type, const char *name,
			struct reg_plugin *out)
{
	struct plugin_node *p;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!type || !name)
		return -ENOENT;
	lock(r);
	p = find_plugin(r, type, name);
	rc = p ? reg_plugin_copy(&p->pub, out) : -ENOENT;
	unlock(r);
	return rc;
}

size_t registry_types(struct registry *r, const char *const **names, const int64_t **ids)
{
	if (names)
		*names = (const char *const *)r->types;
	if (ids)
		*ids = r->type_ids;
	return r->n_types;
}

void registry_counts(struct registry *r, size_t *n_plugins, size_t *n_registrations)
{
	lock(r);
	if (n_plugins)
		*n_plugins = r->plugins.n;
	if (n_registrations)
		*n_registrations = r->n_regs;
	unlock(r);
}

int registry_expire_tombstones(struct registry *r, char *err, size_t errlen)
{
	int64_t n = 0;
	int rc;

	if ((rc = refuse_read_only(r, "expiring tombstones", err, errlen)) < 0)
		return rc;
	lock(r);
	rc = store_expire_tombstones(&r->st, now(r) - r->ttl, &n, err, errlen);
	unlock(r);
	return rc < 0 ? rc : (int)(n > 0x7fffffff ? 0x7fffffff : n);
}

/* ---- open and close ---------------------------------------------------- */

static int load_one(void *arg, size_t type_idx, int64_t plugin_id, struct registration *g,
		    char *err, size_t errlen)
{
	struct registry *r = arg;
	struct plugin_node *p = find_plugin(r, g->type, g->name);
	struct alloc_set *s;
	char key[PLUGIN_KEY_MAX];

	if (!p) {
		p = plugin_node_new(g->type, g->name, type_idx);
		if (!p)
			return reg_errf(err, errlen, -ENOMEM, "out of memory");
		p->pub.id = plugin_id;
		if (!plugin_key(key, sizeof(key), g->type, g->name) ||
		    hash_put(&r->plugins, key, p) < 0) {
			plugin_node_free(p);
			return reg_errf(err, errlen, -ENOMEM, "out of memory");
		}
	}
	if (find_alloc(p, g->alloc) >= 0)
		return reg_errf(err, errlen, -EIO, "state file: %s/%s has alloc %s twice", g->type,
				g->name, g->alloc);
	s = set_get_or_create(r, g->alloc);
	if (!s || plugin_reserve(p, p->pub.n_regs + 1) < 0 || set_reserve(s, s->n + 1) < 0)
		return reg_errf(err, errlen, -ENOMEM, "out of memory");
	/* Rows arrive by seq, highest first: append keeps the stored order. */
	p->pub.regs[p->pub.n_regs++] = *g;
	s->v[s->n++] = p;
	r->n_regs++;
	elect_active(p);
	return 0;
}

static char **copy_strv(const char *const *v, size_t n)
{
	char **c = calloc(n ? n : 1, sizeof(*c));

	for (size_t i = 0; c && i < n; i++) {
		c[i] = strdup(v[i]);
		if (!c[i]) {
			for (size_t j = 0; j < i; j++)
				free(c[j]);
			free(c);
			return NULL;
		}
	}
	return c;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static int check_options(const struct registry_options *o, char *err, size_t errlen)
{
	char q[128];
	int rc;

	if (!o || !o->types || o->n_types == 0)
		return reg_errf(err, errlen, -EINVAL,
				"registry.types: at least one type is required");
	for (size_t i = 0; i < o->n_types; i++) {
		if ((rc = reg_validate_name("registry.types entry", o->types[i], err, errlen)) < 0)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(o->types[i], o->types[j]) == 0)
				return reg_errf(err, errlen, -EINVAL,
						"registry.types: `%s' given more than once",
						reg_quote(q, sizeof(q), o->types[i]));
	}
	for (size_t i = 0; i < o->n_socket_roots; i++) {
		const char *root = o->socket_roots[i];

		/* `/' is a root too (any socket): the config accepts it. */
		if (root && strcmp(root, "/") == 0)
			continue;
		if ((rc = reg_validate_socket_path("registry.socket_roots entry", root, err,
						   errlen)) < 0)
			return rc;
	}
	if (o->tombstone_ttl < 0)
		return reg_errf(err, errlen, -EINVAL,
				"registry.tombstone_ttl %lld: must be 0 or more seconds",
				(long long)o->tombstone_ttl);
	return 0;
}

int registry_open(const char *db_path, const struct registry_options *opts, struct registry **out,
		  char *err, size_t errlen)
{
	struct registry *r = NULL;
	pthread_mutexattr_t attr;
	struct store_open_options so;
	int64_t n;
	int rc;

	*out = NULL;
	if (!db_path || !db_path[0])
		return reg_errf(err, errlen, -EINVAL, "state.path: missing");
	if ((rc = check_options(opts, err, errlen)) < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return reg_errf(err, errlen, -ENOMEM, "out of memory");
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&r->mu, &attr);
	pthread_mutexattr_destroy(&attr);
	r->n_types = opts->n_types;
	r->types = copy_strv(opts->types, opts->n_types);
	r->type_ids = calloc(opts->n_types, sizeof(*r->type_ids));
	r->n_roots = opts->n_socket_roots;
	r->roots = copy_strv(opts->socket_roots, opts->n_socket_roots);
	r->ttl = opts->tombstone_ttl;
	r->read_only = opts->read_only;
	r->now = opts->now;
	r->now_arg = opts->now_arg;
	if (!r->types || !r->type_ids || !r->roots) {
		rc = reg_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	so = (struct store_open_options){
	    .synchronous = opts->synchronous,
	    .types = (const char *const *)r->types,
	    .n_types = r->n_types,
	    .now = now(r),
	    .read_only = r->read_only,
	};
	if ((rc = store_open(&r->st, db_path, &so, r->type_ids, err, errlen)) < 0)
		goto fail;
	if ((rc = store_last_seq(&r->st, &r->last_seq, err, errlen)) < 0 ||
	    (rc = store_load(&r->st, (const char *const *)r->types, r->n_types, load_one, r, err,
			     errlen)) < 0 ||
	    (!r->read_only &&
	     (rc = store_expire_tombstones(&r->st, now(r) - r->ttl, &n, err, errlen)) < 0))
		goto fail;
	*out = r;
	return 0;
fail:
	registry_close(r);
	return rc;
}

sqlite3 *registry_db(struct registry *r)
{
	return r->st.db;
}

void registry_close(struct registry *r)
{
	struct hash_entry *e = NULL;
	size_t pos = 0;

	if (!r)
		return;
	while ((e = hash_next(&r->plugins, &pos, e)))
		plugin_node_free(e->value);
	hash_free(&r->plugins);
	pos = 0;
	while ((e = hash_next(&r->allocs, &pos, e))) {
		struct alloc_set *s = e->value;

		free(s->v);
		free(s);
	}
	hash_free(&r->allocs);
	store_close(&r->st);
	free_strv(r->types, r->n_types);
	free(r->type_ids);
	free_strv(r->roots, r->n_roots);
	free(r->subs);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
