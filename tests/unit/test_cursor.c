/* SPDX-License-Identifier: MIT */
/* control/cursor.c: the walk over the plugins that list and state dump
 * use, on a real registry: complete and in (type, name) order across sort
 * runs, prepared a few runs at a time, and its consistency while plugins
 * come and go. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "test_registry_util.h"

/* More than two runs of the cursor's sort (1,024 names each). */
#define N 2500

/* Reopens f's registry without fsyncs (thousands of commits) and registers
 * n plugins, half of each type, in a scrambled order. */
static void fill_n(struct fixture *f, int n)
{
	struct registry_options o = fixture_options(f);
	char err[REG_ERR_MAX] = "", name[32], alloc[32];

	registry_close(f->r);
	f->r = NULL;
	o.synchronous = "off";
	assert_int_equal(registry_open(f->path, &o, &f->r, err, sizeof(err)), 0);
	for (int k = 0; k < n; k++) {
		int i = (int)(((long)k * 7919) % n);

		snprintf(name, sizeof(name), "p%05d", i);
		snprintf(alloc, sizeof(alloc), "a%05d", i);
		assert_int_equal(reg(f, i % 2 ? "csi-node" : "csi-controller", name, alloc), 0);
	}
}

static void fill(struct fixture *f)
{
	fill_n(f, N);
}

/* Walks cur to its end; the names in "type/name" order into *names.  Each
 * plugin has one registration, but two (may be NULL). */
static size_t walk(struct control_cursor *cur, char (*names)[40], size_t max, const char *two)
{
	struct reg_plugin p;
	size_t n = 0;
	int rc;

	while ((rc = control_cursor_next(cur, &p)) == 1) {
		assert_true(n < max);
		assert_int_equal(p.n_regs, two && strcmp(p.name, two) == 0 ? 2 : 1);
		snprintf(names[n++], 40, "%s/%s", p.type, p.name);
		reg_plugin_free_contents(&p);
	}
	assert_int_equal(rc, 0);
	return n;
}

static void test_order(void **state)
{
	struct fixture *f = *state;
	char(*names)[40] = calloc(N + 1, 40);
	struct control_cursor *cur = NULL;
	size_t n, prepares = 0;

	assert_non_null(names);
	fill(f);
	assert_int_equal(control_cursor_open(f->r, NULL, &cur), 0);
	/* A step per call: the names taken (one slice), three runs sorted,
	 * then the merge set up. */
	while (control_cursor_prepare(cur, 1) == 0)
		prepares++;
	assert_int_equal(prepares, 4);
	assert_int_equal(control_cursor_total(cur), N);
	n = walk(cur, names, N + 1, NULL);
	assert_int_equal(n, N);
	for (size_t i = 1; i < n; i++)
		assert_true(strcmp(names[i - 1], names[i]) < 0);
	assert_string_equal(names[0], "csi-controller/p00000");
	assert_string_equal(names[N / 2], "csi-node/p00001");
	assert_string_equal(names[N - 1], "csi-node/p02499");
	control_cursor_free(cur);

	/* One type: its half, in order. */
	assert_int_equal(control_cursor_open(f->r, "csi-node", &cur), 0);
	n = walk(cur, names, N + 1, NULL);
	assert_int_equal(n, N / 2);
	assert_string_equal(names[0], "csi-node/p00001");
	assert_int_equal(control_cursor_skipped(cur), 0);
	control_cursor_free(cur);
	free(names);
}

/* The names are those of the open; each plugin is read when its turn
 * comes. */
