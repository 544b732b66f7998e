/* SPDX-License-Identifier: MIT */
/*
 * [discover.NAME] sections (config_discover.h): a directory plugfs watches
 * for plugin sockets, with how they are laid out below it and how what it
 * finds is named.  The keys are read here (they set a struct plugfs_discover,
 * not struct plugfs_config); the rules that need the whole file (a root is
 * required, a fixed type is one of [registry] types, roots do not overlap
 * each other or the mount) run once it is read, so the sections may come
 * before [registry] and [mount].  Over keys.c (config_parse_number) and
 * message.c; under validate.c, defaults.c and config.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_discover.h"
#include "array.h"
#include "config_internal.h"
#include "err.h"
#include "registry.h"
#include "strutil.h"

#define FORGET_AFTER_MAX 315360000 /* ten years of seconds, as tombstone_ttl */

static const char *const keys[PLUGFS_DK_N] = {"root", "layout", "socket",
					      "type", "name",	"forget_after"};
static const char *const layouts[] = {"alloc", "plugin", NULL};

const char *discover_layout_name(enum plugfs_discover_layout l)
{
	if ((unsigned)l < sizeof(layouts) / sizeof(layouts[0]) - 1)
		return layouts[l];
	return "unknown";
}

struct plugfs_discover *config_discover_entry(struct plugfs_config *cfg, const char *name,
					      unsigned line, bool *too_many)
{
	struct plugfs_discover *e;

	*too_many = false;
	for (size_t i = 0; i < cfg->n_discover; i++)
		if (strcmp(cfg->discover[i].name, name) == 0)
			return &cfg->discover[i];
	if (cfg->n_discover >= PLUGFS_DISCOVER_MAX) {
		*too_many = true;
		return NULL;
	}
	if (PLUGFS_GROW_EXACT(cfg->discover, cfg->n_discover) != 0)
		return NULL;
	e = &cfg->discover[cfg->n_discover];
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	e->socket = strdup("csi.sock");
	if (!e->name || !e->socket) {
		free(e->name);
		free(e->socket);
		return NULL;
	}
	e->layout = PLUGFS_DISCOVER_ALLOC;
	e->forget_after = 3600;
	e->line = line;
	cfg->n_discover++;
	return e;
}

/* Replaces *p with a copy of v, or with NULL when v is NULL. */
static int set_str(char **p, const char *v)
{
	char *copy = NULL;

	if (v && !(copy = strdup(v)))
		return -ENOMEM;
	free(*p);
	*p = copy;
	return 0;
}

