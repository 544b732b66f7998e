/* SPDX-License-Identifier: MIT */
/* The registry's indexes: plugins by (type, name), plugins by alloc. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "array.h"
#include "internal.h"
#include "rcstr.h"

/* The key of (type, name): the hash of name scoped by the hash of type. */
static uint64_t plugin_key(const char *type, const char *name)
{
	return htab_hash_scoped(htab_hash_string(type), name);
}

struct plugin_node *index_find_plugin(const struct reg_index *ix, const char *type,
				      const char *name)
{
	struct htab_node *e = NULL;

	while ((e = htab_find(&ix->plugins, plugin_key(type, name), e))) {
		struct plugin_node *p = htab_entry(e, struct plugin_node, hnode);

		if (strcmp(p->pub.name, name) == 0 && strcmp(p->pub.type, type) == 0)
			return p;
	}
	return NULL;
}

int index_add_plugin(struct reg_index *ix, struct plugin_node *p)
{
	return htab_insert(&ix->plugins, &p->hnode, plugin_key(p->pub.type, p->pub.name));
}

void index_del_plugin(struct reg_index *ix, struct plugin_node *p)
{
	htab_remove(&ix->plugins, &p->hnode);
}

struct plugin_node *index_next_plugin(const struct reg_index *ix, size_t *pos,
				      const struct plugin_node *p)
{
	struct htab_node *e = htab_next(&ix->plugins, pos, p ? &p->hnode : NULL);

	return e ? htab_entry(e, struct plugin_node, hnode) : NULL;
}

int index_reserve(struct reg_index *ix, size_t n_plugins, size_t n_allocs)
{
	int rc = htab_reserve(&ix->plugins, n_plugins);

	return rc < 0 ? rc : htab_reserve(&ix->allocs, n_allocs);
}

size_t index_count_plugins(const struct reg_index *ix)
{
	return ix->plugins.n;
}

ssize_t plugin_find_alloc(const struct plugin_node *p, const char *alloc)
{
	for (size_t i = 0; i < p->pub.n_regs; i++)
		if (strcmp(p->pub.regs[i].alloc, alloc) == 0)
			return (ssize_t)i;
	return -1;
}

void plugin_elect_active(struct plugin_node *p)
{
	/* The most recent that is not dead; the most recent when all are. */
	for (size_t i = 0; i < p->pub.n_regs; i++) {
		if (p->pub.regs[i].runtime.health != REG_HEALTH_DEAD) {
			p->pub.active = i;
			return;
		}
	}
	p->pub.active = 0;
}

void plugin_node_free(struct plugin_node *p)
{
	if (!p)
		return;
	reg_plugin_free_contents(&p->pub);
	free(p);
}

struct plugin_node *plugin_node_new(const char *type, const char *name, size_t type_idx)
{
	struct plugin_node *p = calloc(1, sizeof(*p));
	const char *in[] = {name};
	char **out[1];

	if (!p)
		return NULL;
	/* Its name alone in its block: its type is the registry's. */
	out[0] = &p->pub.name;
	p->pub.type = (char *)type;
	p->type_idx = (uint32_t)type_idx;
	p->pub.regs = calloc(1, sizeof(*p->pub.regs));
	p->cap = 1;
	if (!reg_strings_pack(in, out, 1) || !p->pub.regs) {
		plugin_node_free(p);
		return NULL;
	}
	return p;
}

int plugin_reserve(struct plugin_node *p, size_t n)
{
	size_t cap = p->cap;

	/* Capacities double from 1: above 2^31 the next is past UINT32_MAX. */
	if (n > (size_t)1 << 31)
		return -ENOMEM;
	if (PLUGFS_RESERVE(p->pub.regs, cap, n, 1) != 0)
		return -ENOMEM;
	p->cap = (uint32_t)cap;
	return 0;
}

int alloc_set_reserve(struct alloc_set *s, size_t n)
{
	bool inline_v = s->v == &s->one_v; /* the one entry kept in the set */
	struct plugin_node **v = inline_v ? NULL : s->v;
	size_t cap = inline_v ? 0 : s->cap;

	if (n <= s->cap)
		return 0;
	/* Capacities double from 2: above 2^31 the next is past UINT32_MAX. */
	if (n > (size_t)1 << 31 || PLUGFS_RESERVE(v, cap, n, 2) != 0)
		return -ENOMEM;
	if (inline_v)
		memcpy(v, s->v, s->n * sizeof(*v));
	s->v = v;
	s->cap = (uint32_t)cap;
	return 0;
}

static void alloc_set_free(struct alloc_set *s)
{
	if (s->v != &s->one_v)
		free(s->v);
	rcstr_unref(s->strs);
	free(s);
}

struct alloc_set *index_alloc_set(const struct reg_index *ix, const char *alloc)
{
	struct htab_node *e = NULL;

	while ((e = htab_find(&ix->allocs, htab_hash_string(alloc), e))) {
		struct alloc_set *s = htab_entry(e, struct alloc_set, hnode);

		if (strcmp(alloc_set_key(s), alloc) == 0)
			return s;
	}
	return NULL;
}

