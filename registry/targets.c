/* SPDX-License-Identifier: MIT */
/*
 * What a probe round needs of the registrations (registry.h,
 * registry_probe_targets): their keys, sockets, probe settings and health,
 * copied under the registry mutex into one array and one block of
 * strings, so that the round probes with no lock held.  A full snapshot
 * (registry_snapshot) copies every field, options included, in some
 * allocations per registration; at 100,000 registrations that copy and its
 * free cost more than the round's connects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static int node_cmp(const void *a, const void *b)
{
	const struct plugin_node *x = *(const struct plugin_node *const *)a;
	const struct plugin_node *y = *(const struct plugin_node *const *)b;
	int c = strcmp(x->pub.type, y->pub.type);

	return c ? c : strcmp(x->pub.name, y->pub.name);
}

/* Copies s into the block at *at; returns the copy. */
static const char *put(char **at, const char *s)
{
	size_t len = strlen(s ? s : "") + 1;
	char *d = *at;

	memcpy(d, s ? s : "", len);
	*at += len;
	return d;
}

int registry_probe_targets(struct registry *r, const char *type, struct reg_probe_targets *out)
{
	const struct plugin_node *p = NULL, **nodes = NULL;
	size_t pos = 0, n_nodes = 0, n = 0, bytes = 0, k = 0;
	char *at;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	lock(r);
	nodes = calloc(index_count_plugins(&r->ix) + 1, sizeof(*nodes));
	if (!nodes) {
		rc = -ENOMEM;
		goto out;
	}
	while ((p = index_next_plugin(&r->ix, &pos, p))) {
		if (p->pub.n_regs == 0 || (type && strcmp(type, p->pub.type) != 0))
			continue;
		nodes[n_nodes++] = p;
		n += p->pub.n_regs;
		bytes += strlen(p->pub.type) + strlen(p->pub.name) + 2;
		for (size_t j = 0; j < p->pub.n_regs; j++) {
			const struct registration *g = &p->pub.regs[j];

			bytes += strlen(g->alloc) + strlen(g->socket) + 3 +
				 (g->csi_name ? strlen(g->csi_name) : 0);
		}
	}
	/* In (type, name) order, as a snapshot gives them. */
	if (n_nodes > 1)
		qsort(nodes, n_nodes, sizeof(*nodes), node_cmp);
	out->t = calloc(n ? n : 1, sizeof(*out->t));
	out->strings = malloc(bytes ? bytes : 1);
	if (!out->t || !out->strings) {
		rc = -ENOMEM;
		goto out;
	}
	at = out->strings;
	for (size_t i = 0; i < n_nodes; i++) {
		const char *ty = put(&at, nodes[i]->pub.type);
		const char *name = put(&at, nodes[i]->pub.name);

		for (size_t j = 0; j < nodes[i]->pub.n_regs; j++) {
			const struct registration *g = &nodes[i]->pub.regs[j];
			struct reg_probe_target *t = &out->t[k++];

			t->type = ty;
			t->name = name;
			t->alloc = put(&at, g->alloc);
			t->socket = put(&at, g->socket);
			t->csi_name = put(&at, g->csi_name);
			t->probe = g->probe;
			t->runtime = g->runtime;
		}
	}
	out->n = k;
out:
	unlock(r);
	free(nodes);
	if (rc < 0)
		reg_probe_targets_free(out);
	return rc;
}

void reg_probe_targets_free(struct reg_probe_targets *t)
{
	if (!t)
		return;
	free(t->t);
	free(t->strings);
	memset(t, 0, sizeof(*t));
}
