/* SPDX-License-Identifier: MIT */
/*
 * Registry events, watchers and waits.
 *
 * Registry events arrive on whatever thread committed the change, with the
 * registry mutex held.  The callback only turns them into JSON, appends them
 * to a queue and pokes an eventfd; the server thread hands them to watchers
 * and to pending waits, in commit order.  Nothing is written to a socket from
 * the callback.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control_server_internal.h"
#include "clock.h"
#include "log.h"
#include "timefmt.h"

/* --- the event queue (filled by the registry callback) --- */

static void ev_item_free(struct ev_item *it)
{
	if (!it)
		return;
	free(it->type);
	free(it->name);
	json_decref(it->event);
	json_decref(it->plugin);
	free(it);
}

static json_t *nullable_string(const char *s)
{
	return s ? json_string(s) : json_null();
}

void ctl_events_on_registry(const struct reg_event *ev, void *arg)
{
	struct control_server *srv = arg;
	struct ev_item *it;
	char when[32];
	uint64_t one = 1;
	int rc = -1;

	if ((unsigned)ev->type < sizeof(srv->counters.events) / sizeof(srv->counters.events[0]))
		__atomic_fetch_add(&srv->counters.events[ev->type], 1, __ATOMIC_RELAXED);
	if (ev->type == REG_EV_ACTIVE)
		__atomic_fetch_add(&srv->counters.active_switches, 1, __ATOMIC_RELAXED);
	/* Nobody to tell (no watcher, no wait, no wait looking): an event
	 * committed now is one a later watch or wait no longer needs. */
	if (__atomic_load_n(&srv->listeners, __ATOMIC_SEQ_CST) == 0)
		return;
	it = calloc(1, sizeof(*it));

	plugfs_format_time(time(NULL), -1, when, sizeof(when));
	if (!it)
		goto out;
	it->type = strdup(ev->plugin_type);
	it->name = strdup(ev->plugin_name);
	/* RUNTIME is a probe's verdict: watchers see it as `health'. */
	it->event = json_pack("{s:s, s:s, s:s, s:s}", "event",
			      ev->type == REG_EV_RUNTIME ? "health" : reg_event_name(ev->type),
			      "type", ev->plugin_type, "name", ev->plugin_name, "time", when);
	if (!it->type || !it->name || !it->event)
		goto out;
	if (ev->type == REG_EV_RUNTIME) {
		const struct reg_runtime *now = &ev->reg->runtime;

		if (json_object_set_new(it->event, "alloc", json_string(ev->reg->alloc)) ||
		    json_object_set_new(
			it->event, "old",
			json_string(reg_health_name(ev->old_runtime ? ev->old_runtime->health
								    : REG_HEALTH_UNKNOWN))) ||
		    json_object_set_new(it->event, "new",
					json_string(reg_health_name(now->health))) ||
		    json_object_set_new(it->event, "error",
					now->error && *now->error ? json_string(now->error) : json_null()) ||
		    json_object_set_new(it->event, "failures", json_integer(now->failures)))
			goto out;
	} else if (ev->type == REG_EV_ACTIVE) {
		if (json_object_set_new(it->event, "old_alloc", nullable_string(ev->old_alloc)) ||
		    json_object_set_new(it->event, "new_alloc", nullable_string(ev->new_alloc)) ||
		    json_object_set_new(it->event, "socket",
					nullable_string(ev->reg ? ev->reg->socket : NULL)))
			goto out;
	} else if (ev->reg) {
		if (json_object_set_new(it->event, "alloc", json_string(ev->reg->alloc)) ||
		    json_object_set_new(it->event, "registration",
					control_json_registration(ev->reg)))
			goto out;
	}
	if (ev->type != REG_EV_DEREGISTERED && ev->plugin && ev->plugin->n_regs > 0) {
		it->plugin = control_json_plugin(ev->plugin);
		if (!it->plugin ||
		    (srv->opt.probe && control_json_add_health(it->plugin, ev->plugin) < 0))
			goto out;
	}
	rc = 0;
out:
	pthread_mutex_lock(&srv->q_lock);
	if (rc == 0) {
		*srv->q_tail = it;
		srv->q_tail = &it->next;
		it = NULL;
	} else {
		srv->lost_events = true;
	}
	pthread_mutex_unlock(&srv->q_lock);
	ev_item_free(it);
	/* Never blocks: an eventfd counter does not fill up in practice, and
	 * the fd is non-blocking. */
	if (write(srv->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("control: cannot wake the server thread: %s", strerror(errno));
}

void ctl_events_drop_queue(struct control_server *srv)
{
	while (srv->q_head) {
		struct ev_item *it = srv->q_head;

		srv->q_head = it->next;
		ev_item_free(it);
	}
	srv->q_tail = &srv->q_head;
}

/* --- watchers and waits --- */

static void watch_clear(struct client *c)
{
	for (size_t i = 0; i < c->n_watch_types; i++)
		free(c->watch_types[i]);
	free(c->watch_types);
	c->watch_types = NULL;
	c->n_watch_types = 0;
}

static void wait_clear(struct client *c)
{
	free(c->wait_type);
	free(c->wait_name);
	free(c->wait_alloc);
	json_decref(c->wait_id);
	c->wait_type = c->wait_name = c->wait_alloc = NULL;
	c->wait_id = NULL;
}

void ctl_events_release(struct client *c)
{
	watch_clear(c);
	wait_clear(c);
}

int ctl_watch_begin(struct client *c, const char *const *types, size_t n)
{
	watch_clear(c);
	if (n > 0) {
		c->watch_types = calloc(n, sizeof(char *));
		if (!c->watch_types)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			c->watch_types[i] = strdup(types[i]);
			if (!c->watch_types[i])
				return -ENOMEM;
			c->n_watch_types++;
		}
	}
	c->watching = true;
	__atomic_add_fetch(&c->srv->listeners, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int ctl_wait_begin(struct client *c, const char *type, const char *name, const char *alloc,
		   json_t *id, double timeout)
{
	c->wait_type = strdup(type);
	c->wait_name = strdup(name);
	c->wait_alloc = alloc ? strdup(alloc) : NULL;
	if (!c->wait_type || !c->wait_name || (alloc && !c->wait_alloc)) {
		wait_clear(c);
		return -ENOMEM;
	}
	c->wait_id = id ? json_incref(id) : NULL;
	c->wait_deadline = timeout < 0 ? -1 : plugfs_mono_ms() + (int64_t)(timeout * 1000);
	c->waiting = true;
	__atomic_add_fetch(&c->srv->listeners, 1, __ATOMIC_SEQ_CST);
	return 0;
}

void ctl_events_count_listeners(struct control_server *srv)
{
	int n = 0;

	for (struct client *c = srv->clients; c; c = c->next)
		n += !c->dead && (c->watching || c->waiting);
	__atomic_store_n(&srv->listeners, n, __ATOMIC_SEQ_CST);
}

void ctl_wait_done(struct client *c, json_t *plugin)
{
	if (plugin) {
		ctl_conn_send_ok(c, c->wait_id, "plugin", json_incref(plugin));
	} else {
		if (c->wait_alloc)
			ctl_conn_send_error(c, c->wait_id, CTL_E_NOT_FOUND,
					    "wait: alloc %s is not the active registration of "
					    "plugin %s/%s: timed out",
					    c->wait_alloc, c->wait_type, c->wait_name);
		else
			ctl_conn_send_error(
			    c, c->wait_id, CTL_E_NOT_FOUND,
			    "wait: plugin %s/%s has no active registration: timed out",
			    c->wait_type, c->wait_name);
	}
	wait_clear(c);
	c->waiting = false;
	c->last_active = plugfs_mono_ms();
	/* Requests sent after the wait were held back; the loop serves them
	 * (not from here: this may run inside ctl_events_deliver). */
	c->resume = true;
}

bool ctl_wait_satisfied(const char *alloc, json_t *plugin)
{
	const char *active = json_string_value(json_object_get(plugin, "active"));
	json_t *regs = json_object_get(plugin, "registrations"), *r;
	size_t i;

	if (!active)
		return false;
	if (!alloc)
		return true;
	if (strcmp(alloc, active) != 0)
		return false;
	/* The active one is dead only when every one is: not served yet. */
	json_array_foreach(regs, i, r)
	{
		const char *a = json_string_value(json_object_get(r, "alloc"));
		const char *h =
		    json_string_value(json_object_get(json_object_get(r, "health"), "state"));

		if (a && strcmp(a, alloc) == 0)
			return !h || strcmp(h, "dead") != 0;
	}
	return false;
}

static bool watches(const struct client *c, const char *type)
{
	if (!c->watching || c->dead)
		return false;
	if (!c->watch_types)
		return true;
	for (size_t i = 0; i < c->n_watch_types; i++)
		if (strcmp(c->watch_types[i], type) == 0)
			return true;
	return false;
}

void ctl_events_deliver(struct control_server *srv)
{
	struct ev_item *list;
	bool lost;

	pthread_mutex_lock(&srv->q_lock);
	list = srv->q_head;
	srv->q_head = NULL;
	srv->q_tail = &srv->q_head;
	lost = srv->lost_events;
	srv->lost_events = false;
	pthread_mutex_unlock(&srv->q_lock);

	while (list) {
		struct ev_item *it = list;
		size_t len = 0;
		char *line = NULL;
		bool dumped = false;

		list = it->next;
		for (struct client *c = srv->clients; c; c = c->next) {
			if (watches(c, it->type) && !dumped) {
				line = ctl_dump_line(it->event, &len); /* once, when watched */
				dumped = true;
				lost |= !line;
			}
			if (line && watches(c, it->type))
				ctl_conn_write(c, line, len);
			if (it->plugin && c->waiting && !c->dead &&
			    strcmp(c->wait_type, it->type) == 0 &&
			    strcmp(c->wait_name, it->name) == 0 &&
			    ctl_wait_satisfied(c->wait_alloc, it->plugin))
				ctl_wait_done(c, it->plugin);
		}
		free(line);
		ev_item_free(it);
	}
	if (lost) {
		/* A watcher must never miss an event silently. */
		log_error("control: out of memory while queueing events; closing watchers");
		for (struct client *c = srv->clients; c; c = c->next) {
			if (!c->watching)
				continue;
			ctl_conn_send_error(c, NULL, CTL_E_INTERNAL,
					    "events were lost (out of memory); watch again");
			c->closing = true;
		}
	}
}
