/* SPDX-License-Identifier: MIT */
/* plugfs deregister: removes one registration, or every one of an alloc. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "cliutil.h"
#include "ctlcli.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: plugfs deregister --type T --name N --alloc A [-c FILE]\n"
		   "       plugfs deregister --alloc A [-c FILE]\n\n"
		   "Removes the registration of allocation A from plugin T/N, or with --alloc\n"
		   "alone every registration of A under every type, in one transaction.\n"
		   "Removing what is not registered succeeds and changes nothing.\n\n"
		   "  -t, --type T      plugin type\n"
		   "  -n, --name N      plugin name\n"
		   "  -a, --alloc A     allocation id (required)\n"
		   "  -c FILE           config file (for control.socket)\n\n"
		   "Exit codes: 0 done, 1 rejected, 2 usage error, 3 daemon unreachable.\n");
}

int deregister_main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"type", required_argument, NULL, 't'},
	    {"name", required_argument, NULL, 'n'},
	    {"alloc", required_argument, NULL, 'a'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct plugfs_config cfg;
	const char *cfgpath = NULL, *type = NULL, *name = NULL, *alloc = NULL;
	json_t *req = NULL, *resp = NULL;
	json_int_t removed;
	bool have_cfg = false;
	int opt, rc = EXIT_USAGE;

	memset(&cfg, 0, sizeof(cfg));
	cli_getopt_reset();
	while ((opt = getopt_long(argc, argv, ":c:t:n:a:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cfgpath = optarg;
			break;
		case 't':
			type = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'a':
			alloc = optarg;
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
	if (!alloc) {
		rc = cli_usage_error(argv[0], "--alloc is required");
		goto out;
	}
	if (!type != !name) {
		rc = cli_usage_error(argv[0],
				     "--type and --name go together: give both (one registration) "
				     "or neither (every registration of the alloc)");
		goto out;
	}
	req = json_pack("{s:s, s:s}", "op", "deregister", "alloc", alloc);
	if (!req || (type && (json_object_set_new(req, "type", json_string(type)) ||
			      json_object_set_new(req, "name", json_string(name))))) {
		fprintf(stderr, "plugfs deregister: values must be UTF-8 text\n");
		goto out;
	}
	rc = cli_load_config(argv[0], cfgpath, &cfg);
	if (rc)
		goto out;
	have_cfg = true;
	rc = ctlcli_call(argv[0], &cfg, req, &resp, -1);
	if (rc)
		goto out;
	removed = json_integer_value(json_object_get(resp, "removed"));
	if (type)
		printf("%s/%s: %s %s\n", type, name, alloc,
		       removed ? "deregistered" : "was not registered (nothing changed)");
	else
		printf("%s: %lld registration%s removed\n", alloc, (long long)removed,
		       removed == 1 ? "" : "s");
out:
	json_decref(resp);
	json_decref(req);
	if (have_cfg)
		config_free(&cfg);
	return cli_finish_output(argv[0], rc);
}