struct alloc_set *index_alloc_set_get_or_create(struct reg_index *ix, const struct registration *g)
{
	struct alloc_set *s = index_alloc_set(ix, g->alloc);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->v = &s->one_v;
	s->cap = 1;
	if (htab_insert(&ix->allocs, &s->hnode, htab_hash_string(g->alloc)) < 0) {
		free(s);
		return NULL;
	}
	/* g's socket is the start of its strings, its alloc inside them. */
	s->strs = rcstr_ref(g->socket);
	return s;
}

void index_alloc_set_drop_if_empty(struct reg_index *ix, const char *alloc, struct alloc_set *s)
{
	(void)alloc;
	if (s->n != 0)
		return;
	htab_remove(&ix->allocs, &s->hnode);
	alloc_set_free(s);
}

void index_alloc_set_remove(struct reg_index *ix, const char *alloc, struct plugin_node *p)
{
	struct alloc_set *s = index_alloc_set(ix, alloc);

	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i] == p) {
			s->v[i] = s->v[--s->n];
			break;
		}
	}
	index_alloc_set_drop_if_empty(ix, alloc, s);
}

/* A plugin read from the state file, with its persisted id, into the index. */
static int load_plugin(struct reg_index *ix, size_t type_idx, int64_t plugin_id, const char *type,
		       const char *name, struct plugin_node **out, char *err, size_t errlen)
{
	struct plugin_node *p = plugin_node_new(ix->types[type_idx], name, type_idx);

	(void)type; /* the same text as ix->types[type_idx], which outlives p */
	if (!p)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	p->pub.id = plugin_id;
	if (index_add_plugin(ix, p) < 0) {
		plugin_node_free(p);
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	}
	*out = p;
	return 0;
}

int index_load(struct reg_index *ix, size_t type_idx, int64_t plugin_id, struct registration *g,
	       char *err, size_t errlen)
{
	struct plugin_node *p = index_find_plugin(ix, g->type, g->name);
	struct alloc_set *s;
	int rc;

	if (!p &&
	    (rc = load_plugin(ix, type_idx, plugin_id, g->type, g->name, &p, err, errlen)) < 0)
		return rc;
	if (plugin_find_alloc(p, g->alloc) >= 0)
		return plugfs_errf(err, errlen, -EIO, "state file: %s/%s has alloc %s twice",
				   g->type, g->name, g->alloc);
	s = index_alloc_set_get_or_create(ix, g);
	if (!s || plugin_reserve(p, p->pub.n_regs + 1) < 0 || alloc_set_reserve(s, s->n + 1) < 0)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	/* The list by seq, highest first (rows come in no order of seq:
	 * sorting them in SQLite cost more than these few moves). */
	{
		struct registration *v = p->pub.regs;
		size_t pos = 0;

		while (pos < p->pub.n_regs && v[pos].seq > g->seq)
			pos++;
		memmove(&v[pos + 1], &v[pos], (p->pub.n_regs - pos) * sizeof(*v));
		v[pos] = *g;
		p->pub.n_regs++;
	}
	s->v[s->n++] = p;
	ix->n_regs++;
	plugin_elect_active(p);
	return 0;
}

int index_load_option(struct reg_index *ix, const char *type, const char *name, const char *alloc,
		      const char *key, const char *value, char *err, size_t errlen)
{
	struct plugin_node *p = index_find_plugin(ix, type, name);
	ssize_t idx = p ? plugin_find_alloc(p, alloc) : -1;
	struct registration *g;
	struct reg_option *o;

	if (idx < 0)
		return plugfs_errf(err, errlen, -EIO,
				   "state file: an option of %s/%s alloc %s, which has no registration",
				   type, name, alloc);
	g = &p->pub.regs[idx];
	if (PLUGFS_GROW_EXACT(g->options, g->n_options) != 0)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	o = &g->options[g->n_options];
	o->key = strdup(key);
	o->value = strdup(value);
	if (!o->key || !o->value) {
		free(o->key);
		free(o->value);
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	}
	g->n_options++;
	return 0;
}

int index_load_empty(struct reg_index *ix, size_t type_idx, int64_t plugin_id, const char *type,
		     const char *name, char *err, size_t errlen)
{
	struct plugin_node *p;
	int rc;

	if (index_find_plugin(ix, type, name))
		return 0; /* cannot happen: UNIQUE(type_id, name) */
	if ((rc = load_plugin(ix, type_idx, plugin_id, type, name, &p, err, errlen)) < 0)
		return rc;
	ix->n_empty++;
	return 0;
}

void index_free(struct reg_index *ix)
{
	struct htab_node *e, *next;
	size_t pos = 0;

	for (e = htab_next(&ix->plugins, &pos, NULL); e; e = next) {
		next = htab_next(&ix->plugins, &pos, e);
		plugin_node_free(htab_entry(e, struct plugin_node, hnode));
	}
	htab_free(&ix->plugins);
	pos = 0;
	for (e = htab_next(&ix->allocs, &pos, NULL); e; e = next) {
		next = htab_next(&ix->allocs, &pos, e);
		alloc_set_free(htab_entry(e, struct alloc_set, hnode));
	}
	htab_free(&ix->allocs);
	ix->n_regs = 0;
	ix->n_empty = 0;
}
