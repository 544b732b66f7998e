/* SPDX-License-Identifier: MIT */
/*
 * The registry's in-memory indexes, private to registry/: each plugin's
 * ordered list by (type, name), and the plugins holding a registration of
 * each alloc.  Both are hash lookups (hash.h); not thread-safe, the registry
 * mutex guards them.  The index owns its plugin nodes and alloc sets.
 */
#ifndef PLUGFS_REGISTRY_INDEX_H
#define PLUGFS_REGISTRY_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hash.h"
#include "registry.h"

/* One plugin: the public value (its list and active index) plus room.  A
 * plugin whose list emptied stays in the index with n_regs 0 (counted in
 * n_empty), so that it keeps its persisted id; getters pass over it. */
struct plugin_node {
	struct reg_plugin pub;	/* regs ordered by seq, highest first */
	uint32_t cap;		/* slots allocated in pub.regs */
	uint32_t type_idx;	/* index of its type in the configured types */
	struct htab_node hnode; /* in reg_index.plugins, by (type, name) */
};

/* The plugins holding a registration of one alloc: 56 bytes (a 64-byte
 * malloc chunk), room for one plugin inside (an alloc mostly registers
 * one).  Its key is not a copy: it is the alloc in the strings of the
 * registration that made the set (reg_model.h, "Sharing"), which the set
 * holds a reference to, so the key outlives that registration if need be
 * (one block per set, as a copy would cost). */
struct alloc_set {
	struct htab_node hnode; /* in reg_index.allocs, by alloc */
	struct plugin_node **v; /* one_v or an array of its own */
	uint32_t n, cap;
	uint32_t pending; /* inserts planned by the current mutation */
	struct plugin_node *one_v;
	char *strs; /* a reference to a registration's strings: the key is
		     * their alloc (alloc_set_key) */
};
_Static_assert(sizeof(void *) != 8 || sizeof(struct alloc_set) == 56,
	       "struct alloc_set has a hole");

/* The alloc of set s. */
static inline const char *alloc_set_key(const struct alloc_set *s)
{
	return reg_strings_at(s->strs, REG_STR_ALLOC);
}

/* Intrusive tables of the project's hash (hash.h): a node or set is one
 * allocation with its key, no entry or key copied beside it. */
struct reg_index {
	struct htab plugins; /* struct plugin_node, by (type, name) */
	struct htab allocs;  /* struct alloc_set, by alloc */
	size_t n_regs;	     /* registrations over all plugins */
	size_t n_empty;	     /* plugins whose list emptied (kept for their id) */
	/* The registry's configured type names (registry.c), which outlive
	 * the index: a plugin node's type is one of them, not a copy. */
	const char *const *types;
};

/* A zeroed index is empty.  index_free frees every node and set. */
void index_free(struct reg_index *ix);

/* The plugin (type, name), or NULL. */
struct plugin_node *index_find_plugin(const struct reg_index *ix, const char *type,
				      const char *name);
/* Enters p (no registration yet is fine) under its type and name: 0 or
 * -ENOMEM (p is then not entered and still the caller's). */
int index_add_plugin(struct reg_index *ix, struct plugin_node *p);
/* Removes p from the lookup by (type, name); p is not freed. */
void index_del_plugin(struct reg_index *ix, struct plugin_node *p);
/* Iteration over every plugin (empty ones included): start with *pos = 0
 * and p = NULL; the next plugin or NULL.  The index must not change. */
struct plugin_node *index_next_plugin(const struct reg_index *ix, size_t *pos,
				      const struct plugin_node *p);
/* Room for n_plugins plugins and n_allocs allocs without growing the
 * tables (loading the store); 0 or -ENOMEM. */
int index_reserve(struct reg_index *ix, size_t n_plugins, size_t n_allocs);
/* Plugins in the index, empty ones included. */
size_t index_count_plugins(const struct reg_index *ix);

/* The set of alloc, or NULL. */
struct alloc_set *index_alloc_set(const struct reg_index *ix, const char *alloc);
/* The set of g's alloc, created empty when missing (keyed by g's own
 * string, a reference to g's strings taken: g is an owned value); NULL
 * when out of memory. */
struct alloc_set *index_alloc_set_get_or_create(struct reg_index *ix, const struct registration *g);
/* Frees the set of alloc when it holds no plugin. */
void index_alloc_set_drop_if_empty(struct reg_index *ix, const char *alloc, struct alloc_set *s);
/* Takes p out of the set of alloc (and drops the set when it empties). */
void index_alloc_set_remove(struct reg_index *ix, const char *alloc, struct plugin_node *p);
/* Room for n plugins in s: 0 or -ENOMEM. */
int alloc_set_reserve(struct alloc_set *s, size_t n);

/* A new plugin node without registrations, or NULL when out of memory.
 * name is copied (a block of its own, reg_model.h "Sharing"), type is not:
 * it must outlive the node (one of reg_index.types). */
struct plugin_node *plugin_node_new(const char *type, const char *name, size_t type_idx);
void plugin_node_free(struct plugin_node *p);
/* Room for n registrations in p: 0 or -ENOMEM. */
int plugin_reserve(struct plugin_node *p, size_t n);
/* Index of alloc in p's list, or -1.  Lists hold the few allocs of one
 * plugin running at once, so this scan is short. */
ssize_t plugin_find_alloc(const struct plugin_node *p, const char *alloc);
/* The registry's one rule for which registration of p is active (read it
 * with reg_plugin_active): today the most recent one, regs[0].  Call after
 * every change of p's list. */
void plugin_elect_active(struct plugin_node *p);

/* Enters g (taking its contents) in the list of the plugin (g->type,
 * g->name) at its place by seq, highest first; the plugin is created with
 * plugin_id when missing, as loading the store does.  0, -ENOMEM, or -EIO when the plugin already
 * has g->alloc; messages in err. */
int index_load(struct reg_index *ix, size_t type_idx, int64_t plugin_id, struct registration *g,
	       char *err, size_t errlen);
/* Appends the option key=value (options come by key) to the registration
 * of alloc in the plugin (type, name), as loading the store does after the
 * registrations.  0, -ENOMEM, or -EIO when there is no such registration. */
int index_load_option(struct reg_index *ix, const char *type, const char *name, const char *alloc,
		      const char *key, const char *value, char *err, size_t errlen);
/* Enters the plugin (type, name) with plugin_id and an empty list, as
 * loading the store does for a plugins row without registrations.  0 or
 * -ENOMEM. */
int index_load_empty(struct reg_index *ix, size_t type_idx, int64_t plugin_id, const char *type,
		     const char *name, char *err, size_t errlen);

#endif
