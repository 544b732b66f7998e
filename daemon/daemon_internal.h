/* SPDX-License-Identifier: MIT */
/*
 * The daemon's state (struct daemon), private to daemon/, and what its files
 * give one another: daemon.c starts, runs and stops it; callbacks.c holds the
 * callbacks it gives the control server (a registration's first probe,
 * `reload', `metrics'); signal.c the handover and stop requests of its
 * signals; house.c the housekeeping thread (signals, systemd's watchdog,
 * tombstone expiry).
 */
#ifndef PLUGFS_DAEMON_INTERNAL_H
#define PLUGFS_DAEMON_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "control.h"
#include "fs.h"
#include "probe.h"
#include "registry.h"

struct daemon {
	const char *config_path;    /* -c FILE or NULL */
	const char *mountpoint_arg; /* --mountpoint DIR or NULL */
	bool debug;
	struct plugfs_config cfg; /* the running config */
	struct registry *reg;
	struct plugfs_fs *fs;
	struct control_server *ctl;
	struct probe_options probe;		/* from [probe] and [probe.TYPE] */
	struct reg_probe_type *probe_types;	/* one per [registry] type */
	struct prober *prober;			/* NULL: none running */
	/* The daemon's own mount (fsutil.h): no probe, watch or `register'
	 * looks a path up there, through a symlink neither (Hazards). */
	struct plugfs_own_mount *own;
	int audit_sub; /* registry subscription of audit_log_change, 0 = none */
	pthread_t house;
	bool house_started;
	bool stopping; /* atomic */
	bool ready;    /* the FUSE handshake was answered; atomic */
	/* The listening control socket kept for the next program after
	 * SIGUSR2 (the server is stopped then), -1; atomic. */
	int kept_listen_fd;
	/* --keep-mount: a stop signal leaves the mount to the next start. */
	bool keep_mount;
	/* The connection is in systemd's file descriptor store (handed over
	 * by this process, or by the one it resumed from); atomic. */
	bool stored;
	/* The handover under way is a stop, not a re-exec; atomic. */
	bool stop_keeping;
	/* The start's phases (CLOCK_MONOTONIC, ns): begin, state loaded,
	 * the start's connect pass ended, tree built and mounted; the ready
	 * line reports them (the start round runs after them, its own line
	 * says how long it took). */
	uint64_t t_start, t_loaded, t_connected, t_mounted;
	int n_connected; /* registrations the start's connect pass probed */
	/* One reload at a time: SIGHUP on the housekeeping thread, `reload'
	 * on the control server's; guards the reloadable fields of cfg. */
	pthread_mutex_t reload_lock;
	/* The start: the connection handed over to this process (resuming),
	 * libcurl's global state. */
	struct fs_handover resume;
	bool resuming;
	bool curl_ready;
	/* The stop: the handover to a re-executed program (out_h, its fds),
	 * or a stop that left the mount in systemd's store (kept). */
	struct fs_handover out_h;
	bool handover, kept;
	/* What a re-exec executes (handover_pick_binary, on SIGUSR2). */
	char reexec_path[PATH_MAX];
	/* Resuming a re-exec's mount: the program that handed it over (an fd,
	 * or -1) and copies of the descriptors it handed over, to give them
	 * back should this start fail (handover_fall_back). */
	int fallback_fd;
	struct fs_handover fallback_h;
	/* This start failed: daemon_stop gives the mount back (fallback_h)
	 * instead of unmounting. */
	bool giving_back;
	/* The [discover.NAME] sections' discovery (discover.h), NULL: not
	 * started. */
	struct discover *disc;
};

/* d->probe from the config: [probe] the default, and every type of
 * [registry] types with its own settings ([probe.TYPE] over [probe]).
 * 0, or -ENOMEM. */
int daemon_probe_options(struct daemon *d);
/* The control server's first probe of a registration, by its type
 * (control_options.probe; arg is a struct probe_options), on a probe
 * thread of the server; *cancel ends it within 50 ms. */
void daemon_register_probe(const char *type, const struct reg_spec *spec, const bool *cancel,
			   struct reg_runtime *out, void *arg);
/* What `metrics' says of the filesystem and the probes
 * (control_options.metrics; arg is the daemon). */
void daemon_metrics(struct metrics *m, void *arg);
/* `reload' on the control socket (control_options.reload; arg is the
 * daemon). */
int daemon_reload_by_request(void *arg, json_t **info, char *err, size_t errlen);
/* SIGHUP: a reload whose errors are in the log only. */
void daemon_reload_by_signal(struct daemon *d);

/* SIGUSR2: hands the mount over to a re-executed plugfs, once ready. */
void daemon_request_handover(struct daemon *d);
/* SIGTERM or SIGINT with --keep-mount: a stop that keeps the mount when
 * the connection is in systemd's store, else a plain stop. */
void daemon_request_stop(struct daemon *d, int sig);

/* Starts the housekeeping thread (SIGTERM and SIGINT blocked in it unless
 * --keep-mount).  0 or -errno. */
int daemon_house_start(struct daemon *d);
/* Stops and joins it; nothing when it is not running. */
void daemon_house_stop(struct daemon *d);

#endif
