/* SPDX-License-Identifier: MIT */
/*
 * `metrics': the daemon's figures in the Prometheus text format
 * (docs/protocol.md, "metrics"; every family is listed in plugfs(8)).  The
 * registry's and the control server's are built here; the filesystem's and
 * the probes' come from control_options.metrics (the daemon's, in
 * daemon/callbacks.c), which this library does not link.  Runs on the server
 * thread; the per-type counts are taken under the registry mutex, without
 * a copy of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control_server_internal.h"
#include "log.h"
#include "metrics.h"

/* At most this many sources are counted by name: "control" and one per
 * [discover.NAME] section (at most 64, plugfs.ini(5)); registrations of
 * any beyond (sections since removed) are counted under "other". */
#define SOURCES_MAX 65

struct source_count {
	char name[REG_NAME_MAX + sizeof(REG_SOURCE_DISCOVER)];
	size_t n;
};

struct type_counts {
	const char *const *types;
	size_t n_types;
	size_t *plugins, *regs, *none;
	size_t (*by_health)[3];
	struct source_count *sources; /* SOURCES_MAX + 1: the last is "other" */
	size_t n_sources;
};

/* One registration of source into the counts by source. */
static void count_source(struct type_counts *tc, const char *source)
{
	const char *name = reg_source_name(source);
	size_t i = 0;

	while (i < tc->n_sources && strcmp(tc->sources[i].name, name) != 0)
		i++;
	if (i == tc->n_sources && i < SOURCES_MAX && strlen(name) < sizeof(tc->sources[i].name)) {
		snprintf(tc->sources[i].name, sizeof(tc->sources[i].name), "%s", name);
		tc->n_sources++;
	}
	tc->sources[i < tc->n_sources ? i : SOURCES_MAX].n++;
}

/* registry_each_plugin: one plugin into the counts of its type. */
static int count_plugin(void *arg, const struct reg_plugin *p)
{
	struct type_counts *tc = arg;
	size_t t = 0, dead = 0;

	while (t < tc->n_types && strcmp(tc->types[t], p->type) != 0)
		t++;
	if (t == tc->n_types)
		return 0;
	tc->plugins[t]++;
	tc->regs[t] += p->n_regs;
	for (size_t j = 0; j < p->n_regs; j++) {
		unsigned h = (unsigned)p->regs[j].runtime.health;

		tc->by_health[t][h < 3 ? h : 0]++;
		dead += h == REG_HEALTH_DEAD;
		count_source(tc, p->regs[j].source);
	}
	tc->none[t] += p->n_regs > 0 && dead == p->n_regs;
	return 0;
}

