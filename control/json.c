/* SPDX-License-Identifier: MIT */
/*
 * The JSON shapes of registrations, plugins and snapshots, shared by the
 * control protocol (list, show, watch) and the offline `state dump --json`.
 * Every function returns a new reference, or NULL when memory ran out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "control.h"
#include "control_internal.h"
#include "timefmt.h"
#include "utf8.h"

/* Sets key to value (a new reference, stolen even on failure); false when
 * value is NULL or the set failed. */
static bool set(json_t *obj, const char *key, json_t *value)
{
	return value && json_object_set_new(obj, key, value) == 0;
}

json_t *ctl_json_text(const char *s)
{
	char *clean = NULL;
	json_t *j;

	if (!s || plugfs_utf8_valid(s))
		return json_string(s);
	clean = plugfs_utf8_sanitize(s);
	j = clean ? json_string(clean) : NULL;
	free(clean);
	return j;
}

/* A string or, for NULL, JSON null. */
static json_t *string_or_null(const char *s)
{
	return s ? ctl_json_text(s) : json_null();
}

/* Appends item (a new reference, stolen even on failure) to arr; arr, or
 * NULL with arr released when either is NULL or the append failed. */
static json_t *append(json_t *arr, json_t *item)
{
	if (arr && json_array_append_new(arr, item) == 0)
		return arr;
	json_decref(arr);
	return NULL;
}

/* The options of r as an object of strings. */
static json_t *options_object(const struct registration *r)
{
	json_t *opts = json_object();

	for (size_t i = 0; opts && i < r->n_options; i++) {
		if (!set(opts, r->options[i].key, ctl_json_text(r->options[i].value))) {
			json_decref(opts);
			opts = NULL;
		}
	}
	return opts;
}

json_t *control_json_registration(const struct registration *r)
{
	json_t *obj = json_object();
	char reg_at[32], upd_at[32];

	plugfs_format_time(r->registered_at, -1, reg_at, sizeof(reg_at));
	plugfs_format_time(r->updated_at, -1, upd_at, sizeof(upd_at));
	/* Each value is made only once the sets before it succeeded. */
	if (!obj || !set(obj, "alloc", ctl_json_text(r->alloc)) ||
	    !set(obj, "socket", ctl_json_text(r->socket)) ||
	    !set(obj, "version", ctl_json_text(r->version ? r->version : "")) ||
	    !set(obj, "kind", string_or_null(reg_kind_name(r->kind))) ||
	    !set(obj, "options", options_object(r)) ||
	    /* A registration's own probe mode and CSI name: only when set. */
	    (r->probe != REG_PROBE_DEFAULT &&
	     !set(obj, "probe", string_or_null(reg_probe_name(r->probe)))) ||
	    (r->csi_name && *r->csi_name && !set(obj, "csi_name", ctl_json_text(r->csi_name))) ||
	    /* "control", or the [discover.NAME] section that found it. */
	    !set(obj, "source", ctl_json_text(reg_source_name(r->source))) ||
	    !set(obj, "seq", json_integer(r->seq)) ||
	    !set(obj, "registered_at", json_string(reg_at)) ||
	    !set(obj, "updated_at", json_string(upd_at))) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

json_t *control_json_plugin(const struct reg_plugin *p)
{
	const struct registration *act = reg_plugin_active(p);
	json_t *obj = json_object(), *regs = NULL;

	if (!obj || !set(obj, "type", ctl_json_text(p->type)) ||
	    !set(obj, "name", ctl_json_text(p->name)) ||
	    !set(obj, "active", string_or_null(act ? act->alloc : NULL)))
		goto fail;
	regs = json_array();
	for (size_t i = 0; regs && i < p->n_regs; i++)
		regs = append(regs, control_json_registration(&p->regs[i]));
	if (!set(obj, "registrations", regs))
		goto fail;
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

json_t *control_json_snapshot(const struct reg_snapshot *s)
{
	json_t *obj = json_object(), *plugins = NULL;

	if (!obj)
		return NULL;
	plugins = json_array();
	for (size_t i = 0; plugins && i < s->n_plugins; i++)
		plugins = append(plugins, control_json_plugin(&s->plugins[i]));
	if (!set(obj, "plugins", plugins)) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

static json_t *time_or_null(int64_t t)
{
	char buf[32];

	if (t == 0)
		return json_null();
	plugfs_format_time(t, -1, buf, sizeof(buf));
	return json_string(buf);
}

json_t *control_json_health(const struct reg_runtime *rt)
{
	json_t *obj = json_object();

	if (!obj || !set(obj, "state", json_string(reg_health_name(rt->health))) ||
	    !set(obj, "since", time_or_null(rt->since)) ||
	    !set(obj, "last_probe", time_or_null(rt->probed_at)) ||
	    !set(obj, "error", rt->error && *rt->error ? ctl_json_text(rt->error) : json_null()) ||
	    !set(obj, "failures", json_integer(rt->failures))) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

int control_json_add_health(json_t *plugin, const struct reg_plugin *p)
{
	json_t *regs = json_object_get(plugin, "registrations");
	size_t alive = 0;

	if (!plugin || json_array_size(regs) != p->n_regs)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_regs; i++) {
		if (!set(json_array_get(regs, i), "health",
			 control_json_health(&p->regs[i].runtime)))
			return -ENOMEM;
		alive += p->regs[i].runtime.health != REG_HEALTH_DEAD;
	}
	return set(plugin, "alive", json_integer((json_int_t)alive)) ? 0 : -ENOMEM;
}

int control_json_snapshot_add_health(json_t *snap, const struct reg_snapshot *s)
{
	json_t *plugins = json_object_get(snap, "plugins");

	if (!snap || json_array_size(plugins) != s->n_plugins)
		return -ENOMEM;
	for (size_t i = 0; i < s->n_plugins; i++)
		if (control_json_add_health(json_array_get(plugins, i), &s->plugins[i]) < 0)
			return -ENOMEM;
	return 0;
}

void control_json_plugins_begin(struct control_json_writer *w, FILE *f)
{
	w->f = f;
	w->n = 0;
}

int control_json_plugins_add(struct control_json_writer *w, json_t *plugin)
{
	char *text = json_dumps(plugin, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	int rc = 0;

	if (!text)
		return -ENOMEM;
	/* At depth 2: every line of the plugin 4 spaces in. */
	if (fputs(w->n ? ",\n    " : "{\n  \"plugins\": [\n    ", w->f) < 0)
		rc = -errno;
	for (const char *s = text; rc == 0 && *s;) {
		size_t n = strcspn(s, "\n");

		if (fwrite(s, 1, n, w->f) != n || (s[n] && fputs("\n    ", w->f) < 0))
			rc = -errno;
		s += n + (s[n] != '\0');
	}
	free(text);
	w->n++;
	return rc;
}

int control_json_plugins_end(struct control_json_writer *w)
{
	int rc = fputs(w->n ? "\n  ]\n}\n" : "{\n  \"plugins\": []\n}\n", w->f);

	return rc < 0 ? -errno : 0;
}
