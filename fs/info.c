/* SPDX-License-Identifier: MIT */
/*
 * A plugin's info file (fs_render_info): one line per registration, the
 * active one first, "alloc socket version kind registered_at health".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_internal.h"
#include "array.h"
#include "registry.h"
#include "timefmt.h"

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
		if (PLUGFS_RESERVE(*text, *cap, *len + (size_t)n + 1, 128) != 0)
			return -ENOMEM;
	}
}

/* One line of the text. */
static int info_line(char **text, size_t *len, size_t *cap, const char *alloc, const char *socket,
		     const char *version, enum reg_kind k, int64_t registered_at, enum reg_health h)
{
	const char *kind = reg_kind_name(k);
	char when[PLUGFS_TIME_LEN];

	plugfs_format_time(registered_at, -1, when, sizeof(when));
	return text_addf(text, len, cap, "%s %s %s %s %s %s\n", alloc, socket,
			 version && version[0] ? version : "-", kind ? kind : "-", when,
			 reg_health_name(h));
}

size_t fs_info_line_len(const struct registration *r)
{
	const char *kind = reg_kind_name(r->kind);
	/* What plugfs_format_time writes: the form without a fraction, or
	 * "invalid". */
	size_t when = plugfs_format_time(r->registered_at, -1, NULL, 0) == 0
			  ? sizeof("2026-11-30T09:19:05Z") - 1
			  : sizeof("invalid") - 1;

	return strlen(r->alloc) + strlen(r->socket) +
	       (r->version && r->version[0] ? strlen(r->version) : 1) + (kind ? strlen(kind) : 1) +
	       when + strlen(reg_health_name(r->runtime.health)) + 6;
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

		if (k > 0 && r == act)
			continue;
		if (info_line(&text, &len, &cap, r->alloc, r->socket, r->version, r->kind,
			      r->registered_at, r->runtime.health) != 0) {
			free(text);
			return NULL;
		}
	}
	return text;
}

static const struct fs_link *link_of(const struct fs_node *n)
{
	return (const struct fs_link *)(const void *)n;
}

/* The info text's order but for the active one: by seq, highest first
 * (a plugin's seqs are distinct). */
static int by_seq_desc(const void *a, const void *b)
{
	int64_t x = link_of(*(struct fs_node *const *)a)->seq;
	int64_t y = link_of(*(struct fs_node *const *)b)->seq;

	return x < y ? 1 : x > y ? -1 : 0;
}

char *fs_view_render_info(struct fs_view *v, const struct fs_node *pdir)
{
	struct fs_node *allocs = fs_view_child(v, pdir, "allocs");
	struct fs_node *sock = fs_view_child(v, pdir, v->socket_name);
	const char *active = sock ? sock->data : NULL;
	size_t n = allocs ? fs_dir_count(allocs) : 0, k = 0, len = 0, cap = 128 * (n ? n : 1);
	struct fs_node *one[8], **l = n <= 8 ? one : malloc(n * sizeof(*l)), *c;
	char *text = l ? malloc(cap) : NULL;

	if (!text)
		goto fail;
	text[0] = '\0';
	/* The links in text order: by seq (sorted: a plugin may have a
	 * thousand), then the one csi.sock shares its text with moved first. */
	for (size_t i = 0; k < n && (c = fs_dir_next(allocs, &i, NULL));)
		l[k++] = c;
	qsort(l, k, sizeof(*l), by_seq_desc);
	for (size_t i = 0; i < k; i++) {
		if (l[i]->data != active)
			continue;
		c = l[i];
		memmove(l + 1, l, i * sizeof(*l));
		l[0] = c;
		break;
	}
	for (size_t i = 0; i < k; i++)
		if (info_line(&text, &len, &cap, l[i]->name, l[i]->data,
			      reg_strings_at(l[i]->data, REG_STR_VERSION),
			      (enum reg_kind)l[i]->reg_kind, link_of(l[i])->registered_at,
			      (enum reg_health)l[i]->reg_health) != 0)
			goto fail;
	if (l != one)
		free(l);
	return text;
fail:
	if (l != one)
		free(l);
	free(text);
	return NULL;
}
