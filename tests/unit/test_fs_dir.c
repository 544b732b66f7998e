/* SPDX-License-Identifier: MIT */
/*
 * The directories of the view (fs/dir.c): the (parent, name) index, O(1)
 * link and unlink, and readdir offsets that stay valid while entries come
 * and go (a listing in progress neither skips nor repeats an entry that
 * stays), at small and large sizes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_internal.h"
#include "array.h"

struct fixture {
	struct fs_view v;
	struct fs_node dir, other; /* two directories, outside the inode table */
	struct fs_node **kids;
	size_t n_kids, cap_kids;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(fs_view_init(&f->v, "csi.sock"), 0);
	f->dir.hnode.key = 1000;
	f->dir.kind = FS_DIR;
	f->other.hnode.key = 2000;
	f->other.kind = FS_DIR;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	for (size_t i = 0; i < f->n_kids; i++) {
		free(f->kids[i]->name);
		fs_node_delete(&f->v, f->kids[i]);
	}
	free(f->kids);
	fs_dir_free(f->dir.dir);
	fs_dir_free(f->other.dir);
	fs_view_free(&f->v);
	free(f);
	return 0;
}

/* The inode number of the k-th child: tag 5 (an allocs/ link), which the
 * (parent, name) index takes. */
#define KID_INO(k) (10005 + 8 * (uint64_t)(k))

/* A new child node called name, linked under dir. */
static struct fs_node *add(struct fixture *f, struct fs_node *dir, const char *name)
{
	struct fs_node *c = fs_node_new(&f->v, KID_INO(f->n_kids));

	assert_non_null(c);
	c->name = strdup(name);
	assert_non_null(c->name);
	c->kind = FS_LINK;
	assert_int_equal(PLUGFS_GROW(f->kids, f->cap_kids, f->n_kids, 64), 0);
	f->kids[f->n_kids++] = c;
	assert_int_equal(fs_dir_link(&f->v, dir, c), 0);
	assert_int_equal(fs_node_parent(c), fs_ino(dir));
	return c;
}

static uint64_t off_of(const struct fs_node *dir, const struct fs_node *c)
{
	return dir->dir->slots[((const struct fs_named *)(const void *)c)->slot].off;
}

static void test_add_lookup_remove(void **state)
{
	struct fixture *f = *state;
	struct fs_node *a = add(f, &f->dir, "a"), *b = add(f, &f->dir, "b"), *c;
	struct fs_node *oa = add(f, &f->other, "a");

	c = add(f, &f->dir, "c");
	assert_ptr_equal(fs_view_child(&f->v, &f->dir, "a"), a);
	assert_ptr_equal(fs_view_child(&f->v, &f->dir, "b"), b);
	assert_ptr_equal(fs_view_child(&f->v, &f->dir, "c"), c);
	/* A name is looked up within its directory only. */
	assert_ptr_equal(fs_view_child(&f->v, &f->other, "a"), oa);
	assert_null(fs_view_child(&f->v, &f->other, "b"));
	assert_null(fs_view_child(&f->v, &f->dir, "d"));
	assert_null(fs_view_child(&f->v, &f->dir, ""));
	assert_int_equal(fs_dir_count(&f->dir), 3);

	fs_dir_unlink(&f->v, &f->dir, b);
	assert_null(fs_view_child(&f->v, &f->dir, "b"));
	assert_ptr_equal(fs_view_child(&f->v, &f->dir, "c"), c);
	assert_int_equal(fs_dir_count(&f->dir), 2);
	/* Unlinking twice changes nothing. */
	fs_dir_unlink(&f->v, &f->dir, b);
	assert_int_equal(fs_dir_count(&f->dir), 2);

	/* Back: found again, with an offset after every other child. */
	assert_int_equal(fs_dir_link(&f->v, &f->dir, b), 0);
	assert_ptr_equal(fs_view_child(&f->v, &f->dir, "b"), b);
	assert_true(off_of(&f->dir, b) > off_of(&f->dir, c));
	assert_true(off_of(&f->dir, a) > FS_DIR_OFF_DOTDOT);

	/* Iteration sees each child once, in offset order. */
	{
		size_t i = 0, n = 0;
		uint64_t off, last = 0;
		struct fs_node *k;

		while ((k = fs_dir_next(&f->dir, &i, &off))) {
			assert_true(off > last);
			last = off;
			n++;
		}
		assert_int_equal(n, 3);
	}
	/* Subdirectories count for st_nlink. */
	{
		struct fs_node *sub = fs_node_new(&f->v, FS_INO(12, FS_TAG_TYPE));

		assert_non_null(sub);
		sub->name = strdup("sub");
		sub->kind = FS_DIR;
		assert_int_equal(fs_dir_link(&f->v, &f->dir, sub), 0);
		assert_int_equal(f->dir.n_subdirs, 1);
		fs_dir_unlink(&f->v, &f->dir, sub);
		assert_int_equal(f->dir.n_subdirs, 0);
		free(sub->name);
		fs_node_delete(&f->v, sub);
	}
}

