/* SPDX-License-Identifier: MIT */
/* plugfs watch: prints registry events as they are committed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "control.h"
#include "cliutil.h"
#include "ctlcli.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: plugfs watch [--type T]... [--json] [-c FILE]\n\n"
		   "Prints one line per registry event, in commit order, until interrupted:\n"
		   "registered, updated, deregistered (with the alloc and its socket) and\n"
		   "active (old alloc -> new alloc, `-' for none).  --json prints each event\n"
		   "as the protocol sends it (docs/protocol.md), one JSON object per line.\n\n"
		   "  -t, --type T   only events of this type (repeatable)\n"
		   "      --json     JSON output\n"
		   "  -c FILE        config file (for control.socket)\n\n"
		   "Exit codes: 1 rejected, 2 usage error, 3 daemon unreachable or gone.\n");
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

static void print_event(json_t *ev, bool json)
{
	const char *what = str(ev, "event");

	if (json) {
		char *s = json_dumps(ev, JSON_COMPACT);

		if (s)
			printf("%s\n", s);
		free(s);
	} else if (strcmp(what, "active") == 0) {
		printf("%s %-12s %s/%s %s -> %s %s\n", str(ev, "time"), what, str(ev, "type"),
		       str(ev, "name"), str(ev, "old_alloc"), str(ev, "new_alloc"),
		       str(ev, "socket"));
	} else {
		printf("%s %-12s %s/%s %s %s\n", str(ev, "time"), what, str(ev, "type"),
		       str(ev, "name"), str(ev, "alloc"),
		       str(json_object_get(ev, "registration"), "socket"));
	}
	fflush(stdout);
}

int watch_main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"type", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct plugfs_config cfg;
	const char *cfgpath = NULL;
	json_t *req = NULL, *resp = NULL, *types = json_array();
	bool json = false, have_cfg = false;
	char err[512] = "";
	int opt, rc = EXIT_USAGE, fd = -1;

	memset(&cfg, 0, sizeof(cfg));
	cli_getopt_reset();
	while ((opt = getopt_long(argc, argv, ":c:t:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cfgpath = optarg;
			break;
		case 't':
			if (json_array_append_new(types, json_string(optarg))) {
				fprintf(stderr, "plugfs watch: --type must be UTF-8 text\n");
				goto out;
			}
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
	req = json_pack("{s:s}", "op", "watch");
	if (!req || (json_array_size(types) && json_object_set(req, "types", types))) {
		rc = EXIT_FAILED;
		goto out;
	}
	rc = cli_load_config(argv[0], cfgpath, &cfg);
	if (rc)
		goto out;
	have_cfg = true;
	rc = EXIT_UNREACHABLE;
	if (control_connect(cfg.control_socket, &fd, err, sizeof(err)) ||
	    control_exchange(fd, req, &resp, -1, err, sizeof(err))) {
		fprintf(stderr, "plugfs watch: %s\n", err);
		goto out;
	}
	if (control_response_error(resp, NULL)) {
		rc = ctlcli_print_error(argv[0], resp);
		goto out;
	}
	for (;;) {
		json_t *ev = NULL;

		if (control_recv(fd, &ev, -1, err, sizeof(err))) {
			fprintf(stderr, "plugfs watch: %s (socket %s)\n", err, cfg.control_socket);
			goto out;
		}
		if (json_object_get(ev, "ok")) {
			/* The daemon ends the stream with an error (e.g. lost events). */
			rc = ctlcli_print_error(argv[0], ev);
			json_decref(ev);
			goto out;
		}
		print_event(ev, json);
		json_decref(ev);
	}
out:
	if (fd >= 0)
		close(fd);
	json_decref(resp);
	json_decref(req);
	json_decref(types);
	if (have_cfg)
		config_free(&cfg);
	return cli_finish_output(argv[0], rc);
}
