/* SPDX-License-Identifier: MIT */
/* Validation of every field a client can send, kind and event names. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "strutil.h"
#include "utf8.h"

static const char *const kind_names[] = {
    [REG_KIND_CONTROLLER] = "controller",
    [REG_KIND_NODE] = "node",
    [REG_KIND_MONOLITH] = "monolith",
};

const char *reg_kind_name(enum reg_kind k)
{
	if (k <= REG_KIND_UNSET || k > REG_KIND_MONOLITH)
		return NULL;
	return kind_names[k];
}

int reg_kind_parse(const char *s, enum reg_kind *out)
{
	for (int k = REG_KIND_CONTROLLER; s && k <= REG_KIND_MONOLITH; k++) {
		if (strcmp(s, kind_names[k]) == 0) {
			*out = (enum reg_kind)k;
			return 0;
		}
	}
	return -EINVAL;
}

enum reg_kind reg_kind_for_type(const char *type)
{
	if (strcmp(type, "csi-controller") == 0)
		return REG_KIND_CONTROLLER;
	if (strcmp(type, "csi-node") == 0)
		return REG_KIND_NODE;
	return REG_KIND_MONOLITH;
}

const char *reg_event_name(enum reg_event_type t)
{
	switch (t) {
	case REG_EV_REGISTERED:
		return "registered";
	case REG_EV_UPDATED:
		return "updated";
	case REG_EV_DEREGISTERED:
		return "deregistered";
	case REG_EV_ACTIVE:
		return "active";
	case REG_EV_RUNTIME:
		return "runtime";
	}
	return "unknown";
}

static bool name_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

int reg_validate_name(const char *field, const char *s, char *err, size_t errlen)
{
	char q[128];
	size_t n = 0;

	if (!s)
		return plugfs_errf(err, errlen, -EINVAL, "%s: missing", field);
	for (; s[n]; n++)
		if (!name_char((unsigned char)s[n]))
			break;
	if (s[n] || n == 0 || n > REG_NAME_MAX || s[0] == '.')
		return plugfs_errf(
		    err, errlen, -EINVAL,
		    "%s `%s': must be 1-%d characters of [A-Za-z0-9._-], not starting with `.'",
		    field, plugfs_quote(q, sizeof(q), s), REG_NAME_MAX);
	return 0;
}

int reg_validate_printable(const char *field, const char *s, char *err, size_t errlen)
{
	char q[128];
	size_t len;

	if (!s)
		return plugfs_errf(err, errlen, -EINVAL, "%s: missing", field);
	len = strlen(s);
	if (len > REG_VALUE_MAX)
		return plugfs_errf(err, errlen, -EINVAL,
				   "%s `%s': must be at most %d bytes (is %zu)", field,
				   plugfs_quote(q, sizeof(q), s), REG_VALUE_MAX, len);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = plugfs_utf8_decode(s + i, &cp);

		if (n == 0)
			return plugfs_errf(err, errlen, -EINVAL, "%s `%s': must be valid UTF-8",
					   field, plugfs_quote(q, sizeof(q), s));
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
			return plugfs_errf(err, errlen, -EINVAL,
					   "%s `%s': must be printable (no control characters)",
					   field, plugfs_quote(q, sizeof(q), s));
		i += n;
	}
	return 0;
}

static const char normal_rule[] =
    "must be normalised (no `.', `..' or empty components, no trailing `/')";

int reg_validate_path(const char *field, const char *s, bool root_ok, char *err, size_t errlen)
{
	char q[128];
	size_t len;

	if (!s)
		return plugfs_errf(err, errlen, -EINVAL, "%s: missing", field);
	len = strlen(s);
	if (s[0] != '/')
		return plugfs_errf(err, errlen, -EINVAL, "%s `%s': must be an absolute path", field,
				   plugfs_quote(q, sizeof(q), s));
	if (len >= PATH_MAX)
		return plugfs_errf(err, errlen, -EINVAL,
				   "%s `%s': must be shorter than %d bytes (is %zu)", field,
				   plugfs_quote(q, sizeof(q), s), PATH_MAX, len);
	/* C0 controls, DEL, and C1 controls (U+0080-U+009F, 0xc2 0x80-0x9f in
	 * UTF-8: a terminal reads U+009B as CSI).  Other bytes are allowed: a
	 * path need not be UTF-8. */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f ||
		    (c == 0xc2 && ((unsigned char)s[i + 1] & 0xe0) == 0x80))
			return plugfs_errf(err, errlen, -EINVAL,
					   "%s `%s': must not contain control characters", field,
					   plugfs_quote(q, sizeof(q), s));
	}
	if (root_ok && strcmp(s, "/") == 0)
		return 0;
	/* Every component, between a '/' and the next '/' or the end, must be
	 * non-empty and neither "." nor "..".  This also rejects "/" itself
	 * and a trailing slash (an empty last component). */
	for (const char *c = s + 1;;) {
		const char *end = strchr(c, '/');
		size_t n = end ? (size_t)(end - c) : strlen(c);

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return plugfs_errf(err, errlen, -EINVAL, "%s `%s': %s", field,
					   plugfs_quote(q, sizeof(q), s), normal_rule);
		if (!end)
			break;
		c = end + 1;
	}
	return 0;
}

