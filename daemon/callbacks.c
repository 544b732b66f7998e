/* SPDX-License-Identifier: MIT */
/*
 * plugfs mount's callbacks to the control server: the probe options from
 * the config and a registration's first probe, the `metrics' of the
 * filesystem and the probes, and the reload (`reload' on the control socket,
 * SIGHUP through the housekeeping thread).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "confread.h"
#include "discover.h"
#include "discover_scan.h"
#include "daemon_internal.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "sdnotify.h"

/* d->probe from the config: [probe] the default, and every type of
 * [registry] types with its own settings ([probe.TYPE] over [probe], by
 * reg_probe_settings_of): a prober thread each. */
int daemon_probe_options(struct daemon *d)
{
	d->probe_types = calloc(d->cfg.n_types ? d->cfg.n_types : 1, sizeof(*d->probe_types));
	if (!d->probe_types)
		return -ENOMEM;
	for (size_t i = 0; i < d->cfg.n_types; i++) {
		d->probe_types[i].type = d->cfg.types[i];
		reg_probe_settings_of(&d->cfg.probe, d->cfg.types[i], REG_PROBE_DEFAULT,
				      &d->probe_types[i].s);
	}
	d->probe = (struct probe_options){
	    .policy = {.dflt = d->cfg.probe.dflt,
		       .types = d->probe_types,
		       .n_types = d->cfg.n_types},
	    /* The watches: never under the daemon's own mount (Hazards); the
	     * control server's clients and a round's sockets keep their fds. */
	    .watch = true,
	    .watch_exclude = d->cfg.mountpoint,
	    .fd_reserve = d->cfg.max_clients + PROBE_MAX_INFLIGHT + 64,
	};
#ifdef PLUGFS_FAULTS
	/* Test knobs: the rounds alone (the baseline), no pidfd, a watch limit. */
	d->probe.watch = !getenv("PLUGFS_FAULT_NO_WATCH");
	d->probe.no_pidfd = getenv("PLUGFS_FAULT_NO_PIDFD") != NULL;
	if (getenv("PLUGFS_FAULT_MAX_WATCHES"))
		d->probe.max_watches = (unsigned)atoi(getenv("PLUGFS_FAULT_MAX_WATCHES"));
#endif
	return 0;
}

/* The control server's first probe of a registration, by its type, on one
 * of its probe threads: *cancel ends it within 50 ms (a round's stop). */
void daemon_register_probe(const char *type, const struct reg_spec *spec, const bool *cancel,
			   struct reg_runtime *out, void *arg)
{
	struct probe_options o = *(const struct probe_options *)arg;

	o.stop = cancel;
	probe_first(type, spec->socket, spec->probe, spec->csi_name, &o, out);
}

/* What `metrics' says of the filesystem and the probes (on the control
 * server's thread: counters read atomically, nothing blocks). */
