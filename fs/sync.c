/* SPDX-License-Identifier: MIT */
/*
 * Making the view match the registry, one plugin at a time
 * (fs_view_sync_plugin): its directory under its type, <socket_name>,
 * allocs/ and info, with the kernel invalidations each change needs; and
 * the directory of a plugin whose list is empty (fs_view_add_empty_plugin).
 * The nodes themselves are tree.c's.
 *
 * Strings are the registry's, not copies: p is a value the registry owns
 * (its own, in an event callback under the registry mutex, or a copy), so
 * its strings are reference-counted blocks (reg_model.h, "Sharing").  A
 * plugin directory holds a reference to its plugin's name; an allocs/ link
 * one to its registration's strings, which give both its target (the
 * socket, the block's first string) and its name (the alloc, inside the
 * same block); csi.sock the same as the active registration's link.  The
 * view reads them under fs->lock alone: they never change, and a node's
 * reference keeps them alive after the registry dropped the registration
 * (a removed link the kernel still holds), so no registry lock is needed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_internal.h"
#include "rcstr.h"
#include "registry.h"

static struct fs_node *find_type_dir(struct fs_view *v, const char *type)
{
	struct fs_node *plugins = fs_view_get(v, FS_INO_PLUGINS);

	return plugins ? fs_view_child(v, plugins, type) : NULL;
}

/* Marks a node changed: new mtime, and the kernel's attributes (and cached
 * symlink target or contents) of it are dropped. */
static void touch(struct fs_node *n, const struct timespec *now, struct fs_inval_batch *b)
{
	int64_t before = n->mtime_ns;

	fs_node_set_mtime(n, now);
	/* Always forward, by 1 ns at least: the kernel drops a cached listing
	 * only when a directory's mtime differs from the one it was cached
	 * under (fs_init), and two changes may read the same clock. */
	if (n->mtime_ns <= before && before < INT64_MAX)
		n->mtime_ns = before + 1;
	fs_inval_push(b, FS_INVAL_INODE, fs_ino(n), NULL);
}

/*
 * Takes a plugin directory out of tdir.  One the kernel still holds (the
 * root of a bind mount of it) stays as an empty directory until forgotten,
 * so that it answers getattr and an empty readdir, and comes back under its
 * inode number when the plugin registers again (its id is kept): the kernel
 * is told to drop the entries it cached in it and its attributes.
 */
/* A directory the kernel holds, about to lose its children: the names it
 * may have cached in it go, and its attributes and cached listing, and the
 * same in each directory below it the kernel holds (an allocs/ that is
 * someone's working directory keeps its cached listing otherwise). */
static void held_dir_empties(struct fs_node *dir, const struct timespec *now,
			     struct fs_inval_batch *b)
{
	struct fs_node *c;

	if (__atomic_load_n(&dir->nlookup, __ATOMIC_RELAXED) == 0)
		return;
	for (size_t i = 0; (c = fs_dir_next(dir, &i, NULL));) {
		fs_inval_push(b, FS_INVAL_ENTRY, fs_ino(dir), c->name);
		if (c->kind == FS_DIR)
			held_dir_empties(c, now, b);
	}
	touch(dir, now, b);
}

static void plugin_dir_remove(struct fs_view *v, struct fs_node *tdir, struct fs_node *pdir,
			      const struct timespec *now, struct fs_inval_batch *b)
{
	held_dir_empties(pdir, now, b);
	fs_node_remove(v, tdir, pdir);
}

