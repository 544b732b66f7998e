/* SPDX-License-Identifier: MIT */
/*
 * [probe.TYPE] sections (config_probe.h): the probe settings of one
 * registered type over [probe].  The keys are [probe]'s and are read by
 * keys.c's one value parser (config_probe_type_key); here is what belongs
 * to the sections themselves: the list, the rule that TYPE is one of
 * [registry] types (checked once the whole file is read, so the sections may
 * come before [registry]), and inheritance from [probe].
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

/* `name = value' in a [probe.TYPE] section: one of [probe]'s keys, read
 * by config_set_value into a scratch config, then kept in the section's entry. */
int config_probe_type_key(struct parse_ctx *c, const char *name, const char *value)
{
	struct plugfs_probe_type *e = c->probe_section;
	struct plugfs_config *real = c->cfg, scratch;
	const struct key_def *def = NULL;
	struct key_def local;
	char section[sizeof(PROBE_SECTION_PREFIX) + REG_NAME_MAX + 1];
	char known[128], qbuf[QUOTE_BUF];
	size_t k = 0;

	if (!e)
		return 1; /* the section line was reported */
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
	if (e->key_line[k]) {
		config_fail(c, c->lineno, -EINVAL,
			    "duplicate key `%s' in [%s] (first set on line %u)", name, section,
			    e->key_line[k]);
		return 0;
	}
	e->key_line[k] = c->lineno;
	local = *def;
	local.section = section;
	memset(&scratch, 0, sizeof(scratch));
	c->cfg = &scratch;
	config_set_value(c, &local, value);
	c->cfg = real;
	if (def->off == F(probe_mode))
		e->s.mode = scratch.probe_mode;
	else if (def->off == F(probe_interval_ms))
		e->s.interval_ms = scratch.probe_interval_ms;
	else if (def->off == F(probe_timeout_ms))
		e->s.timeout_ms = scratch.probe_timeout_ms;
	else
		e->s.failures = scratch.probe_failures;
	return c->err_code ? 0 : 1;
}

struct plugfs_probe_type *config_probe_type_entry(struct plugfs_config *cfg, const char *type,
						  unsigned line)
{
	struct plugfs_probe_type *e;

	for (size_t i = 0; i < cfg->n_probe_types; i++)
		if (strcmp(cfg->probe_types[i].type, type) == 0)
			return &cfg->probe_types[i];
	if (PLUGFS_GROW_EXACT(cfg->probe_types, cfg->n_probe_types) != 0)
		return NULL;
	e = &cfg->probe_types[cfg->n_probe_types];
	memset(e, 0, sizeof(*e));
	e->type = strdup(type);
	if (!e->type)
		return NULL;
	e->line = line;
	cfg->n_probe_types++;
	return e;
}

int config_probe_types_finish(struct plugfs_config *cfg, unsigned *line, char *msg, size_t len)
{
	for (size_t i = 0; i < cfg->n_probe_types; i++) {
		struct plugfs_probe_type *e = &cfg->probe_types[i];
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
			*line = e->line;
			return -EINVAL;
		}
		if (!e->key_line[0])
			e->s.mode = cfg->probe_mode;
		if (!e->key_line[1])
			e->s.interval_ms = cfg->probe_interval_ms;
		if (!e->key_line[2])
			e->s.timeout_ms = cfg->probe_timeout_ms;
		if (!e->key_line[3])
			e->s.failures = cfg->probe_failures;
	}
	return 0;
}

void config_probe_types_free(struct plugfs_config *cfg)
{
	for (size_t i = 0; i < cfg->n_probe_types; i++)
		free(cfg->probe_types[i].type);
	free(cfg->probe_types);
	cfg->probe_types = NULL;
	cfg->n_probe_types = 0;
}

void config_probe_settings(const struct plugfs_config *cfg, const char *type,
			   struct plugfs_probe_settings *out)
{
	*out = (struct plugfs_probe_settings){
	    .mode = cfg->probe_mode,
	    .interval_ms = cfg->probe_interval_ms,
	    .timeout_ms = cfg->probe_timeout_ms,
	    .failures = cfg->probe_failures,
	};
	for (size_t i = 0; type && i < cfg->n_probe_types; i++)
		if (strcmp(cfg->probe_types[i].type, type) == 0)
			*out = cfg->probe_types[i].s;
}
