/* SPDX-License-Identifier: MIT */
/*
 * A plugin's info file (fs_render_info): one line per registration, the
 * active one first, "alloc socket version kind registered_at health".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "fs_internal.h"
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
