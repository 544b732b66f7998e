/* SPDX-License-Identifier: MIT */
/*
 * A cursor over the registry's plugins in (type, name) order (control.h):
 * the names are taken a slice of the index at a time
 * (registry_each_plugin_slice, CURSOR_SLICE plugins per step) into one
 * arena ("type\1name\0" each: types and names are of [A-Za-z0-9._-], so
 * one strcmp orders by type, then name) with an array of offsets.  The
 * offsets are then sorted in runs of CURSOR_RUN, one run per step, and the
 * walk merges the runs through a small heap of their heads, passing over a
 * name seen twice (the index grew between two slices).  No step costs more
 * than a slice or a run's sort, at any size.  Each step looks one
 * plugin up by name and copies it.  The registry itself is never copied
 * whole: a walk of 100,000 plugins costs the names (a few MB) and one plugin
 * at a time.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "array.h"

#define CURSOR_RUN 1024
#define CURSOR_SLICE 4096

struct control_cursor {
	struct registry *reg;
	char *type;  /* filter, or NULL */
	size_t slot; /* where the next slice of the index starts */
	bool collected;
	char *arena;	  /* "type\0name\0" per plugin */
	size_t len, cap;
	size_t *off; /* start of each plugin's key in arena */
	size_t n, n_cap;
	size_t skipped;
	size_t n_runs, runs_sorted; /* runs of CURSOR_RUN offsets */
	size_t *run_pos;	    /* next offset of each run */
	size_t *heap, n_heap;	    /* runs by their next key, smallest first */
	bool ready;		    /* every run sorted, the heap built */
	const char *last;	    /* the last name walked */
	int err; /* -ENOMEM while collecting */
};

/* registry_each_plugin: under the registry mutex, plugins with a
 * registration only. */
static int collect(void *arg, const struct reg_plugin *p)
{
	struct control_cursor *cur = arg;
	size_t lt = strlen(p->type) + 1, ln = strlen(p->name) + 1;

	if (cur->type && strcmp(cur->type, p->type) != 0)
		return 0;
	if (PLUGFS_RESERVE(cur->arena, cur->cap, cur->len + lt + ln, 4096) ||
	    PLUGFS_RESERVE(cur->off, cur->n_cap, cur->n + 1, 4096 / sizeof(*cur->off))) {
		cur->err = -ENOMEM;
		return -ENOMEM;
	}
	cur->off[cur->n++] = cur->len;
	memcpy(cur->arena + cur->len, p->type, lt);
	cur->arena[cur->len + lt - 1] = '\1';
	memcpy(cur->arena + cur->len + lt, p->name, ln);
	cur->len += lt + ln;
	return 0;
}

static int key_cmp(const void *a, const void *b, void *arg)
{
	const char *arena = arg;

	return strcmp(arena + *(const size_t *)a, arena + *(const size_t *)b);
}

static size_t run_end(const struct control_cursor *cur, size_t r)
{
	size_t e = (r + 1) * CURSOR_RUN;

	return e < cur->n ? e : cur->n;
}

/* The key at the head of run r. */
static const char *head(const struct control_cursor *cur, size_t r)
{
	return cur->arena + cur->off[cur->run_pos[r]];
}

static void sift_down(struct control_cursor *cur, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i, t;

		if (l < cur->n_heap && strcmp(head(cur, cur->heap[l]), head(cur, cur->heap[m])) < 0)
			m = l;
		if (l + 1 < cur->n_heap &&
		    strcmp(head(cur, cur->heap[l + 1]), head(cur, cur->heap[m])) < 0)
			m = l + 1;
		if (m == i)
			return;
		t = cur->heap[i];
		cur->heap[i] = cur->heap[m];
		cur->heap[m] = t;
		i = m;
	}
}

int control_cursor_open(struct registry *reg, const char *type, struct control_cursor **out)
{
	struct control_cursor *cur = calloc(1, sizeof(*cur));

	*out = NULL;
	if (!cur)
		return -ENOMEM;
	cur->reg = reg;
	if (type && !(cur->type = strdup(type))) {
		free(cur);
		return -ENOMEM;
	}
	*out = cur;
	return 0;
}

/* One step of the preparation: a slice of the names, a run's sort, or
 * the merge set up.  0 or -ENOMEM. */
static int prepare_step(struct control_cursor *cur)
{
	if (!cur->collected) {
		int rc = registry_each_plugin_slice(cur->reg, &cur->slot, CURSOR_SLICE, collect, cur);

		if (rc < 0)
			return cur->err ? cur->err : rc;
		if (rc > 0)
			return 0;
		cur->collected = true;
		cur->n_runs = (cur->n + CURSOR_RUN - 1) / CURSOR_RUN;
		cur->run_pos = calloc(cur->n_runs ? cur->n_runs : 1, sizeof(*cur->run_pos));
		cur->heap = calloc(cur->n_runs ? cur->n_runs : 1, sizeof(*cur->heap));
		return cur->run_pos && cur->heap ? 0 : -ENOMEM;
	}
	if (cur->runs_sorted < cur->n_runs) {
		size_t r = cur->runs_sorted++, b = r * CURSOR_RUN;

		qsort_r(cur->off + b, run_end(cur, r) - b, sizeof(*cur->off), key_cmp, cur->arena);
		cur->run_pos[r] = b;
		cur->heap[cur->n_heap++] = r;
		return 0;
	}
	for (size_t i = cur->n_heap / 2; i-- > 0;)
		sift_down(cur, i);
	cur->ready = true;
	return 0;
}

int control_cursor_prepare(struct control_cursor *cur, size_t steps)
{
	while (!cur->ready && steps-- > 0) {
		int rc = prepare_step(cur);

		if (rc < 0)
			return rc;
	}
	return cur->ready ? 1 : 0;
}

int control_cursor_next(struct control_cursor *cur, struct reg_plugin *out)
{
	int rc = control_cursor_prepare(cur, SIZE_MAX);

	memset(out, 0, sizeof(*out));
	if (rc < 0)
		return rc;
	while (cur->n_heap > 0) {
		size_t r = cur->heap[0];
		char *key = cur->arena + cur->off[cur->run_pos[r]];
		char *sep = strchr(key, '\1');
		bool again = cur->last && strcmp(cur->last, key) == 0;

		rc = 0;
		if (!again) {
			*sep = '\0';
			rc = registry_get_plugin(cur->reg, key, sep + 1, out);
			*sep = '\1';
			if (rc < 0 && rc != -ENOENT)
				return rc; /* the same plugin is tried again next time */
		}
		if (++cur->run_pos[r] == run_end(cur, r))
			cur->heap[0] = cur->heap[--cur->n_heap];
		sift_down(cur, 0);
		cur->last = key;
		if (again)
			continue;
		if (rc == -ENOENT) {
			cur->skipped++;
			continue;
		}
		return 1;
	}
	return 0;
}

size_t control_cursor_total(const struct control_cursor *cur)
{
	return cur->n;
}

size_t control_cursor_skipped(const struct control_cursor *cur)
{
	return cur->skipped;
}

void control_cursor_free(struct control_cursor *cur)
{
	if (!cur)
		return;
	free(cur->type);
	free(cur->arena);
	free(cur->off);
	free(cur->run_pos);
	free(cur->heap);
	free(cur);
}
