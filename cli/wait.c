/* SPDX-License-Identifier: MIT */
/* plugfs wait: returns once a plugin has an active registration. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "cliutil.h"
#include "ctlcli.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: plugfs wait TYPE NAME [--timeout SECONDS] [-c FILE]\n\n"
		   "Waits until plugin NAME of TYPE has an active registration, then prints\n"
		   "its active alloc and socket.  Returns at once when it already has one.\n"
		   "Without --timeout it waits without limit.\n\n"
		   "  -t, --timeout S   give up after S seconds (0 = only check; decimals ok)\n"
		   "  -c FILE           config file (for control.socket)\n\n"
		   "Exit codes: 0 registered, 1 timed out or rejected, 2 usage error,\n"
		   "3 daemon unreachable.\n");
}

int wait_main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct plugfs_config cfg;
	const char *cfgpath = NULL;
	json_t *req = NULL, *resp = NULL, *plugin, *active;
	bool have_cfg = false, have_timeout = false;
	double timeout = 0;
	int opt, rc = EXIT_USAGE, recv_ms = -1;

	memset(&cfg, 0, sizeof(cfg));
	cli_getopt_reset();
	while ((opt = getopt_long(argc, argv, ":c:t:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cfgpath = optarg;
			break;
		case 't': {
			char *end = NULL;

			errno = 0;
			timeout = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(timeout)) {
				fprintf(stderr,
					"plugfs wait: --timeout `%s' must be a number of seconds\n",
					optarg);
				goto out;
			}
			have_timeout = true;
			break;
		}
		case 'h':
			usage(stdout);
			rc = EXIT_OK;
			goto out;
		default:
			rc = cli_option_error(argv[0], opt, argv);
			goto out;
		}
	}
	rc = ctlcli_plugin_request(argv[0], argc - optind, argv + optind, &req);
	if (rc)
		goto out;
	/* The daemon checks the range; it answers when the timeout passes. */
	if (have_timeout) {
		json_object_set_new(req, "timeout", json_real(timeout));
		if (timeout >= 0 && timeout < 1e6)
			recv_ms = (int)(timeout * 1000) + 10000;
	}
	rc = cli_load_config(argv[0], cfgpath, &cfg);
	if (rc)
		goto out;
	have_cfg = true;
	rc = ctlcli_call(argv[0], &cfg, req, &resp, recv_ms);
	if (rc)
		goto out;
	plugin = json_object_get(resp, "plugin");
	active = json_array_get(json_object_get(plugin, "registrations"), 0);
	printf("%s/%s: active %s (%s)\n", argv[optind], argv[optind + 1],
	       json_string_value(json_object_get(plugin, "active")),
	       json_string_value(json_object_get(active, "socket")));
out:
	json_decref(resp);
	json_decref(req);
	if (have_cfg)
		config_free(&cfg);
	return cli_finish_output(argv[0], rc);
}
