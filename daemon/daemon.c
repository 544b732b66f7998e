/* SPDX-License-Identifier: MIT */
/*
 * The daemon's start, run and stop (include/daemon.h).  Wires config,
 * registry, filesystem and the control server together, announces readiness
 * to systemd once the FUSE handshake is answered (from the init callback:
 * never by touching the mount), reloads on SIGHUP, expires tombstones
 * hourly, and on SIGTERM or SIGINT unmounts.  On SIGUSR2 it re-executes
 * itself keeping the mount: the FUSE connection, its saved FUSE_INIT and the
 * listening control socket are inherited by the new program
 * ($PLUGFS_RESUME_FDS, fs/resume.c), which resumes serving them under the
 * same PID.
 *
 * Threads: the main thread runs the FUSE loop (fs_run) and takes SIGTERM and
 * SIGINT; SIGHUP is blocked everywhere and taken by the housekeeping thread
 * with sigtimedwait, which also runs the tombstone expiry.  SIGTERM and SIGINT
 * (and SIGUSR2) are blocked while the daemon starts (one that arrives then
 * takes effect as soon as the loop runs) and again once the loop has
 * returned (more of them while it unmounts change nothing, and one during a
 * re-exec is taken by the new program): a stop signal always ends in a clean
 * exit 0.
 *
 * The daemon's state and its other files are in daemon_internal.h: the
 * control server's callbacks (callbacks.c), the handover and stop requests
 * (signal.c), the housekeeping thread (house.c), systemd's protocols
 * (sdnotify.c, handover.c), the audit log (audit.c).
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "confread.h"
#include "clock.h"
#include "daemon_internal.h"
#include "discover.h"
#include "discover_scan.h"
#include "err.h"
#include "fsutil.h"
#include "handover.h"
#include "log.h"
#include "sdnotify.h"

static void on_ready(void *arg)
{
	const struct daemon *d = arg;
	char msg[256];
	int rc;

	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=serving %s\nMAINPID=%ld", d->cfg.mountpoint,
		 (long)getpid());
	rc = sd_notify_send(msg);
	if (rc < 0)
		log_warn("cannot notify readiness to $NOTIFY_SOCKET: %s", strerror(-rc));
	{
		size_t n_plugins = 0, n_regs = 0;
		uint64_t t = plugfs_mono_ns(),
			 t_mounted = __atomic_load_n(&d->t_mounted, __ATOMIC_SEQ_CST);

		/* The probe phase is the connect pass only: the start round
		 * runs once the mount serves (probed_at_start says when it
		 * ended). */
		registry_counts(d->reg, &n_plugins, &n_regs);
		log_info("ready: serving %s (%zu registration(s); %.1f ms from start: state %.1f, "
			 "connect pass %.1f, tree and mount %.1f, until the kernel's handshake %.1f)",
			 d->cfg.mountpoint, n_regs, (double)(t - d->t_start) / 1e6,
			 (double)(d->t_loaded - d->t_start) / 1e6,
			 (double)(d->t_connected - d->t_loaded) / 1e6,
			 (double)((t_mounted ? t_mounted : t) - d->t_connected) / 1e6,
			 (double)(t - (t_mounted ? t_mounted : t)) / 1e6);
	}
	if (!fs_resumed(d->fs) && handover_store(d->fs, d->ctl))
		__atomic_store_n(&((struct daemon *)arg)->stored, true, __ATOMIC_SEQ_CST);
	__atomic_store_n(&((struct daemon *)arg)->ready, true, __ATOMIC_SEQ_CST);
}

/* Raises the soft RLIMIT_NOFILE to the hard limit, as systemd recommends
 * for a program that uses poll(), never select(): every client, mount and
 * database costs a file descriptor, and the default soft 1024 is reached by
 * a busy host long before the hard limit. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		log_warn("cannot raise RLIMIT_NOFILE to %llu: %s", (unsigned long long)rl.rlim_max,
			 strerror(errno));
	else
		log_debug("RLIMIT_NOFILE raised to %llu", (unsigned long long)rl.rlim_max);
}

static void stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
}

/* The config at a->config_path (or the search), with --mountpoint over
 * [mount] mountpoint and --debug over [log] level. */
