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
 * info): those are found by a look at its three slots, not entered in the
 * index, which then holds one entry per plugin and per registration.  Its
 * slots are three pointers (kids, 24 bytes), not a struct fs_dir: each
 * child has its slot and its offset by its tag (<socket_name> 3, allocs 4,
 * info 5), so a listing there neither skips nor repeats either.
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

/* The children of n, NULL when it is no directory, a plugin directory
 * (kids) or has none (the union holds a text for the others). */
static struct fs_dir *dir_of(const struct fs_node *n)
{
	return n->kind == FS_DIR && !small_dir(n) ? n->dir : NULL;
}

/* A plugin directory's three slots, NULL when it has none yet. */
static struct fs_node **kids_of(const struct fs_node *n)
{
	return n->kind == FS_DIR && small_dir(n) ? n->kids : NULL;
}

#define KIDS 3
/* The slot of a plugin directory's child, by its tag. */
static uint32_t kid_slot(const struct fs_node *c)
{
	return (uint32_t)(fs_ino(c) % 8 - FS_TAG_ACTIVE);
}

static struct fs_named *named(struct fs_node *n)
{
	return htab_entry(n, struct fs_named, n);
}

_Static_assert(sizeof(void *) != 8 ||
		   (sizeof(struct fs_node) == 56 && sizeof(struct fs_named) == 88 &&
		    sizeof(struct fs_link) == 104),
	       "a hole in struct fs_node (fs_internal.h)");

/* The pool of the nodes of inode ino, by its tag. */
static struct pool *pool_of(struct fs_view *v, uint64_t ino)
{
	if (!fs_ino_named(ino))
		return &v->pool_node;
	return ino > FS_INO_PLUGINS && ino % 8 == FS_TAG_ALLOC ? &v->pool_link : &v->pool_named;
}

struct fs_node *fs_node_new(struct fs_view *v, uint64_t ino)
{
	struct fs_node *n = pool_alloc(pool_of(v, ino));

	if (n)
		n->hnode.key = ino;
	return n;
}

void fs_node_delete(struct fs_view *v, struct fs_node *n)
{
	if (n)
		pool_free(pool_of(v, fs_ino(n)), n);
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

		if (htab_entry(e, struct fs_named, name_hnode)->parent == fs_ino(dir) &&
		    strcmp(n->name, name) == 0)
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
		named(d->slots[j].node)->slot = j;
		j++;
	}
	d->n_slots = j;
}

int fs_dir_link(struct fs_view *v, struct fs_node *dir, struct fs_node *c)
{
	struct fs_dir *d;

	if (dir->kind != FS_DIR)
		return -ENOTDIR; /* cannot happen: callers link under directories */
	if (small_dir(dir)) {
		uint32_t k = kid_slot(c);

		if (fs_ino_named(fs_ino(c)) || k >= KIDS || (dir->kids && dir->kids[k]))
			return -EINVAL; /* cannot happen: the tags say where a node goes */
		if (!dir->kids && !(dir->kids = calloc(KIDS, sizeof(*dir->kids))))
			return -ENOMEM;
		dir->kids[k] = c;
		if (c->kind == FS_DIR)
			dir->n_subdirs++;
		return 0;
	}
	d = dir->dir;

	if (d && d->n_slots - d->n_live > d->n_live && d->n_slots >= COMPACT_MIN)
		compact(d);
	if (!d || d->n_slots == d->cap) {
		/* The slots live in the same allocation, which doubles; room
		 * for a plugin directory's three at once, one at first
		 * elsewhere (allocs/ mostly holds one registration). */
		uint32_t cap = !d ? 1 : d->cap * 2;
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
	if (!fs_ino_named(fs_ino(c)))
		return -EINVAL; /* cannot happen: the tags say where a node goes */
	if (htab_insert(&v->names, &named(c)->name_hnode, name_key(fs_ino(dir), c->name)) != 0)
		return -ENOMEM;
	named(c)->parent = fs_ino(dir);
	named(c)->slot = (uint32_t)d->n_slots;
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
	struct fs_node **kids = kids_of(dir);

	if (kids) {
		uint32_t k = kid_slot(c);

		if (k < KIDS && kids[k] == c) {
			kids[k] = NULL;
			if (c->kind == FS_DIR)
				dir->n_subdirs--;
		}
		return;
	}
	if (!d || !fs_ino_named(fs_ino(c)) || named(c)->slot >= d->n_slots ||
	    d->slots[named(c)->slot].node != c)
		return;
	htab_remove(&v->names, &named(c)->name_hnode);
	d->slots[named(c)->slot].node = NULL;
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
	struct fs_node **kids = kids_of(dir);

	for (; kids && *i < KIDS; (*i)++) {
		if (kids[*i]) {
			if (off)
				*off = FS_DIR_OFF_DOTDOT + 1 + *i;
			return kids[(*i)++];
		}
	}
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

	if (kids_of(dir)) { /* slot i has offset 3 + i */
		if (off <= FS_DIR_OFF_DOTDOT)
			return 0;
		return off - FS_DIR_OFF_DOTDOT > KIDS ? KIDS : (size_t)(off - FS_DIR_OFF_DOTDOT);
	}
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
	struct fs_node **kids = kids_of(dir);
	size_t n = 0;

	if (!kids)
		return dir_of(dir) ? dir->dir->n_live : 0;
	for (size_t i = 0; i < KIDS; i++)
		n += kids[i] != NULL;
	return n;
}

void fs_dir_free(struct fs_dir *d)
{
	free(d);
}
