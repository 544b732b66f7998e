/* SPDX-License-Identifier: MIT */
/*
 * Private to config/: what the parser (config.c), the keys of each section
 * and their values (keys.c), the whole-file checks (validate.c) and the
 * [probe.TYPE] sections (probe_types.c) share: the key table and one parse's
 * context, with its first-error recorder (message.c).  The [discover.NAME]
 * sections are in discover.c.
 */
#ifndef PLUGFS_CONFIG_INTERNAL_H
#define PLUGFS_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Text of the file that a message quotes is cut after this many bytes. */
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

/* The field of struct plugfs_config a key sets. */
#define F(field) offsetof(struct plugfs_config, field)

/* Every key of every section (keys.c); key_line of struct parse_ctx has
 * one entry per key. */
#define CONFIG_N_KEYS 18
extern const struct key_def config_keys[CONFIG_N_KEYS];

/* One parse: the reader's place in the text, what was set where, and the
 * first error. */
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
	const struct key_def *prev_def;	  /* NULL: the previous key was unknown */
	unsigned key_line[CONFIG_N_KEYS]; /* where each key was set, 0 = default */
	/* The [probe.TYPE] section the reader is in, its entry of
	 * cfg->probe.types, NULL in any other (inih cuts long section names:
	 * the handler goes by this). */
	struct reg_probe_type *probe_section;
	/* Of each entry of cfg->probe.types, in its order: the line its
	 * section first appeared on and the lines it set [probe]'s keys on
	 * (mode, interval, timeout, failures; 0: not set).  This parse's. */
	struct probe_lines {
		unsigned line;
		unsigned key_line[4];
	} * probe_lines;
	/* The same for a [discover.NAME] section, and the key of its
	 * previous line (-1: none), which no indented line may continue. */
	struct plugfs_discover *discover_section;
	int prev_discover_key;
	/* first error */
	unsigned err_line; /* 0 = none */
	int err_code;
	char *err;
	size_t errlen;
};

/* message.c: records the first error only, as "NAME:LINE: message" (line 0:
 * "NAME: message"); later calls do nothing. */
__attribute__((format(printf, 4, 5))) void config_fail(struct parse_ctx *c, unsigned line, int code,
						       const char *fmt, ...);

/* message.c: text of the file as messages show it, into buf (QUOTE_BUF
 * bytes): cut after VALUE_QUOTE_MAX bytes, and through plugfs_quote, so that
 * control characters, stray bytes and `\' come out as \xNN and a message
 * cannot drive the terminal.  Returns buf. */
#define QUOTE_BUF (4 * (VALUE_QUOTE_MAX + 3) + 1)
const char *config_quote(const char *v, char *buf, size_t len);

/* keys.c: applies `key = value' of a known key to c->cfg, or records why
 * the value is refused. */
void config_set_value(struct parse_ctx *c, const struct key_def *def, const char *value);
/* keys.c: adds the white-space separated words of value to the list of def
 * (K_TYPES, K_PATHS); replace: start from an empty list (a new `key = ...'
 * line, not a continuation). */
void config_set_list(struct parse_ctx *c, const struct key_def *def, const char *value,
		     bool replace);
/* keys.c: whether s names a section: one of the fixed ones, or probe.TYPE
 * with a good TYPE. */
bool config_section_known(const char *s);
/* keys.c: the keys of section, ", "-separated, into buf. */
void config_list_keys(const char *section, char *buf, size_t len);
/* keys.c: decimal digits only, value <= max; no sign, blanks or suffix. */
bool config_parse_number(const char *s, uint64_t max, uint64_t *out);
/* keys.c: frees the n strings of list and list. */
void config_free_list(char **list, size_t n);

/* validate.c: the checks that need the whole file (types not empty, the
 * control socket and the state outside the mount, the [probe.TYPE]
 * sections' types); records the first failure. */
void config_check_whole(struct parse_ctx *c);

#endif
