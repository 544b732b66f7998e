/* SPDX-License-Identifier: MIT */
/*
 * The keys of each section of plugfs.ini (the table of config_keys) and how
 * each kind of value is read and checked: paths, names, numbers, seconds,
 * words, lists (config_internal.h).  Also the names the values print as
 * (log_level_name; a probe mode's are the registry's, reg_probe_name).
 */
#include "config.h"
#include "array.h"
#include "config_internal.h"
#include "config_discover.h"
#include "config_probe.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry.h"
#include "strutil.h"

#define SUN_PATH_BYTES 108 /* sizeof(((struct sockaddr_un *)0)->sun_path) */
#define GROUP_NAME_MAX 32

const struct key_def config_keys[CONFIG_N_KEYS] = {
    {"mount", "mountpoint", K_PATH, F(mountpoint), 0, 0, 0, NULL},
    {"mount", "socket_name", K_FILE_NAME, F(socket_name), 0, 0, 0, NULL},
    {"mount", "allow_other", K_BOOL, F(allow_other), 0, 0, 0, NULL},
    {"mount", "cache_timeout", K_UINT, F(cache_timeout), 0, 0, 86400, " of seconds"},
    {"state", "path", K_PATH, F(state_path), 0, 0, 0, NULL},
    {"state", "synchronous", K_SYNC, F(synchronous), 0, 0, 0, NULL},
    {"control", "socket", K_SUN_PATH, F(control_socket), 0, 0, 0, NULL},
    {"control", "group", K_GROUP, F(control_group), 0, 0, 0, NULL},
    {"control", "max_clients", K_UINT, F(max_clients), 0, 1, 1024, ""},
    {"control", "idle_timeout", K_UINT, F(idle_timeout), 0, 0, 86400, " of seconds"},
    {"registry", "types", K_TYPES, F(types), F(n_types), 0, 0, NULL},
    {"registry", "socket_roots", K_PATHS, F(socket_roots), F(n_socket_roots), 0, 0, NULL},
    {"registry", "tombstone_ttl", K_INT64, F(tombstone_ttl), 0, 0, 315360000, " of seconds"},
    {"probe", "mode", K_PROBE, F(probe.dflt.mode), 0, 0, 0, NULL},
    {"probe", "interval", K_MSEC, F(probe.dflt.interval_ms), 0, 50, 3600000, NULL},
    {"probe", "timeout", K_MSEC, F(probe.dflt.timeout_ms), 0, 10, 60000, NULL},
    {"probe", "failures", K_UINT, F(probe.dflt.failures), 0, 1, 100, ""},
    {"log", "level", K_LOG_LEVEL, F(log_level), 0, 0, 0, NULL},
};
_Static_assert(sizeof(config_keys) / sizeof(config_keys[0]) == CONFIG_N_KEYS,
	       "CONFIG_N_KEYS counts config_keys");

static const char *const sections[] = {"mount", "state", "control", "registry", "probe", "log"};
#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))

static const char *const sync_modes[] = {"off", "normal", "full", "extra", NULL};
static const char *const level_names[] = {"error", "warn", "info", "debug", NULL};

static void *field(struct plugfs_config *cfg, size_t off)
{
	return (char *)cfg + off;
}

/* The registry's path rule (reg_validate_path): absolute, normalised, no
 * control characters, shorter than PATH_MAX; `/' itself when root_ok.  The
 * caller writes the message. */
static bool path_ok(const char *s, bool root_ok)
{
	return reg_validate_path(NULL, s, root_ok, NULL, 0) == 0;
}

static bool group_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0)
		return true;
	if (n > GROUP_NAME_MAX || s[0] == '-')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
	return true;
}

/* Decimal digits only, value <= max.  No sign, no blanks, no suffix. */
bool config_parse_number(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return false;
	}
	*out = v;
	return true;
}

/* Seconds with up to three decimals ("5", "0.2", "1.250") in ms, <= max_ms. */
static bool parse_msec(const char *s, uint64_t max_ms, uint64_t *out)
{
	char whole[16];
	const char *dot = strchr(s, '.');
	size_t n = dot ? (size_t)(dot - s) : strlen(s);
	uint64_t sec, ms = 0, scale = 100;

	if (n == 0 || n >= sizeof(whole))
		return false;
	memcpy(whole, s, n);
	whole[n] = '\0';
	if (!config_parse_number(whole, max_ms / 1000, &sec))
		return false;
	if (dot) {
		const char *f = dot + 1;

		if (!*f || strlen(f) > 3)
			return false;
		for (; *f; f++, scale /= 10) {
			if (*f < '0' || *f > '9')
				return false;
			ms += (uint64_t)(*f - '0') * scale;
		}
	}
	if (sec * 1000 + ms > max_ms)
		return false;
	*out = sec * 1000 + ms;
	return true;
}

