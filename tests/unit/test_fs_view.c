/* SPDX-License-Identifier: MIT */
/*
 * The in-memory view of fs/ (tree.c, sync.c, info.c) without a mount:
 * inode numbers from persisted ids, attributes, the invalidations each
 * change queues, nodes kept while the kernel references them and freed on
 * forget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_internal.h"
#include "rcstr.h"
#include "registry.h"

#define TYPE_ID 3
#define PLUGIN_ID 7

struct fixture {
	struct fs_view v;
	struct registration regs[4];
	struct reg_plugin p;
};

static void set_reg(struct registration *r, int64_t id, const char *alloc, const char *sock,
		    const char *version, int64_t t)
{
	memset(r, 0, sizeof(*r));
	r->id = id;
	r->type = (char *)"csi-node";
	r->name = (char *)"ebs";
	r->alloc = (char *)alloc;
	r->socket = (char *)sock;
	r->version = (char *)version;
	r->kind = REG_KIND_NODE;
	r->registered_at = t;
	r->updated_at = t;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct timespec t0 = {.tv_sec = 1000};

	assert_non_null(f);
	assert_int_equal(fs_view_init(&f->v, "csi.sock"), 0);
	assert_int_equal(fs_view_add_type(&f->v, 2, "csi-controller", &t0), 0);
	assert_int_equal(fs_view_add_type(&f->v, TYPE_ID, "csi-node", &t0), 0);
	f->p.id = PLUGIN_ID;
	f->p.type = (char *)"csi-node";
	f->p.name = (char *)"ebs";
	f->p.regs = f->regs;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	fs_view_free(&f->v);
	free(f);
	return 0;
}

static struct fs_node *node(struct fixture *f, uint64_t ino)
{
	return fs_view_get(&f->v, ino);
}

/* fs_view_sync_plugin with p as the registry gives it: an owned value
 * (its strings reference-counted blocks), named name, freed right after,
 * so the view must hold what it keeps of it. */
static int sync_owned(struct fs_view *v, const char *type, const char *name, int64_t id,
		      const struct reg_plugin *p, const struct timespec *now,
		      struct fs_inval_batch *b)
{
	struct reg_plugin in, own;
	int rc;

	if (!p)
		return fs_view_sync_plugin(v, type, name, id, NULL, now, b);
	in = *p;
	in.name = (char *)name;
	assert_int_equal(reg_plugin_copy(&in, &own), 0);
	rc = fs_view_sync_plugin(v, type, name, id, &own, now, b);
	reg_plugin_free_contents(&own);
	return rc;
}

/* info's contents and size as a read and a getattr give them. */
static void assert_info(struct fixture *f, const struct fs_node *info, const char *want)
{
	char *text = fs_node_contents(&f->v, info);
	struct stat st;

	assert_non_null(text);
	assert_string_equal(text, want);
	fs_node_attr(info, &st);
	assert_int_equal(st.st_size, strlen(want));
	free(text);
}

/* The batch as text, one item per line: "inode N" or "entry N name". */
static char *batch_text(const struct fs_inval_batch *b)
{
	static char buf[4096];
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < b->n; i++) {
		if (b->items[i].kind == FS_INVAL_INODE)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "inode %llu\n",
					      (unsigned long long)b->items[i].ino);
		else
			n +=
			    (size_t)snprintf(buf + n, sizeof(buf) - n, "entry %llu %s\n",
					     (unsigned long long)b->items[i].ino, b->items[i].name);
	}
	return buf;
}

/* Loads ebs with a1 (active) and a0 as at start (no batch). */
static void load_two(struct fixture *f)
{
	struct timespec now = {.tv_sec = 5000};

	set_reg(&f->regs[0], 11, "a1", "/run/a1/csi.sock", "1.1", 2000);
	set_reg(&f->regs[1], 10, "a0", "/run/a0/csi.sock", "", 1500);
	f->p.n_regs = 2;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, NULL), 0);
}

