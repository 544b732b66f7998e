/* SPDX-License-Identifier: MIT */
/*
 * Reading the legacy registry document {"Plugins": {type: {name: PluginInfo}}}
 * with SQLite's JSON functions (json_valid, json_type, json_each,
 * json_extract): no JSON parser of our own.  SQLite 3.40's json_valid
 * accepts some documents that are not JSON, and json_each then crashes on
 * them (fuzz_legacy found both): an object key that is not UTF-8 (refused
 * by keys_are_utf8) and an object where a key belongs (jansson checks the
 * syntax first).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "hash.h"
#include "array.h"
#include "strutil.h"
#include "utf8.h"
#include "internal.h"

/* The entries of every type object, in document order. */
static const char entries_sql[] =
    "SELECT t.key, p.key, p.type, p.value,"
    " json_type(p.value, '$.Name'), json_extract(p.value, '$.Name'),"
    " json_type(p.value, '$.AllocID'), json_extract(p.value, '$.AllocID'),"
    " json_type(p.value, '$.ConnectionInfo.SocketPath'),"
    " json_extract(p.value, '$.ConnectionInfo.SocketPath'),"
    " json_type(p.value, '$.Version'), json_extract(p.value, '$.Version'),"
    " json_type(p.value, '$.Type'), json_extract(p.value, '$.Type'),"
    " json_type(p.value, '$.Options'),"
    " json_type(p.value, '$.Probe'), json_extract(p.value, '$.Probe'),"
    " json_type(p.value, '$.CSIName'), json_extract(p.value, '$.CSIName')"
    " FROM json_each(?1, '$.Plugins') AS t, json_each(t.value) AS p"
    " WHERE t.type = 'object' ORDER BY t.id, p.id";

static const char options_sql[] =
    "SELECT key, type, value FROM json_each(?1, '$.Options') ORDER BY id";

enum {
	C_TYPE,
	C_NAME,
	C_PTYPE,
	C_PVALUE,
	C_NAME_T,
	C_NAME_V,
	C_ALLOC_T,
	C_ALLOC_V,
	C_SOCK_T,
	C_SOCK_V,
	C_VER_T,
	C_VER_V,
	C_KIND_T,
	C_KIND_V,
	C_OPT_T,
	C_PROBE_T,
	C_PROBE_V,
	C_CSI_T,
	C_CSI_V,
};

/* A copy of a text column, refusing embedded NUL characters. */
static int dup_text(sqlite3_stmt *st, int col, char **out)
{
	const char *t = (const char *)sqlite3_column_text(st, col);
	int n = sqlite3_column_bytes(st, col);

	*out = NULL;
	if (!t)
		return -EINVAL;
	if ((size_t)n != strlen(t))
		return -EINVAL;
	*out = strdup(t);
	return *out ? 0 : -ENOMEM;
}

static bool col_is(sqlite3_stmt *st, int col, const char *type)
{
	const char *t = (const char *)sqlite3_column_text(st, col);

	return t && strcmp(t, type) == 0;
}

static bool col_absent(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL || col_is(st, col, "null");
}

static int shape_error(char *err, size_t errlen, const char *type, const char *name,
		       const char *field, const char *rule)
{
	char qt[128], qn[128];

	return plugfs_errf(err, errlen, -EINVAL, "legacy JSON: Plugins.%s.%s%s%s: %s",
			   plugfs_quote(qt, sizeof(qt), type), plugfs_quote(qn, sizeof(qn), name),
			   field[0] ? "." : "", field, rule);
}

static int read_options(sqlite3 *db, sqlite3_stmt *ost, const char *info, struct legacy_entry *e,
			char *err, size_t errlen)
{
	size_t cap = 0;
	int rc;

	sqlite3_reset(ost);
	sqlite3_bind_text(ost, 1, info, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(ost)) == SQLITE_ROW) {
		struct reg_option *o;

		if (!col_is(ost, 1, "text"))
			return shape_error(err, errlen, e->type, e->name, "Options",
					   "every value must be a string");
		if (PLUGFS_GROW(e->options, cap, e->n_options, 4) != 0)
			return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
		o = &e->options[e->n_options];
		memset(o, 0, sizeof(*o));
		e->n_options++;
		if ((rc = dup_text(ost, 0, &o->key)) < 0 || (rc = dup_text(ost, 2, &o->value)) < 0)
			return rc == -ENOMEM ? plugfs_errf(err, errlen, rc, "out of memory")
					     : shape_error(err, errlen, e->type, e->name, "Options",
							   "keys and values must not contain NUL");
	}
	if (rc != SQLITE_DONE)
		return plugfs_errf(err, errlen, -EINVAL, "legacy JSON: %s", sqlite3_errmsg(db));
	reg_options_sort(e->options, e->n_options);
	return 0;
}