int reg_validate_socket_path(const char *field, const char *s, char *err, size_t errlen)
{
	char q[128];
	uint32_t cp;
	int rc = reg_validate_path(field, s, false, err, errlen);

	if (rc < 0)
		return rc;
	/* A socket is shown in the protocol's JSON, which carries UTF-8 only
	 * (a register can send no other), and in `info': bytes that are not
	 * UTF-8 would be shown as one path and served as another. */
	for (size_t i = 0, n; s[i]; i += n)
		if ((n = plugfs_utf8_decode(s + i, &cp)) == 0)
			return plugfs_errf(err, errlen, -EINVAL, "%s `%s': must be valid UTF-8",
					   field, plugfs_quote(q, sizeof(q), s));
	return 0;
}

int reg_find_type(const char *type, const char *const *types, size_t n_types, size_t *idx,
		  char *err, size_t errlen)
{
	char q[128], list[256];

	for (size_t i = 0; type && i < n_types; i++) {
		if (strcmp(types[i], type) == 0) {
			if (idx)
				*idx = i;
			return 0;
		}
	}
	plugfs_join(list, sizeof(list), types, n_types, ", ");
	if (!type)
		return plugfs_errf(err, errlen, -EINVAL, "type: missing; must be one of %s", list);
	return plugfs_errf(err, errlen, -EINVAL,
			   "type `%s': must be one of the configured types (%s)",
			   plugfs_quote(q, sizeof(q), type), list);
}

bool reg_path_under(const char *path, const char *root)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 1 && root[0] == '/')
		return path[0] == '/' && path[1] != '\0';
	return strncmp(path, root, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

int reg_validate_socket(const char *field, const char *s, const char *const *roots, size_t n_roots,
			char *err, size_t errlen)
{
	char q[128], list[256];
	int rc = reg_validate_socket_path(field, s, err, errlen);

	if (rc < 0 || n_roots == 0)
		return rc;
	for (size_t i = 0; i < n_roots; i++)
		if (reg_path_under(s, roots[i]))
			return 0;
	plugfs_join(list, sizeof(list), roots, n_roots, ", ");
	return plugfs_errf(err, errlen, -EINVAL,
			   "%s `%s': must be under one of the socket roots (%s)", field,
			   plugfs_quote(q, sizeof(q), s), list);
}

static int option_cmp(const void *a, const void *b)
{
	return strcmp(((const struct reg_option *)a)->key, ((const struct reg_option *)b)->key);
}

void reg_options_sort(struct reg_option *o, size_t n)
{
	if (n > 1)
		qsort(o, n, sizeof(*o), option_cmp);
}

static int key_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts a copy of the key pointers: O(n log n) for any number of options. */
static int check_duplicate_keys(const struct reg_option *o, size_t n, char *err, size_t errlen)
{
	const char **keys = NULL;
	char q[128];
	int rc = 0;

	if (n < 2)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return plugfs_errf(err, errlen, -ENOMEM, "options: out of memory");
	for (size_t i = 0; i < n; i++)
		keys[i] = o[i].key;
	qsort(keys, n, sizeof(*keys), key_ptr_cmp);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(keys[i - 1], keys[i]) == 0) {
			rc = plugfs_errf(err, errlen, -EINVAL,
					 "option key `%s': given more than once",
					 plugfs_quote(q, sizeof(q), keys[i]));
			goto out;
		}
	}
out:
	free(keys);
	return rc;
}

