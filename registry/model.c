/* SPDX-License-Identifier: MIT */
/*
 * The registry's value types and their lifetime: copy, free, compare, and
 * which registration of a plugin is active.  Depends on nothing else in
 * registry/ (only the declarations in reg_model.h), so the store, the
 * indexes and the transactions all build on it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rcstr.h"
#include "registry.h"

/*
 * A value's strings live in one allocation, a reference-counted text
 * (rcstr.h): a registration's six (socket, alloc, type, name, version,
 * csi_name, in that order) and a plugin's two (name, type), each
 * NUL-terminated, the first at the start.  One malloc instead of six costs
 * less memory (a malloc chunk's overhead and rounding per string: about 110
 * bytes a registration) and less time to copy; the count lets the
 * filesystem view share them instead of copying them (reg_model.h,
 * "Sharing", says which, and how long they live).  Only registration_copy and
 * reg_plugin_copy (and plugin_node_new through reg_strings_pack) make owned
 * values, so dropping the first string's reference drops them all.
 */
char *reg_strings_pack(const char *const *in, char **out[], size_t n)
{
	size_t len[8], total = 0;
	char *block, *at;

	if (n > sizeof(len) / sizeof(len[0]))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		len[i] = strlen(in[i] ? in[i] : "") + 1;
		total += len[i];
	}
	block = rcstr_alloc(total);
	if (!block)
		return NULL;
	at = block;
	for (size_t i = 0; i < n; i++) {
		memcpy(at, in[i] ? in[i] : "", len[i]);
		*out[i] = at;
		at += len[i];
	}
	return block;
}

const char *reg_strings_at(const char *first, enum reg_string i)
{
	for (unsigned k = 0; k < (unsigned)i; k++)
		first += strlen(first) + 1;
	return first;
}

_Static_assert(sizeof(void *) != 8 || sizeof(struct registration) == 144,
	       "struct registration has a hole (reg_model.h)");

void registration_free_contents(struct registration *g)
{
	if (!g)
		return;
	rcstr_unref(g->socket); /* the block of all six strings */
	reg_options_free(g->options, g->n_options);
	memset(g, 0, sizeof(*g));
}

void reg_plugin_free_contents(struct reg_plugin *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_regs; i++)
		registration_free_contents(&p->regs[i]);
	free(p->regs);
	rcstr_unref(p->name); /* the block of name and type */
	memset(p, 0, sizeof(*p));
}

void reg_snapshot_free(struct reg_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_plugins; i++)
		reg_plugin_free_contents(&s->plugins[i]);
	free(s->plugins);
	memset(s, 0, sizeof(*s));
}

void reg_options_free(struct reg_option *o, size_t n)
{
	for (size_t i = 0; o && i < n; i++) {
		free(o[i].key);
		free(o[i].value);
	}
	free(o);
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

int reg_options_copy(const struct reg_option *src, size_t n, struct reg_option **out, size_t *n_out)
{
	struct reg_option *o = NULL;

	*out = NULL;
	*n_out = 0;
	if (n == 0)
		return 0;
	o = calloc(n, sizeof(*o));
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		o[i].key = dup_or_empty(src[i].key);
		o[i].value = dup_or_empty(src[i].value);
		if (!o[i].key || !o[i].value) {
			reg_options_free(o, i + 1);
			return -ENOMEM;
		}
	}
	*out = o;
	*n_out = n;
	return 0;
}

int registration_copy(const struct registration *src, struct registration *dst)
{
	const char *in[] = {src->socket,  src->alloc,	 src->type,  src->name,
			    src->version, src->csi_name, src->source};
	char **out[] = {&dst->socket,  &dst->alloc,    &dst->type,  &dst->name,
			&dst->version, &dst->csi_name, &dst->source};

	*dst = *src;
	dst->options = NULL;
	dst->n_options = 0;
	if (!reg_strings_pack(in, out, 7)) {
		memset(dst, 0, sizeof(*dst));
		return -ENOMEM;
	}
	if (reg_options_copy(src->options, src->n_options, &dst->options, &dst->n_options) < 0) {
		registration_free_contents(dst);
		return -ENOMEM;
	}
	return 0;
}