static void test_changes_during_walk(void **state)
{
	struct fixture *f = *state;
	char(*names)[40] = calloc(N + 2, 40);
	struct control_cursor *cur = NULL;
	struct reg_plugin p;
	size_t n;

	assert_non_null(names);
	fill(f);
	assert_int_equal(control_cursor_open(f->r, "csi-node", &cur), 0);
	assert_int_equal(control_cursor_next(cur, &p), 1);
	assert_string_equal(p.name, "p00001");
	reg_plugin_free_contents(&p);
	/* Gone before its turn: passed over.  Registered after the open: not
	 * in the walk.  Changed before its turn: read as it is then (p02003
	 * comes with its two registrations). */
	assert_int_equal(dereg(f, "csi-node", "p02001", "a02001"), 0);
	assert_int_equal(reg(f, "csi-node", "p00000x", "x0"), 0);
	assert_int_equal(reg(f, "csi-node", "p02003", "b02003"), 0);
	n = walk(cur, names, N + 2, "p02003");
	assert_int_equal(n, N / 2 - 2);
	assert_int_equal(control_cursor_skipped(cur), 1);
	for (size_t i = 0; i < n; i++) {
		assert_string_not_equal(names[i], "csi-node/p02001");
		assert_string_not_equal(names[i], "csi-node/p00000x");
	}
	control_cursor_free(cur);
	free(names);
}

struct seen {
	unsigned char *count; /* per p%05d of the first n */
	int n;
};

static int see(void *arg, const struct reg_plugin *p)
{
	struct seen *s = arg;
	int i = atoi(p->name + 1);

	if (p->name[0] == 'p' && i < s->n)
		s->count[i]++;
	return 0;
}

/* The index grows (its table doubles) between two slices: every plugin
 * there all along is seen once or twice, never missed; the cursor passes
 * over the second sight. */
static void test_growth_between_slices(void **state)
{
	struct fixture *f = *state;
	struct seen s = {calloc(5000, 1), 5000};
	struct control_cursor *cur = NULL;
	struct reg_plugin p;
	char name[32], alloc[32], prev[40] = "";
	size_t pos = 0, walked = 0;
	int rc, calls = 0, twice = 0;

	assert_non_null(s.count);
	fill_n(f, 5000);
	while ((rc = registry_each_plugin_slice(f->r, &pos, 700, see, &s)) == 1) {
		if (++calls == 3)
			for (int i = 0; i < 4000; i++) {
				snprintf(name, sizeof(name), "q%05d", i);
				snprintf(alloc, sizeof(alloc), "q%05d", i);
				assert_int_equal(reg(f, "csi-node", name, alloc), 0);
			}
	}
	assert_int_equal(rc, 0);
	assert_true(calls > 3);
	for (int i = 0; i < 5000; i++) {
		assert_in_range(s.count[i], 1, 2);
		twice += s.count[i] == 2;
	}
	assert_true(twice > 0); /* the table did grow in the middle */
	free(s.count);

	/* The cursor: its first slice, then growth, then the rest. */
	for (int i = 0; i < 4000; i++) {
		snprintf(name, sizeof(name), "q%05d", i);
		snprintf(alloc, sizeof(alloc), "q%05d", i);
		assert_int_equal(dereg(f, "csi-node", name, alloc), 0);
	}
	assert_int_equal(control_cursor_open(f->r, NULL, &cur), 0);
	assert_int_equal(control_cursor_prepare(cur, 1), 0);
	for (int i = 0; i < 8000; i++) {
		snprintf(name, sizeof(name), "r%05d", i);
		snprintf(alloc, sizeof(alloc), "r%05d", i);
		assert_int_equal(reg(f, "csi-node", name, alloc), 0);
	}
	while ((rc = control_cursor_next(cur, &p)) == 1) {
		char key[40];

		snprintf(key, sizeof(key), "%s/%s", p.type, p.name);
		assert_true(strcmp(prev, key) < 0);
		memcpy(prev, key, sizeof(prev));
		walked += p.name[0] == 'p';
		reg_plugin_free_contents(&p);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(walked, 5000);
	control_cursor_free(cur);
}

static void test_empty(void **state)
{
	struct fixture *f = *state;
	struct control_cursor *cur = NULL;
	struct reg_plugin p;

	assert_int_equal(control_cursor_open(f->r, NULL, &cur), 0);
	assert_int_equal(control_cursor_prepare(cur, 3), 1);
	assert_int_equal(control_cursor_total(cur), 0);
	assert_int_equal(control_cursor_next(cur, &p), 0);
	assert_int_equal(control_cursor_next(cur, &p), 0);
	control_cursor_free(cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_order),
	    T(test_changes_during_walk),
	    T(test_growth_between_slices),
	    T(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
