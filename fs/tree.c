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
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_internal.h"
#include "array.h"
#include "registry.h"
#include "timefmt.h"

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

static int batch_push(struct fs_inval_batch *b, enum fs_inval_kind kind, uint64_t ino,
		      const char *name);

/*
 * fs_str: a NUL-terminated text with a reference count in front, so that
 * nodes with the same text share one copy.  The count changes only under
 * the view's write lock; handlers read the text under the read lock.
 */
struct fs_str {
	uint32_t refs;
	char s[];
};

static struct fs_str *str_of(char *s)
{
	return (struct fs_str *)(void *)(s - offsetof(struct fs_str, s));
}

static char *str_new(const char *text)
{
	size_t len = strlen(text);
	struct fs_str *fs = malloc(sizeof(*fs) + len + 1);

	if (!fs)
		return NULL;
	fs->refs = 1;
	memcpy(fs->s, text, len + 1);
	return fs->s;
}

static char *str_ref(char *s)
{
	str_of(s)->refs++;
	return s;
}

static void str_unref(char *s)
{
	if (s && --str_of(s)->refs == 0)
		free(str_of(s));
}

static void set_mtime(struct fs_node *n, const struct timespec *t)
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

static void node_free(struct fs_view *v, struct fs_node *n)
{
	if (!n)
		return;
	v->n_nodes--;
	if (!n->name_static)
		free(n->name);
	if (n->kind == FS_DIR)
		fs_dir_free(n->dir);
	else
		str_unref(n->data);
	free(n);
}

/* Sets n's text to s (a reference is taken). */
static void set_str(struct fs_node *n, char *s)
{
	str_ref(s);
	str_unref(n->data);
	n->data = s;
	n->size = (uint32_t)strlen(s);
}

static int set_data(struct fs_node *n, const char *data)
{
	char *d = str_new(data);

	if (!d)
		return -ENOMEM;
	set_str(n, d);
	str_unref(d);
	return 0;
}

/*
 * Returns the node with this inode number, in the tree under parent with the
 * given name.  A node still in the table (removed, not yet forgotten) is
 * taken back, keeping its lookup count.
 */
/* NAME_STATIC: name outlives the view (the socket name, a literal). */
#define NAME_STATIC true
#define NAME_COPY false

static struct fs_node *node_add_in(struct fs_view *v, struct fs_node *parent, uint64_t ino,
				   enum fs_node_kind kind, const char *name, bool name_static,
				   const char *data, const struct timespec *mtime,
				   struct fs_inval_batch *b, bool absent)
{
	struct fs_node *n = absent ? NULL : fs_view_get(v, ino);
	bool fresh = n == NULL, old_static;
	char *nm = NULL, *old = NULL;

	if (n && n->in_tree)
		return n; /* already there (an inode number names one place) */
	if (fresh) {
		n = fs_node_new(ino);
		if (!n)
			return NULL;
		v->n_nodes++;
		/* In the table from here (but for the three of a plugin
		 * directory); taken out again on failure. */
		if (fs_ino_named(ino) && htab_insert(&v->nodes, &n->hnode, ino) != 0) {
			node_free(v, n);
			return NULL;
		}
	}
	nm = name_static ? (char *)name : strdup(name);
	if (!nm || (data && set_data(n, data) != 0))
		goto fail;
	n->kind = (unsigned char)kind;
	old = n->name;
	old_static = n->name_static;
	n->name = nm;
	n->name_static = name_static;
	n->parent = ino;
	if (parent && fs_dir_link(v, parent, n) != 0) {
		n->name = old;
		n->name_static = old_static;
		goto fail;
	}
	if (!old_static)
		free(old);
	if (!fresh && !fs_ino_named(ino))
		table_remove(v, n); /* back in its directory's slots */
	set_mtime(n, mtime);
	n->in_tree = true;
	if (!fresh) {
		/* Taken back while the kernel still knows it: drop what it cached. */
		batch_push(b, FS_INVAL_INODE, ino, NULL);
	}
	return n;
fail:
	if (!name_static)
		free(nm);
	if (fresh) {
		if (fs_ino_named(ino))
			table_remove(v, n);
		node_free(v, n);
	}
	return NULL;
}

static struct fs_node *node_add(struct fs_view *v, struct fs_node *parent, uint64_t ino,
				enum fs_node_kind kind, const char *name, bool name_static,
				const char *data, const struct timespec *mtime,
				struct fs_inval_batch *b)
{
	return node_add_in(v, parent, ino, kind, name, name_static, data, mtime, b, false);
}

/* Takes n (and what is below it) out of the tree; frees what the kernel does
 * not reference. */