int reg_validate_csi_name(const char *field, const char *s, char *err, size_t errlen)
{
	size_t n = s ? strlen(s) : 0;
	char q[PLUGFS_QUOTE_MAX];
	bool ok = n >= 1 && n <= REG_CSI_NAME_MAX;

	for (size_t i = 0; ok && i < n; i++) {
		bool alnum = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
			     (s[i] >= '0' && s[i] <= '9');

		ok = alnum || ((s[i] == '.' || s[i] == '-') && i > 0 && i + 1 < n);
	}
	if (!ok)
		return plugfs_errf(err, errlen, -EINVAL,
				   "%s `%s': must be a CSI plugin name: 1-%d of [A-Za-z0-9.-], "
				   "beginning and ending with a letter or a digit",
				   field, plugfs_quote(q, sizeof(q), s ? s : ""), REG_CSI_NAME_MAX);
	return 0;
}

int reg_validate_source(const char *source, char *err, size_t errlen)
{
	const size_t n = strlen(REG_SOURCE_DISCOVER);
	char q[PLUGFS_QUOTE_MAX];

	if (!source || !*source)
		return 0;
	if (strncmp(source, REG_SOURCE_DISCOVER, n) != 0)
		return plugfs_errf(err, errlen, -EINVAL,
				   "source `%s': must be empty (the control socket) or "
				   "discover.NAME",
				   plugfs_quote(q, sizeof(q), source));
	return reg_validate_name("source: discover.NAME", source + n, err, errlen);
}

int reg_validate_hold(const char *source, const char *alloc, char *err, size_t errlen)
{
	int rc;

	if (!source || strncmp(source, REG_SOURCE_DISCOVER, strlen(REG_SOURCE_DISCOVER)) != 0)
		return plugfs_errf(err, errlen, -EINVAL,
				   "source: a hold is a discovery's (discover.NAME)");
	if ((rc = reg_validate_source(source, err, errlen)) < 0)
		return rc;
	return reg_validate_name("alloc", alloc, err, errlen);
}

int reg_validate_probe(enum reg_probe probe, const char *csi_name, char *err, size_t errlen)
{
	if (probe != REG_PROBE_DEFAULT && !reg_probe_name(probe))
		return plugfs_errf(err, errlen, -EINVAL,
				   "probe %d: must be one of none, connect, csi", (int)probe);
	if (!csi_name || !*csi_name)
		return 0;
	if (probe != REG_PROBE_CSI)
		return plugfs_errf(
		    err, errlen, -EINVAL,
		    "csi_name: only with probe csi (the name is what the csi probe's "
		    "GetPluginInfo must answer), got probe %s",
		    reg_probe_name(probe) ? reg_probe_name(probe) : "default");
	return reg_validate_csi_name("csi_name", csi_name, err, errlen);
}

int reg_validate_spec(const struct reg_spec *spec, const char *const *roots, size_t n_roots,
		      char *err, size_t errlen)
{
	char field[REG_NAME_MAX + 32];
	int rc;

	if ((rc = reg_validate_name("name", spec->name, err, errlen)) < 0 ||
	    (rc = reg_validate_name("alloc", spec->alloc, err, errlen)) < 0 ||
	    (rc = reg_validate_socket("socket", spec->socket, roots, n_roots, err, errlen)) < 0)
		return rc;
	if (spec->version &&
	    (rc = reg_validate_printable("version", spec->version, err, errlen)) < 0)
		return rc;
	if ((rc = reg_validate_probe(spec->probe, spec->csi_name, err, errlen)) < 0 ||
	    (rc = reg_validate_source(spec->source, err, errlen)) < 0)
		return rc;
	if (spec->kind != REG_KIND_UNSET && !reg_kind_name(spec->kind))
		return plugfs_errf(err, errlen, -EINVAL,
				   "kind %d: must be one of controller, node, monolith",
				   (int)spec->kind);
	if (spec->n_options > 0 && !spec->options)
		return plugfs_errf(err, errlen, -EINVAL, "options: missing");
	for (size_t i = 0; i < spec->n_options; i++) {
		const struct reg_option *o = &spec->options[i];

		if ((rc = reg_validate_name("option key", o->key, err, errlen)) < 0)
			return rc;
		snprintf(field, sizeof(field), "option `%s' value", o->key);
		if ((rc = reg_validate_printable(field, o->value, err, errlen)) < 0)
			return rc;
	}
	return check_duplicate_keys(spec->options, spec->n_options, err, errlen);
}

int reg_sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	default:
		return -EIO;
	}
}
