/* SPDX-License-Identifier: MIT */
/*
 * The plugfs INI file (plugfs.ini(5), docs/plugfs.ini.5) on top of built-in
 * defaults.  config_load reads the file into memory and shares the one parse
 * path of config_parse_string: inih's ini_parse_stream with a reader of our
 * own over the text, so that the handler knows the line it is called for.
 *
 * Rules beyond "known keys, good values":
 *  - A key set twice is an error naming both lines (a second value is almost
 *    always a mistake, and "last wins" would hide it).
 *  - A section may appear more than once; its keys still may not repeat.
 *  - List keys (types, socket_roots) may continue on indented lines, the way
 *    Python's configparser reads them; any other key continued on an indented
 *    line is an error.
 *  - Lines are at most CONFIG_LINE_MAX characters (inih's line buffer).
 *  - config_resolve treats an empty $PLUGFS_CONFIG as unset.
 *  - [probe.TYPE] takes [probe]'s keys for one of [registry] types
 *    (probe_types.c); what it does not set comes from [probe].
 *  - On error the struct is zeroed (config_free on it is harmless) and the
 *    message is "FILE:LINE: what is wrong; what is accepted".
 */
#include "config.h"
#include "config_probe.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "registry.h"
#include "strutil.h"

/* inih hands the reader a buffer of INI_MAX_LINE bytes; it needs room for the
 * newline and the NUL, and treats a full buffer as an overlong line. */
#define CONFIG_LINE_MAX (INI_MAX_LINE - 3)
#define CONFIG_FILE_MAX (1024 * 1024)
#define SUN_PATH_BYTES 108 /* sizeof(((struct sockaddr_un *)0)->sun_path) */
#define GROUP_NAME_MAX 32
#define VALUE_QUOTE_MAX 64

enum key_kind {
	K_PATH,	     /* absolute, normalised path */
	K_SUN_PATH,  /* the same, short enough for sun_path */
	K_FILE_NAME, /* one path component with the name rules */
	K_BOOL,
	K_UINT,	     /* unsigned in [min, max] */
	K_INT64,     /* int64_t in [min, max] */
	K_SYNC,	     /* off | normal | full | extra */
	K_LOG_LEVEL, /* error | warn | info | debug */
	K_PROBE,     /* connect | none | csi */
	K_MSEC,	     /* seconds with up to 3 decimals, stored in ms in [min, max] */
	K_GROUP,     /* empty or a group name */
	K_TYPES,     /* list of names, at least one, no duplicates */
	K_PATHS,     /* list of absolute paths, no duplicates, may be empty */
};

struct key_def {
	const char *section;
	const char *key;
	enum key_kind kind;
	size_t off;	  /* the field in struct plugfs_config */
	size_t count_off; /* lists: the count field */
	int64_t min, max; /* numbers */
	const char *unit; /* numbers: " of seconds" or "" */
};

#define F(field) offsetof(struct plugfs_config, field)