static int read_entry(sqlite3 *db, sqlite3_stmt *st, sqlite3_stmt *ost, struct legacy_entry *e,
		      char *err, size_t errlen)
{
	int rc;

	if ((rc = dup_text(st, C_TYPE, &e->type)) < 0 || (rc = dup_text(st, C_NAME, &e->name)) < 0)
		return rc == -ENOMEM
			   ? plugfs_errf(err, errlen, rc, "out of memory")
			   : plugfs_errf(err, errlen, rc, "legacy JSON: a key contains NUL");
	if (!col_is(st, C_PTYPE, "object"))
		return shape_error(err, errlen, e->type, e->name, "", "must be an object");
	if (!col_absent(st, C_NAME_T)) {
		const char *n = (const char *)sqlite3_column_text(st, C_NAME_V);

		if (!col_is(st, C_NAME_T, "text") || !n || strcmp(n, e->name) != 0)
			return shape_error(err, errlen, e->type, e->name, "Name",
					   "must be the same as the key");
	}
	if (!col_is(st, C_ALLOC_T, "text") || dup_text(st, C_ALLOC_V, &e->alloc) < 0)
		return shape_error(err, errlen, e->type, e->name, "AllocID", "must be a string");
	if (!col_is(st, C_SOCK_T, "text") || dup_text(st, C_SOCK_V, &e->socket) < 0)
		return shape_error(err, errlen, e->type, e->name, "ConnectionInfo.SocketPath",
				   "must be a string");
	if (!col_absent(st, C_VER_T) &&
	    (!col_is(st, C_VER_T, "text") || dup_text(st, C_VER_V, &e->version) < 0))
		return shape_error(err, errlen, e->type, e->name, "Version", "must be a string");
	if (!col_absent(st, C_KIND_T) &&
	    (!col_is(st, C_KIND_T, "text") ||
	     reg_kind_parse((const char *)sqlite3_column_text(st, C_KIND_V), &e->kind) < 0))
		return shape_error(err, errlen, e->type, e->name, "Type",
				   "must be one of controller, node, monolith");
	if (!col_absent(st, C_PROBE_T) &&
	    (!col_is(st, C_PROBE_T, "text") ||
	     reg_probe_parse((const char *)sqlite3_column_text(st, C_PROBE_V), &e->probe) < 0))
		return shape_error(err, errlen, e->type, e->name, "Probe",
				   "must be one of none, connect, csi");
	if (!col_absent(st, C_CSI_T) &&
	    (!col_is(st, C_CSI_T, "text") || dup_text(st, C_CSI_V, &e->csi_name) < 0))
		return shape_error(err, errlen, e->type, e->name, "CSIName", "must be a string");
	if (col_absent(st, C_OPT_T))
		return 0;
	if (!col_is(st, C_OPT_T, "object"))
		return shape_error(err, errlen, e->type, e->name, "Options", "must be an object");
	return read_options(db, ost, (const char *)sqlite3_column_text(st, C_PVALUE), e, err,
			    errlen);
}

/* SQLite's JSON parser refuses documents nested deeper than JSON_MAX_DEPTH
 * (2000, 1000 in later versions) as not valid: below this depth, invalid
 * JSON is not valid JSON; deeper, the depth is the likely cause. */
#define NESTING_REPORTED 1000

/* The deepest nesting of arrays and objects in json (strings skipped). */
static size_t nesting_depth(const char *json)
{
	size_t depth = 0, max = 0;
	bool in_string = false;

	for (const char *c = json; *c; c++) {
		if (in_string) {
			if (*c == '\\' && c[1])
				c++;
			else if (*c == '"')
				in_string = false;
		} else if (*c == '"') {
			in_string = true;
		} else if (*c == '[' || *c == '{') {
			if (++depth > max)
				max = depth;
		} else if ((*c == ']' || *c == '}') && depth) {
			depth--;
		}
	}
	return max;
}

