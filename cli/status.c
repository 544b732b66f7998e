/* SPDX-License-Identifier: MIT */
/* plugfs status: what the daemon serves and how much. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "cliutil.h"
#include "ctlcli.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: plugfs status [--json] [-c FILE]\n\n"
		   "Asks the running daemon for its version, mountpoint, state file, uptime\n"
		   "and the number of plugins, registrations and control clients.\n\n"
		   "      --json     JSON output\n"
		   "  -c FILE        config file (for control.socket)\n\n"
		   "Exit codes: 0 running, 1 failed, 2 usage error, 3 daemon unreachable.\n");
}

static long long num(json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

int status_main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct plugfs_config cfg;
	const char *cfgpath = NULL;
	json_t *req = NULL, *resp = NULL;
	bool json = false, have_cfg = false;
	int opt, rc = EXIT_USAGE;
	long long up;

	memset(&cfg, 0, sizeof(cfg));
	cli_getopt_reset();
	while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cfgpath = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			rc = EXIT_OK;
			goto out;
		default:
			rc = cli_option_error(argv[0], opt, argv);
			goto out;
		}
	}
	if (optind < argc) {
		rc = cli_usage_error(argv[0], "unexpected argument `%s'", argv[optind]);
		goto out;
	}
	req = json_pack("{s:s}", "op", "status");
	rc = cli_load_config(argv[0], cfgpath, &cfg);
	if (rc)
		goto out;
	have_cfg = true;
	rc = ctlcli_call(argv[0], &cfg, req, &resp, 30000);
	if (rc)
		goto out;
	json_object_del(resp, "ok");
	if (json) {
		ctlcli_print_json(resp);
		goto out;
	}
	up = num(resp, "uptime");
	printf("plugfs %s (pid %lld): running\n", str(resp, "version"), num(resp, "pid"));
	printf("  mountpoint:     %s\n", str(resp, "mountpoint"));
	printf("  state file:     %s\n", str(resp, "state"));
	printf("  control socket: %s\n", str(resp, "socket"));
	printf("  started:        %s (up %lldd %02lld:%02lld:%02lld)\n", str(resp, "started_at"),
	       up / 86400, up / 3600 % 24, up / 60 % 60, up % 60);
	printf("  plugins:        %lld\n", num(resp, "plugins"));
	printf("  registrations:  %lld\n", num(resp, "registrations"));
	printf("  clients:        %lld (%lld watching)\n", num(resp, "clients"),
	       num(resp, "watchers"));
out:
	json_decref(resp);
	json_decref(req);
	if (have_cfg)
		config_free(&cfg);
	return cli_finish_output(argv[0], rc);
}
