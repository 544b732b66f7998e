/* SPDX-License-Identifier: MIT */
/* plugfs show: the registrations of one plugin, active first. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "cliutil.h"
#include "ctlcli.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: plugfs show TYPE NAME [--json] [-c FILE]\n\n"
		   "Shows the registrations of plugin NAME of TYPE in list order, the active\n"
		   "one first.  --json prints the plugin in the shape of `plugfs state dump\n"
		   "--json': {\"type\",\"name\",\"active\",\"registrations\":[...]}.\n\n"
		   "      --json     JSON output\n"
		   "  -c FILE        config file (for control.socket)\n\n"
		   "Exit codes: 0 shown, 1 not registered or rejected, 2 usage error,\n"
		   "3 daemon unreachable.\n");
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s && s[0] ? s : "-";
}

/* Whether registration r is the one the plugin's "active" names. */
static bool is_active(json_t *plugin, json_t *r)
{
	const char *active = json_string_value(json_object_get(plugin, "active"));
	const char *alloc = json_string_value(json_object_get(r, "alloc"));

	return active && alloc && strcmp(active, alloc) == 0;
}

int show_main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct plugfs_config cfg;
	const char *cfgpath = NULL;
	json_t *req = NULL, *resp = NULL, *plugin, *r;
	bool json = false, have_cfg = false;
	int opt, rc = EXIT_USAGE;
	size_t i;

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
	rc = ctlcli_plugin_request(argv[0], argc - optind, argv + optind, &req);
	if (rc)
		goto out;
	rc = cli_load_config(argv[0], cfgpath, &cfg);
	if (rc)
		goto out;
	have_cfg = true;
	rc = ctlcli_call(argv[0], &cfg, req, &resp, -1);
	if (rc)
		goto out;
	plugin = json_object_get(resp, "plugin");
	if (json) {
		ctlcli_print_json(plugin);
		goto out;
	}
	printf("%s/%s: active %s\n", str(plugin, "type"), str(plugin, "name"),
	       str(plugin, "active"));
	json_array_foreach(json_object_get(plugin, "registrations"), i, r)
	{
		const char *key;
		json_t *v;

		printf("%s %s  seq %lld  %s  kind %s  version %s  registered %s  updated %s\n",
		       is_active(plugin, r) ? "*" : " ", str(r, "alloc"),
		       (long long)json_integer_value(json_object_get(r, "seq")), str(r, "socket"),
		       str(r, "kind"), str(r, "version"), str(r, "registered_at"),
		       str(r, "updated_at"));
		json_object_foreach(json_object_get(r, "options"), key, v)
		    printf("    option %s=%s\n", key, json_string_value(v));
	}
out:
	json_decref(resp);
	json_decref(req);
	if (have_cfg)
		config_free(&cfg);
	return cli_finish_output(argv[0], rc);
}