static void test_root_and_types(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	fs_node_attr(node(f, FS_INO_ROOT), &st);
	assert_int_equal(st.st_mode, S_IFDIR | 0555);
	assert_int_equal(st.st_nlink, 3);
	fs_node_attr(node(f, FS_INO_PLUGINS), &st);
	assert_int_equal(st.st_nlink, 4); /* 2 + two types */
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);
	assert_non_null(fs_view_child(&f->v, node(f, FS_INO_PLUGINS), "csi-node"));
	assert_int_equal(fs_ino(fs_view_child(&f->v, node(f, FS_INO_PLUGINS), "csi-node")),
			 FS_INO(TYPE_ID, FS_TAG_TYPE));
	assert_null(fs_view_child(&f->v, node(f, FS_INO_PLUGINS), "nope"));
}

static void test_load_builds_nodes_from_ids(void **state)
{
	struct fixture *f = *state;
	struct fs_node *pdir, *active, *info, *a0;
	struct stat st;

	load_two(f);
	pdir = node(f, FS_INO(PLUGIN_ID, FS_TAG_PLUGIN));
	active = node(f, FS_INO(PLUGIN_ID, FS_TAG_ACTIVE));
	info = node(f, FS_INO(PLUGIN_ID, FS_TAG_INFO));
	a0 = node(f, FS_INO(10, FS_TAG_ALLOC));
	assert_non_null(pdir);
	assert_ptr_equal(fs_view_child(&f->v, node(f, FS_INO(TYPE_ID, FS_TAG_TYPE)), "ebs"), pdir);
	assert_ptr_equal(fs_view_child(&f->v, pdir, "csi.sock"), active);
	assert_string_equal(active->data, "/run/a1/csi.sock");
	assert_non_null(a0);
	assert_string_equal(a0->data, "/run/a0/csi.sock");
	assert_ptr_equal(fs_view_child(&f->v, node(f, FS_INO(PLUGIN_ID, FS_TAG_ALLOCS)), "a0"), a0);
	/* The registry's strings, shared, not copied: the value given to
	 * the sync is gone, the view holds them.  A link's name is the alloc
	 * in its registration's block, right after the socket; csi.sock
	 * holds the same block as the active one's link. */
	assert_string_equal(a0->name, "a0");
	assert_ptr_equal(a0->name, a0->data + strlen(a0->data) + 1);
	assert_int_equal(rcstr_refs(a0->data), 1);
	assert_ptr_equal(active->data, node(f, FS_INO(11, FS_TAG_ALLOC))->data);
	assert_int_equal(rcstr_refs(active->data), 2);
	assert_int_equal(rcstr_refs(pdir->name), 1);
	assert_string_equal(pdir->name, "ebs");

	fs_node_attr(active, &st);
	assert_int_equal(st.st_mode, S_IFLNK | 0777);
	assert_int_equal(st.st_size, strlen("/run/a1/csi.sock"));
	assert_int_equal(st.st_mtim.tv_sec, 2000); /* newest stored time */
	fs_node_attr(pdir, &st);
	assert_int_equal(st.st_nlink, 3); /* allocs/ */
	fs_node_attr(node(f, FS_INO(TYPE_ID, FS_TAG_TYPE)), &st);
	assert_int_equal(st.st_nlink, 3);
	fs_node_attr(a0, &st);
	assert_int_equal(st.st_mtim.tv_sec, 1500);
	fs_node_attr(info, &st);
	assert_int_equal(st.st_mode, S_IFREG | 0444);
	/* No text of its own in the tree: rendered from the links. */
	assert_null(info->data);
	assert_info(f, info,
		    "a1 /run/a1/csi.sock 1.1 node 1970-01-01T00:33:20Z unknown\n"
		    "a0 /run/a0/csi.sock - node 1970-01-01T00:25:00Z unknown\n");
}

