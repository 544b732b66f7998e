/* SPDX-License-Identifier: MIT */
/* plugfs register: registers one allocation under one or more types. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "cliutil.h"
#include "ctlcli.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: plugfs register --type T [--type T2] --name N --alloc A --socket PATH\n"
	    "                       [--version V] [--kind controller|node|monolith]\n"
	    "                       [--option KEY=VALUE]... [-c FILE]\n\n"
	    "Registers allocation A of plugin N under each type, in one transaction.\n"
	    "Registering an alloc already in the list updates it in place; a new alloc\n"
	    "becomes the active one.  Prints the plugin(s) as they are afterwards.\n\n"
	    "  -t, --type T        plugin type (repeat for a monolith: csi-controller, csi-node)\n"
	    "  -n, --name N        plugin name\n"
	    "  -a, --alloc A       allocation id\n"
	    "  -s, --socket PATH   absolute path of the allocation's socket\n"
	    "  -V, --version V     plugin version (optional)\n"
	    "  -k, --kind KIND     controller, node or monolith (default: from the type)\n"
	    "  -o, --option K=V    an option, repeatable\n"
	    "  -c FILE             config file (for control.socket)\n\n"
	    "Exit codes: 0 registered, 1 rejected, 2 usage error, 3 daemon unreachable.\n");
}

int register_main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"type", required_argument, NULL, 't'},
	    {"name", required_argument, NULL, 'n'},
	    {"alloc", required_argument, NULL, 'a'},
	    {"socket", required_argument, NULL, 's'},
	    {"version", required_argument, NULL, 'V'},
	    {"kind", required_argument, NULL, 'k'},
	    {"option", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct plugfs_config cfg;
	const char *cfgpath = NULL, *name = NULL, *alloc = NULL, *sock = NULL;
	const char *version = NULL, *kind = NULL;
	json_t *req = NULL, *types = json_array(), *options = json_object(), *resp = NULL, *p;
	size_t i;
	bool have_cfg = false;
	int opt, rc = EXIT_USAGE;

	memset(&cfg, 0, sizeof(cfg));
	if (!types || !options) {
		rc = EXIT_FAILED;
		goto out;
	}
	cli_getopt_reset();
	while ((opt = getopt_long(argc, argv, ":c:t:n:a:s:V:k:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cfgpath = optarg;
			break;
		case 't':
			/* json_string() refuses text that is not UTF-8. */
			if (json_array_append_new(types, json_string(optarg))) {
				fprintf(stderr, "plugfs register: --type must be UTF-8 text\n");
				goto out;
			}
			break;
		case 'n':
			name = optarg;
			break;
		case 'a':
			alloc = optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'V':
			version = optarg;
			break;
		case 'k':
			kind = optarg;
			break;
		case 'o': {
			const char *eq = strchr(optarg, '=');
			char *key;

			if (!eq) {
				fprintf(stderr,
					"plugfs register: --option `%s' must be KEY=VALUE (no `=' "
					"found)\n",
					optarg);
				goto out;
			}
			key = strndup(optarg, (size_t)(eq - optarg));
			if (!key) {
				rc = EXIT_FAILED;
				goto out;
			}
			if (json_object_get(options, key)) {
				fprintf(stderr, "plugfs register: --option `%s' is given twice\n",
					key);
				free(key);
				goto out;
			}
			if (json_object_set_new(options, key, json_string(eq + 1))) {
				fprintf(stderr,
					"plugfs register: --option `%s' must be UTF-8 text\n",
					optarg);
				free(key);
				goto out;
			}
			free(key);
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
	if (optind < argc) {
		rc = cli_usage_error(argv[0], "unexpected argument `%s'", argv[optind]);
		goto out;
	}
	if (json_array_size(types) == 0 || !name || !alloc || !sock) {
		rc = cli_usage_error(argv[0], "%s is required",
				     json_array_size(types) == 0 ? "--type"
				     : !name			 ? "--name"
				     : !alloc			 ? "--alloc"
								 : "--socket");
		goto out;
	}
	req = json_pack("{s:s, s:O, s:s?, s:s?, s:s?}", "op", "register", "types", types, "name",
			name, "alloc", alloc, "socket", sock);
	if (!req || !json_string_value(json_object_get(req, "name")) ||
	    !json_string_value(json_object_get(req, "alloc")) ||
	    !json_string_value(json_object_get(req, "socket")) ||
	    (version && json_object_set_new(req, "version", json_string(version))) ||
	    (kind && json_object_set_new(req, "kind", json_string(kind))) ||
	    json_object_set(req, "options", options)) {
		fprintf(stderr, "plugfs register: values must be UTF-8 text\n");
		goto out;
	}
	rc = cli_load_config(argv[0], cfgpath, &cfg);
	if (rc)
		goto out;
	have_cfg = true;
	rc = ctlcli_call(argv[0], &cfg, req, &resp, -1);
	if (rc)
		goto out;
	json_array_foreach(json_object_get(resp, "plugins"), i, p) printf(
	    "%s/%s: registered %s, active %s\n", json_string_value(json_object_get(p, "type")),
	    json_string_value(json_object_get(p, "name")), alloc,
	    json_string_value(json_object_get(p, "active")));
	rc = EXIT_OK;
out:
	json_decref(resp);
	json_decref(req);
	json_decref(types);
	json_decref(options);
	if (have_cfg)
		config_free(&cfg);
	return cli_finish_output(argv[0], rc);
}
