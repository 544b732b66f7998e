/* SPDX-License-Identifier: MIT */
/* The registry's indexes: plugins by (type, name), plugins by alloc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "internal.h"

/* "type/name": neither may contain '/' (validated), so keys are unique.
 * Returns false when the key does not fit (such a plugin cannot exist). */
static bool plugin_key(char *buf, size_t len, const char *type, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", type, name);

	return n >= 0 && (size_t)n < len;
}

#define PLUGIN_KEY_MAX (2 * REG_NAME_MAX + 2)

struct plugin_node *index_find_plugin(const struct reg_index *ix, const char *type,
				      const char *name)
{
	char key[PLUGIN_KEY_MAX];

	if (!plugin_key(key, sizeof(key), type, name))
		return NULL;
	return hash_get(&ix->plugins, key);
}

int index_add_plugin(struct reg_index *ix, struct plugin_node *p)
{
	char key[PLUGIN_KEY_MAX];

	if (!plugin_key(key, sizeof(key), p->pub.type, p->pub.name))
		return -ENOMEM; /* cannot happen: names are validated */
	return hash_put(&ix->plugins, key, p);
}

void index_del_plugin(struct reg_index *ix, struct plugin_node *p)
{
	char key[PLUGIN_KEY_MAX];

	if (plugin_key(key, sizeof(key), p->pub.type, p->pub.name))
		hash_del(&ix->plugins, key);
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

int plugin_reserve(struct plugin_node *p, size_t n)
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

int alloc_set_reserve(struct alloc_set *s, size_t n)
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

struct alloc_set *index_alloc_set(const struct reg_index *ix, const char *alloc)
{
	return hash_get(&ix->allocs, alloc);
}

struct alloc_set *index_alloc_set_get_or_create(struct reg_index *ix, const char *alloc)
{
	struct alloc_set *s = hash_get(&ix->allocs, alloc);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (hash_put(&ix->allocs, alloc, s) < 0) {
		free(s);
		return NULL;
	}
	return s;
}

void index_alloc_set_drop_if_empty(struct reg_index *ix, const char *alloc, struct alloc_set *s)
{
	if (s->n != 0)
		return;
	hash_del(&ix->allocs, alloc);
	free(s->v);
	free(s);
}

void index_alloc_set_remove(struct reg_index *ix, const char *alloc, struct plugin_node *p)
{
	struct alloc_set *s = hash_get(&ix->allocs, alloc);

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
	struct plugin_node *p = plugin_node_new(type, name, type_idx);

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
	s = index_alloc_set_get_or_create(ix, g->alloc);
	if (!s || plugin_reserve(p, p->pub.n_regs + 1) < 0 || alloc_set_reserve(s, s->n + 1) < 0)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	/* Rows arrive by seq, highest first: append keeps the stored order. */
	p->pub.regs[p->pub.n_regs++] = *g;
	s->v[s->n++] = p;
	ix->n_regs++;
	plugin_elect_active(p);
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
	struct hash_entry *e = NULL;
	size_t pos = 0;

	while ((e = hash_next(&ix->plugins, &pos, e)))
		plugin_node_free(e->value);
	hash_free(&ix->plugins);
	pos = 0;
	e = NULL;
	while ((e = hash_next(&ix->allocs, &pos, e))) {
		struct alloc_set *s = e->value;

		free(s->v);
		free(s);
	}
	hash_free(&ix->allocs);
	ix->n_regs = 0;
	ix->n_empty = 0;
}
