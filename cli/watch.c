/* SPDX-License-Identifier: MIT */
/* plugfs watch: prints registry events as they are committed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "ctlcli.h"

struct watch {
	json_t *types; /* the --type values, an array */
};

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
	} else if (strcmp(what, "health") == 0) {
		printf("%s %-12s %s/%s %s %s -> %s%s%s%s\n", str(ev, "time"), what, str(ev, "type"),
		       str(ev, "name"), str(ev, "alloc"), str(ev, "old"), str(ev, "new"),
		       json_string_value(json_object_get(ev, "error")) ? " (" : "",
		       json_string_value(json_object_get(ev, "error"))
			   ? json_string_value(json_object_get(ev, "error"))
			   : "",
		       json_string_value(json_object_get(ev, "error")) ? ")" : "");
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

static int watch_option(void *st, int c, char *arg)
{
	struct watch *w = st;

	/* --type; json_string() refuses text that is not UTF-8. */
	if (json_array_append_new(w->types, json_string(arg))) {
		cli_error("watch", "--type must be UTF-8 text");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int watch_request(void *st, const struct cli_args *args, json_t **req, int *timeout_ms)
{
	const struct watch *w = st;

	*req = json_pack("{s:s}", "op", "watch");
	if (!*req || (json_array_size(w->types) && json_object_set(*req, "types", w->types)))
		return EXIT_FAILED;
	return EXIT_OK;
}

/* The first answer only says the watch started: the events follow, until the
 * daemon ends the stream or goes away. */
static int watch_print(void *st, const struct cli_args *args, json_t *resp,
		       const struct ctlcli_conn *conn)
{
	char err[512] = "";

	for (;;) {
		json_t *ev = NULL;
		int rc;

		if (control_recv(conn->fd, &ev, -1, err, sizeof(err))) {
			cli_error(conn->cmd, "%s (socket %s)", err, conn->socket);
			return EXIT_UNREACHABLE;
		}
		if (json_object_get(ev, "ok")) {
			/* The daemon ends the stream with an error (e.g. lost events). */
			rc = ctlcli_print_error(conn->cmd, ev);
			json_decref(ev);
			return rc;
		}
		print_event(ev, args->json);
		json_decref(ev);
	}
}

static const struct option watch_longopts[] = {
    {"type", required_argument, NULL, 't'},
    {NULL, 0, NULL, 0},
};

static const struct ctlcli_verb watch_verb = {
    .cli =
	{
	    .name = "watch",
	    .usage = "Usage: plugfs watch [--type T]... [--json] [-c FILE]\n\n"
		     "Prints one line per registry event, in commit order, until interrupted:\n"
		     "registered, updated, deregistered (with the alloc and its socket) and\n"
		     "active (old alloc -> new alloc, `-' for none).  --json prints each event\n"
		     "as the protocol sends it (docs/protocol.md), one JSON object per line.\n\n"
		     "  -t, --type T   only events of this type (repeatable)\n"
		     "      --json     JSON output\n"
		     "  -c FILE        config file (for control.socket)\n\n"
		     "Exit codes: 1 rejected, 2 usage error, 3 daemon unreachable or gone.\n",
	    .shortopts = "t:",
	    .longopts = watch_longopts,
	    .json = true,
	    .option = watch_option,
	},
    .request = watch_request,
    .print = watch_print,
};

int watch_main(int argc, char *argv[])
{
	struct watch w = {.types = json_array()};
	int rc = ctlcli_run(&watch_verb, &w, argc, argv);

	json_decref(w.types);
	return rc;
}
