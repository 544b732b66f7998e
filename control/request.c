/* SPDX-License-Identifier: MIT */
/*
 * Parsing of control requests: the JSON shape of each operation (which
 * fields, which JSON types; the op table that names the operations and
 * their fields is ops.c's, given to the parse), the error codes and the
 * answers' shapes.  The values themselves (names, types, socket
 * paths) are validated by the registry, so every client gets the same rules.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_internal.h"
#include "strutil.h"

static const char *const code_names[] = {
    [CTL_E_INVALID_ARGUMENT] = "invalid_argument",
    [CTL_E_PERMISSION_DENIED] = "permission_denied",
    [CTL_E_NOT_FOUND] = "not_found",
    [CTL_E_UNAVAILABLE] = "unavailable",
    [CTL_E_INTERNAL] = "internal",
};

const char *ctl_code_name(enum ctl_code c)
{
	return (unsigned)c < sizeof(code_names) / sizeof(code_names[0]) ? code_names[c]
									: "internal";
}

enum ctl_code ctl_code_from_errno(int neg_errno)
{
	switch (neg_errno) {
	case -EINVAL:
	case -ENAMETOOLONG:
		return CTL_E_INVALID_ARGUMENT;
	case -ENOENT:
		return CTL_E_NOT_FOUND;
	case -EPERM:
	case -EACCES:
		return CTL_E_PERMISSION_DENIED;
	case -EIO:
	case -ENOSPC:
	case -EROFS:
	case -EBUSY:
	case -EAGAIN:
	case -EDQUOT:
		return CTL_E_UNAVAILABLE;
	default:
		return CTL_E_INTERNAL;
	}
}

static int fail(enum ctl_code *code, enum ctl_code c, char *err, size_t errlen, const char *fmt,
		...) __attribute__((format(printf, 5, 6)));
static int fail(enum ctl_code *code, enum ctl_code c, char *err, size_t errlen, const char *fmt,
		...)
{
	va_list ap;

	*code = c;
	va_start(ap, fmt);
	plugfs_vseterr(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

/* Field `key` as a string: required or optional. */
static int get_string(json_t *root, const char *op, const char *key, bool required,
		      const char **out, enum ctl_code *code, char *err, size_t errlen)
{
	json_t *v = json_object_get(root, key);

	*out = NULL;
	if (!v) {
		if (required)
			return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
				    "%s: field `%s' is required", op, key);
		return 0;
	}
	if (!json_is_string(v))
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "%s: field `%s' must be a string, got %s", op, key, json_type_name(v));
	*out = json_string_value(v);
	return 0;
}

/* Optional field `key` as a boolean (false when absent). */
static int get_bool(json_t *root, const char *op, const char *key, bool *out,
		    enum ctl_code *code, char *err, size_t errlen)
{
	json_t *v = json_object_get(root, key);

	*out = false;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "%s: field `%s' must be true or false, got %s", op, key,
			    json_type_name(v));
	*out = json_is_true(v);
	return 0;
}

/* Field `key` as an array of 1..CTL_MAX_TYPES strings. */
static int get_string_array(json_t *root, const char *op, const char *key, bool required,
			    const char **out, size_t *n_out, enum ctl_code *code, char *err,
			    size_t errlen)
{
	json_t *v = json_object_get(root, key);
	size_t i;
	json_t *e;

	*n_out = 0;
	if (!v) {
		if (required)
			return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
				    "%s: field `%s' is required (an array of type names)", op, key);
		return 0;
	}
	if (!json_is_array(v))
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "%s: field `%s' must be an array of strings, got %s", op, key,
			    json_type_name(v));
	if (json_array_size(v) == 0)
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "%s: field `%s' must hold at least one type", op, key);
	if (json_array_size(v) > CTL_MAX_TYPES)
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "%s: field `%s' holds %zu entries; at most %d are accepted", op, key,
			    json_array_size(v), CTL_MAX_TYPES);
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e))
			return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
				    "%s: field `%s'[%zu] must be a string, got %s", op, key, i,
				    json_type_name(e));
		for (size_t k = 0; k < i; k++)
			if (strcmp(out[k], json_string_value(e)) == 0)
				return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
					    "%s: field `%s' lists `%s' twice", op, key, out[k]);
		out[i] = json_string_value(e);
	}
	*n_out = json_array_size(v);
	return 0;
}