static const struct key_def keys[] = {
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
    {"probe", "mode", K_PROBE, F(probe_mode), 0, 0, 0, NULL},
    {"probe", "interval", K_MSEC, F(probe_interval_ms), 0, 50, 3600000, NULL},
    {"probe", "timeout", K_MSEC, F(probe_timeout_ms), 0, 10, 60000, NULL},
    {"probe", "failures", K_UINT, F(probe_failures), 0, 1, 100, ""},
    {"log", "level", K_LOG_LEVEL, F(log_level), 0, 0, 0, NULL},
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const sections[] = {"mount", "state", "control", "registry", "probe", "log"};
#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))

static const char *const sync_modes[] = {"off", "normal", "full", "extra", NULL};
static const char *const level_names[] = {"error", "warn", "info", "debug", NULL};
static const char *const probe_modes[] = {"connect", "none", "csi", NULL};

struct parse_ctx {
	struct plugfs_config *cfg;
	const char *name; /* for messages */
	/* reader */
	const char *text;
	size_t len, pos;
	unsigned lineno;    /* the line last handed to inih */
	bool line_indented; /* it starts with white space */
	/* continuation lines, mirroring inih's prev_name */
	bool have_prev;
	const struct key_def *prev_def; /* NULL: the previous key was unknown */
	unsigned key_line[N_KEYS];	/* where each key was set, 0 = default */
	/* The [probe.TYPE] section the reader is in, NULL in any other (inih
	 * cuts long section names: the handler goes by this). */
	struct plugfs_probe_type *probe_section;
	/* first error */
	unsigned err_line; /* 0 = none */
	int err_code;
	char *err;
	size_t errlen;
};

static void *field(struct plugfs_config *cfg, size_t off)
{
	return (char *)cfg + off;
}

/* Records the first error only: "NAME:LINE: message". */
__attribute__((format(printf, 4, 5))) static void fail(struct parse_ctx *c, unsigned line, int code,
						       const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->err_code)
		return;
	c->err_code = code;
	c->err_line = line ? line : 1;
	if (!c->err || !c->errlen)
		return;
	n = line ? snprintf(c->err, c->errlen, "%s:%u: ", c->name, line)
		 : snprintf(c->err, c->errlen, "%s: ", c->name);
	if (n < 0 || (size_t)n >= c->errlen)
		return;
	va_start(ap, fmt);
	plugfs_vseterr(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

/* Text of the file as messages show it: cut after VALUE_QUOTE_MAX bytes,
 * and through reg_quote, so that control characters, stray bytes and `\'
 * come out as \xNN and a message cannot drive the terminal. */
#define QUOTE_BUF (4 * (VALUE_QUOTE_MAX + 3) + 1)

static const char *quote(const char *v, char *buf, size_t len)
{
	char cut[VALUE_QUOTE_MAX + 4];

	snprintf(cut, sizeof(cut), "%.*s%s", VALUE_QUOTE_MAX, v,
		 strlen(v) > VALUE_QUOTE_MAX ? "..." : "");
	return reg_quote(buf, len, cut);
}

/* The registry's path rule (reg_validate_path): absolute, normalised, no
 * control characters, shorter than PATH_MAX; `/' itself when root_ok.  The
 * caller writes the message. */
static bool path_ok(const char *s, bool root_ok)
{
	return reg_validate_path(NULL, s, root_ok, NULL, 0) == 0;
}

/* A path at or below dir: dir itself, or under it by the registry's rule
 * (reg_path_under, the one socket_roots use). */
static bool path_inside(const char *path, const char *dir)
{
	return strcmp(path, dir) == 0 || reg_path_under(path, dir);
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
static bool parse_number(const char *s, uint64_t max, uint64_t *out)
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
	if (!parse_number(whole, max_ms / 1000, &sec))
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

static void free_list(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Adds the white-space separated words of value to the list of def.
 * replace: start from an empty list (a new `key = ...' line). */
static void set_list(struct parse_ctx *c, const struct key_def *def, const char *value,
		     bool replace)
{
	char ***listp = field(c->cfg, def->off);
	size_t *np = field(c->cfg, def->count_off);
	char *copy = NULL, *save = NULL, *tok;
	char msg[REG_ERR_MAX];
	char qbuf[QUOTE_BUF];

	if (replace) {
		free_list(*listp, *np);
		*listp = NULL;
		*np = 0;
	}
	copy = strdup(value);
	if (!copy) {
		fail(c, c->lineno, -ENOMEM, "out of memory");
		goto out;
	}
	for (tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		char **grown;

		if (def->kind == K_TYPES) {
			if (reg_validate_name("[registry] types: type", tok, msg, sizeof(msg)) <
			    0) {
				fail(c, c->lineno, -EINVAL, "%s", msg);
				goto out;
			}
		} else if (!path_ok(tok, true)) {
			fail(c, c->lineno, -EINVAL,
			     "[%s] %s: `%s': expected absolute, normalised paths (no empty, `.' or "
			     "`..' components, no trailing `/') separated by spaces",
			     def->section, def->key, quote(tok, qbuf, sizeof(qbuf)));
			goto out;
		}
		for (size_t i = 0; i < *np; i++) {
			if (strcmp((*listp)[i], tok) == 0) {
				fail(c, c->lineno, -EINVAL, "[%s] %s: `%s' is listed twice",
				     def->section, def->key, quote(tok, qbuf, sizeof(qbuf)));
				goto out;
			}
		}
		grown = realloc(*listp, (*np + 1) * sizeof(*grown));
		if (!grown) {
			fail(c, c->lineno, -ENOMEM, "out of memory");
			goto out;
		}
		*listp = grown;
		grown[*np] = strdup(tok);
		if (!grown[*np]) {
			fail(c, c->lineno, -ENOMEM, "out of memory");
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
		fail(c, c->lineno, -ENOMEM, "out of memory");
		return;
	}
	free(*p);
	*p = copy;
}

/* Applies `key = value' of a known key. */
static void set_value(struct parse_ctx *c, const struct key_def *def, const char *value)
{
	char qbuf[QUOTE_BUF];
	const char *q = quote(value, qbuf, sizeof(qbuf));
	char msg[REG_ERR_MAX];
	uint64_t n;
	int i;

#define BAD(fmt, ...)                                                                              \
	fail(c, c->lineno, -EINVAL, "[%s] %s = `%s': " fmt, def->section, def->key, q,             \
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
			fail(c, c->lineno, -EINVAL, "%s", msg);
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
		if (!parse_number(value, (uint64_t)def->max, &n) || n < (uint64_t)def->min) {
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
	case K_PROBE:
		i = lookup_word(value, probe_modes);
		if (i < 0) {
			BAD("expected connect, csi or none");
			return;
		}
		*(enum plugfs_probe_mode *)field(c->cfg, def->off) = (enum plugfs_probe_mode)i;
		return;
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
		set_list(c, def, value, true);
		return;
	}
#undef BAD
}

static bool section_known(const char *s)
{
	const char *type = config_probe_section_type(s);

	if (type)
		return reg_validate_name("type", type, NULL, 0) == 0;
	for (size_t i = 0; i < N_SECTIONS; i++)
		if (strcmp(s, sections[i]) == 0)
			return true;
	return false;
}

static void list_keys(const char *section, char *buf, size_t len)
{
	const char *names[N_KEYS];
	size_t n = 0;

	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].section, section) == 0)
			names[n++] = keys[i].key;
	plugfs_join(buf, len, names, n, ", ");
}