void daemon_metrics(struct metrics *m, void *arg)
{
	struct daemon *d = arg;
	const char *names[FS_N_COUNTED_ERRNOS + 1];
	unsigned long long counts[FS_N_COUNTED_ERRNOS + 1];
	size_t n = fs_error_counts(d->fs, names, counts, FS_N_COUNTED_ERRNOS + 1);
	struct probe_stats ps;
	struct probe_watch_stats ws;
	struct discover_stats ds;

	metrics_family(m, "plugfs_fuse_requests_total", "counter",
		       "FUSE requests the daemon answered (the kernel's cache answers the rest).");
	metrics_sample(m, "plugfs_fuse_requests_total", NULL, (double)fs_requests_served(d->fs));
	metrics_family(m, "plugfs_fuse_errors_total", "counter",
		       "FUSE requests answered with an error, by errno (a lookup of a missing "
		       "name is none: it gets a negative entry).");
	for (size_t i = 0; i < n && i <= FS_N_COUNTED_ERRNOS; i++)
		metrics_sample(m, "plugfs_fuse_errors_total",
			       (const char *[]){"errno", names[i], NULL}, (double)counts[i]);
	metrics_family(m, "plugfs_fuse_resumed", "gauge",
		       "1 when this process resumed a FUSE connection it did not mount (a "
		       "restart, a re-exec), 0 when it mounted.");
	metrics_sample(m, "plugfs_fuse_resumed", NULL, fs_resumed(d->fs) ? 1 : 0);
	discover_stats(d->disc, &ds);
	metrics_family(m, "plugfs_discover_watches", "gauge",
		       "inotify watches the discovery holds (its roots and the allocation "
		       "directories below them).");
	metrics_sample(m, "plugfs_discover_watches", NULL, (double)ds.watches);
	metrics_family(m, "plugfs_discover_unwatched_directories", "gauge",
		       "Allocation directories without a watch (the inotify watch limit), "
		       "rescanned every 2 s instead.");
	metrics_sample(m, "plugfs_discover_unwatched_directories", NULL, (double)ds.unwatched);
	metrics_family(m, "plugfs_discover_rescans_total", "counter",
		       "Scans of a discovery root, or of the names in it an event named.");
	metrics_sample(m, "plugfs_discover_rescans_total", NULL, (double)ds.rescans);
	metrics_family(m, "plugfs_discover_mount_changes_total", "counter",
		       "Changes of the mount table the discovery saw, each of which has every "
		       "root scanned again (a mount below a root sends no inotify event).");
	metrics_sample(m, "plugfs_discover_mount_changes_total", NULL, (double)ds.mount_changes);
	metrics_family(m, "plugfs_discover_registrations_total", "counter",
		       "Registrations and deregistrations the discovery made.");
	metrics_sample(m, "plugfs_discover_registrations_total",
		       (const char *[]){"op", "register", NULL}, (double)ds.registered);
	metrics_sample(m, "plugfs_discover_registrations_total",
		       (const char *[]){"op", "deregister", NULL}, (double)ds.deregistered);
	metrics_family(m, "plugfs_discover_identify_failed_total", "counter",
		       "Identifications of a discovered socket that were not answered (asked "
		       "again with back-off).");
	metrics_sample(m, "plugfs_discover_identify_failed_total", NULL,
		       (double)ds.identify_failed);
	if (!probe_enabled(&d->probe))
		return;
	probe_stats(&ps);
	metrics_family(m, "plugfs_probes_total", "counter",
		       "Liveness probes of registrations' sockets, by outcome.");
	metrics_sample(m, "plugfs_probes_total", (const char *[]){"result", "ok", NULL},
		       (double)ps.ok);
	metrics_sample(m, "plugfs_probes_total", (const char *[]){"result", "failed", NULL},
		       (double)ps.failed);
	metrics_family(m, "plugfs_probe_rounds_total", "counter",
		       "Rounds of probes of every registration.");
	metrics_sample(m, "plugfs_probe_rounds_total", NULL, (double)ps.rounds);
	metrics_family(m, "plugfs_probe_round_seconds", "gauge",
		       "How long the last round of probes took.");
	metrics_sample(m, "plugfs_probe_round_seconds", NULL, (double)ps.last_round_ms / 1000.0);
	prober_watch_stats(d->prober, &ws);
	if (!ws.on)
		return;
	metrics_family(m, "plugfs_probe_watches", "gauge",
		       "Probed registrations by watch kind: pidfd (its listener's process and its "
		       "socket's name), inotify (its socket's name only), poll (neither: the "
		       "rounds alone see it).");
	metrics_sample(m, "plugfs_probe_watches", (const char *[]){"kind", "pidfd", NULL},
		       (double)ws.pidfd);
	metrics_sample(m, "plugfs_probe_watches", (const char *[]){"kind", "inotify", NULL},
		       (double)ws.inotify);
	metrics_sample(m, "plugfs_probe_watches", (const char *[]){"kind", "poll", NULL},
		       (double)ws.poll);
	metrics_family(m, "plugfs_probe_watched_directories", "gauge",
		       "Directories with an inotify watch (one however many sockets in it).");
	metrics_sample(m, "plugfs_probe_watched_directories", NULL, (double)ws.dirs);
	metrics_family(m, "plugfs_probe_watch_events_total", "counter",
		       "Events of the watches (a listener's exit, a socket's name changed), each "
		       "probed at once.");
	metrics_sample(m, "plugfs_probe_watch_events_total", NULL, (double)ws.events);
	metrics_family(m, "plugfs_probe_watch_probes_total", "counter",
		       "Probes the watches' events made (beside the rounds').");
	metrics_sample(m, "plugfs_probe_watch_probes_total", NULL, (double)ws.probes);
	metrics_family(m, "plugfs_probe_watch_fallbacks_total", "counter",
		       "Watches that could not be had, by reason: no_pidfd (pidfd_open refused: an "
		       "old kernel, EPERM, a pid gone), watch_limit (fs.inotify.max_user_watches), "
		       "fds_short (RLIMIT_NOFILE's reserve).");
	metrics_sample(m, "plugfs_probe_watch_fallbacks_total",
		       (const char *[]){"reason", "no_pidfd", NULL}, (double)ws.no_pidfd);
	metrics_sample(m, "plugfs_probe_watch_fallbacks_total",
		       (const char *[]){"reason", "watch_limit", NULL}, (double)ws.watch_limit);
	metrics_sample(m, "plugfs_probe_watch_fallbacks_total",
		       (const char *[]){"reason", "fds_short", NULL}, (double)ws.fds_short);
}