static void test_switch_queues_invalidations(void **state)
{
	struct fixture *f = *state;
	struct fs_inval_batch b = {0};
	struct timespec now = {.tv_sec = 9000, .tv_nsec = 5};
	char want[512];

	load_two(f);
	/* a2 registers: the new front. */
	memmove(&f->regs[1], &f->regs[0], 2 * sizeof(f->regs[0]));
	set_reg(&f->regs[0], 12, "a2", "/run/a2/csi.sock", "1.2", 9000);
	f->p.n_regs = 3;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, &b), 0);
	snprintf(want, sizeof(want),
		 "inode %d\n"	 /* csi.sock retargeted */
		 "entry %d a2\n" /* allocs/a2 added (clears a negative entry) */
		 "inode %d\n"	 /* allocs/ changed */
		 "inode %d\n"	 /* info changed */
		 "inode %d\n",	 /* the plugin directory changed */
		 PLUGIN_ID * 8 + FS_TAG_ACTIVE, PLUGIN_ID * 8 + FS_TAG_ALLOCS,
		 PLUGIN_ID * 8 + FS_TAG_ALLOCS, PLUGIN_ID * 8 + FS_TAG_INFO,
		 PLUGIN_ID * 8 + FS_TAG_PLUGIN);
	assert_string_equal(batch_text(&b), want);
	assert_string_equal(node(f, FS_INO(PLUGIN_ID, FS_TAG_ACTIVE))->data, "/run/a2/csi.sock");
	assert_int_equal(fs_node_mtime(node(f, FS_INO(PLUGIN_ID, FS_TAG_ACTIVE))).tv_sec, 9000);
	assert_int_equal(fs_node_mtime(node(f, FS_INO(PLUGIN_ID, FS_TAG_ACTIVE))).tv_nsec, 5);
	assert_non_null(node(f, FS_INO(12, FS_TAG_ALLOC)));
	assert_info(f, node(f, FS_INO(PLUGIN_ID, FS_TAG_INFO)),
		    "a2 /run/a2/csi.sock 1.2 node 1970-01-01T02:30:00Z unknown\n"
		    "a1 /run/a1/csi.sock 1.1 node 1970-01-01T00:33:20Z unknown\n"
		    "a0 /run/a0/csi.sock - node 1970-01-01T00:25:00Z unknown\n");
	fs_inval_batch_free(&b);

	/* The same list again: nothing changes, nothing is queued. */
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, &b), 0);
	assert_int_equal(b.n, 0);
}

static void test_removed_node_kept_until_forgotten(void **state)
{
	struct fixture *f = *state;
	struct fs_inval_batch b = {0};
	struct timespec now = {.tv_sec = 9000};
	struct fs_node *a0;
	char want[128];

	load_two(f);
	a0 = node(f, FS_INO(10, FS_TAG_ALLOC));
	a0->nlookup = 2; /* the kernel looked it up twice */
	f->p.n_regs = 1; /* a0 deregistered */
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, &b), 0);
	snprintf(want, sizeof(want), "entry %d a0\n", PLUGIN_ID * 8 + FS_TAG_ALLOCS);
	assert_non_null(strstr(batch_text(&b), want));
	fs_inval_batch_free(&b);
	assert_null(fs_view_child(&f->v, node(f, FS_INO(PLUGIN_ID, FS_TAG_ALLOCS)), "a0"));
	/* Out of the tree, still answerable. */
	assert_ptr_equal(node(f, FS_INO(10, FS_TAG_ALLOC)), a0);
	assert_false(a0->in_tree);
	assert_string_equal(a0->data, "/run/a0/csi.sock");
	fs_view_forget(&f->v, FS_INO(10, FS_TAG_ALLOC), 1);
	assert_non_null(node(f, FS_INO(10, FS_TAG_ALLOC)));
	fs_view_forget(&f->v, FS_INO(10, FS_TAG_ALLOC), 1);
	assert_null(node(f, FS_INO(10, FS_TAG_ALLOC)));
	/* A forget of an unknown inode is harmless. */
	fs_view_forget(&f->v, 424242, 1);
}

/* forget and forget_multi drop the kernel's count, not one; a node in the
 * tree is never freed, whatever the count; the root and plugins/ stay. */