static void registry_metrics(struct control_server *srv, struct metrics *m)
{
	static const char *const health[] = {"unknown", "alive", "dead"};
	const char *const *types;
	const int64_t *ids;
	size_t n_types = registry_types(srv->reg, &types, &ids);
	struct reg_commit_stats cs;
	struct registry_upkeep_stats us;
	size_t *plugins = calloc(n_types ? n_types : 1, sizeof(size_t));
	size_t *regs = calloc(n_types ? n_types : 1, sizeof(size_t));
	size_t *none = calloc(n_types ? n_types : 1, sizeof(size_t));
	size_t(*by_health)[3] = calloc(n_types ? n_types : 1, sizeof(*by_health));
	struct source_count *sources = calloc(SOURCES_MAX + 1, sizeof(*sources));
	struct type_counts tc = {types, n_types, plugins, regs, none, by_health, sources, 0};
	size_t i;

	if (!plugins || !regs || !none || !by_health || !sources ||
	    registry_each_plugin(srv->reg, count_plugin, &tc)) {
		m->failed = true;
		goto out;
	}
	metrics_family(m, "plugfs_plugins", "gauge",
		       "Plugins with at least one registration, by type.");
	for (size_t t = 0; t < n_types; t++)
		metrics_sample(m, "plugfs_plugins", (const char *[]){"type", types[t], NULL},
			       (double)plugins[t]);
	metrics_family(m, "plugfs_registrations", "gauge", "Registrations, by type.");
	for (size_t t = 0; t < n_types; t++)
		metrics_sample(m, "plugfs_registrations", (const char *[]){"type", types[t], NULL},
			       (double)regs[t]);
	metrics_family(m, "plugfs_registrations_by_source", "gauge",
		       "Registrations, by source: control (the control socket) or the "
		       "[discover.NAME] section that found them, discover.NAME.");
	for (i = 0; i < tc.n_sources && strcmp(sources[i].name, "control") != 0; i++)
		;
	if (i == tc.n_sources) /* none yet: said as 0 */
		metrics_sample(m, "plugfs_registrations_by_source",
			       (const char *[]){"source", "control", NULL}, 0);
	for (i = 0; i < tc.n_sources; i++)
		metrics_sample(m, "plugfs_registrations_by_source",
			       (const char *[]){"source", sources[i].name, NULL},
			       (double)sources[i].n);
	if (sources[SOURCES_MAX].n)
		metrics_sample(m, "plugfs_registrations_by_source",
			       (const char *[]){"source", "other", NULL},
			       (double)sources[SOURCES_MAX].n);
	if (srv->opt.probe) {
		metrics_family(m, "plugfs_registrations_health", "gauge",
			       "Registrations by type and health (unknown: not probed yet).");
		for (size_t t = 0; t < n_types; t++)
			for (size_t h = 0; h < 3; h++)
				metrics_sample(
				    m, "plugfs_registrations_health",
				    (const char *[]){"type", types[t], "health", health[h], NULL},
				    (double)by_health[t][h]);
		metrics_family(m, "plugfs_plugins_none_alive", "gauge",
			       "Plugins whose registrations are all dead, by type: their csi.sock "
			       "leads to the most recent one.");
		for (size_t t = 0; t < n_types; t++)
			metrics_sample(m, "plugfs_plugins_none_alive",
				       (const char *[]){"type", types[t], NULL}, (double)none[t]);
	}
	registry_commit_stats(srv->reg, &cs);
	metrics_family(m, "plugfs_commit_duration_seconds", "histogram",
		       "How long the state file's commits of mutations took, fsync included.");
	metrics_histogram(m, "plugfs_commit_duration_seconds", reg_commit_bounds,
			  REG_COMMIT_BUCKETS, cs.counts, cs.sum_seconds);
	metrics_family(m, "plugfs_commit_failures_total", "counter",
		       "Commits of the state file that failed (nothing was changed).");
	metrics_sample(m, "plugfs_commit_failures_total", NULL, (double)cs.failed);
	registry_upkeep_stats(srv->reg, &us);
	if (us.running) {
		metrics_family(
		    m, "plugfs_state_checkpoints_total", "counter",
		    "Checkpoints of the state file's WAL that ran to their end, by mode.");
		metrics_sample(m, "plugfs_state_checkpoints_total",
			       (const char *[]){"mode", "passive", NULL}, (double)us.passive);
		metrics_sample(m, "plugfs_state_checkpoints_total",
			       (const char *[]){"mode", "restart", NULL}, (double)us.restart);
		metrics_sample(m, "plugfs_state_checkpoints_total",
			       (const char *[]){"mode", "truncate", NULL}, (double)us.truncate);
		metrics_family(m, "plugfs_state_checkpoint_failures_total", "counter",
			       "Checkpoints that failed (busy, or a full disk): tried again.");
		metrics_sample(m, "plugfs_state_checkpoint_failures_total", NULL,
			       (double)us.failed);
		metrics_family(m, "plugfs_state_reserve_held", "gauge",
			       "1 while the reserve that keeps deregistrations possible on a full "
			       "disk is allocated; 0: registrations are refused.");
		metrics_sample(m, "plugfs_state_reserve_held", NULL, us.reserve_held ? 1 : 0);
		metrics_family(m, "plugfs_state_reserve_releases_total", "counter",
			       "Deregistrations that could commit only by releasing the reserve.");
		metrics_sample(m, "plugfs_state_reserve_releases_total", NULL,
			       (double)us.reserve_released);
	}
out:
	free(plugins);
	free(regs);
	free(none);
	free(by_health);
	free(sources);
}