static int lookup_word(const char *s, const char *const *words)
{
	for (int i = 0; words[i]; i++)
		if (strcasecmp(s, words[i]) == 0)
			return i;
	return -1;
}

void config_free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Adds the white-space separated words of value to the list of def.
 * replace: start from an empty list (a new `key = ...' line). */
void config_set_list(struct parse_ctx *c, const struct key_def *def, const char *value,
		     bool replace)
{
	char ***listp = field(c->cfg, def->off);
	size_t *np = field(c->cfg, def->count_off);
	char *copy = NULL, *save = NULL, *tok;
	char msg[REG_ERR_MAX];
	char qbuf[QUOTE_BUF];

	if (replace) {
		config_free_list(*listp, *np);
		*listp = NULL;
		*np = 0;
	}
	copy = strdup(value);
	if (!copy) {
		config_fail(c, c->lineno, -ENOMEM, "out of memory");
		goto out;
	}
	for (tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {

		if (def->kind == K_TYPES) {
			if (reg_validate_name("[registry] types: type", tok, msg, sizeof(msg)) <
			    0) {
				config_fail(c, c->lineno, -EINVAL, "%s", msg);
				goto out;
			}
		} else if (!path_ok(tok, true)) {
			config_fail(
			    c, c->lineno, -EINVAL,
			    "[%s] %s: `%s': expected absolute, normalised paths (no empty, `.' or "
			    "`..' components, no trailing `/') separated by spaces",
			    def->section, def->key, config_quote(tok, qbuf, sizeof(qbuf)));
			goto out;
		}
		for (size_t i = 0; i < *np; i++) {
			if (strcmp((*listp)[i], tok) == 0) {
				config_fail(c, c->lineno, -EINVAL, "[%s] %s: `%s' is listed twice",
					    def->section, def->key,
					    config_quote(tok, qbuf, sizeof(qbuf)));
				goto out;
			}
		}
		if (PLUGFS_GROW_EXACT(*listp, *np) != 0) {
			config_fail(c, c->lineno, -ENOMEM, "out of memory");
			goto out;
		}
		(*listp)[*np] = strdup(tok);
		if (!(*listp)[*np]) {
			config_fail(c, c->lineno, -ENOMEM, "out of memory");
			goto out;
		}
		(*np)++;
	}
out:
	free(copy);
}

static void set_string(struct parse_ctx *c, const struct key_def *def, const char *value)
{
	char **p = field(c->cfg, def->off);
	char *copy = strdup(value);

	if (!copy) {
		config_fail(c, c->lineno, -ENOMEM, "out of memory");
		return;
	}
	free(*p);
	*p = copy;
}