static int load_config(struct daemon *d, const struct daemon_args *a, char *err, size_t errlen)
{
	/* Bounded in time like a reload (confread.c): a start, or a re-exec
	 * that must take over the mount, never waits for good on it. */
	int rc = daemon_config_read(a->config_path, DAEMON_CONFIG_READ_MS, &d->cfg, err, errlen);

	if (rc < 0)
		return rc;
	plog_set_level(d->cfg.log_level);
	if (a->mountpoint) {
		char *mp = strdup(a->mountpoint);

		if (!mp)
			return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
		free(d->cfg.mountpoint);
		d->cfg.mountpoint = mp;
	}
	if (a->debug)
		plog_set_level(PLOG_DEBUG);
	return 0;
}

/* The [discover.NAME] roots, by their trust rule (discover_open_root): a
 * root anyone but root may write, or one of whose directories above it,
 * a symlink, one that leads into the own mount, is a config error, as a
 * bad value is.  After the own mount is known (d->own). */
static int check_roots(struct daemon *d, char *err, size_t errlen)
{
	int rc;

	for (size_t i = 0; i < d->cfg.n_discover; i++)
		if ((rc = discover_check_root(&d->cfg.discover[i], d->own, err, errlen)) < 0)
			return rc;
	return 0;
}

/* The start round's end (the prober's first rounds, on its last thread to
 * end one): one line, how many were probed (the connect pass probed every
 * one; the round leaves out what the watches saw since), which are dead. */
static void probed_at_start(void *arg, int n, int64_t ms)
{
	const struct daemon *d = arg;

	if (n < 0)
		log_warn("probe: the first round failed: %s", strerror(-n));
	else
		audit_probed_at_start(d->reg, n > d->n_connected ? n : d->n_connected, ms);
}

/* The state: opened and loaded, its upkeep started. */
static int start_registry(struct daemon *d, char *err, size_t errlen)
{
	struct registry_options ropts;
	int rc;

	config_registry_options(&d->cfg, &ropts);
	rc = plugfs_prepare_file("state.path", d->cfg.state_path, err, errlen);
	if (rc != 0)
		return rc;
	d->t_start = plugfs_mono_ns();
	if (plugfs_file_empty(d->cfg.state_path))
		log_warn("state file %s is empty (0 bytes): starting a new, empty registry in it",
			 d->cfg.state_path);
	rc = registry_open(d->cfg.state_path, &ropts, &d->reg, err, errlen);
	if (rc != 0)
		return rc; /* the registry names the file */
	/* Checkpoints off the commit path, and the reserve that keeps
	 * deregistrations possible on a full disk. */
	rc = registry_start_upkeep(d->reg, NULL, err, errlen);
	if (rc != 0)
		return rc;
	d->t_loaded = plugfs_mono_ns();
	/* Every registration is connected to once before the mount is
	 * served (probe_start_connect): a missing, refusing or hung socket is
	 * dead before any consumer is, as it was before the restart.  The
	 * csi calls, which a plugin that accepts and never answers holds for
	 * a timeout, come with the prober's first rounds, started with the
	 * mount served (daemon_start): a start (a re-exec) never waits for
	 * them, and each verdict is applied as its probe ends. */
	if (daemon_probe_options(d) != 0)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	if (probe_enabled(&d->probe) && (rc = probe_start_connect(d->reg, &d->probe)) < 0)
		log_warn("probe: the start's connect pass failed: %s", strerror(-rc));
	d->n_connected = rc > 0 ? rc : 0;
	d->t_connected = plugfs_mono_ns();
	d->audit_sub = registry_subscribe(d->reg, audit_log_change, NULL);
	if (d->audit_sub < 0) {
		rc = d->audit_sub;
		d->audit_sub = 0;
		return plugfs_errf(err, errlen, rc, "cannot subscribe to the registry: %s",
				   strerror(-rc));
	}
	return 0;
}