static void control_metrics(struct control_server *srv, struct metrics *m,
			    const struct ctl_op_desc *ops)
{
	static const char *const events[] = {"registered", "updated", "deregistered", "active",
					     "health"};
	const struct ctl_counters *k = &srv->counters;
	size_t watchers = 0;

	for (struct client *c = srv->clients; c; c = c->next)
		watchers += c->watching;
	metrics_family(m, "plugfs_active_switches_total", "counter",
		       "Changes of a plugin's active registration (what its csi.sock leads to).");
	metrics_sample(m, "plugfs_active_switches_total", NULL,
		       (double)__atomic_load_n(&k->active_switches, __ATOMIC_RELAXED));
	metrics_family(m, "plugfs_control_group_commits_total", "counter",
		       "Group commits of the control socket's mutations (one transaction each).");
	metrics_sample(m, "plugfs_control_group_commits_total", NULL, (double)k->commit_groups);
	metrics_family(m, "plugfs_control_grouped_mutations_total", "counter",
		       "Mutations (register, deregister) those group commits carried.");
	metrics_sample(m, "plugfs_control_grouped_mutations_total", NULL,
		       (double)k->commit_grouped);
	metrics_family(m, "plugfs_registry_events_total", "counter",
		       "Registry events, by kind (health: a probe changed what is known).");
	for (size_t e = 0; e < sizeof(events) / sizeof(events[0]); e++)
		metrics_sample(m, "plugfs_registry_events_total",
			       (const char *[]){"event", events[e], NULL},
			       (double)__atomic_load_n(&k->events[e], __ATOMIC_RELAXED));
	metrics_family(m, "plugfs_control_clients", "gauge",
		       "Clients connected to the control socket.");
	metrics_sample(m, "plugfs_control_clients", NULL, (double)srv->n_clients);
	metrics_family(m, "plugfs_control_watchers", "gauge", "Clients running `watch'.");
	metrics_sample(m, "plugfs_control_watchers", NULL, (double)watchers);
	metrics_family(m, "plugfs_control_connections_total", "counter",
		       "Connections to the control socket, by outcome (refused: "
		       "control.max_clients reached, or out of file descriptors).");
	metrics_sample(m, "plugfs_control_connections_total",
		       (const char *[]){"result", "accepted", NULL}, (double)k->accepted);
	metrics_sample(m, "plugfs_control_connections_total",
		       (const char *[]){"result", "refused", NULL}, (double)k->refused);
	metrics_family(m, "plugfs_control_requests_total", "counter",
		       "Requests on the control socket, by operation.");
	for (int op = 0; op < CTL_OP_COUNT; op++)
		metrics_sample(m, "plugfs_control_requests_total",
			       (const char *[]){"op", ops[op].name, NULL}, (double)k->requests[op]);
	metrics_family(m, "plugfs_control_answers_total", "counter",
		       "Answers on the control socket, by result: ok or the error code.");
	metrics_sample(m, "plugfs_control_answers_total", (const char *[]){"result", "ok", NULL},
		       (double)k->answers_ok);
	for (int e = 0; e < CTL_E_COUNT; e++)
		metrics_sample(m, "plugfs_control_answers_total",
			       (const char *[]){"result", ctl_code_name((enum ctl_code)e), NULL},
			       (double)k->answers_error[e]);
}

void ctl_op_metrics(struct control_server *srv, struct client *c, struct ctl_request *req,
		    const struct ctl_op_desc *ops)
{
	struct metrics m = {0};

	metrics_family(&m, "plugfs_build_info", "gauge", "The running plugfs, as a label.");
	metrics_sample(&m, "plugfs_build_info", (const char *[]){"version", PLUGFS_VERSION, NULL},
		       1);
	metrics_family(&m, "plugfs_start_time_seconds", "gauge",
		       "When this daemon process started (Unix time).");
	metrics_sample(&m, "plugfs_start_time_seconds", NULL, (double)srv->started_wall);
	registry_metrics(srv, &m);
	control_metrics(srv, &m, ops);
	if (srv->opt.metrics)
		srv->opt.metrics(&m, srv->opt.metrics_arg);
	if (m.failed || !m.buf) {
		log_warn("control: metrics: out of memory");
		ctl_conn_send_error(c, req->id, CTL_E_INTERNAL, "metrics: out of memory");
	} else {
		ctl_conn_send_ok(c, req->id, "metrics", json_stringn(m.buf, m.len));
	}
	metrics_free(&m);
}
