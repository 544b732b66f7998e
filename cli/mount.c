/* SPDX-License-Identifier: MIT */
/*
 * plugfs mount: the daemon.  Wires config, registry, filesystem and the
 * control server together, announces readiness to systemd once the FUSE
 * handshake is answered (from the init callback: never by touching the mount),
 * reloads on SIGHUP, expires tombstones hourly, and on SIGTERM or
 * SIGINT unmounts and exits 0.  On SIGUSR2 it re-executes itself keeping the
 * mount: the FUSE connection, its saved FUSE_INIT and the listening control
 * socket are inherited by the new program ($PLUGFS_RESUME_FDS, fs/resume.c),
 * which resumes serving them under the same PID.
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
 * This file starts, runs and stops the daemon; its state and its other parts
 * are in daemon.h: the control server's callbacks (daemon_control.c), the
 * handover and stop requests (daemon_signal.c), the housekeeping thread
 * (daemon_house.c).
 */
#include <errno.h>
#include <getopt.h>
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
#include "cliutil.h"
#include "commands.h"
#include "daemon.h"
#include "handover.h"
#include "log.h"
#include "sdnotify.h"

#define CMD "mount"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char usage[] =
    "Usage: plugfs mount [-c FILE] [--mountpoint DIR] [--keep-mount] [--debug]\n"
    "\n"
    "Runs the plugfs daemon in the foreground: loads the config and the state\n"
    "file, mounts the filesystem at [mount] mountpoint and serves it until\n"
    "SIGTERM or SIGINT, then unmounts and exits 0.  SIGHUP reloads the config\n"
    "(log level, cache timeout; the rest needs a restart and is reported).\n"
    "Readiness is sent to $NOTIFY_SOCKET (systemd Type=notify) once the kernel's\n"
    "FUSE handshake is answered.\n"
    "\n"
    "SIGUSR2 re-executes the daemon in place (a live upgrade: the binary on disk,\n"
    "same PID, same arguments) without unmounting: requests being served are\n"
    "finished, requests that arrive meanwhile wait and are answered by the new\n"
    "program, `plugfs register' waits in the control socket's backlog.\n"
    "\n"
    "Under systemd ($NOTIFY_SOCKET) a fresh mount hands its FUSE connection to the\n"
    "service's file descriptor store (FileDescriptorStoreMax=); a start that finds\n"
    "it there ($LISTEN_FDS) resumes the mount instead of mounting, so a crash or a\n"
    "restart is a stall for consumers, not an error.\n"
    "\n"
    "  --mountpoint DIR   mount here instead of [mount] mountpoint\n"
    "  --keep-mount       on SIGTERM or SIGINT, when the connection is in the file\n"
    "                     descriptor store, stop without unmounting: the next start\n"
    "                     resumes the mount; `plugfs stop-post' (ExecStopPost=)\n"
    "                     detaches it when the stop is not a restart\n"
    "  --debug            debug logging and libfuse request tracing\n"
    "  -c FILE            config file (else $PLUGFS_CONFIG, else " CONFIG_DEFAULT_PATH ")\n"
    "\n"
    "Exit codes: 0 clean stop, 1 failed to start or to serve, 2 usage error.\n";

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
		uint64_t t = mono_ns(), t_mounted = __atomic_load_n(&d->t_mounted, __ATOMIC_SEQ_CST);

		registry_counts(d->reg, &n_plugins, &n_regs);
		log_info("ready: serving %s (%zu registration(s); %.1f ms from start: state %.1f, "
			 "probe %.1f, tree and mount %.1f, until the kernel's handshake %.1f)",
			 d->cfg.mountpoint, n_regs, (double)(t - d->t_start) / 1e6,
			 (double)(d->t_loaded - d->t_start) / 1e6,
			 (double)(d->t_probed - d->t_loaded) / 1e6,
			 (double)((t_mounted ? t_mounted : t) - d->t_probed) / 1e6,
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

static int mount_option(void *st, int c, char *arg)
{
	struct daemon *d = st;

	if (c == 'm')
		d->mountpoint_arg = arg;
	else if (c == 'k')
		d->keep_mount = true;
	else
		d->debug = true;
	return EXIT_OK;
}

static const struct option mount_longopts[] = {
    {"mountpoint", required_argument, NULL, 'm'},
    {"debug", no_argument, NULL, 'd'},
    {"keep-mount", no_argument, NULL, 'k'},
    {NULL, 0, NULL, 0},
};

static const struct cli_verb mount_verb = {
    .name = CMD,
    .usage = usage,
    .shortopts = "m:d",
    .longopts = mount_longopts,
    .option = mount_option,
};

int mount_main(int argc, char *argv[])
{
	struct daemon d = {.kept_listen_fd = -1, .reload_lock = PTHREAD_MUTEX_INITIALIZER};
	struct cli_args args = {0};
	struct registry_options ropts;
	struct fs_options fo;
	struct fs_handover resume, out_h = {-1, -1, -1};
	const struct fs_handover *resuming;
	bool handover = false, kept = false;
	char err[REG_ERR_MAX > CONFIG_ERR_MAX ? REG_ERR_MAX : CONFIG_ERR_MAX];
	sigset_t hup, stop;
	bool curl_ready = false;
	int rc, n_probed;

	rc = cli_parse(&mount_verb, &d, argc, argv, &args);
	if (rc != CLI_RUN)
		return cli_finish_output(CMD, rc);
	d.config_path = args.config;
	rc = EXIT_FAILED;

	/* SIGHUP is taken by the housekeeping thread only; every thread
	 * started from here on inherits the block.  SIGTERM and SIGINT wait
	 * until the loop runs (see the top of this file). */
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	sigaddset(&hup, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &hup, NULL);
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	/* A re-exec of ours (SIGUSR2) hands the mount over in the environment. */
	rc = fs_handover_from_env(&resume);
	if (rc < 0) {
		cli_error(CMD, "$%s does not name open file descriptors", FS_RESUME_ENV);
		return EXIT_FAILED;
	}
	/* Or systemd's file descriptor store, after a crash. */
	if (rc == 0 && (rc = handover_from_systemd(&resume)) < 0) {
		cli_error(CMD, "$LISTEN_FDS: %s", strerror(-rc));
		return EXIT_FAILED;
	}
	resuming = rc == 1 ? &resume : NULL;
	/* A resumed connection was stored by the process that mounted it. */
	d.stored = resuming && getenv("NOTIFY_SOCKET");
	rc = EXIT_FAILED;

	if (cli_load_config(CMD, d.config_path, &d.cfg) != EXIT_OK)
		return EXIT_FAILED;
	if (d.mountpoint_arg) {
		char *mp = strdup(d.mountpoint_arg);

		if (!mp) {
			cli_error(CMD, "out of memory");
			goto out;
		}
		free(d.cfg.mountpoint);
		d.cfg.mountpoint = mp;
	}
	if (d.debug)
		plog_set_level(PLOG_DEBUG);
	raise_nofile();

	/* libcurl's global state (the csi probe), before any thread runs. */
	if (probe_global_init() != 0) {
		cli_error(CMD, "cannot initialise libcurl");
		goto out;
	}
	curl_ready = true;
	cli_registry_options(&d.cfg, &ropts);
	if (cli_make_parents(CMD, d.cfg.state_path) != EXIT_OK)
		goto out;
	d.t_start = mono_ns();
	if (cli_state_file_empty(d.cfg.state_path))
		log_warn("state file %s is empty (0 bytes): starting a new, empty registry in it",
			 d.cfg.state_path);
	if (registry_open(d.cfg.state_path, &ropts, &d.reg, err, sizeof(err)) != 0) {
		cli_error(CMD, "%s", err); /* the registry names the file */
		goto out;
	}
	/* Checkpoints off the commit path, and the reserve that keeps
	 * deregistrations possible on a full disk. */
	if (registry_start_upkeep(d.reg, NULL, err, sizeof(err)) != 0) {
		cli_error(CMD, "%s", err);
		goto out;
	}
	d.t_loaded = mono_ns();
	/* Every registration probed once before the tree is built (so no
	 * invalidation can wait on a loop that does not run yet) and before
	 * the audit log subscribes (a start that fails says one line): none
	 * that is dead is served after readiness. */
	if (daemon_probe_options(&d) != 0) {
		cli_error(CMD, "out of memory");
		goto out;
	}
	n_probed = probe_enabled(&d.probe) ? probe_round(d.reg, &d.probe) : 0;
	d.t_probed = mono_ns();
	d.audit_sub = registry_subscribe(d.reg, audit_log_change, NULL);
	if (d.audit_sub < 0) {
		cli_error(CMD, "cannot subscribe to the registry: %s", strerror(-d.audit_sub));
		d.audit_sub = 0;
		goto out;
	}

	fo = (struct fs_options){
	    .resume = resuming,
	    .mountpoint = d.cfg.mountpoint,
	    .socket_name = d.cfg.socket_name,
	    .allow_other = d.cfg.allow_other,
	    .cache_timeout = d.cfg.cache_timeout,
	    .debug = d.debug,
	    .on_ready = on_ready,
	    .on_ready_arg = &d,
	};
	if (fs_mount(d.reg, &fo, &d.fs, err, sizeof(err)) != 0) {
		cli_error(CMD, "%s", err);
		goto out;
	}
	__atomic_store_n(&d.t_mounted, mono_ns(), __ATOMIC_SEQ_CST);
	/* What the start used and no longer needs goes back: SQLite's cache
	 * of the pages the load read, and the heap's free memory (the load's
	 * statements and temporary texts, the probe round's). */
	registry_release_memory(d.reg);
#ifdef __GLIBC__
	malloc_trim(0);
#endif

	/* The control server after the mount: an `ok' is only ever given with
	 * the tree in place. */
	struct control_options co = {
	    .socket_path = d.cfg.control_socket,
	    .group = d.cfg.control_group,
	    .max_clients = d.cfg.max_clients,
	    .idle_timeout = d.cfg.idle_timeout,
	    .mountpoint = d.cfg.mountpoint,
	    .state_path = d.cfg.state_path,
	    .inherit_listen_fd = resuming && resume.control_fd >= 0,
	    .listen_fd = resuming ? resume.control_fd : -1,
	    .probe = probe_enabled(&d.probe) ? daemon_register_probe : NULL,
	    .probe_arg = &d.probe,
	    .reload = daemon_reload_by_request,
	    .reload_arg = &d,
	    .metrics = daemon_metrics,
	    .metrics_arg = &d,
	};
	if (control_server_start(d.reg, &co, &d.ctl, err, sizeof(err)) != 0) {
		cli_error(CMD, "%s", err);
		goto out;
	}

	if (n_probed < 0)
		log_warn("probe: the first round failed: %s", strerror(-n_probed));
	else if (probe_enabled(&d.probe))
		audit_probed_at_start(d.reg, n_probed);
	if (prober_start(d.reg, &d.probe, &d.prober, err, sizeof(err)) != 0) {
		cli_error(CMD, "%s", err);
		goto out;
	}

	if (daemon_house_start(&d) != 0) {
		cli_error(CMD, "cannot start the housekeeping thread");
		goto out;
	}

	/* A stop signal that came while starting is taken now: fs_run
	 * returns at once. */
	if (!d.keep_mount) /* else the housekeeping thread takes them */
		pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
	rc = fs_run(d.fs);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	/* The housekeeping thread made its last change to d.ctl and
	 * d.kept_listen_fd before it asked the loop to stop. */
	daemon_house_stop(&d);
	if (rc == FS_RUN_HANDOVER) {
		/* The loop finished what it had read; the rest waits in the
		 * kernel (and clients in the socket's backlog) for the next
		 * program. */
		handover = fs_handover(d.fs, &out_h) == 0;
		out_h.control_fd = d.kept_listen_fd;
		rc = 0;
		if (handover && __atomic_load_n(&d.stop_keeping, __ATOMIC_SEQ_CST)) {
			/* systemd's store holds copies: ours just go. */
			int fds[] = {out_h.fuse_fd, out_h.init_fd, out_h.control_fd};

			for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
				if (fds[i] >= 0)
					close(fds[i]);
			d.kept_listen_fd = -1;
			handover = false;
			kept = true;
		}
	}
	if (!handover && d.kept_listen_fd >= 0)
		close(d.kept_listen_fd); /* a stop signal came first */
	if (rc != 0) {
		rc = EXIT_FAILED;
		log_error("the FUSE request loop failed");
		goto out;
	}
	log_info(handover ? "handing the mount over"
		 : kept	  ? "stopped; the mount waits for the next start"
			  : "stopping");
	if (!handover && !kept)
		handover_unstore();
	rc = EXIT_OK;
out:
	if (!handover)
		sd_notify_send("STOPPING=1");
	daemon_house_stop(&d);
	/* No more probes and mutations, then the filesystem goes. */
	prober_stop(d.prober);
	d.prober = NULL;
	if (d.ctl)
		control_server_stop(d.ctl);
	fs_destroy(d.fs);
	if (d.audit_sub > 0)
		registry_unsubscribe(d.reg, d.audit_sub);
	if (d.reg)
		registry_close(d.reg);
	if (handover) {
		handover_reexec(d.cfg.mountpoint, &out_h);
		rc = EXIT_FAILED;
	}
	if (curl_ready)
		probe_global_cleanup();
	free(d.probe_types);
	config_free(&d.cfg);
	return rc;
}