static int start_fs(struct daemon *d, char *err, size_t errlen)
{
	struct fs_options fo = {
	    .resume = d->resuming ? &d->resume : NULL,
	    .mountpoint = d->cfg.mountpoint,
	    .socket_name = d->cfg.socket_name,
	    .allow_other = d->cfg.allow_other,
	    .cache_timeout = d->cfg.cache_timeout,
	    .debug = d->debug,
	    .on_ready = on_ready,
	    .on_ready_arg = d,
	};
	int rc = fs_mount(d->reg, &fo, &d->fs, err, errlen);

	if (rc != 0)
		return rc;
	__atomic_store_n(&d->t_mounted, plugfs_mono_ns(), __ATOMIC_SEQ_CST);
	/* What the start used and no longer needs goes back: SQLite's cache
	 * of the pages the load read, and the heap's free memory (the load's
	 * statements and temporary texts). */
	registry_release_memory(d->reg);
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	return 0;
}

/* The discovery: every root scanned and what the registry holds of it
 * reconciled before the mount is served, then its thread watches.  Before
 * the mount serves (a re-exec's: nobody answers it yet), which the scan
 * never waits on: it crosses no mount below a root, and opens no root
 * that leads into the own mount (discover_scan.h). */
static int start_discover(struct daemon *d, char *err, size_t errlen)
{
	struct discover_options o = {
	    .reg = d->reg,
	    .own = d->own,
	    .types = (const char *const *)d->cfg.types,
	    .n_types = d->cfg.n_types,
	    .timeout_ms = d->cfg.probe.dflt.timeout_ms,
	};

	return discover_start(&o, d->cfg.discover, d->cfg.n_discover, &d->disc, err, errlen);
}

/* The control server after the mount: an `ok' is only ever given with the
 * tree in place. */
static int start_control(struct daemon *d, char *err, size_t errlen)
{
	struct control_options co = {
	    .socket_path = d->cfg.control_socket,
	    .group = d->cfg.control_group,
	    .max_clients = d->cfg.max_clients,
	    .idle_timeout = d->cfg.idle_timeout,
	    .mountpoint = d->cfg.mountpoint,
	    .own_mount = d->own,
	    .state_path = d->cfg.state_path,
	    .inherit_listen_fd = d->resuming && d->resume.control_fd >= 0,
	    .listen_fd = d->resuming ? d->resume.control_fd : -1,
	    .probe = probe_enabled(&d->probe) ? daemon_register_probe : NULL,
	    .probe_arg = &d->probe,
	    .reload = daemon_reload_by_request,
	    .reload_arg = d,
	    .metrics = daemon_metrics,
	    .metrics_arg = d,
	};

	return control_server_start(d->reg, &co, &d->ctl, err, errlen);
}

/* Copies of the descriptors a re-exec handed over (d->resume) in
 * d->fallback_h; none when one cannot be made. */