int config_discover_key(struct parse_ctx *c, const char *name, const char *value)
{
	struct plugfs_discover *e = c->discover_section;
	char section[sizeof(DISCOVER_SECTION_PREFIX) + REG_NAME_MAX + 1];
	char known[128], qbuf[QUOTE_BUF], msg[REG_ERR_MAX], field[sizeof(section) + 16];
	const char *q;
	int k = -1, rc = 0;
	uint64_t n;

	if (!e)
		return 1; /* the section line was reported */
	snprintf(section, sizeof(section), "%s%s", DISCOVER_SECTION_PREFIX, e->name);
	for (int i = 0; i < PLUGFS_DK_N; i++)
		if (strcmp(keys[i], name) == 0)
			k = i;
	c->prev_def = NULL;
	if (k < 0) {
		plugfs_join(known, sizeof(known), keys, PLUGFS_DK_N, ", ");
		config_fail(c, c->lineno, -EINVAL, "unknown key `%s' in [%s]; known keys: %s",
			    config_quote(name, qbuf, sizeof(qbuf)), section, known);
		return 0;
	}
	if (e->key_line[k]) {
		config_fail(c, c->lineno, -EINVAL,
			    "duplicate key `%s' in [%s] (first set on line %u)", name, section,
			    e->key_line[k]);
		return 0;
	}
	e->key_line[k] = c->lineno;
	c->prev_discover_key = k;
	q = config_quote(value, qbuf, sizeof(qbuf));
	snprintf(field, sizeof(field), "[%s] %s", section, name);
#define BAD(fmt, ...)                                                                              \
	do {                                                                                       \
		config_fail(c, c->lineno, -EINVAL, "%s = `%s': " fmt, field, q, ##__VA_ARGS__);    \
		return 0;                                                                          \
	} while (0)
	switch ((enum plugfs_discover_key)k) {
	case PLUGFS_DK_ROOT:
		if (reg_validate_path(NULL, value, false, NULL, 0) < 0)
			BAD("expected an absolute, normalised directory other than `/' (no empty, "
			    "`.' or `..' components, no trailing `/')");
		rc = set_str(&e->root, value);
		break;
	case PLUGFS_DK_LAYOUT:
		if (strcasecmp(value, "alloc") == 0)
			e->layout = PLUGFS_DISCOVER_ALLOC;
		else if (strcasecmp(value, "plugin") == 0)
			e->layout = PLUGFS_DISCOVER_PLUGIN;
		else
			BAD("expected alloc (ROOT/<alloc id>/SOCKET) or plugin "
			    "(ROOT/<plugin name>/SOCKET)");
		break;
	case PLUGFS_DK_SOCKET:
		if (reg_validate_name(field, value, msg, sizeof(msg)) < 0) {
			config_fail(c, c->lineno, -EINVAL, "%s; expected the socket's file name",
				    msg);
			return 0;
		}
		rc = set_str(&e->socket, value);
		break;
	case PLUGFS_DK_TYPE:
	case PLUGFS_DK_NAME:
		if (strcmp(value, "auto") == 0) {
			rc = set_str(k == PLUGFS_DK_TYPE ? &e->type : &e->plugin, NULL);
			break;
		}
		if (reg_validate_name(field, value, msg, sizeof(msg)) < 0) {
			config_fail(c, c->lineno, -EINVAL, "%s; or `auto' (%s)", msg,
				    k == PLUGFS_DK_TYPE ? "ask the plugin"
							: "GetPluginInfo's name");
			return 0;
		}
		rc = set_str(k == PLUGFS_DK_TYPE ? &e->type : &e->plugin, value);
		break;
	case PLUGFS_DK_FORGET_AFTER:
		if (!config_parse_number(value, FORGET_AFTER_MAX, &n))
			BAD("expected a whole number of seconds 0-%d (0: never)", FORGET_AFTER_MAX);
		e->forget_after = (int64_t)n;
		break;
	case PLUGFS_DK_N:
		break;
	}
#undef BAD
	if (rc < 0) {
		config_fail(c, c->lineno, -ENOMEM, "out of memory");
		return 0;
	}
	return 1;
}

/* dir at or under other, or other under dir. */
static bool overlap(const char *a, const char *b)
{
	return strcmp(a, b) == 0 || reg_path_under(a, b) || reg_path_under(b, a);
}

int config_discover_finish(struct plugfs_config *cfg, unsigned mount_line, unsigned *line,
			   char *msg, size_t len)
{
	for (size_t i = 0; i < cfg->n_discover; i++) {
		struct plugfs_discover *e = &cfg->discover[i];
		unsigned rl = e->key_line[PLUGFS_DK_ROOT];
		char types[256], q1[QUOTE_BUF], q2[QUOTE_BUF];
		bool known = false;

		if (!e->root) {
			plugfs_seterr(
			    msg, len,
			    "[%s%s]: `root' is required; expected the directory to watch, e.g. "
			    "root = /var/lib/nomad/client/csi/plugins",
			    DISCOVER_SECTION_PREFIX, e->name);
			*line = e->line;
			return -EINVAL;
		}
		for (size_t j = 0; e->type && j < cfg->n_types; j++)
			known = known || strcmp(cfg->types[j], e->type) == 0;
		if (e->type && !known) {
			plugfs_join(types, sizeof(types), (const char *const *)cfg->types,
				    cfg->n_types, ", ");
			plugfs_seterr(
			    msg, len,
			    "[%s%s] type = `%s': expected auto or one of [registry] types (%s)",
			    DISCOVER_SECTION_PREFIX, e->name, e->type, types);
			*line = e->key_line[PLUGFS_DK_TYPE];
			return -EINVAL;
		}
		if (overlap(e->root, cfg->mountpoint)) {
			plugfs_seterr(
			    msg, len,
			    "[%s%s] root `%s' overlaps [mount] mountpoint `%s'; expected a "
			    "directory neither in nor above the mount",
			    DISCOVER_SECTION_PREFIX, e->name, config_quote(e->root, q1, sizeof(q1)),
			    config_quote(cfg->mountpoint, q2, sizeof(q2)));
			*line = rl > mount_line ? rl : mount_line;
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			const struct plugfs_discover *o = &cfg->discover[j];

			if (!overlap(e->root, o->root))
				continue;
			plugfs_seterr(
			    msg, len,
			    "[%s%s] root `%s' overlaps [%s%s] root `%s'; expected roots "
			    "neither the same nor one inside another (a socket is found by "
			    "one section)",
			    DISCOVER_SECTION_PREFIX, e->name, config_quote(e->root, q1, sizeof(q1)),
			    DISCOVER_SECTION_PREFIX, o->name,
			    config_quote(o->root, q2, sizeof(q2)));
			*line = rl > o->key_line[PLUGFS_DK_ROOT] ? rl : o->key_line[PLUGFS_DK_ROOT];
			return -EINVAL;
		}
	}
	return 0;
}

const struct plugfs_discover *config_discover_find(const struct plugfs_config *cfg,
						   const char *name)
{
	for (size_t i = 0; i < cfg->n_discover; i++)
		if (strcmp(cfg->discover[i].name, name) == 0)
			return &cfg->discover[i];
	return NULL;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool config_discover_equal(const struct plugfs_discover *a, const struct plugfs_discover *b)
{
	return str_eq(a->name, b->name) && str_eq(a->root, b->root) && a->layout == b->layout &&
	       str_eq(a->socket, b->socket) && str_eq(a->type, b->type) &&
	       str_eq(a->plugin, b->plugin) && a->forget_after == b->forget_after;
}

void config_discover_free(struct plugfs_config *cfg)
{
	for (size_t i = 0; i < cfg->n_discover; i++) {
		struct plugfs_discover *e = &cfg->discover[i];

		free(e->name);
		free(e->root);
		free(e->socket);
		free(e->type);
		free(e->plugin);
	}
	free(cfg->discover);
	cfg->discover = NULL;
	cfg->n_discover = 0;
}