static void node_remove(struct fs_view *v, struct fs_node *parent, struct fs_node *n)
{
	struct fs_node *c;

	for (size_t i = 0; (c = fs_dir_next(n, &i, NULL));)
		node_remove(v, n, c);
	if (parent)
		fs_dir_unlink(v, parent, n);
	n->in_tree = false;
	if (__atomic_load_n(&n->nlookup, __ATOMIC_RELAXED) == 0) {
		if (fs_ino_named(fs_ino(n)))
			table_remove(v, n);
		node_free(v, n);
	} else if (!fs_ino_named(fs_ino(n)) &&
		   htab_insert(&v->nodes, &n->hnode, fs_ino(n)) != 0) {
		/* Out of memory: the kernel's later requests for it get
		 * ENOENT, as after a forget. */
		node_free(v, n);
	}
}

void fs_view_forget(struct fs_view *v, uint64_t ino, uint64_t count)
{
	struct fs_node *n = fs_view_get(v, ino);
	uint64_t left;

	if (!n)
		return;
	left = __atomic_load_n(&n->nlookup, __ATOMIC_RELAXED);
	left = count >= left ? 0 : left - count;
	__atomic_store_n(&n->nlookup, left, __ATOMIC_RELAXED);
	if (left == 0 && !n->in_tree && fs_ino(n) > FS_INO_PLUGINS) {
		table_remove(v, n); /* out of the tree: in the table */
		node_free(v, n);
	}
}

int fs_view_init(struct fs_view *v, const char *socket_name)
{
	struct timespec now;
	struct fs_node *root;

	memset(v, 0, sizeof(*v));
	htab_init(&v->nodes);
	htab_init(&v->names);
	v->socket_name = strdup(socket_name);
	if (!v->socket_name)
		goto fail;
	clock_gettime(CLOCK_REALTIME, &now);
	root = node_add(v, NULL, FS_INO_ROOT, FS_DIR, "", NAME_STATIC, NULL, &now, NULL);
	if (!root ||
	    !node_add(v, root, FS_INO_PLUGINS, FS_DIR, "plugins", NAME_STATIC, NULL, &now, NULL))
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
		if (n->kind == FS_DIR && fs_ino(n) > FS_INO_PLUGINS && fs_ino(n) % 8 == FS_TAG_PLUGIN)
			for (size_t i = 0; (c = fs_dir_next(n, &i, NULL));)
				node_free(v, c);
		node_free(v, n);
	}
	htab_free(&v->nodes);
	htab_free(&v->names);
	free(v->socket_name);
	memset(v, 0, sizeof(*v));
}

int fs_view_add_type(struct fs_view *v, int64_t type_id, const char *type,
		     const struct timespec *mtime)
{
	struct fs_node *plugins = fs_view_get(v, FS_INO_PLUGINS);

	if (!node_add(v, plugins, FS_INO(type_id, FS_TAG_TYPE), FS_DIR, type, NAME_COPY, NULL,
		      mtime, NULL))
		return -ENOMEM;
	set_mtime(plugins, mtime);
	return 0;
}

static int batch_push(struct fs_inval_batch *b, enum fs_inval_kind kind, uint64_t ino,
		      const char *name)
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

/* Appends a formatted line to *text (length *len, room *cap); -ENOMEM. */
static int text_addf(char **text, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int text_addf(char **text, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(*text + *len, *cap - *len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -ENOMEM;
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return 0;
		}
		size_t ncap = *cap * 2 > *len + (size_t)n + 1 ? *cap * 2 : *len + (size_t)n + 1;
		char *t = realloc(*text, ncap);

		if (!t)
			return -ENOMEM;
		*text = t;
		*cap = ncap;
	}
}

/* Built with vsnprintf into a buffer sized for a few lines, not with
 * open_memstream: at start this runs once per plugin, and the stream's
 * buffers made malloc consolidate its free lists each time. */
char *fs_render_info(const struct reg_plugin *p)
{
	const struct registration *act = reg_plugin_active(p);
	size_t len = 0, cap = 128 * (p->n_regs ? p->n_regs : 1);
	char *text = malloc(cap);

	if (!text)
		return NULL;
	text[0] = '\0';
	/* The active one first, then the others in list order. */
	for (size_t k = 0; k < p->n_regs + (act != NULL); k++) {
		const struct registration *r = k == 0 && act ? act : &p->regs[k - (act != NULL)];
		const char *kind = reg_kind_name(r->kind);
		char when[PLUGFS_TIME_LEN];

		if (k > 0 && r == act)
			continue;
		plugfs_format_time(r->registered_at, -1, when, sizeof(when));
		if (text_addf(&text, &len, &cap, "%s %s %s %s %s %s\n", r->alloc, r->socket,
			      r->version && r->version[0] ? r->version : "-", kind ? kind : "-",
			      when, reg_health_name(r->runtime.health)) != 0) {
			free(text);
			return NULL;
		}
	}
	return text;
}