static bool str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool list_eq(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (!str_eq(a[i], b[i]))
			return false;
	return true;
}

/* Adds what to *restart (an array, made on first use) and logs it. */
static void needs_restart(json_t **restart, const char *what)
{
	log_warn("reload: %s changed; restart `plugfs mount' to apply it", what);
	if (!*restart)
		*restart = json_array();
	if (*restart)
		json_array_append_new(*restart, json_string(what));
}

/* The [discover.NAME] sections nc adds, removes and changes against the
 * running config, logged; then nc's sections are the running ones (nc
 * keeps the old ones, freed with it). */
static void reload_discover(struct daemon *d, struct plugfs_config *nc)
{
	struct plugfs_discover *keep = d->cfg.discover;
	size_t n_keep = d->cfg.n_discover;

	for (size_t i = 0; i < d->cfg.n_discover; i++)
		if (!config_discover_find(nc, d->cfg.discover[i].name))
			log_info("reload: [discover.%s] removed", d->cfg.discover[i].name);
	for (size_t i = 0; i < nc->n_discover; i++) {
		const struct plugfs_discover *o =
		    config_discover_find(&d->cfg, nc->discover[i].name);

		if (!o)
			log_info("reload: [discover.%s] added (root %s)", nc->discover[i].name,
				 nc->discover[i].root);
		else if (!config_discover_equal(o, &nc->discover[i]))
			log_info("reload: [discover.%s] changed (root %s)", nc->discover[i].name,
				 nc->discover[i].root);
	}
	d->cfg.discover = nc->discover;
	d->cfg.n_discover = nc->n_discover;
	nc->discover = keep;
	nc->n_discover = n_keep;
	/* The discovery's thread applies them (copies), soon after. */
	if (discover_reload(d->disc, d->cfg.discover, d->cfg.n_discover) < 0)
		log_error("reload: the discovery keeps its sections: out of memory");
}

/*
 * SIGHUP and the control socket's `reload': applies what can change while
 * mounted, names what cannot.  0 with *info (NULL when out of memory)
 * {"config": the file read or "", "restart_needed": [settings], "applied":
 * [settings]}; -EINVAL with err naming the file, line and key when the new
 * config is refused, -EBUSY when it could not be read in time; then nothing
 * changed.  Either thread may call it; the file is read with no lock held,
 * and d->reload_lock makes one comparison and application at a time.
 */
static int reload(struct daemon *d, json_t **info, char *err, size_t errlen)
{
	struct plugfs_config nc = {0};
	json_t *restart = NULL, *applied = json_array();
	const char *mp;
	char msg[64];
	int rc;

	*info = NULL;
	/* Type=notify-reload wants the monotonic time with RELOADING=1. */
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)(plugfs_mono_ns() / 1000));
	sd_notify_send(msg);
	/* Read with no lock held and bounded in time (confread.c): a config
	 * replaced by a FIFO, or on a filesystem that stopped answering,
	 * never holds this thread (the housekeeping thread's signals and
	 * watchdog pings, the control server's clients) past the deadline. */
	rc = daemon_config_read(d->config_path, DAEMON_CONFIG_READ_MS, &nc, err, errlen);
	pthread_mutex_lock(&d->reload_lock);
	if (rc != 0) {
		log_error("reload failed, keeping the running config: %s", err);
		rc = rc == -ETIMEDOUT || rc == -EBUSY ? -EBUSY : -EINVAL;
		goto out;
	}
	/* A discovery root anyone but root may write (or a directory above
	 * it), a symlink, or one into the own mount: the new config is
	 * refused as a bad value would be. */
	for (size_t i = 0; i < nc.n_discover; i++) {
		if (discover_check_root(&nc.discover[i], d->own, err, errlen) < 0) {
			log_error("reload failed, keeping the running config: %s", err);
			rc = -EINVAL;
			goto out;
		}
	}
	mp = d->mountpoint_arg ? d->mountpoint_arg : nc.mountpoint;