static void test_forget_drops_the_kernels_count(void **state)
{
	struct fixture *f = *state;
	struct fs_inval_batch b = {0};
	struct timespec now = {.tv_sec = 9000};
	struct fs_node *a0, *a1;

	load_two(f);
	a0 = node(f, FS_INO(10, FS_TAG_ALLOC));
	a1 = node(f, FS_INO(11, FS_TAG_ALLOC));
	a0->nlookup = 5;
	a1->nlookup = 3;
	/* In the tree: the count drops, the node stays, even at 0. */
	fs_view_forget(&f->v, FS_INO(11, FS_TAG_ALLOC), 2);
	assert_int_equal(a1->nlookup, 1);
	fs_view_forget(&f->v, FS_INO(11, FS_TAG_ALLOC), 1);
	assert_int_equal(a1->nlookup, 0);
	assert_ptr_equal(node(f, FS_INO(11, FS_TAG_ALLOC)), a1);
	assert_true(a1->in_tree);
	fs_view_forget(&f->v, FS_INO_ROOT, 9);
	fs_view_forget(&f->v, FS_INO_PLUGINS, 9);
	assert_non_null(node(f, FS_INO_ROOT));
	assert_non_null(node(f, FS_INO_PLUGINS));

	/* Out of the tree: freed only when the whole count is forgotten. */
	f->p.n_regs = 1; /* a0 deregistered: only a1 (regs[0]) left */
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, &b), 0);
	fs_inval_batch_free(&b);
	assert_ptr_equal(node(f, FS_INO(10, FS_TAG_ALLOC)), a0);
	assert_false(a0->in_tree);
	fs_view_forget(&f->v, FS_INO(10, FS_TAG_ALLOC), 3);
	assert_ptr_equal(node(f, FS_INO(10, FS_TAG_ALLOC)), a0);
	assert_int_equal(a0->nlookup, 2);
	fs_view_forget(&f->v, FS_INO(10, FS_TAG_ALLOC), 2);
	assert_null(node(f, FS_INO(10, FS_TAG_ALLOC)));
	/* a1 still answers. */
	assert_ptr_equal(node(f, FS_INO(11, FS_TAG_ALLOC)), a1);

	/* The 32-bit count saturates and then stays: a1 out of the tree is
	 * kept however much is forgotten. */
	a1->nlookup = UINT32_MAX - 1;
	fs_node_ref(a1);
	assert_int_equal(a1->nlookup, UINT32_MAX);
	fs_node_ref(a1);
	assert_int_equal(a1->nlookup, UINT32_MAX);
	f->p.n_regs = 0;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, NULL, &now, &b), 0);
	fs_inval_batch_free(&b);
	fs_view_forget(&f->v, FS_INO(11, FS_TAG_ALLOC), UINT64_MAX);
	assert_ptr_equal(node(f, FS_INO(11, FS_TAG_ALLOC)), a1);
	assert_false(a1->in_tree);
}

static void test_plugin_removed_and_back(void **state)
{
	struct fixture *f = *state;
	struct fs_inval_batch b = {0};
	struct timespec now = {.tv_sec = 9000};
	struct fs_node *active;
	char want[128];

	load_two(f);
	active = node(f, FS_INO(PLUGIN_ID, FS_TAG_ACTIVE));
	active->nlookup = 1;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, NULL, &now, &b), 0);
	snprintf(want, sizeof(want), "entry %d ebs\ninode %d\n", TYPE_ID * 8, TYPE_ID * 8);
	assert_string_equal(batch_text(&b), want);
	fs_inval_batch_free(&b);
	assert_null(fs_view_child(&f->v, node(f, FS_INO(TYPE_ID, FS_TAG_TYPE)), "ebs"));
	assert_null(node(f, FS_INO(PLUGIN_ID, FS_TAG_PLUGIN))); /* unreferenced: freed */
	assert_null(node(f, FS_INO(11, FS_TAG_ALLOC)));
	assert_ptr_equal(node(f, FS_INO(PLUGIN_ID, FS_TAG_ACTIVE)), active); /* referenced */

	/* Back with a new target: the kept inode is taken back and the kernel
	 * told to drop what it cached of it. */
	set_reg(&f->regs[0], 13, "a3", "/run/a3/csi.sock", "", 9500);
	f->p.n_regs = 1;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, &b), 0);
	snprintf(want, sizeof(want), "inode %d\n", PLUGIN_ID * 8 + FS_TAG_ACTIVE);
	assert_non_null(strstr(batch_text(&b), want));
	snprintf(want, sizeof(want), "entry %d ebs\n", TYPE_ID * 8);
	assert_non_null(strstr(batch_text(&b), want));
	fs_inval_batch_free(&b);
	assert_ptr_equal(node(f, FS_INO(PLUGIN_ID, FS_TAG_ACTIVE)), active);
	assert_true(active->in_tree);
	assert_string_equal(active->data, "/run/a3/csi.sock");
	assert_int_equal(active->nlookup, 1);
}