static struct fs_node *find_type_dir(struct fs_view *v, const char *type)
{
	struct fs_node *plugins = fs_view_get(v, FS_INO_PLUGINS);

	return plugins ? fs_view_child(v, plugins, type) : NULL;
}

/* Marks a node changed: new mtime, and the kernel's attributes (and cached
 * symlink target or contents) of it are dropped. */
static void touch(struct fs_node *n, const struct timespec *now, struct fs_inval_batch *b)
{
	set_mtime(n, now);
	batch_push(b, FS_INVAL_INODE, fs_ino(n), NULL);
}

/*
 * Takes a plugin directory out of tdir.  One the kernel still holds (the
 * root of a bind mount of it) stays as an empty directory until forgotten,
 * so that it answers getattr and an empty readdir, and comes back under its
 * inode number when the plugin registers again (its id is kept): the kernel
 * is told to drop the entries it cached in it and its attributes.
 */
static void plugin_dir_remove(struct fs_view *v, struct fs_node *tdir, struct fs_node *pdir,
			      const struct timespec *now, struct fs_inval_batch *b)
{
	if (__atomic_load_n(&pdir->nlookup, __ATOMIC_RELAXED) > 0) {
		struct fs_node *c;

		for (size_t i = 0; (c = fs_dir_next(pdir, &i, NULL));)
			batch_push(b, FS_INVAL_ENTRY, fs_ino(pdir), c->name);
		touch(pdir, now, b);
	}
	node_remove(v, tdir, pdir);
}

int fs_view_add_empty_plugin(struct fs_view *v, const char *type, const char *name,
			     int64_t plugin_id, const struct timespec *mtime)
{
	struct fs_node *tdir = find_type_dir(v, type);
	uint64_t ino = FS_INO(plugin_id, FS_TAG_PLUGIN);
	struct fs_node *n;

	if (!tdir || fs_view_get(v, ino))
		return 0; /* not a configured type, or known already */
	n = fs_node_new(ino);
	if (!n)
		return -ENOMEM;
	v->n_nodes++;
	if (!(n->name = strdup(name))) {
		node_free(v, n);
		return -ENOMEM;
	}
	n->kind = FS_DIR;
	n->parent = fs_ino(tdir);
	set_mtime(n, mtime);
	if (htab_insert(&v->nodes, &n->hnode, ino) != 0) {
		node_free(v, n);
		return -ENOMEM;
	}
	return 0;
}

static int64_t newest_update(const struct reg_plugin *p)
{
	int64_t t = 0;

	for (size_t i = 0; i < p->n_regs; i++) {
		if (p->regs[i].updated_at > t)
			t = p->regs[i].updated_at;
		if (p->regs[i].registered_at > t)
			t = p->regs[i].registered_at;
	}
	return t;
}

static bool has_alloc(const struct reg_plugin *p, const char *alloc)
{
	for (size_t i = 0; i < p->n_regs; i++)
		if (strcmp(p->regs[i].alloc, alloc) == 0)
			return true;
	return false;
}

int fs_view_sync_plugin(struct fs_view *v, const char *type, const char *name, int64_t plugin_id,
			const struct reg_plugin *p, const struct timespec *now,
			struct fs_inval_batch *b)
{
	struct fs_node *tdir = find_type_dir(v, type);
	const struct registration *act = reg_plugin_active(p);
	struct fs_node *pdir, *active = NULL, *allocs, *info, *l, *act_link = NULL;
	struct timespec mt = *now;
	bool changed = false, allocs_changed = false;
	/* Building the view at start (no batch), a plugin directory not in
	 * the table yet: nothing of it is (its inode numbers are its own), so
	 * its nodes are added without looking for them first. */
	bool absent = false;
	char *text = NULL;
	int rc = 0;

