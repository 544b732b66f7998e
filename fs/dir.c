/* SPDX-License-Identifier: MIT */
/*
 * Directories of the view: each directory's children in readdir order
 * (struct fs_dir, fs_internal.h says why holes and growing offsets), and one
 * index of the nodes in the tree by (parent inode, name) in the project's
 * hash table (hash.h).  Lookup, link and unlink are O(1) on average at any
 * size; a readdir request costs what it returns, plus a binary search when
 * it does not go on where the previous one of its handle stopped.
 *
 * A plugin directory has three children at most (<socket_name>, allocs,
 * info): those are found by a look at its slots, not entered in the index,
 * which then holds one entry per plugin and per registration.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_internal.h"

/* Holes are squeezed out before an append once they outnumber the children
 * (and there are at least this many slots): amortised O(1) per removal. */
#define COMPACT_MIN 8

static uint64_t name_key(uint64_t parent, const char *name)
{
	return htab_hash_scoped(parent, name);
}

/* A directory whose few children are searched in its slots. */
static bool small_dir(const struct fs_node *dir)
{
	return fs_ino(dir) > FS_INO_PLUGINS && fs_ino(dir) % 8 == FS_TAG_PLUGIN;
}

/* The children of n, NULL when it is no directory or has none (the union
 * holds a text for the others). */
static struct fs_dir *dir_of(const struct fs_node *n)
{
	return n->kind == FS_DIR ? n->dir : NULL;
}

static struct fs_named *named(struct fs_node *n)
{
	return htab_entry(n, struct fs_named, n);
}

struct fs_node *fs_node_new(uint64_t ino)
{
	struct fs_node *n = calloc(1, fs_ino_named(ino) ? sizeof(struct fs_named)
							: sizeof(struct fs_node));

	if (n)
		n->hnode.key = ino;
	return n;
}

struct fs_node *fs_view_child(const struct fs_view *v, const struct fs_node *dir,
			      const char *name)
{
	uint64_t key;
	struct htab_node *e = NULL;

	if (small_dir(dir)) {
		struct fs_node *c;

		for (size_t i = 0; (c = fs_dir_next(dir, &i, NULL));)
			if (strcmp(c->name, name) == 0)
				return c;
		return NULL;
	}
	key = name_key(fs_ino(dir), name);
	while ((e = htab_find(&v->names, key, e))) {
		struct fs_node *n = &htab_entry(e, struct fs_named, name_hnode)->n;

		if (n->parent == fs_ino(dir) && strcmp(n->name, name) == 0)
			return n;
	}
	return NULL;
}

static void compact(struct fs_dir *d)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < d->n_slots; i++) {
		if (!d->slots[i].node)
			continue;
		d->slots[j] = d->slots[i];
		d->slots[j].node->slot = j;
		j++;
	}
	d->n_slots = j;
}

int fs_dir_link(struct fs_view *v, struct fs_node *dir, struct fs_node *c)
{
	struct fs_dir *d;

	if (dir->kind != FS_DIR)
		return -ENOTDIR; /* cannot happen: callers link under directories */
	d = dir->dir;

	if (d && d->n_slots - d->n_live > d->n_live && d->n_slots >= COMPACT_MIN)
		compact(d);
	if (!d || d->n_slots == d->cap) {
		/* The slots live in the same allocation, which doubles; room
		 * for a plugin directory's three at once, one at first
		 * elsewhere (allocs/ mostly holds one registration). */
		uint32_t cap = !d ? (small_dir(dir) ? 3 : 1) : d->cap * 2;
		struct fs_dir *nd;

		if (d && d->cap > UINT32_MAX / 2)
			return -ENOMEM;
		nd = realloc(d, sizeof(*d) + (size_t)cap * sizeof(d->slots[0]));
		if (!nd)
			return -ENOMEM;
		if (!d) {
			nd->next_off = FS_DIR_OFF_DOTDOT;
			nd->n_slots = nd->n_live = 0;
		}
		nd->cap = cap;
		d = dir->dir = nd;
	}
	if (!small_dir(dir)) {
		if (!fs_ino_named(fs_ino(c)))
			return -EINVAL; /* cannot happen: the tags say where a node goes */
		if (htab_insert(&v->names, &named(c)->name_hnode, name_key(fs_ino(dir), c->name)) !=
		    0)
			return -ENOMEM;
	}
	c->parent = fs_ino(dir);
	c->slot = (uint32_t)d->n_slots;
	d->slots[d->n_slots].node = c;
	d->slots[d->n_slots].off = ++d->next_off;
	d->n_slots++;
	d->n_live++;
	if (c->kind == FS_DIR)
		dir->n_subdirs++;
	return 0;
}

void fs_dir_unlink(struct fs_view *v, struct fs_node *dir, struct fs_node *c)
{
	struct fs_dir *d = dir_of(dir);

	if (!d || c->slot >= d->n_slots || d->slots[c->slot].node != c)
		return;
	if (!small_dir(dir))
		htab_remove(&v->names, &named(c)->name_hnode);
	d->slots[c->slot].node = NULL;
	d->n_live--;
	if (c->kind == FS_DIR)
		dir->n_subdirs--;
	/* Empty: start over at slot 0 (offsets keep growing). */
	if (d->n_live == 0)
		d->n_slots = 0;
}

struct fs_node *fs_dir_next(const struct fs_node *dir, size_t *i, uint64_t *off)
{
	const struct fs_dir *d = dir_of(dir);

	if (!d)
		return NULL;
	for (; *i < (size_t)d->n_slots; (*i)++) {
		if (d->slots[*i].node) {
			if (off)
				*off = d->slots[*i].off;
			return d->slots[(*i)++].node;
		}
	}
	return NULL;
}

size_t fs_dir_seek(const struct fs_node *dir, uint64_t off, size_t hint)
{
	const struct fs_dir *d = dir_of(dir);
	size_t lo = 0, hi;

	if (!d)
		return 0;
	hi = d->n_slots;
	if (hint <= hi && (hint == hi || d->slots[hint].off > off) &&
	    (hint == 0 || d->slots[hint - 1].off <= off))
		return hint;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->slots[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t fs_dir_count(const struct fs_node *dir)
{
	return dir_of(dir) ? dir->dir->n_live : 0;
}

void fs_dir_free(struct fs_dir *d)
{
	free(d);
}