static int get_options(struct ctl_request *req, enum ctl_code *code, char *err, size_t errlen)
{
	json_t *v = json_object_get(req->root, "options");
	const char *key;
	json_t *val;

	req->n_options = 0;
	if (!v)
		return 0;
	if (!json_is_object(v))
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "register: field `options' must be an object of strings, got %s",
			    json_type_name(v));
	if (json_object_size(v) > CTL_MAX_OPTIONS)
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "register: field `options' holds %zu entries; at most %d are accepted",
			    json_object_size(v), CTL_MAX_OPTIONS);
	json_object_foreach(v, key, val)
	{
		if (!json_is_string(val))
			return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
				    "register: option `%.128s' must be a string, got %s", key,
				    json_type_name(val));
		req->options[req->n_options].key = (char *)key;
		req->options[req->n_options].value = (char *)json_string_value(val);
		req->n_options++;
	}
	return 0;
}

static int get_timeout(struct ctl_request *req, enum ctl_code *code, char *err, size_t errlen)
{
	json_t *v = json_object_get(req->root, "timeout");
	double t;

	req->timeout = -1;
	if (!v)
		return 0;
	if (!json_is_number(v))
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "wait: field `timeout' must be a number of seconds, got %s",
			    json_type_name(v));
	t = json_number_value(v);
	if (!isfinite(t) || t < 0 || t > CTL_WAIT_TIMEOUT_MAX)
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "wait: field `timeout' must be between 0 and %.0f seconds, got %g",
			    CTL_WAIT_TIMEOUT_MAX, t);
	req->timeout = t;
	return 0;
}

static int check_fields(json_t *root, const struct ctl_op_desc *d, enum ctl_code *code, char *err,
			size_t errlen)
{
	const char *key;
	json_t *val;

	json_object_foreach(root, key, val)
	{
		bool known = strcmp(key, "op") == 0 || strcmp(key, "id") == 0;

		for (size_t i = 0; !known && d->fields[i]; i++)
			known = strcmp(key, d->fields[i]) == 0;
		if (!known) {
			char accepted[160] = "op, id";
			size_t n = strlen(accepted);

			for (size_t i = 0; d->fields[i]; i++)
				n += (size_t)snprintf(accepted + n, sizeof(accepted) - n, ", %s",
						      d->fields[i]);
			return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
				    "%s: unknown field `%.64s'; accepted: %s", d->name, key,
				    accepted);
		}
	}
	return 0;
}

/* The names of the operations of ops, ", " between them. */
static void op_names(const struct ctl_op_desc *ops, char *buf, size_t len)
{
	const char *names[CTL_OP_COUNT];

	for (size_t i = 0; i < CTL_OP_COUNT; i++)
		names[i] = ops[i].name;
	plugfs_join(buf, len, names, CTL_OP_COUNT, ", ");
}

int ctl_parse_request(const struct ctl_op_desc *ops, const char *line, size_t len,
		      struct ctl_request *req, enum ctl_code *code, char *err, size_t errlen)
{
	const struct ctl_op_desc *d = NULL;
	json_error_t jerr;
	const char *op = NULL;
	char names[160];
	json_t *v;
	int rc;

