/* SPDX-License-Identifier: MIT */
/*
 * The in-memory view of the registry and its inode table:
 *
 *   /plugins/<type>/<name>/{<socket_name>, allocs/<alloc>, info}
 *
 * Nodes live in a hash table keyed by inode number; those in the tree are
 * also in the (parent, name) index of dir.c, and in their parent's slots.
 * Every step is O(1) on average: building the view of n plugins costs O(n).
 * A node removed from the tree stays in the table while the kernel holds
 * references to it (its lookup count), so getattr, readlink and read keep
 * answering until forget.
 * A plugin whose list emptied keeps its id (registry.h), so its directory
 * stays such a node, empty, and is taken back when the plugin returns.
 *
 * Here: the table, the nodes and their shared texts, adding, removing and
 * forgetting them, the queue of kernel invalidations, attributes and a
 * file's contents.  Making a plugin's directory match the registry is in
 * sync.c (above this file), its info text in info.c (below it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_internal.h"
#include "array.h"
#include "rcstr.h"

#define DIR_MODE (S_IFDIR | 0555)
#define LINK_MODE (S_IFLNK | 0777)
#define FILE_MODE (S_IFREG | 0444)

static struct fs_node *table_get(const struct fs_view *v, uint64_t ino)
{
	struct htab_node *e = htab_find(&v->nodes, ino, NULL);

	return e ? htab_entry(e, struct fs_node, hnode) : NULL;
}

/*
 * The three children of a plugin directory (<socket_name>, allocs, info:
 * the nodes !fs_ino_named) are in the table only while out of the tree; in
 * the tree they are found in their directory's slots.  That is three
 * inserts and three buckets less per plugin.
 */
struct fs_node *fs_view_get(struct fs_view *v, uint64_t ino)
{
	struct fs_node *n = table_get(v, ino), *pdir, *c;

	if (n || fs_ino_named(ino))
		return n;
	pdir = table_get(v, ino - ino % 8 + FS_TAG_PLUGIN);
	for (size_t i = 0; pdir && (c = fs_dir_next(pdir, &i, NULL));)
		if (fs_ino(c) == ino)
			return c;
	return NULL;
}

static void table_remove(struct fs_view *v, struct fs_node *n)
{
	htab_remove(&v->nodes, &n->hnode);
}

/*
 * Texts (link targets, file contents) are rcstr.h's: nodes with the same
 * text share one copy, and an allocs/ link shares its registration's
 * strings with the registry (sync.c).  A node changes its references only
 * under the view's write lock; handlers read the text under the read lock,
 * and the node's reference keeps it alive meanwhile.
 */

/* Frees a name held as own says. */
static void name_drop(char *name, unsigned char own)
{
	if (own == FS_NAME_COPY)
		free(name);
	else if (own == FS_NAME_SHARED)
		rcstr_unref(name);
}

void fs_node_set_mtime(struct fs_node *n, const struct timespec *t)
{
	/* Clamped to what 64 bits of ns hold (years 1678 to 2262). */
	const int64_t lim = INT64_MAX / 1000000000 - 1;
	int64_t sec = t->tv_sec > lim ? lim : t->tv_sec < -lim ? -lim : (int64_t)t->tv_sec;

	n->mtime_ns = sec * 1000000000 + t->tv_nsec;
}

struct timespec fs_node_mtime(const struct fs_node *n)
{
	int64_t sec = n->mtime_ns / 1000000000, ns = n->mtime_ns % 1000000000;

	if (ns < 0) {
		sec--;
		ns += 1000000000;
	}
	return (struct timespec){.tv_sec = (time_t)sec, .tv_nsec = (long)ns};
}

void fs_node_free(struct fs_view *v, struct fs_node *n)
{
	if (!n)
		return;
	v->n_nodes--;
	name_drop(n->name, n->name_own);
	if (n->kind == FS_DIR)
		fs_dir_free(n->dir);
	else
		rcstr_unref(n->data);
	fs_node_delete(v, n);
}

/* Sets n's text to s (a reference is taken). */
void fs_node_set_str(struct fs_node *n, char *s)
{
	rcstr_ref(s);
	rcstr_unref(n->data);
	n->data = s;
	n->size = (uint32_t)strlen(s);
}

int fs_node_set_data(struct fs_node *n, const char *data)
{
	char *d = rcstr_new(data);

	if (!d)
		return -ENOMEM;
	fs_node_set_str(n, d);
	rcstr_unref(d);
	return 0;
}

struct fs_node *fs_node_add(struct fs_view *v, struct fs_node *parent, uint64_t ino,
			    enum fs_node_kind kind, const char *name, enum fs_name_own own,
			    const char *data, const struct timespec *mtime,
			    struct fs_inval_batch *b, bool absent)
{
	struct fs_node *n = absent ? NULL : fs_view_get(v, ino);
	bool fresh = n == NULL;
	unsigned char old_own;
	char *nm = NULL, *old = NULL, *old_data = NULL;