/* The last registration goes while the kernel holds the plugin's directory
 * (a bind mount of it): it stays, empty, with the entries cached in it
 * dropped, and the plugin's return (same id) fills the same inode again. */
static void test_emptied_dir_held_comes_back(void **state)
{
	struct fixture *f = *state;
	struct fs_inval_batch b = {0};
	struct timespec now = {.tv_sec = 9000}, later = {.tv_sec = 9100};
	uint64_t dino = FS_INO(PLUGIN_ID, FS_TAG_PLUGIN);
	struct fs_node *pdir;
	struct stat st;
	char want[256];

	load_two(f);
	pdir = node(f, dino);
	pdir->nlookup = 1;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, NULL, &now, &b), 0);
	snprintf(want, sizeof(want),
		 "entry %llu csi.sock\nentry %llu allocs\nentry %llu info\ninode %llu\n"
		 "entry %d ebs\ninode %d\n",
		 (unsigned long long)dino, (unsigned long long)dino, (unsigned long long)dino,
		 (unsigned long long)dino, TYPE_ID * 8, TYPE_ID * 8);
	assert_string_equal(batch_text(&b), want);
	fs_inval_batch_free(&b);
	assert_null(fs_view_child(&f->v, node(f, FS_INO(TYPE_ID, FS_TAG_TYPE)), "ebs"));
	assert_ptr_equal(node(f, dino), pdir);
	assert_false(pdir->in_tree);
	assert_int_equal(fs_dir_count(pdir), 0);
	fs_node_attr(pdir, &st);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(fs_node_parent(pdir), FS_INO(TYPE_ID, FS_TAG_TYPE));

	set_reg(&f->regs[0], 13, "a3", "/run/a3/csi.sock", "", 9500);
	f->p.n_regs = 1;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &later, &b), 0);
	snprintf(want, sizeof(want), "entry %llu csi.sock\nentry %llu allocs\nentry %llu info\n",
		 (unsigned long long)dino, (unsigned long long)dino, (unsigned long long)dino);
	assert_non_null(strstr(batch_text(&b), want));
	snprintf(want, sizeof(want), "inode %llu\n", (unsigned long long)dino);
	assert_non_null(strstr(batch_text(&b), want));
	fs_inval_batch_free(&b);
	assert_ptr_equal(node(f, dino), pdir);
	assert_true(pdir->in_tree);
	assert_int_equal(pdir->nlookup, 1);
	assert_string_equal(fs_view_child(&f->v, pdir, "csi.sock")->data, "/run/a3/csi.sock");
	assert_non_null(fs_view_child(&f->v, fs_view_child(&f->v, pdir, "allocs"), "a3"));
}

/* A plugin whose list emptied before this process started: its directory is
 * there for a kernel that still holds it, out of the tree, and is the one
 * the plugin takes back. */
