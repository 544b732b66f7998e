/* SPDX-License-Identifier: MIT */
/*
 * plugfs mount: the daemon's command line.  Parses it, then starts, runs and
 * stops the daemon (daemon/include/daemon.h) and says why a start failed.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cliutil.h"
#include "commands.h"
#include "daemon.h"

#define CMD "mount"

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

static int mount_option(void *st, int c, char *arg)
{
	struct daemon_args *a = st;

	if (c == 'm')
		a->mountpoint = arg;
	else if (c == 'k')
		a->keep_mount = true;
	else
		a->debug = true;
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
	struct daemon_args a = {0};
	struct cli_args args = {0};
	struct daemon *d = NULL;
	char err[PLUGFS_DAEMON_ERR_MAX];
	int rc;

	rc = cli_parse(&mount_verb, &a, argc, argv, &args);
	if (rc != CLI_RUN)
		return cli_finish_output(CMD, rc);
	a.config_path = args.config;
	do {
		/* Again after a re-exec that found nothing to execute: the
		 * mount is resumed in this process. */
		if (daemon_start(&a, &d, err, sizeof(err)) != 0) {
			cli_error(CMD, "%s", err);
			return EXIT_FAILED;
		}
		rc = daemon_stop(d, daemon_run(d));
	} while (rc == DAEMON_RESUME);
	return rc == 0 ? EXIT_OK : EXIT_FAILED;
}
