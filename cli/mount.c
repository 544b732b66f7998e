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
 */
#include <errno.h>
#include <getopt.h>
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
#include "config.h"
#include "control.h"
#include "fs.h"
#include "handover.h"
#include "log.h"
#include "metrics.h"
#include "probe.h"
#include "registry.h"
#include "sdnotify.h"

#define CMD "mount"
#define EXPIRY_INTERVAL_S 3600

struct daemon {
	const char *config_path;    /* -c FILE or NULL */
	const char *mountpoint_arg; /* --mountpoint DIR or NULL */
	bool debug;
	struct plugfs_config cfg; /* the running config */
	struct registry *reg;
	struct plugfs_fs *fs;
	struct control_server *ctl;
	struct probe_options probe;		/* from [probe] and [probe.TYPE] */
	struct probe_type_options *probe_types; /* one per [registry] type */
	struct prober *prober;			/* NULL: none running */
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
	 * probed, tree built and mounted; the ready line reports them. */
	uint64_t t_start, t_loaded, t_probed, t_mounted;
	/* One reload at a time: SIGHUP on the housekeeping thread, `reload'
	 * on the control server's; guards the reloadable fields of cfg. */
	pthread_mutex_t reload_lock;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static enum probe_mode probe_mode_of(enum plugfs_probe_mode m)
{
	switch (m) {
	case PLUGFS_PROBE_CONNECT:
		return PROBE_MODE_CONNECT;
	case PLUGFS_PROBE_CSI:
		return PROBE_MODE_CSI;
	case PLUGFS_PROBE_NONE:
		break;
	}
	return PROBE_MODE_NONE;
}

/* d->probe from the config: [probe] the default, and every type of
 * [registry] types with its own settings ([probe.TYPE] over [probe]). */
static int probe_options_from(struct daemon *d)
{
	d->probe_types = calloc(d->cfg.n_types ? d->cfg.n_types : 1, sizeof(*d->probe_types));
	if (!d->probe_types)
		return -ENOMEM;
	for (size_t i = 0; i < d->cfg.n_types; i++) {
		struct plugfs_probe_settings s;

		config_probe_settings(&d->cfg, d->cfg.types[i], &s);
		d->probe_types[i] = (struct probe_type_options){
		    .type = d->cfg.types[i],
		    .s = {.mode = probe_mode_of(s.mode),
			  .interval_ms = s.interval_ms,
			  .timeout_ms = s.timeout_ms,
			  .failures = s.failures},
		};
	}
	d->probe = (struct probe_options){
	    .mode = probe_mode_of(d->cfg.probe_mode),
	    .interval_ms = d->cfg.probe_interval_ms,
	    .timeout_ms = d->cfg.probe_timeout_ms,
	    .failures = d->cfg.probe_failures,
	    .types = d->probe_types,
	    .n_types = d->cfg.n_types,
	};
	return 0;
}

/* The control server's first probe of a registration, by its type. */
static void register_probe(const char *type, const struct reg_spec *spec, struct reg_runtime *out,
			   void *arg)
{
	probe_first(type, spec->socket, spec->probe, spec->csi_name, arg, out);
}

/* What `metrics' says of the filesystem and the probes (on the control
 * server's thread: counters read atomically, nothing blocks). */
static void daemon_metrics(struct metrics *m, void *arg)
{
	struct daemon *d = arg;
	const char *names[FS_N_COUNTED_ERRNOS + 1];
	unsigned long long counts[FS_N_COUNTED_ERRNOS + 1];
	size_t n = fs_error_counts(d->fs, names, counts, FS_N_COUNTED_ERRNOS + 1);
	struct probe_stats ps;

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

/*
 * SIGHUP and the control socket's `reload': applies what can change while
 * mounted, names what cannot.  0 with *info (NULL when out of memory)
 * {"config": the file read or "", "restart_needed": [settings], "applied":
 * [settings]}; -EINVAL with err naming the file, line and key when the new
 * config is refused, and then nothing changed.  Either thread may call it;
 * d->reload_lock makes one reload at a time.
 */
static int reload(struct daemon *d, json_t **info, char *err, size_t errlen)
{
	struct plugfs_config nc = {0};
	json_t *restart = NULL, *applied = json_array();
	const char *mp;
	struct timespec mono;
	char msg[64];
	int rc;

	*info = NULL;
	pthread_mutex_lock(&d->reload_lock);
	/* Type=notify-reload wants the monotonic time with RELOADING=1. */
	clock_gettime(CLOCK_MONOTONIC, &mono);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)mono.tv_sec * 1000000ull +
		     (unsigned long long)mono.tv_nsec / 1000ull);
	sd_notify_send(msg);
	rc = config_resolve(d->config_path, &nc, err, errlen);
	if (rc != 0) {
		log_error("reload failed, keeping the running config: %s", err);
		rc = -EINVAL;
		goto out;
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
	NEEDS_RESTART(nc.probe_mode != d->cfg.probe_mode, "[probe] mode");
	NEEDS_RESTART(nc.probe_interval_ms != d->cfg.probe_interval_ms, "[probe] interval");
	NEEDS_RESTART(nc.probe_timeout_ms != d->cfg.probe_timeout_ms, "[probe] timeout");
	NEEDS_RESTART(nc.probe_failures != d->cfg.probe_failures, "[probe] failures");
	for (size_t i = 0; i < nc.n_types; i++) {
		struct plugfs_probe_settings a, b;
		char what[REG_NAME_MAX + 16];

		config_probe_settings(&nc, nc.types[i], &a);
		config_probe_settings(&d->cfg, nc.types[i], &b);
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
static int reload_by_request(void *arg, json_t **info, char *err, size_t errlen)
{
	return reload(arg, info, err, errlen);
}

/* SIGHUP: what goes wrong is in the log only. */
static void reload_by_signal(struct daemon *d)
{
	char err[CONFIG_ERR_MAX];
	json_t *info = NULL;

	reload(d, &info, err, sizeof(err));
	json_decref(info);
}

static void expire_tombstones(struct daemon *d)
{
	char err[REG_ERR_MAX];
	int n = registry_expire_tombstones(d->reg, err, sizeof(err));

	if (n < 0)
		log_error("tombstone expiry failed: %s", err);
	else if (n > 0)
		log_info("expired %d tombstone(s)", n);
}

/*
 * SIGUSR2, the first half: no registry mutation may queue kernel
 * invalidations once the FUSE loop is gone (nobody would answer what they
 * wait on), so the control server stops first, keeping its listening
 * socket, and then the loop is asked to stop for the handover.  mount_main
 * does the rest when fs_run returns.
 */
static void handover_now(struct daemon *d);

static void request_handover(struct daemon *d)
{

	if (!__atomic_load_n(&d->ready, __ATOMIC_SEQ_CST) || !d->ctl) {
		log_warn("SIGUSR2 ignored: %s", d->ctl ? "the FUSE handshake is not answered yet"
						       : "a handover is under way");
		return;
	}
	log_info("SIGUSR2: handing the mount over to a re-executed plugfs");
	handover_now(d);
}

/*
 * --keep-mount and a stop signal: under systemd with the connection in the
 * file descriptor store, the process stops as for a re-exec (requests it
 * read are answered, the rest wait in the kernel, clients in the control
 * socket's backlog) and exits, leaving the mount for the next start or for
 * `plugfs stop-post' to detach.  Otherwise a plain stop (unmount).
 */
static void request_stop(struct daemon *d, int sig)
{
	if (!__atomic_load_n(&d->stored, __ATOMIC_SEQ_CST) ||
	    !__atomic_load_n(&d->ready, __ATOMIC_SEQ_CST) || !d->ctl) {
		fs_exit(d->fs);
		return;
	}
	log_info("%s: stopping; the mount stays in systemd's file descriptor store for the next "
		 "start",
		 strsignal(sig));
	__atomic_store_n(&d->stop_keeping, true, __ATOMIC_SEQ_CST);
	handover_now(d);
}

static void handover_now(struct daemon *d)
{
	int fd;

	fd = control_server_stop_keep_listener(d->ctl);
	__atomic_store_n(&d->ctl, NULL, __ATOMIC_SEQ_CST);
	__atomic_store_n(&d->kept_listen_fd, fd, __ATOMIC_SEQ_CST);
	if (fs_request_handover(d->fs) != 0)
		log_error("the FUSE connection cannot be handed over");
}

static long long ms_of(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* systemd's watchdog interval for this process ($WATCHDOG_USEC, when
 * $WATCHDOG_PID is unset or ours), in ms; 0 when there is none. */
static long long watchdog_ms(void)
{
	const char *us = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	long long v;

	if (!us || (pid && strtol(pid, NULL, 10) != (long)getpid()))
		return 0;
	v = strtoll(us, NULL, 10) / 1000;
	return v > 0 ? v : 0;
}

/*
 * WATCHDOG=1 only while the FUSE loop keeps up (fs_loop_progress): a loop
 * that leaves requests waiting and serves none is hung, and systemd's
 * watchdog then stops the daemon (WatchdogSec=); plugfs stop-post and the
 * next start take it from there.
 */
static void watchdog_ping(struct daemon *d)
{
	if (!__atomic_load_n(&d->ready, __ATOMIC_SEQ_CST) || !d->fs)
		return;
	if (fs_loop_progress(d->fs))
		sd_notify_send("WATCHDOG=1");
	else
		log_warn("watchdog: FUSE requests wait and none was served; not pinging systemd");
}

/* SIGHUP, SIGUSR2, systemd's watchdog and the hourly tombstone expiry,
 * until d->stopping. */
static void *house_main(void *arg)
{
	struct daemon *d = arg;
	struct timespec next, now, wait, ping;
	long long wd_ms = watchdog_ms();
	sigset_t hup;
	int sig;

	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	sigaddset(&hup, SIGUSR2);
	if (d->keep_mount) {
		/* Blocked in every thread: taken here, not by the loop. */
		sigaddset(&hup, SIGTERM);
		sigaddset(&hup, SIGINT);
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	ping = next;
	while (!__atomic_load_n(&d->stopping, __ATOMIC_SEQ_CST)) {
		long long now_ms, next_ms, ping_ms;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec >= next.tv_sec) {
			expire_tombstones(d);
			next.tv_sec = now.tv_sec + EXPIRY_INTERVAL_S;
		}
		now_ms = ms_of(&now);
		next_ms = ms_of(&next);
		if (wd_ms > 0) {
			ping_ms = ms_of(&ping);
			if (now_ms >= ping_ms) {
				watchdog_ping(d);
				ping_ms = now_ms + wd_ms / 3;
				ping.tv_sec = ping_ms / 1000;
				ping.tv_nsec = (ping_ms % 1000) * 1000000L;
			}
			if (ping_ms < next_ms)
				next_ms = ping_ms;
		}
		wait.tv_sec = (next_ms - now_ms) / 1000;
		wait.tv_nsec = ((next_ms - now_ms) % 1000) * 1000000L;
		sig = sigtimedwait(&hup, NULL, &wait);
		if (__atomic_load_n(&d->stopping, __ATOMIC_SEQ_CST))
			break;
		if (sig == SIGHUP)
			reload_by_signal(d);
		else if (sig == SIGUSR2)
			request_handover(d);
		else if (sig == SIGTERM || sig == SIGINT)
			request_stop(d, sig);
	}
	return NULL;
}

static int house_start(struct daemon *d)
{
	sigset_t stop, old;
	int rc;

	/* SIGTERM and SIGINT go to the FUSE loop (the main thread). */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	rc = pthread_create(&d->house, NULL, house_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		d->house_started = true;
	return -rc;
}

static void house_stop(struct daemon *d)
{
	if (!d->house_started)
		return;
	__atomic_store_n(&d->stopping, true, __ATOMIC_SEQ_CST);
	pthread_kill(d->house, SIGHUP);
	pthread_join(d->house, NULL);
	d->house_started = false;
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
	if (probe_options_from(&d) != 0) {
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
	    .probe = probe_enabled(&d.probe) ? register_probe : NULL,
	    .probe_arg = &d.probe,
	    .reload = reload_by_request,
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

	if (house_start(&d) != 0) {
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
	house_stop(&d);
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
	house_stop(&d);
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
