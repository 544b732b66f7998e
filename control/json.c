/* SPDX-License-Identifier: MIT */
/*
 * The JSON shapes of registrations, plugins and snapshots, shared by the
 * control protocol (list, show, watch) and the offline `state dump --json`.
 * Every function returns a new reference, or NULL when memory ran out.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control.h"

/* Sets key to value (a new reference, stolen even on failure); false when
 * value is NULL or the set failed. */
static bool set(json_t *obj, const char *key, json_t *value)
{
	return value && json_object_set_new(obj, key, value) == 0;
}

/* A JSON string of s.  JSON strings are UTF-8: should s not be, its bytes
 * above 0x7f become `?' rather than the whole document failing. */
static json_t *string(const char *s)
{
	json_t *j = json_string(s);
	char *copy = NULL;

	if (j || !s)
		return j;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p > 0x7f)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/* A string or, for NULL, JSON null. */
static json_t *string_or_null(const char *s)
{
	return s ? string(s) : json_null();
}

void control_format_time(int64_t t, char *buf, size_t len)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (!buf || len == 0)
		return;
	if ((int64_t)tt != t || !gmtime_r(&tt, &tm) || tm.tm_year + 1900 < 0 ||
	    tm.tm_year + 1900 > 9999) {
		/* Out of RFC 3339's range: say so rather than print a wrong date. */
		snprintf(buf, len, "invalid");
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

json_t *control_json_registration(const struct registration *r)
{
	json_t *obj = json_object(), *opts = json_object();
	char reg_at[32], upd_at[32];

	if (!obj || !opts)
		goto fail;
	for (size_t i = 0; i < r->n_options; i++)
		if (!set(opts, r->options[i].key, string(r->options[i].value)))
			goto fail;
	control_format_time(r->registered_at, reg_at, sizeof(reg_at));
	control_format_time(r->updated_at, upd_at, sizeof(upd_at));
	if (!set(obj, "alloc", string(r->alloc)) || !set(obj, "socket", string(r->socket)) ||
	    !set(obj, "version", string(r->version ? r->version : "")) ||
	    !set(obj, "kind", string_or_null(reg_kind_name(r->kind))))
		goto fail;
	/* obj owns opts from here, also when the set fails. */
	if (!set(obj, "options", opts)) {
		opts = NULL;
		goto fail;
	}
	opts = NULL;
	if (!set(obj, "seq", json_integer(r->seq)) ||
	    !set(obj, "registered_at", json_string(reg_at)) ||
	    !set(obj, "updated_at", json_string(upd_at)))
		goto fail;
	return obj;
fail:
	json_decref(opts);
	json_decref(obj);
	return NULL;
}

json_t *control_json_plugin(const struct reg_plugin *p)
{
	const struct registration *act = reg_plugin_active(p);
	json_t *obj = json_object(), *regs = json_array();

	if (!obj || !regs)
		goto fail;
	for (size_t i = 0; i < p->n_regs; i++) {
		json_t *r = control_json_registration(&p->regs[i]);

		if (!r || json_array_append_new(regs, r) != 0)
			goto fail;
	}
	if (!set(obj, "type", string(p->type)) || !set(obj, "name", string(p->name)) ||
	    !set(obj, "active", string_or_null(act ? act->alloc : NULL)))
		goto fail;
	if (!set(obj, "registrations", regs)) {
		regs = NULL;
		goto fail;
	}
	return obj;
fail:
	json_decref(regs);
	json_decref(obj);
	return NULL;
}

json_t *control_json_snapshot(const struct reg_snapshot *s)
{
	json_t *obj = json_object(), *plugins = json_array();

	if (!obj || !plugins)
		goto fail;
	for (size_t i = 0; i < s->n_plugins; i++) {
		json_t *p = control_json_plugin(&s->plugins[i]);

		if (!p || json_array_append_new(plugins, p) != 0)
			goto fail;
	}
	if (!set(obj, "plugins", plugins)) {
		plugins = NULL;
		goto fail;
	}
	return obj;
fail:
	json_decref(plugins);
	json_decref(obj);
	return NULL;
}