static void keep_fallback(struct daemon *d)
{
	int src[] = {d->resume.fuse_fd, d->resume.init_fd, d->resume.control_fd};
	int *dst[] = {&d->fallback_h.fuse_fd, &d->fallback_h.init_fd, &d->fallback_h.control_fd};

	for (size_t i = 0; i < 3; i++) {
		if (src[i] < 0)
			continue;
		fcntl(src[i], F_SETFD, FD_CLOEXEC);
		*dst[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
		if (*dst[i] < 0) {
			log_warn("cannot keep a copy of the handed-over descriptors (%s): a start "
				 "that fails cannot hand the mount back",
				 strerror(errno));
			for (size_t k = 0; k < i; k++)
				if (*dst[k] >= 0)
					close(*dst[k]);
			d->fallback_h = (struct fs_handover){-1, -1, -1};
			return;
		}
	}
}

static void drop_fallback(struct daemon *d)
{
	int fds[] = {d->fallback_fd, d->fallback_h.fuse_fd, d->fallback_h.init_fd,
		     d->fallback_h.control_fd};

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	d->fallback_fd = -1;
	d->fallback_h = (struct fs_handover){-1, -1, -1};
}

int daemon_start(const struct daemon_args *a, struct daemon **out, char *err, size_t errlen)
{
	struct daemon *d = calloc(1, sizeof(*d));
	sigset_t hup, stop;
	int rc;

	*out = NULL;
	if (!d)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	d->kept_listen_fd = -1;
	d->out_h = (struct fs_handover){-1, -1, -1};
	d->fallback_h = (struct fs_handover){-1, -1, -1};
	d->fallback_fd = -1;
	snprintf(d->reexec_path, sizeof(d->reexec_path), "/proc/self/exe");
	d->config_path = a->config_path;
	d->mountpoint_arg = a->mountpoint;
	d->keep_mount = a->keep_mount;
	d->debug = a->debug;
	pthread_mutex_init(&d->reload_lock, NULL);

	/* SIGHUP is taken by the housekeeping thread only; every thread
	 * started from here on inherits the block.  SIGTERM and SIGINT wait
	 * until the loop runs (see the top of this file). */
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	sigaddset(&hup, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &hup, NULL);
	stop_signals(&stop);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	/* A re-exec of ours (SIGUSR2) hands the mount over in the environment. */
	rc = fs_handover_from_env(&d->resume);
	if (rc < 0) {
		rc = plugfs_errf(err, errlen, rc, "$%s does not name open file descriptors",
				 FS_RESUME_ENV);
		goto fail;
	}
	/* Or systemd's file descriptor store, after a crash. */
	if (rc == 0 && (rc = handover_from_systemd(&d->resume)) < 0) {
		rc = plugfs_errf(err, errlen, rc, "$LISTEN_FDS: %s", strerror(-rc));
		goto fail;
	}
	d->resuming = rc == 1;
	/* A resumed connection was stored by the process that mounted it. */
	d->stored = d->resuming && getenv("NOTIFY_SOCKET");
	/* A re-exec's way back, should this start fail: copies of what it
	 * handed over (the start may close or detach the originals). */
	d->fallback_fd = handover_take_fallback();
	if (d->fallback_fd >= 0 && d->resuming)
		keep_fallback(d);

	rc = load_config(d, a, err, errlen);
	if (rc < 0)
		goto fail;
	raise_nofile();
	/* libcurl's global state (the csi probe), before any thread runs. */
	if (probe_global_init() != 0) {
		rc = plugfs_errf(err, errlen, -EIO, "cannot initialise libcurl");
		goto fail;
	}
	d->curl_ready = true;
	/* Before the first probe: on a re-exec the mount is there and
	 * nobody serves it until the loop runs. */
	rc = plugfs_own_mount_new(d->cfg.mountpoint, &d->own, err, errlen);
	if (rc < 0)
		goto fail;
	probe_set_own_mount(d->own);
	rc = check_roots(d, err, errlen);
	if (rc == 0)
		rc = start_registry(d, err, errlen);
	if (rc == 0)
		rc = start_discover(d, err, errlen);
	if (rc == 0)
		rc = start_fs(d, err, errlen);
	if (rc == 0)
		rc = start_control(d, err, errlen);
#ifdef PLUGFS_FAULTS
	/* Test-only: a new program that resumed a re-exec's mount and then
	 * fails to start (test_fs_reexec_broken). */
	if (rc == 0 && d->fallback_fd >= 0 && getenv("PLUGFS_FAULT_TAKEOVER"))
		rc = plugfs_errf(err, errlen, -EIO, "test fault PLUGFS_FAULT_TAKEOVER");
#endif
	if (rc != 0)
		goto fail;
	/* The start round: the prober's first rounds, at once (prober_start
	 * copies the options; the control server reads only their policy). */
	d->probe.first_round = probed_at_start;
	d->probe.first_round_arg = d;
	rc = prober_start(d->reg, &d->probe, &d->prober, err, errlen);
	if (rc != 0)
		goto fail;
	rc = daemon_house_start(d);
	if (rc != 0) {
		plugfs_seterr(err, errlen, "cannot start the housekeeping thread");
		goto fail;
	}
	drop_fallback(d);
	*out = d;
	return 0;
fail:
	if (d->fallback_fd >= 0 && d->fallback_h.fuse_fd >= 0) {
		/* A new program that cannot take the mount over gives it back
		 * to the one that handed it over, which served it until now:
		 * daemon_stop lets go of it without unmounting, then executes
		 * that program. */
		log_error("cannot take over the mount: %s", err);
		d->giving_back = true;
	}
	daemon_stop(d, rc < 0 ? rc : -EIO);
	return rc < 0 ? rc : -EIO;
}

int daemon_run(struct daemon *d)
{
	sigset_t stop;
	int rc;

	stop_signals(&stop);
	/* A stop signal that came while starting is taken now: fs_run
	 * returns at once. */
	if (!d->keep_mount) /* else the housekeeping thread takes them */
		pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
	rc = fs_run(d->fs);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	/* The housekeeping thread made its last change to d->ctl and
	 * d->kept_listen_fd before it asked the loop to stop. */
	daemon_house_stop(d);
	if (rc == FS_RUN_HANDOVER) {
		/* The loop finished what it had read; the rest waits in the
		 * kernel (and clients in the socket's backlog) for the next
		 * program. */
		d->handover = fs_handover(d->fs, &d->out_h) == 0;
		d->out_h.control_fd = d->kept_listen_fd;
		rc = 0;
		if (d->handover && __atomic_load_n(&d->stop_keeping, __ATOMIC_SEQ_CST)) {
			/* systemd's store holds copies: ours just go. */
			int fds[] = {d->out_h.fuse_fd, d->out_h.init_fd, d->out_h.control_fd};

			for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
				if (fds[i] >= 0)
					close(fds[i]);
			d->kept_listen_fd = -1;
			d->handover = false;
			d->kept = true;
		}
	}
	if (!d->handover && d->kept_listen_fd >= 0) {
		close(d->kept_listen_fd); /* a stop signal came first */
		d->kept_listen_fd = -1;
	}
	if (rc != 0) {
		log_error("the FUSE request loop failed");
		return -EIO;
	}
	log_info(d->handover ? "handing the mount over"
		 : d->kept   ? "stopped; the mount waits for the next start"
			     : "stopping");
	if (!d->handover && !d->kept)
		handover_unstore();
	return d->handover ? DAEMON_HANDOVER : DAEMON_STOPPED;
}

int daemon_stop(struct daemon *d, int run)
{
	int rc = run >= 0 ? 0 : 1;

	if (!d)
		return rc;
	if (!d->handover && !d->giving_back)
		sd_notify_send("STOPPING=1");
	daemon_house_stop(d);
	/* No more mutations and probes, then the filesystem goes.  The
	 * control server first: its `metrics' reads the prober's watches
	 * (prober_watch_stats), which prober_stop frees (a handover stopped
	 * it first already). */
	if (d->ctl && d->giving_back) {
		/* Its socket file stays: the listener goes back (a copy). */
		int fd = control_server_stop_keep_listener(d->ctl);

		if (fd >= 0)
			close(fd);
	} else if (d->ctl) {
		control_server_stop(d->ctl);
	}
	d->ctl = NULL;
	/* The discovery after the control server (its `metrics' and `reload'
	 * call it), before the registry closes. */
	discover_stop(d->disc);
	d->disc = NULL;
	prober_stop(d->prober);
	d->prober = NULL;
	if (d->fs && d->giving_back) {
		/* Not unmounted: fs_destroy lets go of the session only. */
		struct fs_handover t;

		if (fs_handover(d->fs, &t) == 0) {
			close(t.fuse_fd);
			close(t.init_fd);
		}
	}
	fs_destroy(d->fs);
	if (d->audit_sub > 0)
		registry_unsubscribe(d->reg, d->audit_sub);
	if (d->reg)
		registry_close(d->reg);
	if (d->handover) {
		/* Returns only when no program could be executed: the mount's
		 * descriptors wait in $PLUGFS_RESUME_FDS for daemon_start. */
		handover_reexec(d->reexec_path, &d->out_h);
		rc = DAEMON_RESUME;
	}
	if (d->giving_back)
		/* Returns only when that failed. */
		handover_fall_back(d->fallback_fd, &d->fallback_h);
	drop_fallback(d);
	if (d->curl_ready)
		probe_global_cleanup();
	if (d->own) {
		probe_set_own_mount(NULL);
		plugfs_own_mount_unref(d->own);
	}
	free(d->probe_types);
	config_free(&d->cfg);
	pthread_mutex_destroy(&d->reload_lock);
	free(d);
	return rc;
}
