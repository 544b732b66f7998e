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
 *    (probe_types.c); what it does not set comes from [probe]
 *    (reg_probe_settings_of).
 *  - On error the struct is zeroed (config_free on it is harmless) and the
 *    message is "FILE:LINE: what is wrong; what is accepted".
 *
 * Here: the reader, the handler, section lines, syntax errors and the entry
 * points (config_parse_string, config_load, config_resolve).  Below it, each
 * file calling only those above it in this list: the built-in defaults
 * (defaults.c) and the checks that need the whole file (validate.c); the
 * [probe.TYPE] sections (probe_types.c); the keys of each section and how
 * their values are read (keys.c); the first error and the quoting of the
 * file's text in messages (message.c).
 */
#include "config.h"
#include "config_internal.h"
#include "config_discover.h"
#include "config_probe.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "fsutil.h"
#include "registry.h"
#include "strutil.h"

/* inih hands the reader a buffer of INI_MAX_LINE bytes; it needs room for the
 * newline and the NUL, and treats a full buffer as an overlong line. */
#define CONFIG_LINE_MAX (INI_MAX_LINE - 3)
#define CONFIG_FILE_MAX (1024 * 1024)

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *c = user;
	bool continuation = c->line_indented && c->have_prev;
	const struct key_def *def = NULL;
	char known[128], qbuf[QUOTE_BUF];

	if (!continuation) {
		c->have_prev = true;
		c->prev_def = NULL;
		c->prev_discover_key = -1;
	}
	if (c->err_code)
		return 1; /* only the first error is reported */
	if (continuation) {
		def = c->prev_def;
		if (!def && c->prev_discover_key >= 0 && c->discover_section) {
			config_fail(c, c->lineno, -EINVAL,
				    "indented line continues the value of a key in [%s%s]; only the "
				    "lists `types' and `socket_roots' may continue on indented lines",
				    DISCOVER_SECTION_PREFIX, c->discover_section->name);
			return 0;
		}
		if (!def)
			return 1; /* the unknown key was reported */
		if (def->kind != K_TYPES && def->kind != K_PATHS) {
			config_fail(
			    c, c->lineno, -EINVAL,
			    "indented line continues the value of `%s' in [%s]; only the lists "
			    "`types' and `socket_roots' may continue on indented lines",
			    def->key, def->section);
			return 0;
		}
		config_set_list(c, def, value, false);
		return c->err_code ? 0 : 1;
	}
	if (!*section) {
		config_fail(
		    c, c->lineno, -EINVAL,
		    "key `%s' is outside of any section; expected it under [mount], [state], "
		    "[control], [registry], [probe], [probe.TYPE], [discover.NAME] or [log]",
		    config_quote(name, qbuf, sizeof(qbuf)));
		return 0;
	}
	if (config_probe_section_type(section))
		return config_probe_type_key(c, name, value);
	if (config_discover_section_name(section))
		return config_discover_key(c, name, value);
	if (!config_section_known(section))
		return 1; /* reported by the reader at the section line */
	for (size_t i = 0; i < CONFIG_N_KEYS; i++) {
		if (strcmp(config_keys[i].section, section) == 0 &&
		    strcmp(config_keys[i].key, name) == 0) {
			def = &config_keys[i];
			break;
		}
	}
	if (!def) {
		config_list_keys(section, known, sizeof(known));
		config_fail(c, c->lineno, -EINVAL, "unknown key `%s' in [%s]; known keys: %s",
			    config_quote(name, qbuf, sizeof(qbuf)), section, known);
		return 0;
	}
	c->prev_def = def;
	if (c->key_line[def - config_keys]) {
		config_fail(c, c->lineno, -EINVAL,
			    "duplicate key `%s' in [%s] (first set on line %u)", name, section,
			    c->key_line[def - config_keys]);
		return 0;
	}
	c->key_line[def - config_keys] = c->lineno;
	config_set_value(c, def, value);
	return c->err_code ? 0 : 1;
}

/* Checks a "[section]" line the way inih reads it (inih itself does not tell
 * the handler about sections without keys). */