/* One page of a readdir: up to `page` children after *off; marks each in
 * seen[] (by index in f->kids) and fails on a repeat. */
static size_t read_page(struct fixture *f, uint64_t *off, size_t *hint, size_t page,
			unsigned *seen)
{
	size_t i = fs_dir_seek(&f->dir, *off, *hint), got = 0;
	struct fs_node *c;
	uint64_t coff;

	while (got < page && (c = fs_dir_next(&f->dir, &i, &coff))) {
		size_t k = (size_t)((fs_ino(c) - KID_INO(0)) / 8);

		assert_true(coff > *off);
		seen[k]++;
		assert_int_equal(seen[k], 1);
		*off = coff;
		got++;
	}
	*hint = i;
	return got;
}

/* A listing in pages while entries are removed and added between pages
 * (enough to squeeze out holes several times): every entry present from
 * start to end is listed exactly once, none twice. */
static void test_offsets_stable_while_changing(void **state)
{
	struct fixture *f = *state;
	enum { N = 300, MAX = 4 * N };
	unsigned seen[MAX] = {0};
	bool removed[MAX] = {false};
	uint64_t off = FS_DIR_OFF_DOTDOT;
	size_t hint = 0, round = 0;
	char name[32];

	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		add(f, &f->dir, name);
	}
	while (read_page(f, &off, &hint, 7, seen) > 0) {
		/* Remove up to five, listed or not, and add three: holes
		 * outnumber the entries after a while and are squeezed out. */
		for (size_t r = 0; r < 5; r++) {
			size_t k = (round * 131 + r * 17) % f->n_kids;

			if (!removed[k]) {
				fs_dir_unlink(&f->v, &f->dir, f->kids[k]);
				removed[k] = true;
			}
		}
		for (int a = 0; a < 3 && f->n_kids < MAX; a++) {
			snprintf(name, sizeof(name), "new%zu", f->n_kids);
			add(f, &f->dir, name);
		}
		round++;
		assert_true(round < MAX);
	}
	/* Every entry that was never removed was listed exactly once (a
	 * second time fails in read_page), those added meanwhile included. */
	for (size_t k = 0; k < f->n_kids; k++)
		if (!removed[k])
			assert_int_equal(seen[k], 1);
	/* Each link took a slot: fewer slots than links means holes were
	 * squeezed out while the listing went on. */
	assert_true(f->dir.dir->n_slots < f->n_kids);
	assert_true(f->n_kids > N);
}

/* Holes are squeezed out: after mass removal and new links the slots stay
 * within twice the children (plus a constant), and the index still finds
 * every name.  100,000 entries, each operation O(1). */
static void test_many_entries(void **state)
{
	struct fixture *f = *state;
	enum { N = 100000 };
	char name[32];
	size_t i = 0, n = 0;

	for (int k = 0; k < N; k++) {
		snprintf(name, sizeof(name), "plugin-%06d", k);
		add(f, &f->dir, name);
	}
	for (int k = 0; k < N; k++) {
		snprintf(name, sizeof(name), "plugin-%06d", k);
		assert_ptr_equal(fs_view_child(&f->v, &f->dir, name), f->kids[k]);
	}
	for (int k = 0; k < N; k += 4)
		fs_dir_unlink(&f->v, &f->dir, f->kids[k]);
	for (int k = 0; k < N; k += 4)
		fs_dir_unlink(&f->v, &f->dir, f->kids[k + 1]);
	for (int k = 0; k < N; k += 4)
		fs_dir_unlink(&f->v, &f->dir, f->kids[k + 2]);
	assert_int_equal(fs_dir_count(&f->dir), N / 4);
	add(f, &f->dir, "after");
	assert_true(f->dir.dir->n_slots <= 2 * fs_dir_count(&f->dir) + 8);
	for (int k = 0; k < N; k++) {
		snprintf(name, sizeof(name), "plugin-%06d", k);
		if (k % 4 == 3)
			assert_ptr_equal(fs_view_child(&f->v, &f->dir, name), f->kids[k]);
		else
			assert_null(fs_view_child(&f->v, &f->dir, name));
	}
	while (fs_dir_next(&f->dir, &i, NULL))
		n++;
	assert_int_equal(n, N / 4 + 1);
	/* Seek by binary search (no hint) lands on the first slot above. */
	{
		const struct fs_node *a = f->kids[N];
		size_t at = fs_dir_seek(&f->dir, off_of(&f->dir, a) - 1, 0);

		assert_ptr_equal(f->dir.dir->slots[at].node, a);
		assert_int_equal(fs_dir_seek(&f->dir, off_of(&f->dir, a), 0),
				 f->dir.dir->n_slots);
		assert_int_equal(fs_dir_seek(&f->dir, 0, 12345), 0);
	}
}