/* The document must be an object whose Plugins is an object (or null) of
 * objects (or nulls). */
static int check_top(sqlite3 *db, const char *json, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	const char *top, *plugins;
	int rc =
	    sqlite3_prepare_v2(db,
			       "SELECT json_valid(?1), json_type(?1), json_type(?1, '$.Plugins'),"
			       " (SELECT count(*) FROM json_each(?1, '$.Plugins')"
			       "  WHERE type NOT IN ('object', 'null'))"
			       " WHERE json_valid(?1)",
			       -1, &st, NULL);

	if (rc != SQLITE_OK) {
		rc = plugfs_errf(err, errlen, -EIO, "legacy JSON: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		size_t depth = nesting_depth(json);

		if (depth > NESTING_REPORTED)
			rc = plugfs_errf(err, errlen, -EINVAL,
					 "legacy JSON: nested too deep (%zu levels of arrays and "
					 "objects)",
					 depth);
		else
			rc = plugfs_errf(err, errlen, -EINVAL, "legacy JSON: not valid JSON");
		goto out;
	}
	if (rc != SQLITE_ROW) {
		rc = plugfs_errf(err, errlen, -EINVAL, "legacy JSON: %s", sqlite3_errmsg(db));
		goto out;
	}
	top = (const char *)sqlite3_column_text(st, 1);
	plugins = (const char *)sqlite3_column_text(st, 2);
	if (!top || strcmp(top, "object") != 0) {
		rc = plugfs_errf(err, errlen, -EINVAL,
				 "legacy JSON: must be an object with `Plugins'");
		goto out;
	}
	if (!plugins) {
		rc = plugfs_errf(err, errlen, -EINVAL, "legacy JSON: `Plugins' missing");
		goto out;
	}
	if (strcmp(plugins, "object") != 0 && strcmp(plugins, "null") != 0) {
		rc = plugfs_errf(err, errlen, -EINVAL, "legacy JSON: `Plugins' must be an object");
		goto out;
	}
	if (sqlite3_column_int64(st, 3) != 0) {
		rc = plugfs_errf(
		    err, errlen, -EINVAL,
		    "legacy JSON: every value of `Plugins' must be an object of plugins");
		goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/*
 * Whether every object key of json is valid UTF-8.  SQLite's json_each
 * crashes on a key that is not (fuzz_legacy found it); values are checked
 * field by field later, with the field's name in the message.  A plain
 * scan: strings (with their escapes), and a string followed by `:' is a key.
 */
static bool keys_are_utf8(const char *json)
{
	for (const char *p = json; *p; p++) {
		const char *start, *q;
		bool bad = false;

		if (*p != '"')
			continue;
		start = ++p;
		while (*p && *p != '"') {
			if (*p == '\\' && p[1])
				p++;
			p++;
		}
		if (!*p)
			return true; /* unterminated: json_valid refuses it */
		for (q = p + 1; *q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'; q++)
			;
		if (*q == ':') {
			char *key = strndup(start, (size_t)(p - start));

			bad = !key || !plugfs_utf8_valid(key);
			free(key);
		}
		if (bad)
			return false;
	}
	return true;
}

/*
 * The document's structure is strict JSON (RFC 8259: string keys, nothing
 * after the value) when jansson parses it; the tree is thrown away at once.
 * jansson reads a copy whose bytes that are not UTF-8 are `?' (same length,
 * so the line and column hold): those are refused later, key by key above
 * and field by field with the field's name.  \u0000 is left to the fields'
 * checks too.
 */
static int check_syntax(const char *json, char *err, size_t errlen)
{
	json_error_t je;
	char *copy = plugfs_utf8_sanitize(json);
	json_t *doc = copy ? json_loads(copy, JSON_ALLOW_NUL, &je) : NULL;

	free(copy);
	if (!copy)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	if (doc) {
		json_decref(doc);
		return 0;
	}
	if (nesting_depth(json) > NESTING_REPORTED)
		return plugfs_errf(err, errlen, -EINVAL,
				   "legacy JSON: nested too deep (%zu levels of arrays and objects)",
				   nesting_depth(json));
	return plugfs_errf(err, errlen, -EINVAL, "legacy JSON: not valid JSON (line %d, column %d: %s)",
			   je.line, je.column, je.text);
}

int legacy_parse(sqlite3 *db, const char *json, struct legacy_entry **out, size_t *n_out, char *err,
		 size_t errlen)
{
	sqlite3_stmt *st = NULL, *ost = NULL;
	struct legacy_entry *v = NULL;
	struct hash seen;
	size_t n = 0, cap = 0;
	char key[2 * REG_NAME_MAX + 2];
	int rc;

	hash_init(&seen);
	*out = NULL;
	*n_out = 0;
	if (!keys_are_utf8(json)) {
		rc = plugfs_errf(err, errlen, -EINVAL,
				 "legacy JSON: an object key is not valid UTF-8");
		goto out;
	}
	if ((rc = check_syntax(json, err, errlen)) < 0 || (rc = check_top(db, json, err, errlen)) < 0)
		goto out;
	if (sqlite3_prepare_v2(db, entries_sql, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, options_sql, -1, &ost, NULL) != SQLITE_OK) {
		rc = plugfs_errf(err, errlen, -EIO, "legacy JSON: %s", sqlite3_errmsg(db));
		goto out;
	}
	sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (PLUGFS_GROW(v, cap, n, 8) != 0) {
			rc = plugfs_errf(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
		memset(&v[n], 0, sizeof(v[n]));
		n++;
		if ((rc = read_entry(db, st, ost, &v[n - 1], err, errlen)) < 0)
			goto out;
		/* JSON allows a key twice; a plugin twice is not a registry. */
		if ((size_t)snprintf(key, sizeof(key), "%s/%s", v[n - 1].type, v[n - 1].name) <
		    sizeof(key)) {
			if (hash_get(&seen, key)) {
				rc = shape_error(err, errlen, v[n - 1].type, v[n - 1].name, "",
						 "appears more than once");
				goto out;
			}
			if (hash_put(&seen, key, &v[n - 1]) < 0) {
				rc = plugfs_errf(err, errlen, -ENOMEM, "out of memory");
				goto out;
			}
		}
	}
	if (rc != SQLITE_DONE) {
		rc = plugfs_errf(err, errlen, -EINVAL, "legacy JSON: %s", sqlite3_errmsg(db));
		goto out;
	}
	rc = 0;
	*out = v;
	*n_out = n;
	v = NULL;
	n = 0;
out:
	hash_free(&seen);
	legacy_free(v, n);
	sqlite3_finalize(st);
	sqlite3_finalize(ost);
	return rc;
}

void legacy_free(struct legacy_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(e[i].type);
		free(e[i].name);
		free(e[i].alloc);
		free(e[i].socket);
		free(e[i].version);
		free(e[i].csi_name);
		for (size_t j = 0; j < e[i].n_options; j++) {
			free(e[i].options[j].key);
			free(e[i].options[j].value);
		}
		free(e[i].options);
	}
	free(e);
}

struct reg_spec legacy_spec(const struct legacy_entry *e)
{
	return (struct reg_spec){
	    .name = e->name,
	    .alloc = e->alloc,
	    .socket = e->socket,
	    .version = e->version,
	    .kind = e->kind,
	    .options = e->options,
	    .n_options = e->n_options,
	    .probe = e->probe,
	    .csi_name = e->csi_name,
	};
}

int legacy_validate(const struct legacy_entry *e, const char *const *types, size_t n_types,
		    const char *const *roots, size_t n_roots, size_t *type_idx, char *err,
		    size_t errlen)
{
	struct reg_spec spec = legacy_spec(e);
	char msg[REG_ERR_MAX], qt[128], qn[128];
	int rc;

	rc = types ? reg_find_type(e->type, types, n_types, type_idx, msg, sizeof(msg))
		   : reg_validate_name("type", e->type, msg, sizeof(msg));
	if (rc == 0)
		rc = reg_validate_spec(&spec, roots, n_roots, msg, sizeof(msg));
	if (rc < 0)
		return plugfs_errf(err, errlen, rc, "Plugins.%s.%s: %s",
				   plugfs_quote(qt, sizeof(qt), e->type),
				   plugfs_quote(qn, sizeof(qn), e->name), msg);
	return 0;
}