/* `name = value' in a [probe.TYPE] section: one of [probe]'s keys, read
 * by set_value into a scratch config, then kept in the section's entry. */
static int probe_type_key(struct parse_ctx *c, const char *name, const char *value)
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
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(keys[i].section, "probe") != 0)
			continue;
		if (strcmp(keys[i].key, name) == 0) {
			def = &keys[i];
			break;
		}
		k++;
	}
	if (!def) {
		list_keys("probe", known, sizeof(known));
		fail(c, c->lineno, -EINVAL, "unknown key `%s' in [%s]; known keys: %s",
		     quote(name, qbuf, sizeof(qbuf)), section, known);
		return 0;
	}
	c->prev_def = def;
	if (e->key_line[k]) {
		fail(c, c->lineno, -EINVAL, "duplicate key `%s' in [%s] (first set on line %u)",
		     name, section, e->key_line[k]);
		return 0;
	}
	e->key_line[k] = c->lineno;
	local = *def;
	local.section = section;
	memset(&scratch, 0, sizeof(scratch));
	c->cfg = &scratch;
	set_value(c, &local, value);
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

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *c = user;
	bool continuation = c->line_indented && c->have_prev;
	const struct key_def *def = NULL;
	char known[128], qbuf[QUOTE_BUF];

	if (!continuation) {
		c->have_prev = true;
		c->prev_def = NULL;
	}
	if (c->err_code)
		return 1; /* only the first error is reported */
	if (continuation) {
		def = c->prev_def;
		if (!def)
			return 1; /* the unknown key was reported */
		if (def->kind != K_TYPES && def->kind != K_PATHS) {
			fail(c, c->lineno, -EINVAL,
			     "indented line continues the value of `%s' in [%s]; only the lists "
			     "`types' and `socket_roots' may continue on indented lines",
			     def->key, def->section);
			return 0;
		}
		set_list(c, def, value, false);
		return c->err_code ? 0 : 1;
	}
	if (!*section) {
		fail(c, c->lineno, -EINVAL,
		     "key `%s' is outside of any section; expected it under [mount], [state], "
		     "[control], [registry], [probe], [probe.TYPE] or [log]",
		     quote(name, qbuf, sizeof(qbuf)));
		return 0;
	}
	if (config_probe_section_type(section))
		return probe_type_key(c, name, value);
	if (!section_known(section))
		return 1; /* reported by the reader at the section line */
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].key, name) == 0) {
			def = &keys[i];
			break;
		}
	}
	if (!def) {
		list_keys(section, known, sizeof(known));
		fail(c, c->lineno, -EINVAL, "unknown key `%s' in [%s]; known keys: %s",
		     quote(name, qbuf, sizeof(qbuf)), section, known);
		return 0;
	}
	c->prev_def = def;
	if (c->key_line[def - keys]) {
		fail(c, c->lineno, -EINVAL, "duplicate key `%s' in [%s] (first set on line %u)",
		     name, section, c->key_line[def - keys]);
		return 0;
	}
	c->key_line[def - keys] = c->lineno;
	set_value(c, def, value);
	return c->err_code ? 0 : 1;
}