int fs_view_add_empty_plugin(struct fs_view *v, const char *type, const char *name,
			     int64_t plugin_id, const struct timespec *mtime)
{
	struct fs_node *tdir = find_type_dir(v, type);
	uint64_t ino = FS_INO(plugin_id, FS_TAG_PLUGIN);
	struct fs_node *n;

	if (!tdir || fs_view_get(v, ino))
		return 0; /* not a configured type, or known already */
	n = fs_node_new(v, ino);
	if (!n)
		return -ENOMEM;
	v->n_nodes++;
	if (!(n->name = strdup(name))) {
		fs_node_free(v, n);
		return -ENOMEM;
	}
	n->kind = FS_DIR;
	fs_node_set_parent(n, fs_ino(tdir));
	fs_node_set_mtime(n, mtime);
	if (htab_insert(&v->nodes, &n->hnode, ino) != 0) {
		fs_node_free(v, n);
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

static bool str_same(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

int fs_view_sync_plugin(struct fs_view *v, const char *type, const char *name, int64_t plugin_id,
			const struct reg_plugin *p, const struct timespec *now,
			struct fs_inval_batch *b)
{
	struct fs_node *tdir = find_type_dir(v, type);
	const struct registration *act = reg_plugin_active(p);
	struct fs_node *pdir, *active = NULL, *allocs = NULL, *info, *l, *act_link = NULL;
	struct timespec mt = *now;
	bool changed = false, allocs_changed = false;
	/* Building the view at start (no batch), a plugin directory not in
	 * the table yet: nothing of it is (its inode numbers are its own), so
	 * its nodes are added without looking for them first. */
	bool absent = false, had_info;
	/* Whether info's text changes, told from what changes in the links
	 * (not by rendering it twice: a plugin may have a thousand), and
	 * its length, summed from its lines'. */
	bool info_changed = false;
	const char *old_active = NULL;
	size_t info_size = 0;
	int rc = 0;

	if (!tdir)
		return 0; /* not a configured type */
	pdir = fs_view_child(v, tdir, name);
	if (pdir && (!act || fs_ino(pdir) != FS_INO(plugin_id, FS_TAG_PLUGIN))) {
		plugin_dir_remove(v, tdir, pdir, now, b);
		fs_inval_push(b, FS_INVAL_ENTRY, fs_ino(tdir), name);
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
	if (!pdir) {
		const struct fs_node *kept = fs_view_get(v, FS_INO(plugin_id, FS_TAG_PLUGIN));

		/* A directory the kernel still holds (a bind mount of it) is
		 * taken back: drop what it cached as missing in it. */
		if (kept && !kept->in_tree) {
			fs_inval_push(b, FS_INVAL_ENTRY, fs_ino(kept), v->socket_name);
			fs_inval_push(b, FS_INVAL_ENTRY, fs_ino(kept), "allocs");
			fs_inval_push(b, FS_INVAL_ENTRY, fs_ino(kept), "info");
		}
		absent = !b && !kept;
		pdir = fs_node_add(v, tdir, FS_INO(plugin_id, FS_TAG_PLUGIN), FS_DIR, p->name,
				   FS_NAME_SHARED, NULL, &mt, b, absent);
		if (!pdir) {
			rc = -ENOMEM;
			goto out;
		}
		fs_inval_push(b, FS_INVAL_ENTRY, fs_ino(tdir), name);
		if (b)
			touch(tdir, now, b);
		else if (mt.tv_sec > fs_node_mtime(tdir).tv_sec)
			fs_node_set_mtime(tdir, &mt);
	}
	had_info = !absent && fs_view_get(v, FS_INO(plugin_id, FS_TAG_INFO));
	/* csi.sock gets its text below, from the allocs/ link it shares it with;
	 * info has none: it is rendered from the links when read (info.c). */
	active = fs_node_add(v, pdir, FS_INO(plugin_id, FS_TAG_ACTIVE), FS_LINK, v->socket_name,
			     FS_NAME_STATIC, NULL, &mt, b, absent);
	allocs = fs_node_add(v, pdir, FS_INO(plugin_id, FS_TAG_ALLOCS), FS_DIR, "allocs",
			     FS_NAME_STATIC, NULL, &mt, b, absent);
	info = fs_node_add(v, pdir, FS_INO(plugin_id, FS_TAG_INFO), FS_FILE, "info", FS_NAME_STATIC,
			   NULL, &mt, b, absent);
	if (!active || !allocs || !info) {
		rc = -ENOMEM;
		goto out;
	}
	/* One taken back into the tree drops the text it kept while out of
	 * it (a change of info, whatever that text was). */
	if (info->data) {
		rcstr_unref(info->data);
		info->data = NULL;
		info_changed = true;
	}
	if (active->data) {
		/* The alloc of the link csi.sock shares its text with: the
		 * first line of info. */
		old_active = reg_strings_at(active->data, REG_STR_ALLOC);
		if (strcmp(active->data, act->socket) != 0) {
			touch(active, now, b);
			changed = true;
		}
	}
	/* allocs/: add the new, retarget the moved, each link of the list
	 * marked seen; then the links not seen are the gone. */
	for (size_t i = 0; i < p->n_regs; i++) {
		const struct registration *r = &p->regs[i];
		struct timespec lt = mt;

		l = absent ? NULL : fs_view_child(v, allocs, r->alloc);

		if (l && fs_ino(l) != FS_INO(r->id, FS_TAG_ALLOC)) {
			fs_inval_push(b, FS_INVAL_ENTRY, fs_ino(allocs), l->name);
			fs_node_remove(v, allocs, l);
			l = NULL;
		}
		if (!l) {
			if (!b) {
				lt.tv_sec =
				    (time_t)(r->updated_at > r->registered_at ? r->updated_at
									      : r->registered_at);
				lt.tv_nsec = 0;
			}
			l = fs_node_add(v, allocs, FS_INO(r->id, FS_TAG_ALLOC), FS_LINK, r->alloc,
					FS_NAME_IN_DATA, r->socket, &lt, b, absent);
			if (!l) {
				rc = -ENOMEM;
				goto out;
			}
			fs_inval_push(b, FS_INVAL_ENTRY, fs_ino(allocs), r->alloc);
			allocs_changed = true;
		} else {
			struct fs_link *fl = (struct fs_link *)(void *)l;

			if (l->data != r->socket) {
				/* The registration's strings changed (an update):
				 * the link takes the new block, its name with it
				 * (the same alloc, so its place in the index
				 * stays). */
				bool moved = strcmp(l->data, r->socket) != 0;

				if (moved ||
				    !str_same(reg_strings_at(l->data, REG_STR_VERSION), r->version))
					info_changed = true;
				fs_node_set_str(l, r->socket);
				l->name = r->alloc;
				if (moved) {
					touch(l, now, b);
					changed = true;
				}
			}
			if (l->reg_kind != (unsigned char)r->kind ||
			    l->reg_health != (unsigned char)r->runtime.health || fl->seq != r->seq ||
			    fl->registered_at != r->registered_at)
				info_changed = true;
		}
		/* What info shows of it beside its strings. */
		l->reg_kind = (unsigned char)r->kind;
		l->reg_health = (unsigned char)r->runtime.health;
		((struct fs_link *)(void *)l)->seq = r->seq;
		((struct fs_link *)(void *)l)->registered_at = r->registered_at;
		l->seen = true;
		info_size += fs_info_line_len(r);
		if (r == act)
			act_link = l;
	}
	for (size_t i = 0; (l = fs_dir_next(allocs, &i, NULL));) {
		if (l->seen) {
			l->seen = false;
			continue;
		}
		fs_inval_push(b, FS_INVAL_ENTRY, fs_ino(allocs), l->name);
		fs_node_remove(v, allocs, l);
		allocs_changed = true;
	}
	if (old_active && strcmp(old_active, act->alloc) != 0)
		info_changed = true;
	/* csi.sock: one text with the active registration's allocs/ link. */
	if (active->data != act_link->data)
		fs_node_set_str(active, act_link->data);
	if (allocs_changed) {
		touch(allocs, now, b);
		changed = true;
	}
	info->size = (uint32_t)info_size;
	if (had_info && (info_changed || allocs_changed)) {
		touch(info, now, b);
		changed = true;
	}
	if (changed && b)
		touch(pdir, now, b);
out:
	/* Out of memory on the way: csi.sock shares the registration's, and
	 * no link stays marked. */
	if (active && !active->data)
		fs_node_set_str(active, act->socket);
	if (rc != 0 && allocs)
		for (size_t i = 0; (l = fs_dir_next(allocs, &i, NULL));)
			l->seen = false;
	return rc;
}