/* Applies `key = value' of a known key. */
void config_set_value(struct parse_ctx *c, const struct key_def *def, const char *value)
{
	char qbuf[QUOTE_BUF];
	const char *q = config_quote(value, qbuf, sizeof(qbuf));
	char msg[REG_ERR_MAX];
	uint64_t n;
	int i;

#define BAD(fmt, ...)                                                                              \
	config_fail(c, c->lineno, -EINVAL, "[%s] %s = `%s': " fmt, def->section, def->key, q,      \
		    ##__VA_ARGS__)

	switch (def->kind) {
	case K_PATH:
		if (!path_ok(value, true)) {
			BAD("expected an absolute, normalised path (no empty, `.' or `..' "
			    "components, no trailing `/')");
			return;
		}
		set_string(c, def, value);
		return;
	case K_SUN_PATH:
		if (!path_ok(value, false) || strlen(value) >= SUN_PATH_BYTES) {
			BAD("expected an absolute, normalised path of at most %d bytes (a Unix "
			    "socket address)",
			    SUN_PATH_BYTES - 1);
			return;
		}
		set_string(c, def, value);
		return;
	case K_FILE_NAME:
		if (reg_validate_name("[mount] socket_name", value, msg, sizeof(msg)) < 0) {
			config_fail(c, c->lineno, -EINVAL, "%s", msg);
			return;
		}
		if (strcmp(value, "allocs") == 0 || strcmp(value, "info") == 0) {
			BAD("expected a name other than `allocs' and `info' (they are taken in "
			    "every plugin directory)");
			return;
		}
		set_string(c, def, value);
		return;
	case K_BOOL: {
		static const char *const bools[] = {"true", "yes", "1", "false", "no", "0", NULL};

		i = lookup_word(value, bools);
		if (i < 0) {
			BAD("expected true, false, yes, no, 1 or 0");
			return;
		}
		*(bool *)field(c->cfg, def->off) = i < 3;
		return;
	}
	case K_UINT:
	case K_INT64:
		if (!config_parse_number(value, (uint64_t)def->max, &n) || n < (uint64_t)def->min) {
			BAD("expected a whole number%s %" PRId64 "-%" PRId64, def->unit, def->min,
			    def->max);
			return;
		}
		if (def->kind == K_UINT)
			*(unsigned *)field(c->cfg, def->off) = (unsigned)n;
		else
			*(int64_t *)field(c->cfg, def->off) = (int64_t)n;
		return;
	case K_SYNC:
		i = lookup_word(value, sync_modes);
		if (i < 0) {
			BAD("expected off, normal, full or extra");
			return;
		}
		set_string(c, def, sync_modes[i]);
		return;
	case K_LOG_LEVEL:
		i = lookup_word(value, level_names);
		if (i < 0) {
			BAD("expected error, warn, info or debug");
			return;
		}
		*(enum plugfs_log_level *)field(c->cfg, def->off) = (enum plugfs_log_level)i;
		return;
	case K_PROBE: {
		/* The registry's spelling, in any case as every word here. */
		int m = REG_PROBE_NONE;

		while (m < REG_PROBE_COUNT && strcasecmp(value, reg_probe_name((enum reg_probe)m)))
			m++;
		if (m == REG_PROBE_COUNT) {
			BAD("expected connect, csi or none");
			return;
		}
		*(enum reg_probe *)field(c->cfg, def->off) = (enum reg_probe)m;
		return;
	}
	case K_MSEC:
		if (!parse_msec(value, (uint64_t)def->max, &n) || n < (uint64_t)def->min) {
			BAD("expected a number of seconds %g-%g, at most 3 decimals (e.g. 0.5)",
			    (double)def->min / 1000, (double)def->max / 1000);
			return;
		}
		*(unsigned *)field(c->cfg, def->off) = (unsigned)n;
		return;
	case K_GROUP:
		if (!group_ok(value)) {
			BAD("expected empty (mutations by root only) or a group name: 1-%d of "
			    "[A-Za-z0-9._-], not starting with `-'",
			    GROUP_NAME_MAX);
			return;
		}
		set_string(c, def, value);
		return;
	case K_TYPES:
	case K_PATHS:
		config_set_list(c, def, value, true);
		return;
	}
#undef BAD
}

const char *config_probe_section_type(const char *section)
{
	size_t n = strlen(PROBE_SECTION_PREFIX);

	return strncmp(section, PROBE_SECTION_PREFIX, n) == 0 ? section + n : NULL;
}

const char *config_discover_section_name(const char *section)
{
	size_t n = strlen(DISCOVER_SECTION_PREFIX);

	return strncmp(section, DISCOVER_SECTION_PREFIX, n) == 0 ? section + n : NULL;
}

bool config_section_known(const char *s)
{
	const char *type = config_probe_section_type(s);
	const char *name = config_discover_section_name(s);

	if (type)
		return reg_validate_name("type", type, NULL, 0) == 0;
	if (name)
		return reg_validate_name("name", name, NULL, 0) == 0;
	for (size_t i = 0; i < N_SECTIONS; i++)
		if (strcmp(s, sections[i]) == 0)
			return true;
	return false;
}

void config_list_keys(const char *section, char *buf, size_t len)
{
	const char *names[CONFIG_N_KEYS];
	size_t n = 0;

	for (size_t i = 0; i < CONFIG_N_KEYS; i++)
		if (strcmp(config_keys[i].section, section) == 0)
			names[n++] = config_keys[i].key;
	plugfs_join(buf, len, names, n, ", ");
}

const char *log_level_name(enum plugfs_log_level l)
{
	if ((unsigned)l < sizeof(level_names) / sizeof(level_names[0]) - 1)
		return level_names[l];
	return "unknown";
}
