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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/*
 * A plugin's place in (type, name) order, with the comparison's first
 * steps precomputed: the rank of its type among the configured types and
 * the first 16 bytes of its name as two big-endian numbers, so that the
 * sort compares numbers held in the array and reads a name only to break
 * a tie on them (reading 100,000 names in random order costs more than
 * the rest of the sort).
 */
struct sort_key {
	uint64_t type_rank, n0, n1;
	const struct plugin_node *p;
	size_t first; /* its registrations' verdicts: keep[first ...] */
};

static uint64_t be_prefix(const char *s, size_t *at)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++) {
		unsigned char c = (unsigned char)s[*at];

		v = v << 8 | c;
		if (c)
			(*at)++;
	}
	return v;
}

static int key_cmp(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;

	if (x->type_rank != y->type_rank)
		return x->type_rank < y->type_rank ? -1 : 1;
	if (x->n0 != y->n0)
		return x->n0 < y->n0 ? -1 : 1;
	if (x->n1 != y->n1)
		return x->n1 < y->n1 ? -1 : 1;
	return strcmp(x->p->pub.name, y->p->pub.name);
}

/* The rank of each configured type in strcmp order. */
static void type_ranks(const struct registry *r, uint64_t *rank)
{
	for (size_t i = 0; i < r->n_types; i++) {
		rank[i] = 0;
		for (size_t j = 0; j < r->n_types; j++)
			rank[i] += strcmp(r->types[j], r->types[i]) < 0;
	}
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
	return registry_probe_targets_kept(r, type, NULL, NULL, out);
}

int registry_probe_targets_kept(struct registry *r, const char *type, reg_target_keep_fn keep,
				void *arg, struct reg_probe_targets *out)
{
	const struct plugin_node *p = NULL;
	struct sort_key *nodes = NULL;
	uint64_t *rank = NULL;
	bool *kept = NULL;
	size_t pos = 0, n_nodes = 0, n = 0, bytes = 0, k = 0, n_seen = 0;
	char *at;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	lock(r);
	nodes = calloc(index_count_plugins(&r->ix) + 1, sizeof(*nodes));
	rank = calloc(r->n_types + 1, sizeof(*rank));
	if (keep) {
		size_t n_plugins, n_regs;

		registry_counts(r, &n_plugins, &n_regs);
		kept = calloc(n_regs + 1, sizeof(*kept));
	}
	if (!nodes || !rank || (keep && !kept)) {
		rc = -ENOMEM;
		goto out;
	}
	type_ranks(r, rank);
	while ((p = index_next_plugin(&r->ix, &pos, p))) {
		size_t at_name = 0;

		size_t n_kept = p->pub.n_regs;

		if (p->pub.n_regs == 0 || (type && strcmp(type, p->pub.type) != 0))
			continue;
		if (keep) {
			/* Asked once each, under the mutex: the fill below reads
			 * the same verdicts. */
			n_kept = 0;
			for (size_t j = 0; j < p->pub.n_regs; j++)
				n_kept += kept[n_seen + j] = keep(arg, p->pub.type, &p->pub.regs[j]);
			nodes[n_nodes].first = n_seen;
			n_seen += p->pub.n_regs;
			if (n_kept == 0)
				continue;
		}
		nodes[n_nodes].p = p;
		nodes[n_nodes].type_rank = p->type_idx < r->n_types ? rank[p->type_idx] : r->n_types;
		nodes[n_nodes].n0 = be_prefix(p->pub.name, &at_name);
		nodes[n_nodes++].n1 = be_prefix(p->pub.name, &at_name);
		n += n_kept;
		bytes += strlen(p->pub.type) + strlen(p->pub.name) + 2;
		for (size_t j = 0; j < p->pub.n_regs; j++) {
			const struct registration *g = &p->pub.regs[j];

			if (keep && !kept[nodes[n_nodes - 1].first + j])
				continue;
			bytes += strlen(g->alloc) + strlen(g->socket) + 3 +
				 (g->csi_name ? strlen(g->csi_name) : 0);
		}
	}
	/* In (type, name) order, as a snapshot gives them. */
	if (n_nodes > 1)
		qsort(nodes, n_nodes, sizeof(*nodes), key_cmp);
	out->t = calloc(n ? n : 1, sizeof(*out->t));
	out->strings = malloc(bytes ? bytes : 1);
	if (!out->t || !out->strings) {
		rc = -ENOMEM;
		goto out;
	}
	at = out->strings;
	for (size_t i = 0; i < n_nodes; i++) {
		const struct plugin_node *q = nodes[i].p;
		const char *ty = put(&at, q->pub.type);
		const char *name = put(&at, q->pub.name);

		for (size_t j = 0; j < q->pub.n_regs; j++) {
			const struct registration *g = &q->pub.regs[j];
			struct reg_probe_target *t;

			if (keep && !kept[nodes[i].first + j])
				continue;
			t = &out->t[k++];

			t->id = g->id;
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
	free(rank);
	free(kept);
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