static void test_empty_plugin_at_load(void **state)
{
	struct fixture *f = *state;
	struct fs_inval_batch b = {0};
	struct timespec now = {.tv_sec = 5000};
	uint64_t dino = FS_INO(PLUGIN_ID, FS_TAG_PLUGIN);
	struct fs_node *pdir;

	assert_int_equal(fs_view_add_empty_plugin(&f->v, "csi-node", "ebs", PLUGIN_ID, &now), 0);
	assert_int_equal(fs_view_add_empty_plugin(&f->v, "csi-node", "ebs", PLUGIN_ID, &now), 0);
	assert_int_equal(fs_view_add_empty_plugin(&f->v, "nope", "ebs", 99, &now), 0);
	assert_null(node(f, FS_INO(99, FS_TAG_PLUGIN)));
	pdir = node(f, dino);
	assert_non_null(pdir);
	assert_false(pdir->in_tree);
	assert_int_equal(pdir->kind, FS_DIR);
	assert_int_equal(fs_dir_count(pdir), 0);
	assert_null(fs_view_child(&f->v, node(f, FS_INO(TYPE_ID, FS_TAG_TYPE)), "ebs"));

	set_reg(&f->regs[0], 13, "a3", "/run/a3/csi.sock", "", 9500);
	f->p.n_regs = 1;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, &b), 0);
	fs_inval_batch_free(&b);
	assert_ptr_equal(node(f, dino), pdir);
	assert_true(pdir->in_tree);
	assert_ptr_equal(fs_view_child(&f->v, node(f, FS_INO(TYPE_ID, FS_TAG_TYPE)), "ebs"), pdir);

	/* Not held by the kernel: a forget frees it once out of the tree. */
	assert_int_equal(fs_view_add_empty_plugin(&f->v, "csi-node", "gone", 42, &now), 0);
	fs_view_forget(&f->v, FS_INO(42, FS_TAG_PLUGIN), 1);
	assert_null(node(f, FS_INO(42, FS_TAG_PLUGIN)));
}

static void test_unknown_type_ignored(void **state)
{
	struct fixture *f = *state;
	struct fs_inval_batch b = {0};
	struct timespec now = {.tv_sec = 1};

	set_reg(&f->regs[0], 1, "x", "/run/x.sock", "", 1);
	f->p.n_regs = 1;
	assert_int_equal(sync_owned(&f->v, "csi-other", "ebs", PLUGIN_ID, &f->p, &now, &b), 0);
	assert_int_equal(b.n, 0);
	assert_null(node(f, FS_INO(PLUGIN_ID, FS_TAG_PLUGIN)));
}

static void test_many_plugins_grow_the_table(void **state)
{
	struct fixture *f = *state;
	struct timespec now = {.tv_sec = 1};
	char name[32], sock[64];
	struct stat st;

	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		snprintf(sock, sizeof(sock), "/run/p%d.sock", i);
		set_reg(&f->regs[0], 1000 + i, "a", sock, "", 1);
		f->p.n_regs = 1;
		assert_int_equal(sync_owned(&f->v, "csi-node", name, 100 + i, &f->p, &now, NULL),
				 0);
	}
	for (int i = 0; i < 500; i++) {
		snprintf(sock, sizeof(sock), "/run/p%d.sock", i);
		assert_string_equal(node(f, FS_INO(100 + i, FS_TAG_ACTIVE))->data, sock);
	}
	fs_node_attr(node(f, FS_INO(TYPE_ID, FS_TAG_TYPE)), &st);
	assert_int_equal(st.st_nlink, 502);
}

/* The info file shows registered_at in RFC 3339, and "invalid" (not a bare
 * number or a five-digit year) for a time RFC 3339 cannot write. */
static void test_info_times(void **state)
{
	struct fixture *f = *state;
	char *text;

	set_reg(&f->regs[0], 1, "a1", "/run/a1.sock", "1.0", INT64_C(1796030345));
	set_reg(&f->regs[1], 2, "a2", "/run/a2.sock", "", INT64_C(253402300800));
	set_reg(&f->regs[2], 3, "a3", "/run/a3.sock", NULL, INT64_MAX);
	f->p.n_regs = 3;
	text = fs_render_info(&f->p);
	assert_non_null(text);
	assert_string_equal(text, "a1 /run/a1.sock 1.0 node 2026-11-30T09:19:05Z unknown\n"
				  "a2 /run/a2.sock - node invalid unknown\n"
				  "a3 /run/a3.sock - node invalid unknown\n");
	free(text);
	/* Health: the active one (a3 when a1 and a2 are dead) comes first. */
	f->regs[0].runtime.health = REG_HEALTH_DEAD;
	f->regs[1].runtime.health = REG_HEALTH_DEAD;
	f->regs[2].runtime.health = REG_HEALTH_ALIVE;
	f->p.active = 2;
	text = fs_render_info(&f->p);
	assert_non_null(text);
	assert_string_equal(text, "a3 /run/a3.sock - node invalid alive\n"
				  "a1 /run/a1.sock 1.0 node 2026-11-30T09:19:05Z dead\n"
				  "a2 /run/a2.sock - node invalid dead\n");
	free(text);
}