int reg_plugin_copy(const struct reg_plugin *src, struct reg_plugin *dst)
{
	const char *in[] = {src->name, src->type};
	char **out[] = {&dst->name, &dst->type};

	memset(dst, 0, sizeof(*dst));
	dst->id = src->id;
	dst->active = src->active;
	if (!reg_strings_pack(in, out, 2))
		return -ENOMEM;
	dst->regs = calloc(src->n_regs ? src->n_regs : 1, sizeof(*dst->regs));
	if (!dst->regs)
		goto fail;
	for (size_t i = 0; i < src->n_regs; i++) {
		if (registration_copy(&src->regs[i], &dst->regs[i]) < 0)
			goto fail;
		dst->n_regs++;
	}
	return 0;
fail:
	reg_plugin_free_contents(dst);
	return -ENOMEM;
}

bool registration_same_data(const struct registration *a, const struct registration *b)
{
	if (strcmp(a->socket, b->socket) != 0 || strcmp(a->version, b->version) != 0 ||
	    a->kind != b->kind || a->n_options != b->n_options || a->probe != b->probe ||
	    strcmp(a->csi_name ? a->csi_name : "", b->csi_name ? b->csi_name : "") != 0 ||
	    strcmp(a->source ? a->source : "", b->source ? b->source : "") != 0)
		return false;
	for (size_t i = 0; i < a->n_options; i++)
		if (strcmp(a->options[i].key, b->options[i].key) != 0 ||
		    strcmp(a->options[i].value, b->options[i].value) != 0)
			return false;
	return true;
}

const struct registration *reg_plugin_active(const struct reg_plugin *p)
{
	return p && p->active < p->n_regs ? &p->regs[p->active] : NULL;
}

/* The spelling of the probe modes. */
static const char *const probe_names[REG_PROBE_COUNT] = {
    [REG_PROBE_NONE] = "none",
    [REG_PROBE_CONNECT] = "connect",
    [REG_PROBE_CSI] = "csi",
};

const char *reg_probe_name(enum reg_probe p)
{
	return (unsigned)p < REG_PROBE_COUNT ? probe_names[p] : NULL;
}

int reg_probe_parse(const char *s, enum reg_probe *out)
{
	for (int p = REG_PROBE_NONE; s && p < REG_PROBE_COUNT; p++) {
		if (strcmp(s, probe_names[p]) == 0) {
			*out = (enum reg_probe)p;
			return 0;
		}
	}
	return -EINVAL;
}

void reg_probe_settings_of(const struct reg_probe_policy *p, const char *type, enum reg_probe own,
			   struct reg_probe_settings *out)
{
	const struct reg_probe_settings *t = NULL;

	*out = p->dflt;
	for (size_t i = 0; type && i < p->n_types && !t; i++)
		if (strcmp(p->types[i].type, type) == 0)
			t = &p->types[i].s;
	if (t && t->mode != REG_PROBE_DEFAULT)
		out->mode = t->mode;
	if (t && t->interval_ms)
		out->interval_ms = t->interval_ms;
	if (t && t->timeout_ms)
		out->timeout_ms = t->timeout_ms;
	if (t && t->failures)
		out->failures = t->failures;
	if (own != REG_PROBE_DEFAULT)
		out->mode = own;
	if (out->mode == REG_PROBE_DEFAULT)
		out->mode = REG_PROBE_NONE;
}

const char *reg_health_name(enum reg_health h)
{
	switch (h) {
	case REG_HEALTH_UNKNOWN:
		return "unknown";
	case REG_HEALTH_ALIVE:
		return "alive";
	case REG_HEALTH_DEAD:
		return "dead";
	}
	return "?";
}

bool reg_runtime_differs(const struct reg_runtime *a, const struct reg_runtime *b)
{
	return a->health != b->health || a->since != b->since ||
	       strcmp(reg_runtime_error(a), reg_runtime_error(b)) != 0;
}
