/* SPDX-License-Identifier: MIT */
/*
 * A cursor over the registry's plugins in (type, name) order (control.h):
 * the names are taken at the open into one arena ("type\0name\0" each) with
 * an array of offsets, sorted; each step looks one plugin up by name and
 * copies it.  The registry itself is never copied whole, so a walk of
 * 100,000 plugins costs the names (a few MB) and one plugin at a time.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

struct control_cursor {
	struct registry *reg;
	const char *type; /* filter; borrowed for the open only */
	char *arena;	  /* "type\0name\0" per plugin */
	size_t len, cap;
	size_t *off; /* start of each plugin's key in arena */
	size_t n, n_cap;
	size_t next; /* index of the next key to look up */
	size_t skipped;
	int err; /* -ENOMEM while collecting */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 4096 / elem;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* registry_each_plugin: under the registry mutex, plugins with a
 * registration only. */
static int collect(void *arg, const struct reg_plugin *p)
{
	struct control_cursor *cur = arg;
	size_t lt = strlen(p->type) + 1, ln = strlen(p->name) + 1;

	if (cur->type && strcmp(cur->type, p->type) != 0)
		return 0;
	if (grow((void **)&cur->arena, &cur->cap, cur->len + lt + ln, 1) ||
	    grow((void **)&cur->off, &cur->n_cap, cur->n + 1, sizeof(*cur->off))) {
		cur->err = -ENOMEM;
		return -ENOMEM;
	}
	cur->off[cur->n++] = cur->len;
	memcpy(cur->arena + cur->len, p->type, lt);
	memcpy(cur->arena + cur->len + lt, p->name, ln);
	cur->len += lt + ln;
	return 0;
}

static int key_cmp(const void *a, const void *b, void *arg)
{
	const char *arena = arg;
	const char *x = arena + *(const size_t *)a, *y = arena + *(const size_t *)b;
	int c = strcmp(x, y);

	return c ? c : strcmp(x + strlen(x) + 1, y + strlen(y) + 1);
}

int control_cursor_open(struct registry *reg, const char *type, struct control_cursor **out)
{
	struct control_cursor *cur = calloc(1, sizeof(*cur));
	int rc;

	*out = NULL;
	if (!cur)
		return -ENOMEM;
	cur->reg = reg;
	cur->type = type;
	rc = registry_each_plugin(reg, collect, cur);
	cur->type = NULL;
	if (rc || cur->err) {
		rc = cur->err ? cur->err : rc < 0 ? rc : -EIO;
		control_cursor_free(cur);
		return rc;
	}
	if (cur->n > 1)
		qsort_r(cur->off, cur->n, sizeof(*cur->off), key_cmp, cur->arena);
	*out = cur;
	return 0;
}

int control_cursor_next(struct control_cursor *cur, struct reg_plugin *out)
{
	memset(out, 0, sizeof(*out));
	while (cur->next < cur->n) {
		const char *t = cur->arena + cur->off[cur->next];
		int rc = registry_get_plugin(cur->reg, t, t + strlen(t) + 1, out);

		if (rc == -ENOENT) {
			cur->next++;
			cur->skipped++;
			continue;
		}
		if (rc < 0)
			return rc; /* the same plugin is tried again next time */
		cur->next++;
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
	free(cur->arena);
	free(cur->off);
	free(cur);
}