/* info is rendered from the view's links, as fs_render_info renders it
 * from the registry, through changes of health and of the active one; a
 * change of it alone is an invalidation of info; the kernel's info keeps
 * its last text when the plugin goes. */
static void test_info_rendered_from_links(void **state)
{
	struct fixture *f = *state;
	struct fs_inval_batch b = {0};
	struct timespec now = {.tv_sec = 9000};
	struct fs_node *info;
	char *want, *got, line[128];

	set_reg(&f->regs[0], 1, "a1", "/run/a1.sock", "1.0", 3000);
	set_reg(&f->regs[1], 2, "a2", "/run/a2.sock", "", 2000);
	set_reg(&f->regs[2], 3, "a3", "/run/a3.sock", NULL, 1000);
	f->regs[0].seq = 30;
	f->regs[1].seq = 20;
	f->regs[2].seq = 10;
	f->regs[2].kind = REG_KIND_CONTROLLER;
	f->p.n_regs = 3;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, NULL), 0);
	info = node(f, FS_INO(PLUGIN_ID, FS_TAG_INFO));
	want = fs_render_info(&f->p);
	assert_non_null(want);
	assert_info(f, info, want);
	free(want);
	/* a1 and a2 dead: a3 active, first. */
	f->regs[0].runtime.health = REG_HEALTH_DEAD;
	f->regs[1].runtime.health = REG_HEALTH_DEAD;
	f->regs[2].runtime.health = REG_HEALTH_ALIVE;
	f->p.active = 2;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, &b), 0);
	snprintf(line, sizeof(line), "inode %d\n", PLUGIN_ID * 8 + FS_TAG_INFO);
	assert_non_null(strstr(batch_text(&b), line));
	fs_inval_batch_free(&b);
	want = fs_render_info(&f->p);
	assert_non_null(want);
	assert_string_equal(want, "a3 /run/a3.sock - controller 1970-01-01T00:16:40Z alive\n"
				  "a1 /run/a1.sock 1.0 node 1970-01-01T00:50:00Z dead\n"
				  "a2 /run/a2.sock - node 1970-01-01T00:33:20Z dead\n");
	assert_info(f, info, want);
	/* Health alone again, of a2 only: info changes, nothing else does. */
	f->regs[1].runtime.health = REG_HEALTH_ALIVE;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, &f->p, &now, &b), 0);
	snprintf(line, sizeof(line), "inode %d\ninode %d\n", PLUGIN_ID * 8 + FS_TAG_INFO,
		 PLUGIN_ID * 8 + FS_TAG_PLUGIN);
	assert_string_equal(batch_text(&b), line);
	fs_inval_batch_free(&b);
	free(want);
	want = fs_render_info(&f->p);
	assert_non_null(want);
	/* The kernel holds info; the plugin goes: info keeps its text. */
	info->nlookup = 1;
	assert_int_equal(sync_owned(&f->v, "csi-node", "ebs", PLUGIN_ID, NULL, &now, &b), 0);
	fs_inval_batch_free(&b);
	assert_ptr_equal(node(f, FS_INO(PLUGIN_ID, FS_TAG_INFO)), info);
	assert_false(info->in_tree);
	got = fs_node_contents(&f->v, info);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	free(want);
	fs_view_forget(&f->v, FS_INO(PLUGIN_ID, FS_TAG_INFO), 1);
	assert_null(node(f, FS_INO(PLUGIN_ID, FS_TAG_INFO)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_root_and_types, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_info_rendered_from_links, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_load_builds_nodes_from_ids, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_switch_queues_invalidations, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_removed_node_kept_until_forgotten, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_forget_drops_the_kernels_count, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_plugin_removed_and_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_emptied_dir_held_comes_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_empty_plugin_at_load, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unknown_type_ignored, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_plugins_grow_the_table, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_info_times, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