	if (n && n->in_tree)
		return n; /* already there (an inode number names one place) */
	if (fresh) {
		n = fs_node_new(v, ino);
		if (!n)
			return NULL;
		v->n_nodes++;
		/* In the table from here (but for the three of a plugin
		 * directory); taken out again on failure. */
		if (fs_ino_named(ino) && htab_insert(&v->nodes, &n->hnode, ino) != 0) {
			fs_node_free(v, n);
			return NULL;
		}
	}
	nm = own == FS_NAME_COPY ? strdup(name) : (char *)name;
	if (!nm)
		goto fail;
	if (own == FS_NAME_IN_DATA) {
		/* The name is inside data's block: a reference to it, the old
		 * text (which may hold the old name) dropped once done. */
		old_data = n->data;
		n->data = rcstr_ref((char *)data);
		n->size = (uint32_t)strlen(data);
	} else if (data && fs_node_set_data(n, data) != 0) {
		goto fail;
	}
	n->kind = (unsigned char)kind;
	old = n->name;
	old_own = n->name_own;
	n->name = nm;
	n->name_own = (unsigned char)own;
	fs_node_set_parent(n, ino);
	if (parent && fs_dir_link(v, parent, n) != 0) {
		n->name = old;
		n->name_own = old_own;
		if (own == FS_NAME_IN_DATA) {
			rcstr_unref(n->data);
			n->data = old_data;
			n->size = old_data ? (uint32_t)strlen(old_data) : 0;
		}
		goto fail;
	}
	if (own == FS_NAME_SHARED)
		rcstr_ref(nm);
	name_drop(old, old_own);
	rcstr_unref(old_data);
	if (!fresh && !fs_ino_named(ino))
		table_remove(v, n); /* back in its directory's slots */
	fs_node_set_mtime(n, mtime);
	n->in_tree = true;
	if (!fresh) {
		/* Taken back while the kernel still knows it: drop what it cached. */
		fs_inval_push(b, FS_INVAL_INODE, ino, NULL);
	}
	return n;
fail:
	if (own == FS_NAME_COPY)
		free(nm);
	if (fresh) {
		if (fs_ino_named(ino))
			table_remove(v, n);
		fs_node_free(v, n);
	}
	return NULL;
}

static struct fs_node *node_add(struct fs_view *v, struct fs_node *parent, uint64_t ino,
				enum fs_node_kind kind, const char *name, enum fs_name_own own,
				const char *data, const struct timespec *mtime,
				struct fs_inval_batch *b)
{
	return fs_node_add(v, parent, ino, kind, name, own, data, mtime, b, false);
}

/* Takes n (and what is below it) out of the tree; frees what the kernel does
 * not reference. */
void fs_node_remove(struct fs_view *v, struct fs_node *parent, struct fs_node *n)
{
	struct fs_node *c;

	/* An info file the kernel holds keeps what it showed: rendered from
	 * the links (info.c) before they go.  Out of memory: it reads as
	 * empty. */
	if (fs_ino(n) > FS_INO_PLUGINS && fs_ino(n) % 8 == FS_TAG_PLUGIN &&
	    (c = fs_view_child(v, n, "info")) && !c->data &&
	    __atomic_load_n(&c->nlookup, __ATOMIC_RELAXED) > 0) {
		char *text = fs_view_render_info(v, n);

		if (!text || fs_node_set_data(c, text) != 0)
			c->size = 0;
		free(text);
	}

	for (size_t i = 0; (c = fs_dir_next(n, &i, NULL));)
		fs_node_remove(v, n, c);
	if (parent)
		fs_dir_unlink(v, parent, n);
	n->in_tree = false;
	if (__atomic_load_n(&n->nlookup, __ATOMIC_RELAXED) == 0) {
		if (fs_ino_named(fs_ino(n)))
			table_remove(v, n);
		fs_node_free(v, n);
	} else if (!fs_ino_named(fs_ino(n)) && htab_insert(&v->nodes, &n->hnode, fs_ino(n)) != 0) {
		/* Out of memory: the kernel's later requests for it get
		 * ENOENT, as after a forget. */
		fs_node_free(v, n);
	}
}

void fs_view_forget(struct fs_view *v, uint64_t ino, uint64_t count)
{
	struct fs_node *n = fs_view_get(v, ino);
	uint64_t left;

	if (!n)
		return;
	left = __atomic_load_n(&n->nlookup, __ATOMIC_RELAXED);
	if (left == UINT32_MAX)
		return; /* saturated (fs_node_ref): kept for good */
	left = count >= left ? 0 : left - count;
	__atomic_store_n(&n->nlookup, left, __ATOMIC_RELAXED);
	if (left == 0 && !n->in_tree && fs_ino(n) > FS_INO_PLUGINS) {
		table_remove(v, n); /* out of the tree: in the table */
		fs_node_free(v, n);
	}
}

