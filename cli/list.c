/* SPDX-License-Identifier: MIT */
/* plugfs list: one row per plugin. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "cliutil.h"
#include "ctlcli.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: plugfs list [--type T] [--json] [-c FILE]\n\n"
		   "Lists the registered plugins, one row each: type, name, the active alloc,\n"
		   "its socket and the number of registrations.  --json prints the same shape\n"
		   "as `plugfs state dump --json': {\"plugins\":[...]}.\n\n"
		   "  -t, --type T   only plugins of this type\n"
		   "      --json     JSON output\n"
		   "  -c FILE        config file (for control.socket)\n\n"
		   "Exit codes: 0 listed, 1 rejected, 2 usage error, 3 daemon unreachable.\n");
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

int list_main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"type", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct plugfs_config cfg;
	const char *cfgpath = NULL, *type = NULL;
	json_t *req = NULL, *resp = NULL, *plugins, *p;
	bool json = false, have_cfg = false;
	int opt, rc = EXIT_USAGE, wtype = 4, wname = 4, walloc = 6;
	size_t i;

	memset(&cfg, 0, sizeof(cfg));
	cli_getopt_reset();
	while ((opt = getopt_long(argc, argv, ":c:t:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cfgpath = optarg;
			break;
		case 't':
			type = optarg;
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
	req = json_pack("{s:s}", "op", "list");
	if (!req || (type && json_object_set_new(req, "type", json_string(type)))) {
		fprintf(stderr, "plugfs list: --type must be UTF-8 text\n");
		goto out;
	}
	rc = cli_load_config(argv[0], cfgpath, &cfg);
	if (rc)
		goto out;
	have_cfg = true;
	rc = ctlcli_call(argv[0], &cfg, req, &resp, -1);
	if (rc)
		goto out;
	plugins = json_object_get(resp, "plugins");
	if (json) {
		json_t *snap = json_pack("{s:O}", "plugins", plugins);

		ctlcli_print_json(snap);
		json_decref(snap);
		goto out;
	}
	json_array_foreach(plugins, i, p)
	{
		int n;

		if ((n = (int)strlen(str(p, "type"))) > wtype)
			wtype = n;
		if ((n = (int)strlen(str(p, "name"))) > wname)
			wname = n;
		if ((n = (int)strlen(str(p, "active"))) > walloc)
			walloc = n;
	}
	printf("%-*s  %-*s  %-*s  %-6s  %s\n", wtype, "TYPE", wname, "NAME", walloc, "ACTIVE",
	       "ALLOCS", "SOCKET");
	json_array_foreach(plugins, i, p)
	{
		json_t *regs = json_object_get(p, "registrations");

		printf("%-*s  %-*s  %-*s  %-6zu  %s\n", wtype, str(p, "type"), wname,
		       str(p, "name"), walloc, str(p, "active"), json_array_size(regs),
		       str(json_array_get(regs, 0), "socket"));
	}
out:
	json_decref(resp);
	json_decref(req);
	if (have_cfg)
		config_free(&cfg);
	return cli_finish_output(argv[0], rc);
}