	if (!tdir)
		return 0; /* not a configured type */
	pdir = fs_view_child(v, tdir, name);
	if (pdir && (!act || fs_ino(pdir) != FS_INO(plugin_id, FS_TAG_PLUGIN))) {
		plugin_dir_remove(v, tdir, pdir, now, b);
		batch_push(b, FS_INVAL_ENTRY, fs_ino(tdir), name);
		touch(tdir, now, b);
		pdir = NULL;
	}
	if (!act)
		return 0;
	if (!b) {
		/* Loading at start: the mtimes come from the stored times. */
		mt.tv_sec = (time_t)newest_update(p);
		mt.tv_nsec = 0;
	}
	text = fs_render_info(p);
	if (!text)
		return -ENOMEM;
	if (!pdir) {
		const struct fs_node *kept = fs_view_get(v, FS_INO(plugin_id, FS_TAG_PLUGIN));

		/* A directory the kernel still holds (a bind mount of it) is
		 * taken back: drop what it cached as missing in it. */
		if (kept && !kept->in_tree) {
			batch_push(b, FS_INVAL_ENTRY, fs_ino(kept), v->socket_name);
			batch_push(b, FS_INVAL_ENTRY, fs_ino(kept), "allocs");
			batch_push(b, FS_INVAL_ENTRY, fs_ino(kept), "info");
		}
		absent = !b && !kept;
		pdir = node_add_in(v, tdir, FS_INO(plugin_id, FS_TAG_PLUGIN), FS_DIR, name,
				   NAME_COPY, NULL, &mt, b, absent);
		if (!pdir) {
			rc = -ENOMEM;
			goto out;
		}
		batch_push(b, FS_INVAL_ENTRY, fs_ino(tdir), name);
		if (b)
			touch(tdir, now, b);
		else if (mt.tv_sec > fs_node_mtime(tdir).tv_sec)
			set_mtime(tdir, &mt);
	}
	/* csi.sock gets its text below, from the allocs/ link it shares it with. */
	active = node_add_in(v, pdir, FS_INO(plugin_id, FS_TAG_ACTIVE), FS_LINK, v->socket_name,
			     NAME_STATIC, NULL, &mt, b, absent);
	allocs = node_add_in(v, pdir, FS_INO(plugin_id, FS_TAG_ALLOCS), FS_DIR, "allocs",
			     NAME_STATIC, NULL, &mt, b, absent);
	info = node_add_in(v, pdir, FS_INO(plugin_id, FS_TAG_INFO), FS_FILE, "info", NAME_STATIC,
			   text, &mt, b, absent);
	if (!active || !allocs || !info) {
		rc = -ENOMEM;
		goto out;
	}
	if (active->data && strcmp(active->data, act->socket) != 0) {
		touch(active, now, b);
		changed = true;
	}
	/* allocs/: drop the gone, add the new, retarget the moved. */
	for (size_t i = 0; (l = fs_dir_next(allocs, &i, NULL));) {
		if (!has_alloc(p, l->name)) {
			batch_push(b, FS_INVAL_ENTRY, fs_ino(allocs), l->name);
			node_remove(v, allocs, l);
			allocs_changed = true;
		}
	}
	for (size_t i = 0; i < p->n_regs; i++) {
		const struct registration *r = &p->regs[i];
		struct timespec lt = mt;

		l = absent ? NULL : fs_view_child(v, allocs, r->alloc);

		if (l && fs_ino(l) != FS_INO(r->id, FS_TAG_ALLOC)) {
			batch_push(b, FS_INVAL_ENTRY, fs_ino(allocs), l->name);
			node_remove(v, allocs, l);
			l = NULL;
		}
		if (!l) {
			if (!b) {
				lt.tv_sec =
				    (time_t)(r->updated_at > r->registered_at ? r->updated_at
									      : r->registered_at);
				lt.tv_nsec = 0;
			}
			l = node_add_in(v, allocs, FS_INO(r->id, FS_TAG_ALLOC), FS_LINK, r->alloc,
					NAME_COPY, r->socket, &lt, b, absent);
			if (!l) {
				rc = -ENOMEM;
				goto out;
			}
			batch_push(b, FS_INVAL_ENTRY, fs_ino(allocs), r->alloc);
			allocs_changed = true;
		} else if (strcmp(l->data, r->socket) != 0) {
			if ((rc = set_data(l, r->socket)) != 0)
				goto out;
			touch(l, now, b);
			changed = true;
		}
		if (r == act)
			act_link = l;
	}
	/* csi.sock: one text with the active registration's allocs/ link. */
	if (active->data != act_link->data)
		set_str(active, act_link->data);
	if (allocs_changed) {
		touch(allocs, now, b);
		changed = true;
	}
	if (strcmp(info->data, text) != 0) {
		if ((rc = set_data(info, text)) != 0)
			goto out;
		touch(info, now, b);
		changed = true;
	}
	if (changed && b)
		touch(pdir, now, b);
out:
	/* Out of memory on the way: csi.sock keeps a text of its own. */
	if (active && !active->data && set_data(active, act->socket) != 0)
		rc = -ENOMEM;
	free(text);
	return rc;
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
