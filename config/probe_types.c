/* SPDX-License-Identifier: MIT */
/*
 * [probe.TYPE] sections (config_probe.h): the probe settings of one
 * registered type over [probe].  The keys are [probe]'s and are read by
 * keys.c's one value parser (config_probe_type_key); here is what belongs
 * to the sections themselves: the list, and the rule that TYPE is one of
 * [registry] types (checked once the whole file is read, so the sections may
 * come before [registry]).  A section keeps only the keys it sets: what it
 * does not set is [probe]'s, by reg_probe_settings_of, the one resolver the
 * prober uses too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "array.h"
#include "config_probe.h"
#include "err.h"
#include "registry.h"
#include "strutil.h"

/* cfg's [probe.TYPE] entries: the config's own (the policy shows them
 * const to those who read it). */
static struct reg_probe_type *entries(struct plugfs_config *cfg)
{
	return (struct reg_probe_type *)cfg->probe.types;
}

/* `name = value' in a [probe.TYPE] section: one of [probe]'s keys, read
 * by config_set_value into a scratch config, then kept in the section's
 * entry (the keys it does not set stay 0). */
int config_probe_type_key(struct parse_ctx *c, const char *name, const char *value)
{
	struct reg_probe_type *e = c->probe_section;
	struct plugfs_config *real = c->cfg, scratch;
	const struct reg_probe_settings *v = &scratch.probe.dflt;
	const struct key_def *def = NULL;
	struct key_def local;
	char section[sizeof(PROBE_SECTION_PREFIX) + REG_NAME_MAX + 1];
	char known[128], qbuf[QUOTE_BUF];
	unsigned *key_line;
	size_t k = 0;

	if (!e)
		return 1; /* the section line was reported */
	key_line = c->probe_lines[e - entries(real)].key_line;
	snprintf(section, sizeof(section), "%s%s", PROBE_SECTION_PREFIX, e->type);
	for (size_t i = 0; i < CONFIG_N_KEYS; i++) {
		if (strcmp(config_keys[i].section, "probe") != 0)
			continue;
		if (strcmp(config_keys[i].key, name) == 0) {
			def = &config_keys[i];
			break;
		}
		k++;
	}
	if (!def) {
		config_list_keys("probe", known, sizeof(known));
		config_fail(c, c->lineno, -EINVAL, "unknown key `%s' in [%s]; known keys: %s",
			    config_quote(name, qbuf, sizeof(qbuf)), section, known);
		return 0;
	}
	c->prev_def = def;
	if (key_line[k]) {
		config_fail(c, c->lineno, -EINVAL,
			    "duplicate key `%s' in [%s] (first set on line %u)", name, section,
			    key_line[k]);
		return 0;
	}
	key_line[k] = c->lineno;
	local = *def;
	local.section = section;
	memset(&scratch, 0, sizeof(scratch));
	c->cfg = &scratch;
	config_set_value(c, &local, value);
	c->cfg = real;
	/* The one field the key set; the others are 0 in scratch. */
	if (v->mode != REG_PROBE_DEFAULT)
		e->s.mode = v->mode;
	if (v->interval_ms)
		e->s.interval_ms = v->interval_ms;
	if (v->timeout_ms)
		e->s.timeout_ms = v->timeout_ms;
	if (v->failures)
		e->s.failures = v->failures;
	return c->err_code ? 0 : 1;
}

struct reg_probe_type *config_probe_type_entry(struct parse_ctx *c, const char *type, unsigned line)
{
	struct plugfs_config *cfg = c->cfg;
	size_t n = cfg->probe.n_types;
	struct reg_probe_type *grown = entries(cfg);
	struct probe_lines *lines = c->probe_lines;

	for (size_t i = 0; i < n; i++)
		if (strcmp(cfg->probe.types[i].type, type) == 0)
			return &grown[i];
	if (PLUGFS_GROW_EXACT(grown, n) != 0)
		return NULL;
	cfg->probe.types = grown;
	if (PLUGFS_GROW_EXACT(lines, n) != 0)
		return NULL;
	c->probe_lines = lines;
	memset(&grown[n], 0, sizeof(grown[n]));
	memset(&lines[n], 0, sizeof(lines[n]));
	grown[n].type = strdup(type);
	if (!grown[n].type)
		return NULL;
	lines[n].line = line;
	cfg->probe.n_types++;
	return &grown[n];
}

int config_probe_types_finish(const struct parse_ctx *c, unsigned *line, char *msg, size_t len)
{
	const struct plugfs_config *cfg = c->cfg;

	for (size_t i = 0; i < cfg->probe.n_types; i++) {
		const struct reg_probe_type *e = &cfg->probe.types[i];
		bool known = false;
		char types[256];

		for (size_t j = 0; j < cfg->n_types; j++)
			known = known || strcmp(cfg->types[j], e->type) == 0;
		if (!known) {
			plugfs_join(types, sizeof(types), (const char *const *)cfg->types,
				    cfg->n_types, ", ");
			plugfs_seterr(msg, len,
				      "[%s%s]: `%s' is not one of [registry] types (%s); a "
				      "[probe.TYPE] section sets the probes of one registered type",
				      PROBE_SECTION_PREFIX, e->type, e->type, types);
			*line = c->probe_lines[i].line;
			return -EINVAL;
		}
	}
	return 0;
}

void config_probe_types_free(struct plugfs_config *cfg)
{
	for (size_t i = 0; i < cfg->probe.n_types; i++)
		free((char *)cfg->probe.types[i].type);
	free(entries(cfg));
	cfg->probe.types = NULL;
	cfg->probe.n_types = 0;
}