static void check_section_line(struct parse_ctx *c, const char *line, size_t n)
{
	const char *end = line + n;
	const char *s = line, *close, *rest, *type = NULL, *dname = NULL;
	char name[68], full[sizeof(DISCOVER_SECTION_PREFIX) + REG_NAME_MAX], qbuf[QUOTE_BUF];
	bool too_many = false;
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
	c->discover_section = NULL;
	for (rest = close + 1; rest < end && isspace((unsigned char)*rest); rest++)
		;
	if (rest < end && *rest != ';' && *rest != '#') {
		snprintf(name, sizeof(name), "%.*s", (int)(close + 1 - s), s);
		config_fail(c, c->lineno, -EINVAL,
			    "unexpected text after `%s'; a section line holds only `[section]'",
			    config_quote(name, qbuf, sizeof(qbuf)));
		return;
	}
	len = (size_t)(close - s - 1);
	snprintf(name, sizeof(name), "%.*s%s", (int)(len > 64 ? 64 : len), s + 1,
		 len > 64 ? "..." : "");
	if (len < sizeof(full)) {
		memcpy(full, s + 1, len);
		full[len] = '\0';
		type = config_probe_section_type(full);
		dname = config_discover_section_name(full);
	}
	if (type && reg_validate_name("[probe.TYPE] section: TYPE", type, msg, sizeof(msg)) < 0)
		config_fail(c, c->lineno, -EINVAL, "%s", msg);
	else if (dname &&
		 reg_validate_name("[discover.NAME] section: NAME", dname, msg, sizeof(msg)) < 0)
		config_fail(c, c->lineno, -EINVAL, "%s", msg);
	else if (len >= sizeof(full) || !config_section_known(full))
		config_fail(
		    c, c->lineno, -EINVAL,
		    "unknown section [%s]; expected [mount], [state], [control], [registry], "
		    "[probe], [probe.TYPE], [discover.NAME] or [log]",
		    plugfs_quote(qbuf, sizeof(qbuf), name));
	else if (type && !(c->probe_section = config_probe_type_entry(c, type, c->lineno)))
		config_fail(c, c->lineno, -ENOMEM, "out of memory");
	else if (dname && !(c->discover_section =
				config_discover_entry(c->cfg, dname, c->lineno, &too_many))) {
		if (too_many)
			config_fail(c, c->lineno, -EINVAL,
				    "[%s%s]: more than %d [discover.NAME] sections; expected at "
				    "most %d",
				    DISCOVER_SECTION_PREFIX, dname, PLUGFS_DISCOVER_MAX,
				    PLUGFS_DISCOVER_MAX);
		else
			config_fail(c, c->lineno, -ENOMEM, "out of memory");
	}
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
		config_fail(
		    c, c->lineno, -EINVAL,
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
		config_fail(c, line, -EINVAL, "section line `%s' has no closing `]'",
			    config_quote(text, qbuf, sizeof(qbuf)));
	else
		config_fail(
		    c, line, -EINVAL,
		    "expected `key = value', `[section]' or a comment (`#' or `;'), got `%s'",
		    config_quote(text, qbuf, sizeof(qbuf)));
}

/* The one parse path of config_load and config_parse_string. */
static int parse_text(const char *text, size_t len, const char *name, struct plugfs_config *out,
		      char *err, size_t errlen)
{
	struct plugfs_config cfg = {0};
	struct parse_ctx c = {
	    .cfg = &cfg, .name = name, .text = text, .len = len, .err = err, .errlen = errlen,
	    .prev_discover_key = -1};
	const char *nul;
	int ret;

	if (errlen)
		err[0] = '\0';
	ret = config_defaults(&cfg);
	if (ret < 0) {
		config_fail(&c, 0, ret, "out of memory");
		goto out;
	}
	free(cfg.source);
	cfg.source = strdup(name);
	if (!cfg.source) {
		config_fail(&c, 0, -ENOMEM, "out of memory");
		goto out;
	}
	nul = memchr(text, '\0', len);
	if (nul) {
		const char *p = text;
		unsigned line = 1;

		for (; p < nul; p++)
			line += *p == '\n';
		config_fail(&c, line, -EINVAL, "NUL byte in the file; expected a text file");
		goto out;
	}
	ret = ini_parse_stream(reader, &c, handler, &c);
	if (ret < 0 && !c.err_code)
		config_fail(&c, 0, -ENOMEM, "out of memory");
	else if (ret > 0 && c.err_code != -ENOMEM && (!c.err_code || (unsigned)ret < c.err_line))
		syntax_error(&c, (unsigned)ret);
	if (!c.err_code)
		config_check_whole(&c);
out:
	free(c.probe_lines);
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

	memset(cfg, 0, sizeof(*cfg));
	/* O_NONBLOCK: a FIFO (or a device) put in the file's place would
	 * block the open until a writer comes; it is refused just below. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "cannot open config file %s: %s", path, strerror(-rc));
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "cannot stat config file %s: %s", path, strerror(-rc));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		plugfs_seterr(err, errlen, "config file %s: expected a regular file", path);
		goto out;
	}
	if (st.st_size > CONFIG_FILE_MAX) {
		rc = plugfs_errf(err, errlen, -EFBIG, "config file %s: larger than %d bytes", path,
				 CONFIG_FILE_MAX);
		goto out;
	}
	rc = plugfs_read_fd(fd, (size_t)st.st_size, &buf, &len);
	if (rc == -ENOMEM) {
		plugfs_seterr(err, errlen, "config file %s: out of memory", path);
		goto out;
	}
	if (rc == -EFBIG) {
		rc = plugfs_errf(err, errlen, -EAGAIN, "config file %s changed while it was read",
				 path);
		goto out;
	}
	if (rc < 0) {
		plugfs_seterr(err, errlen, "cannot read config file %s: %s", path, strerror(-rc));
		goto out;
	}
	rc = parse_text(buf, len, path, cfg, err, errlen);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

/* Which file applies: -c, $PLUGFS_CONFIG, then CONFIG_DEFAULT_PATH, else the
 * defaults alone. */
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