/* Checks a "[section]" line the way inih reads it (inih itself does not tell
 * the handler about sections without keys). */
static void check_section_line(struct parse_ctx *c, const char *line, size_t n)
{
	const char *end = line + n;
	const char *s = line, *close, *rest, *type = NULL;
	char name[68], full[sizeof(PROBE_SECTION_PREFIX) + REG_NAME_MAX], qbuf[QUOTE_BUF];
	char msg[REG_ERR_MAX];
	size_t len;

	if (c->lineno == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
		s += 3;
	while (s < end && isspace((unsigned char)*s))
		s++;
	if (s == end || *s != '[')
		return;
	if (c->line_indented && c->have_prev)
		return; /* inih reads it as a continuation line */
	close = memchr(s, ']', (size_t)(end - s));
	if (!close)
		return; /* inih reports the line as a syntax error */
	c->have_prev = false;
	c->prev_def = NULL;
	c->probe_section = NULL;
	for (rest = close + 1; rest < end && isspace((unsigned char)*rest); rest++)
		;
	if (rest < end && *rest != ';' && *rest != '#') {
		snprintf(name, sizeof(name), "%.*s", (int)(close + 1 - s), s);
		fail(c, c->lineno, -EINVAL,
		     "unexpected text after `%s'; a section line holds only `[section]'",
		     quote(name, qbuf, sizeof(qbuf)));
		return;
	}
	len = (size_t)(close - s - 1);
	snprintf(name, sizeof(name), "%.*s%s", (int)(len > 64 ? 64 : len), s + 1,
		 len > 64 ? "..." : "");
	if (len < sizeof(full)) {
		memcpy(full, s + 1, len);
		full[len] = '\0';
		type = config_probe_section_type(full);
	}
	if (type && reg_validate_name("[probe.TYPE] section: TYPE", type, msg, sizeof(msg)) < 0)
		fail(c, c->lineno, -EINVAL, "%s", msg);
	else if (len >= sizeof(full) || !section_known(full))
		fail(c, c->lineno, -EINVAL,
		     "unknown section [%s]; expected [mount], [state], [control], [registry], "
		     "[probe], [probe.TYPE] or [log]",
		     reg_quote(qbuf, sizeof(qbuf), name));
	else if (type && !(c->probe_section = config_probe_type_entry(c->cfg, type, c->lineno)))
		fail(c, c->lineno, -ENOMEM, "out of memory");
}

/* inih's reader: hands out one line of the text at a time and counts it. */
static char *reader(char *str, int num, void *stream)
{
	struct parse_ctx *c = stream;
	const char *p, *nl;
	size_t n, content;

	if (c->pos >= c->len || num < 4 || c->err_code == -ENOMEM)
		return NULL;
	p = c->text + c->pos;
	nl = memchr(p, '\n', c->len - c->pos);
	n = nl ? (size_t)(nl - p) + 1 : c->len - c->pos;
	content = nl ? n - 1 : n;
	c->lineno++;
	if (content > (size_t)num - 3 || content > CONFIG_LINE_MAX) {
		fail(c, c->lineno, -EINVAL,
		     "line is longer than %d characters; a long list may continue on indented "
		     "lines",
		     CONFIG_LINE_MAX);
		return NULL;
	}
	memcpy(str, p, n);
	str[n] = '\0';
	c->pos += n;
	c->line_indented = content > 0 && isspace((unsigned char)p[0]);
	check_section_line(c, p, content);
	return str;
}

/* The text of line `line' (1-based), for syntax error messages. */
static void line_text(const char *text, size_t len, unsigned line, const char **start, size_t *n)
{
	const char *p = text, *end = text + len, *nl;

	for (unsigned i = 1; i < line && p < end; i++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	nl = memchr(p, '\n', (size_t)(end - p));
	*start = p;
	*n = nl ? (size_t)(nl - p) : (size_t)(end - p);
	while (*n > 0 && isspace((unsigned char)(*start)[*n - 1]))
		(*n)--;
	while (*n > 0 && isspace((unsigned char)**start)) {
		(*start)++;
		(*n)--;
	}
}

static void syntax_error(struct parse_ctx *c, unsigned line)
{
	char text[VALUE_QUOTE_MAX + 1], qbuf[QUOTE_BUF];
	const char *s;
	size_t n;

	c->err_code = 0; /* a syntax error on an earlier line wins */
	line_text(c->text, c->len, line, &s, &n);
	if (n > VALUE_QUOTE_MAX)
		n = VALUE_QUOTE_MAX;
	snprintf(text, sizeof(text), "%.*s", (int)n, s);
	if (n > 0 && s[0] == '[')
		fail(c, line, -EINVAL, "section line `%s' has no closing `]'",
		     quote(text, qbuf, sizeof(qbuf)));
	else
		fail(c, line, -EINVAL,
		     "expected `key = value', `[section]' or a comment (`#' or `;'), got `%s'",
		     quote(text, qbuf, sizeof(qbuf)));
}

/* Checks that need the whole file; line = where the later key was set. */
static void check_whole(struct parse_ctx *c)
{
	struct plugfs_config *cfg = c->cfg;
	unsigned l_types = 0, l_mnt = 0, l_sock = 0, l_state = 0;
	char q1[QUOTE_BUF], q2[QUOTE_BUF];

	for (size_t i = 0; i < N_KEYS; i++) {
		if (keys[i].off == F(types))
			l_types = c->key_line[i];
		else if (keys[i].off == F(mountpoint))
			l_mnt = c->key_line[i];
		else if (keys[i].off == F(control_socket))
			l_sock = c->key_line[i];
		else if (keys[i].off == F(state_path))
			l_state = c->key_line[i];
	}
	if (cfg->n_types == 0)
		fail(c, l_types, -EINVAL,
		     "[registry] types is empty; expected at least one plugin type, e.g. "
		     "`csi-controller csi-node'");
	else if (path_inside(cfg->control_socket, cfg->mountpoint))
		fail(c, l_sock > l_mnt ? l_sock : l_mnt, -EINVAL,
		     "[control] socket `%s' is inside [mount] mountpoint `%s'; expected a path "
		     "outside the mount",
		     quote(cfg->control_socket, q1, sizeof(q1)),
		     quote(cfg->mountpoint, q2, sizeof(q2)));
	else if (path_inside(cfg->state_path, cfg->mountpoint))
		fail(c, l_state > l_mnt ? l_state : l_mnt, -EINVAL,
		     "[state] path `%s' is inside [mount] mountpoint `%s'; expected a path "
		     "outside the mount",
		     quote(cfg->state_path, q1, sizeof(q1)),
		     quote(cfg->mountpoint, q2, sizeof(q2)));
	else {
		char msg[CONFIG_ERR_MAX];
		unsigned line = 0;

		if (config_probe_types_finish(cfg, &line, msg, sizeof(msg)) < 0)
			fail(c, line, -EINVAL, "%s", msg);
	}
}

/* The one parse path of config_load and config_parse_string. */
static int parse_text(const char *text, size_t len, const char *name, struct plugfs_config *out,
		      char *err, size_t errlen)
{
	struct plugfs_config cfg = {0};
	struct parse_ctx c = {
	    .cfg = &cfg, .name = name, .text = text, .len = len, .err = err, .errlen = errlen};
	const char *nul;
	int ret;

	if (errlen)
		err[0] = '\0';
	ret = config_defaults(&cfg);
	if (ret < 0) {
		fail(&c, 0, ret, "out of memory");
		goto out;
	}
	free(cfg.source);
	cfg.source = strdup(name);
	if (!cfg.source) {
		fail(&c, 0, -ENOMEM, "out of memory");
		goto out;
	}
	nul = memchr(text, '\0', len);
	if (nul) {
		const char *p = text;
		unsigned line = 1;

		for (; p < nul; p++)
			line += *p == '\n';
		fail(&c, line, -EINVAL, "NUL byte in the file; expected a text file");
		goto out;
	}
	ret = ini_parse_stream(reader, &c, handler, &c);
	if (ret < 0 && !c.err_code)
		fail(&c, 0, -ENOMEM, "out of memory");
	else if (ret > 0 && c.err_code != -ENOMEM && (!c.err_code || (unsigned)ret < c.err_line))
		syntax_error(&c, (unsigned)ret);
	if (!c.err_code)
		check_whole(&c);
out:
	if (c.err_code) {
		config_free(&cfg);
		memset(out, 0, sizeof(*out));
		return c.err_code;
	}
	*out = cfg;
	return 0;
}

int config_parse_string(const char *text, const char *name, struct plugfs_config *cfg, char *err,
			size_t errlen)
{
	return parse_text(text, strlen(text), name ? name : "<string>", cfg, err, errlen);
}

int config_load(const char *path, struct plugfs_config *cfg, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int fd = -1, rc = 0;
	ssize_t n;

	memset(cfg, 0, sizeof(*cfg));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open config file %s: %s", path, strerror(-rc));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot stat config file %s: %s", path, strerror(-rc));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		snprintf(err, errlen, "config file %s: expected a regular file", path);
		goto out;
	}
	if (st.st_size > CONFIG_FILE_MAX) {
		rc = -EFBIG;
		snprintf(err, errlen, "config file %s: larger than %d bytes", path,
			 CONFIG_FILE_MAX);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		snprintf(err, errlen, "config file %s: out of memory", path);
		goto out;
	}
	while (len <= (size_t)st.st_size) {
		n = read(fd, buf + len, (size_t)st.st_size + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot read config file %s: %s", path,
				 strerror(-rc));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > (size_t)st.st_size) {
		rc = -EAGAIN;
		snprintf(err, errlen, "config file %s changed while it was read", path);
		goto out;
	}
	rc = parse_text(buf, len, path, cfg, err, errlen);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

int config_resolve(const char *cli_path, struct plugfs_config *cfg, char *err, size_t errlen)
{
	const char *env = getenv("PLUGFS_CONFIG");

	if (cli_path)
		return config_load(cli_path, cfg, err, errlen);
	if (env && *env)
		return config_load(env, cfg, err, errlen);
	if (access(CONFIG_DEFAULT_PATH, F_OK) == 0)
		return config_load(CONFIG_DEFAULT_PATH, cfg, err, errlen);
	if (errlen)
		err[0] = '\0';
	return config_defaults(cfg);
}

int config_defaults(struct plugfs_config *cfg)
{
	static const char *const types[] = {"csi-controller", "csi-node"};

	memset(cfg, 0, sizeof(*cfg));
	cfg->mountpoint = strdup("/run/plugfs");
	cfg->socket_name = strdup("csi.sock");
	cfg->allow_other = true;
	cfg->cache_timeout = 60;
	cfg->state_path = strdup("/var/lib/plugfs/state.db");
	cfg->synchronous = strdup("full");
	cfg->control_socket = strdup("/run/plugfs.sock");
	cfg->control_group = strdup("");
	cfg->max_clients = 64;
	cfg->idle_timeout = 300;
	cfg->types = calloc(2, sizeof(*cfg->types));
	if (cfg->types) {
		cfg->n_types = 2;
		for (size_t i = 0; i < 2; i++)
			cfg->types[i] = strdup(types[i]);
	}
	cfg->tombstone_ttl = 86400;
	cfg->probe_mode = PLUGFS_PROBE_CONNECT;
	cfg->probe_interval_ms = 5000;
	cfg->probe_timeout_ms = 1000;
	cfg->probe_failures = 3;
	cfg->log_level = PLOG_INFO;
	cfg->source = strdup("");
	if (!cfg->mountpoint || !cfg->socket_name || !cfg->state_path || !cfg->synchronous ||
	    !cfg->control_socket || !cfg->control_group || !cfg->types || !cfg->types[0] ||
	    !cfg->types[1] || !cfg->source) {
		config_free(cfg);
		return -ENOMEM;
	}
	return 0;
}

void config_free(struct plugfs_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->mountpoint);
	free(cfg->socket_name);
	free(cfg->state_path);
	free(cfg->synchronous);
	free(cfg->control_socket);
	free(cfg->control_group);
	free_list(cfg->types, cfg->n_types);
	free_list(cfg->socket_roots, cfg->n_socket_roots);
	config_probe_types_free(cfg);
	free(cfg->source);
	memset(cfg, 0, sizeof(*cfg));
}

const char *log_level_name(enum plugfs_log_level l)
{
	if ((unsigned)l < sizeof(level_names) / sizeof(level_names[0]) - 1)
		return level_names[l];
	return "unknown";
}

const char *probe_mode_name(enum plugfs_probe_mode m)
{
	if ((unsigned)m < sizeof(probe_modes) / sizeof(probe_modes[0]) - 1)
		return probe_modes[m];
	return "unknown";
}
