/* SPDX-License-Identifier: MIT */
/*
 * plugfs stop-post: the unit's ExecStopPost=.  After `plugfs mount
 * --keep-mount' stopped, decides what becomes of the mount it left:
 *
 *   $SERVICE_RESULT       a restart job runs   what stop-post does
 *   success (or unset)    yes                  keeps it: the next start resumes it
 *   success (or unset)    no                   a stop: detaches it
 *   exit-code, signal,    -                    keeps it: Restart= follows and
 *   core-dump, watchdog                        resumes it (a crash is a stall;
 *                                              a hung daemon killed by the
 *                                              watchdog is replaced, and the
 *                                              requests it held are resent)
 *   timeout               -                    a daemon that could not be
 *                                              stopped: aborts its FUSE
 *                                              connection, detaches the mount;
 *                                              the next start mounts afresh
 *
 * "Keeps it" holds only for a mount whose connection is alive (in systemd's
 * file descriptor store): a dead one (ENOTCONN: no store, or a crash
 * before the handover) is detached in every case.
 *
 * ExecStopPost= also runs between the two halves of `systemctl restart':
 * systemd lists the restart job while it runs (`systemctl list-jobs').  The
 * mount is found in /proc/self/mountinfo and never touched itself.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliutil.h"
#include "commands.h"
#include "config.h"
#include "fs.h"

#define CMD "stop-post"

struct stoppost {
	const char *unit; /* --unit NAME or NULL */
};

static int stoppost_option(void *st, int c, char *arg)
{
	struct stoppost *sp = st;

	(void)c;
	for (const char *p = arg; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("@._:-\\", *p))
			return cli_usage_error(CMD, "--unit `%s': not a unit name", arg);
	sp->unit = arg;
	return EXIT_OK;
}

/* Whether systemd runs a restart job of unit right now. */
static bool restart_job_runs(const char *unit)
{
	char cmd[512], line[512];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "systemctl list-jobs --no-legend --plain '%s' 2>/dev/null",
		 unit);
	p = popen(cmd, "r");
	if (!p) {
		cli_error(CMD, "cannot run systemctl list-jobs: %m");
		return false;
	}
	/* "131 plugfs.service restart running" */
	while (fgets(line, sizeof(line), p)) {
		char name[256], type[64];

		if (sscanf(line, "%*u %255s %63s", name, type) == 2 && strcmp(name, unit) == 0 &&
		    strcmp(type, "restart") == 0)
			found = true;
	}
	pclose(p);
	return found;
}

static const struct option stoppost_longopts[] = {
    {"unit", required_argument, NULL, 'u'},
    {NULL, 0, NULL, 0},
};

static const struct cli_verb stoppost_verb = {
    .name = CMD,
    .usage = "Usage: plugfs stop-post [--unit NAME] [-c FILE]\n"
	     "\n"
	     "Run by systemd after the daemon stopped and left its mount (the unit's\n"
	     "ExecStopPost=).  Reads $SERVICE_RESULT: after a clean stop it detaches the\n"
	     "mount unless a restart job of unit NAME runs (then the next start resumes\n"
	     "it); after a crash or a watchdog kill (exit-code, signal, core-dump,\n"
	     "watchdog) it keeps the mount for the restart, which resumes it; after a\n"
	     "timeout (a daemon that could not be stopped) it aborts the mount's FUSE\n"
	     "connection and detaches it, so that the next start mounts afresh.  A\n"
	     "mount whose connection is gone is detached in every case.\n"
	     "\n"
	     "  --unit NAME   the service's unit name (%n), to see a restart job\n"
	     "  -c FILE       config file (for [mount] mountpoint)\n"
	     "\n"
	     "Exit codes: 0 done (also when nothing was mounted), 1 failed, 2 usage error.\n",
    .longopts = stoppost_longopts,
    .option = stoppost_option,
};

int stoppost_main(int argc, char *argv[])
{
	struct stoppost sp = {0};
	struct cli_args args = {0};
	struct plugfs_config cfg;
	const char *result = getenv("SERVICE_RESULT");
	char err[512] = "";
	enum fs_release how = FS_RELEASE;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	rc = cli_parse(&stoppost_verb, &sp, argc, argv, &args);
	if (rc != CLI_RUN)
		return cli_finish_output(CMD, rc);
	if (cli_load_config(CMD, args.config, &cfg) != EXIT_OK)
		return EXIT_FAILED;
	if (!result || !result[0] || strcmp(result, "success") == 0) {
		if (sp.unit && restart_job_runs(sp.unit)) {
			printf("plugfs stop-post: %s restarts: %s stays for it\n", sp.unit,
			       cfg.mountpoint);
			how = FS_RELEASE_IF_DEAD;
		}
	} else if (strcmp(result, "timeout") == 0) {
		how = FS_RELEASE_ABORT;
	} else {
		printf("plugfs stop-post: the daemon failed (%s): %s stays for the restart\n",
		       result, cfg.mountpoint);
		how = FS_RELEASE_IF_DEAD;
	}
	rc = fs_release_mount(cfg.mountpoint, how, err, sizeof(err));
	if (rc < 0) {
		cli_error(CMD, "%s", err);
		rc = EXIT_FAILED;
		goto out;
	}
	if (rc == 1)
		printf("plugfs stop-post: %s %s\n",
		       how == FS_RELEASE_ABORT ? "aborted and detached"
		       : how == FS_RELEASE     ? "detached"
					       : "detached the dead mount at",
		       cfg.mountpoint);
	rc = EXIT_OK;
out:
	config_free(&cfg);
	return cli_finish_output(CMD, rc);
}