int fs_view_init(struct fs_view *v, const char *socket_name)
{
	struct timespec now;
	struct fs_node *root;

	memset(v, 0, sizeof(*v));
	htab_init(&v->nodes);
	htab_init(&v->names);
	pool_init(&v->pool_node, sizeof(struct fs_node));
	pool_init(&v->pool_named, sizeof(struct fs_named));
	pool_init(&v->pool_link, sizeof(struct fs_link));
	v->socket_name = strdup(socket_name);
	if (!v->socket_name)
		goto fail;
	clock_gettime(CLOCK_REALTIME, &now);
	root = node_add(v, NULL, FS_INO_ROOT, FS_DIR, "", FS_NAME_STATIC, NULL, &now, NULL);
	if (!root ||
	    !node_add(v, root, FS_INO_PLUGINS, FS_DIR, "plugins", FS_NAME_STATIC, NULL, &now, NULL))
		goto fail;
	return 0;
fail:
	fs_view_free(v);
	return -ENOMEM;
}

void fs_view_free(struct fs_view *v)
{
	struct htab_node *e, *next;
	size_t pos = 0;

	for (e = htab_next(&v->nodes, &pos, NULL); e; e = next) {
		struct fs_node *n = htab_entry(e, struct fs_node, hnode), *c;

		next = htab_next(&v->nodes, &pos, e);
		/* A plugin directory's three in the tree are not in the table. */
		if (n->kind == FS_DIR && fs_ino(n) > FS_INO_PLUGINS &&
		    fs_ino(n) % 8 == FS_TAG_PLUGIN)
			for (size_t i = 0; (c = fs_dir_next(n, &i, NULL));)
				fs_node_free(v, c);
		fs_node_free(v, n);
	}
	htab_free(&v->nodes);
	htab_free(&v->names);
	pool_destroy(&v->pool_node);
	pool_destroy(&v->pool_named);
	pool_destroy(&v->pool_link);
	free(v->socket_name);
	memset(v, 0, sizeof(*v));
}

int fs_view_add_type(struct fs_view *v, int64_t type_id, const char *type,
		     const struct timespec *mtime)
{
	struct fs_node *plugins = fs_view_get(v, FS_INO_PLUGINS);

	if (!node_add(v, plugins, FS_INO(type_id, FS_TAG_TYPE), FS_DIR, type, FS_NAME_COPY, NULL,
		      mtime, NULL))
		return -ENOMEM;
	fs_node_set_mtime(plugins, mtime);
	return 0;
}

int fs_inval_push(struct fs_inval_batch *b, enum fs_inval_kind kind, uint64_t ino, const char *name)
{
	struct fs_inval *it;

	if (!b)
		return 0;
	if (PLUGFS_GROW(b->items, b->cap, b->n, 8) != 0)
		goto oom;
	it = &b->items[b->n];
	it->kind = kind;
	it->ino = ino;
	it->name = NULL;
	if (name && !(it->name = strdup(name)))
		goto oom;
	b->n++;
	return 0;
oom:
	b->oom = true;
	return -ENOMEM;
}

void fs_inval_batch_free(struct fs_inval_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->items[i].name);
	free(b->items);
	memset(b, 0, sizeof(*b));
}

void fs_node_attr(const struct fs_node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = fs_ino(n);
	st->st_uid = 0;
	st->st_gid = 0;
	st->st_blksize = 4096;
	st->st_mtim = fs_node_mtime(n);
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
	switch (n->kind) {
	case FS_DIR:
		st->st_mode = DIR_MODE;
		st->st_nlink = 2 + n->n_subdirs;
		st->st_size = 0;
		break;
	case FS_LINK:
		st->st_mode = LINK_MODE;
		st->st_nlink = 1;
		st->st_size = (off_t)n->size;
		break;
	case FS_FILE:
		st->st_mode = FILE_MODE;
		st->st_nlink = 1;
		st->st_size = (off_t)n->size;
		st->st_blocks = (blkcnt_t)((n->size + 511) / 512);
		break;
	}
}

/* A file's text: its data, or its plugin's info rendered (info.c). */
char *fs_node_contents(struct fs_view *v, const struct fs_node *n)
{
	char *text;
	const struct fs_node *pdir;

	if (n->data)
		return strdup(n->data);
	pdir = n->in_tree ? fs_view_get(v, fs_node_parent(n)) : NULL;
	text = pdir ? fs_view_render_info(v, pdir) : strdup("");
	/* Never more than the size getattr gave (sync.c keeps it exact). */
	if (text && strlen(text) > n->size)
		text[n->size] = '\0';
	return text;
}