	memset(req, 0, sizeof(*req));
	req->timeout = -1;
	if (len > CONTROL_LINE_MAX)
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "request line is %zu bytes; at most %d are accepted (CONTROL_LINE_MAX)",
			    len, CONTROL_LINE_MAX);
	req->root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req->root)
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "malformed JSON at column %d: %s", jerr.column, jerr.text);
	if (!json_is_object(req->root))
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "a request must be a JSON object, got %s", json_type_name(req->root));
	v = json_object_get(req->root, "id");
	if (v) {
		if (!json_is_string(v) && !json_is_integer(v))
			return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
				    "field `id' must be a string or an integer, got %s",
				    json_type_name(v));
		req->id = v;
	}
	op_names(ops, names, sizeof(names));
	v = json_object_get(req->root, "op");
	if (!v)
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "field `op' is required (%s)", names);
	if (!json_is_string(v))
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "field `op' must be a string, got %s", json_type_name(v));
	op = json_string_value(v);
	for (size_t i = 0; i < CTL_OP_COUNT && !d; i++)
		if (strcmp(op, ops[i].name) == 0)
			d = &ops[i];
	if (!d)
		return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
			    "unknown op `%.64s'; accepted: %s", op, names);
	req->op = (enum ctl_op)(d - ops);
	req->desc = d;
	rc = check_fields(req->root, d, code, err, errlen);
	if (rc)
		return rc;

	switch (req->op) {
	case CTL_OP_REGISTER:
		if ((rc = get_string_array(req->root, d->name, "types", true, req->types,
					   &req->n_types, code, err, errlen)) ||
		    (rc = get_string(req->root, d->name, "name", true, &req->name, code, err,
				     errlen)) ||
		    (rc = get_string(req->root, d->name, "alloc", true, &req->alloc, code, err,
				     errlen)) ||
		    (rc = get_string(req->root, d->name, "socket", true, &req->socket, code, err,
				     errlen)) ||
		    (rc = get_string(req->root, d->name, "version", false, &req->version, code, err,
				     errlen)) ||
		    (rc = get_string(req->root, d->name, "kind", false, &req->kind, code, err,
				     errlen)) ||
		    (rc = get_string(req->root, d->name, "probe", false, &req->probe, code, err,
				     errlen)) ||
		    (rc = get_string(req->root, d->name, "csi_name", false, &req->csi_name, code,
				     err, errlen)) ||
		    (rc = get_options(req, code, err, errlen)))
			return rc;
		break;
	case CTL_OP_DEREGISTER:
		if ((rc = get_string(req->root, d->name, "alloc", true, &req->alloc, code, err,
				     errlen)) ||
		    (rc = get_string(req->root, d->name, "type", false, &req->type, code, err,
				     errlen)) ||
		    (rc = get_string(req->root, d->name, "name", false, &req->name, code, err,
				     errlen)))
			return rc;
		if (!req->type != !req->name)
			return fail(code, CTL_E_INVALID_ARGUMENT, err, errlen,
				    "deregister: fields `type' and `name' go together: give both "
				    "(one registration) or neither (every registration of the "
				    "alloc)");
		break;
	case CTL_OP_LIST:
		if ((rc = get_string(req->root, d->name, "type", false, &req->type, code, err,
				     errlen)) ||
		    (rc = get_bool(req->root, d->name, "stream", &req->stream, code, err, errlen)))
			return rc;
		break;
	case CTL_OP_SHOW:
	case CTL_OP_WAIT:
		if ((rc = get_string(req->root, d->name, "type", true, &req->type, code, err,
				     errlen)) ||
		    (rc = get_string(req->root, d->name, "name", true, &req->name, code, err,
				     errlen)))
			return rc;
		if (req->op == CTL_OP_WAIT && ((rc = get_string(req->root, d->name, "alloc", false,
								&req->alloc, code, err, errlen)) ||
					       (rc = get_timeout(req, code, err, errlen))))
			return rc;
		break;
	case CTL_OP_WATCH:
		if ((rc = get_string_array(req->root, d->name, "types", false, req->types,
					   &req->n_types, code, err, errlen)))
			return rc;
		break;
	case CTL_OP_STATUS:
	case CTL_OP_RELOAD:
	case CTL_OP_METRICS:
		break;
	}
	return 0;
}

void ctl_request_free(struct ctl_request *req)
{
	json_decref(req->root);
	memset(req, 0, sizeof(*req));
}

json_t *ctl_error_response(json_t *id, enum ctl_code code, const char *message)
{
	json_t *o = json_pack("{s:b, s:{s:s, s:o}}", "ok", 0, "error", "code", ctl_code_name(code),
			      "message", ctl_json_text(message));

	if (o && id)
		json_object_set(o, "id", id);
	return o;
}

json_t *ctl_ok_response(json_t *id)
{
	json_t *o = json_pack("{s:b}", "ok", 1);

	if (o && id)
		json_object_set(o, "id", id);
	return o;
}

char *ctl_dump_line(json_t *obj, size_t *len)
{
	char *s = json_dumps(obj, JSON_COMPACT);
	size_t n;
	char *line;

	if (!s)
		return NULL;
	n = strlen(s);
	line = realloc(s, n + 2);
	if (!line) {
		free(s);
		return NULL;
	}
	line[n] = '\n';
	line[n + 1] = '\0';
	*len = n + 1;
	return line;
}