/* A plugin directory's three children: in their slots by tag, at offsets
 * 3, 4 and 5 whatever the order they come in and after a removal, found by
 * name, counted, sought, and no other node taken. */
static void test_plugin_dir_slots(void **state)
{
	struct fixture *f = *state;
	struct fs_node pdir = {.hnode.key = FS_INO(9, FS_TAG_PLUGIN), .kind = FS_DIR};
	struct fs_node *sock = fs_node_new(&f->v, FS_INO(9, FS_TAG_ACTIVE));
	struct fs_node *allocs = fs_node_new(&f->v, FS_INO(9, FS_TAG_ALLOCS));
	struct fs_node *info = fs_node_new(&f->v, FS_INO(9, FS_TAG_INFO));
	struct fs_node *link = fs_node_new(&f->v, FS_INO(4, FS_TAG_ALLOC));
	uint64_t off;
	size_t i = 0;

	assert_non_null(sock);
	assert_non_null(allocs);
	assert_non_null(info);
	assert_non_null(link);
	sock->name = (char *)"csi.sock";
	sock->kind = FS_LINK;
	allocs->name = (char *)"allocs";
	allocs->kind = FS_DIR;
	info->name = (char *)"info";
	info->kind = FS_FILE;
	link->kind = FS_LINK;
	assert_int_equal(fs_dir_count(&pdir), 0);
	assert_null(fs_dir_next(&pdir, &i, NULL));
	assert_int_equal(fs_dir_link(&f->v, &pdir, info), 0);
	assert_int_equal(fs_dir_link(&f->v, &pdir, sock), 0);
	assert_int_equal(fs_dir_link(&f->v, &pdir, allocs), 0);
	assert_int_equal(fs_dir_link(&f->v, &pdir, link), -EINVAL);
	assert_int_equal(fs_dir_link(&f->v, &pdir, sock), -EINVAL); /* its slot is taken */
	assert_int_equal(fs_dir_count(&pdir), 3);
	assert_int_equal(pdir.n_subdirs, 1);
	assert_ptr_equal(fs_view_child(&f->v, &pdir, "info"), info);
	assert_ptr_equal(fs_view_child(&f->v, &pdir, "csi.sock"), sock);
	assert_null(fs_view_child(&f->v, &pdir, "nope"));
	i = 0;
	assert_ptr_equal(fs_dir_next(&pdir, &i, &off), sock);
	assert_int_equal(off, 3);
	assert_ptr_equal(fs_dir_next(&pdir, &i, &off), allocs);
	assert_int_equal(off, 4);
	assert_ptr_equal(fs_dir_next(&pdir, &i, &off), info);
	assert_int_equal(off, 5);
	assert_null(fs_dir_next(&pdir, &i, &off));
	/* A listing that stopped after allocs goes on with info. */
	i = fs_dir_seek(&pdir, 4, 0);
	assert_ptr_equal(fs_dir_next(&pdir, &i, &off), info);
	assert_int_equal(fs_dir_seek(&pdir, 0, 0), 0);
	assert_int_equal(fs_dir_seek(&pdir, 99, 0), 3);
	/* allocs goes: info keeps its offset; allocs back, at its own. */
	fs_dir_unlink(&f->v, &pdir, allocs);
	assert_int_equal(fs_dir_count(&pdir), 2);
	assert_int_equal(pdir.n_subdirs, 0);
	i = fs_dir_seek(&pdir, 3, 0);
	assert_ptr_equal(fs_dir_next(&pdir, &i, &off), info);
	assert_int_equal(off, 5);
	assert_int_equal(fs_dir_link(&f->v, &pdir, allocs), 0);
	i = fs_dir_seek(&pdir, 3, 0);
	assert_ptr_equal(fs_dir_next(&pdir, &i, &off), allocs);
	assert_int_equal(off, 4);
	fs_dir_free(pdir.dir);
	fs_node_delete(&f->v, sock);
	fs_node_delete(&f->v, allocs);
	fs_node_delete(&f->v, info);
	fs_node_delete(&f->v, link);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_add_lookup_remove, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_plugin_dir_slots, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_offsets_stable_while_changing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_entries, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
