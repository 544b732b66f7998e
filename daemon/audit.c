/* SPDX-License-Identifier: MIT */
/*
 * The daemon's audit log: one line per committed change and per health
 * change, in commit order, and why the active allocation moved.  Runs as a
 * registry subscriber (with the registry mutex held).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "log.h"

static const struct registration *find_alloc(const struct reg_plugin *p, const char *alloc)
{
	for (size_t i = 0; p && alloc && i < p->n_regs; i++)
		if (strcmp(p->regs[i].alloc, alloc) == 0)
			return &p->regs[i];
	return NULL;
}

/* The alloc of the RUNTIME event just logged, "" after any other event:
 * an ACTIVE event right after it was caused by that health change.  Only
 * log_change touches it, with the registry mutex held. */
static char health_moved[REG_NAME_MAX + 1];

/* Why the active registration moved, when a health change moved it:
 * " (a2: connection refused x3)", " (a2: alive)"; and when every one is
 * dead, " (a1: no such file x1; none is alive)". */
static void active_reason(const struct reg_event *ev, char *buf, size_t len)
{
	const struct registration *g = find_alloc(ev->plugin, health_moved);
	bool none_alive = ev->reg && ev->reg->runtime.health == REG_HEALTH_DEAD;

	if (!health_moved[0] || !g)
		return;
	if (g->runtime.health == REG_HEALTH_DEAD)
		snprintf(buf, len, " (%s: %s x%u%s)", g->alloc,
			 g->runtime.error ? g->runtime.error : "dead", g->runtime.failures,
			 none_alive ? "; none is alive" : "");
	else
		snprintf(buf, len, " (%s: %s)", g->alloc, reg_health_name(g->runtime.health));
}

struct dead_list {
	char text[256];
	size_t len, n;
};

static int list_dead(void *arg, const struct reg_plugin *p)
{
	struct dead_list *d = arg;

	for (size_t j = 0; j < p->n_regs; j++) {
		if (p->regs[j].runtime.health != REG_HEALTH_DEAD)
			continue;
		d->n++;
		if (d->len < sizeof(d->text))
			d->len += (size_t)snprintf(d->text + d->len, sizeof(d->text) - d->len,
						   "%s %s/%s/%s (%s)", d->n > 1 ? "," : ":",
						   p->type, p->name, p->regs[j].alloc,
						   reg_runtime_error(&p->regs[j].runtime));
	}
	return 0;
}

/* One line after the start-up round (on the prober's thread that ended
 * it last): how many were probed, which are dead (the first few, in no
 * particular order).  Read in place: a copy of the registry (and its
 * sort) took a tenth of a second at 100,000 registrations. */
void audit_probed_at_start(struct registry *r, int n, int64_t ms)
{
	struct dead_list d = {.len = 0};

	registry_each_plugin(r, list_dead, &d);
	log_info("probe: %d registration(s) probed at start, %zu dead%s (the round took %lld ms, "
		 "the mount serving meanwhile)",
		 n, d.n, d.text, (long long)ms);
}

/* The daemon's log of committed changes, one line each, in commit order: what
 * an operator reads to see which allocation a plugin pointed at, and when. */
void audit_log_change(const struct reg_event *ev, void *arg)
{
	(void)arg;
	if (ev->type != REG_EV_RUNTIME && ev->type != REG_EV_ACTIVE)
		health_moved[0] = '\0';
	switch (ev->type) {
	case REG_EV_REGISTERED:
	case REG_EV_UPDATED:
		log_info("%s %s/%s alloc %s socket %s", reg_event_name(ev->type), ev->plugin_type,
			 ev->plugin_name, ev->reg->alloc, ev->reg->socket);
		break;
	case REG_EV_DEREGISTERED:
		log_info("deregistered %s/%s alloc %s", ev->plugin_type, ev->plugin_name,
			 ev->reg->alloc);
		break;
	case REG_EV_ACTIVE: {
		char why[REG_NAME_MAX + REG_HEALTH_ERR_MAX + 48] = "";

		active_reason(ev, why, sizeof(why));
		log_info("active %s/%s: %s -> %s%s", ev->plugin_type, ev->plugin_name,
			 ev->old_alloc ? ev->old_alloc : "(none)",
			 ev->new_alloc ? ev->new_alloc : "(none)", why);
		health_moved[0] = '\0';
		break;
	}
	case REG_EV_RUNTIME: /* not a committed change: a probe's verdict */
		snprintf(health_moved, sizeof(health_moved), "%s", ev->reg->alloc);
		/* unknown -> alive is no news (unknown counts as alive): the
		 * start round's verdicts come with the mount served, after
		 * this log subscribed, and would say it of every plugin. */
		if (ev->old_runtime && ev->old_runtime->health != ev->reg->runtime.health &&
		    !(ev->old_runtime->health == REG_HEALTH_UNKNOWN &&
		      ev->reg->runtime.health == REG_HEALTH_ALIVE))
			log_info("health %s/%s alloc %s: %s -> %s%s%s%s", ev->plugin_type,
				 ev->plugin_name, ev->reg->alloc,
				 reg_health_name(ev->old_runtime->health),
				 reg_health_name(ev->reg->runtime.health),
				 ev->reg->runtime.error ? " (" : "",
				 reg_runtime_error(&ev->reg->runtime),
				 ev->reg->runtime.error ? ")" : "");
		break;
	}
}