#define NEEDS_RESTART(changed, what)                                                               \
	do {                                                                                       \
		if (changed)                                                                       \
			needs_restart(&restart, what);                                             \
	} while (0)
	NEEDS_RESTART(!str_eq(mp, d->cfg.mountpoint), "[mount] mountpoint");
	NEEDS_RESTART(!str_eq(nc.socket_name, d->cfg.socket_name), "[mount] socket_name");
	NEEDS_RESTART(nc.allow_other != d->cfg.allow_other, "[mount] allow_other");
	NEEDS_RESTART(!str_eq(nc.state_path, d->cfg.state_path), "[state] path");
	NEEDS_RESTART(!str_eq(nc.synchronous, d->cfg.synchronous), "[state] synchronous");
	NEEDS_RESTART(!str_eq(nc.control_socket, d->cfg.control_socket), "[control] socket");
	NEEDS_RESTART(!str_eq(nc.control_group, d->cfg.control_group), "[control] group");
	NEEDS_RESTART(nc.max_clients != d->cfg.max_clients, "[control] max_clients");
	NEEDS_RESTART(nc.idle_timeout != d->cfg.idle_timeout, "[control] idle_timeout");
	NEEDS_RESTART(!list_eq(nc.types, nc.n_types, d->cfg.types, d->cfg.n_types),
		      "[registry] types");
	NEEDS_RESTART(!list_eq(nc.socket_roots, nc.n_socket_roots, d->cfg.socket_roots,
			       d->cfg.n_socket_roots),
		      "[registry] socket_roots");
	NEEDS_RESTART(nc.tombstone_ttl != d->cfg.tombstone_ttl, "[registry] tombstone_ttl");
	NEEDS_RESTART(nc.probe.dflt.mode != d->cfg.probe.dflt.mode, "[probe] mode");
	NEEDS_RESTART(nc.probe.dflt.interval_ms != d->cfg.probe.dflt.interval_ms,
		      "[probe] interval");
	NEEDS_RESTART(nc.probe.dflt.timeout_ms != d->cfg.probe.dflt.timeout_ms, "[probe] timeout");
	NEEDS_RESTART(nc.probe.dflt.failures != d->cfg.probe.dflt.failures, "[probe] failures");
	for (size_t i = 0; i < nc.n_types; i++) {
		struct reg_probe_settings a, b;
		char what[REG_NAME_MAX + 16];

		reg_probe_settings_of(&nc.probe, nc.types[i], REG_PROBE_DEFAULT, &a);
		reg_probe_settings_of(&d->cfg.probe, nc.types[i], REG_PROBE_DEFAULT, &b);
		snprintf(what, sizeof(what), "[probe.%s]", nc.types[i]);
		NEEDS_RESTART(memcmp(&a, &b, sizeof(a)) != 0, what);
	}
#undef NEEDS_RESTART

	if (nc.log_level != d->cfg.log_level) {
		d->cfg.log_level = nc.log_level;
		if (!d->debug)
			plog_set_level(nc.log_level);
		log_info("reload: log level is now %s", log_level_name(nc.log_level));
		if (applied)
			json_array_append_new(applied, json_string("[log] level"));
	}
	if (nc.cache_timeout != d->cfg.cache_timeout) {
		d->cfg.cache_timeout = nc.cache_timeout;
		fs_set_cache_timeout(d->fs, nc.cache_timeout);
		log_info("reload: cache_timeout is now %us (for what the kernel looks up next)",
			 nc.cache_timeout);
		if (applied)
			json_array_append_new(applied, json_string("[mount] cache_timeout"));
	}
	reload_discover(d, &nc);
	log_info("reloaded %s", nc.source && nc.source[0] ? nc.source : "the built-in defaults");
	*info = json_pack("{s:s, s:o, s:o}", "config", nc.source ? nc.source : "", "restart_needed",
			  restart ? restart : json_array(), "applied",
			  applied ? applied : json_array());
	restart = applied = NULL; /* json_pack took them, or freed them */
	rc = 0;
out:
	json_decref(restart);
	json_decref(applied);
	config_free(&nc);
	sd_notify_send("READY=1");
	pthread_mutex_unlock(&d->reload_lock);
	return rc;
}

/* `reload' on the control socket (control_options.reload). */
int daemon_reload_by_request(void *arg, json_t **info, char *err, size_t errlen)
{
	return reload(arg, info, err, errlen);
}

/* SIGHUP: what goes wrong is in the log only. */
void daemon_reload_by_signal(struct daemon *d)
{
	char err[CONFIG_ERR_MAX];
	json_t *info = NULL;

	reload(d, &info, err, sizeof(err));
	json_decref(info);
}
