/* SPDX-License-Identifier: MIT */
/*
 * The plugfs daemon (`plugfs mount'): the part that wires every other part
 * together and owns their handles (config, registry, filesystem, control
 * server, prober, housekeeping thread).  Its life is three calls, all from
 * the program's main thread:
 *
 *   struct daemon *d;
 *   if (daemon_start(&args, &d, err, sizeof(err)) != 0) -> print err, exit 1
 *   rc = daemon_run(d);            -> serves until a stop or a handover
 *   rc = daemon_stop(d, rc);       -> stops every part; re-executes on a
 *                                     handover (and returns only if that
 *                                     fails: DAEMON_RESUME, start again)
 *
 * Signals: call daemon_start with nothing blocked; it blocks SIGHUP and
 * SIGUSR2 (the housekeeping thread takes them), and SIGTERM and SIGINT
 * until daemon_run's loop runs (a stop that comes while starting takes
 * effect then).  docs/design.md has the threads each part starts.
 */
#ifndef PLUGFS_DAEMON_H
#define PLUGFS_DAEMON_H

#include <stdbool.h>
#include <stddef.h>

/* What the command line says (cli/mount.c). */
struct daemon_args {
	const char *config_path; /* -c FILE, or NULL: $PLUGFS_CONFIG, then the default */
	const char *mountpoint;	 /* --mountpoint DIR over [mount] mountpoint, or NULL */
	bool keep_mount;	 /* --keep-mount */
	bool debug;		 /* --debug */
};

/* What daemon_run returns besides a failure (-errno). */
#define DAEMON_STOPPED 0  /* a stop signal: unmount (or keep the mount, --keep-mount) */
#define DAEMON_HANDOVER 1 /* SIGUSR2: re-execute keeping the mount */

/* Enough for any message daemon_start gives (a path of PATH_MAX bytes and
 * its reason). */
#define PLUGFS_DAEMON_ERR_MAX 8192

struct daemon;

/*
 * Loads the config and the state, probes every registration, mounts (or
 * resumes a handed-over connection) and starts the control server, the
 * prober and the housekeeping thread.  0 with *out set; -errno with err
 * filled (one line, naming what failed) and everything started undone.
 */
int daemon_start(const struct daemon_args *args, struct daemon **out, char *err, size_t errlen);

/* Serves the FUSE loop on this thread until a stop signal or a handover.
 * DAEMON_STOPPED, DAEMON_HANDOVER, or -EIO when the loop failed. */
int daemon_run(struct daemon *d);

/*
 * Stops every part in order (housekeeping, prober, control server,
 * filesystem, registry) and frees d.  run is what daemon_run returned:
 * after DAEMON_HANDOVER the binary on disk is executed with the mount's
 * descriptors (or, when it cannot run, the running program) and this returns
 * only when no program could be executed: DAEMON_RESUME, the descriptors
 * named in $PLUGFS_RESUME_FDS, and the caller calls daemon_start again to
 * resume the mount in this process.  Else the exit code: 0 after a clean
 * stop, 1 otherwise.
 */
#define DAEMON_RESUME 2
int daemon_stop(struct daemon *d, int run);

#endif
