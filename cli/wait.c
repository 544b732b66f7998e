/* SPDX-License-Identifier: MIT */
/* plugfs wait: returns once a plugin has an active registration (or a given
 * alloc is the active one). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "ctlcli.h"

struct wait {
	bool have_timeout;
	double timeout;	   /* --timeout, in seconds */
	const char *alloc; /* --alloc, or NULL */
};

static int wait_option(void *st, int c, char *arg)
{
	struct wait *w = st;
	char *end = NULL;

	if (c == 'a') {
		w->alloc = arg; /* the daemon validates it */
		return EXIT_OK;
	}
	/* --timeout */
	errno = 0;
	w->timeout = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(w->timeout)) {
		cli_error("wait", "--timeout `%s' must be a number of seconds", arg);
		return EXIT_USAGE;
	}
	w->have_timeout = true;
	return EXIT_OK;
}

static int wait_request(void *st, const struct cli_args *args, json_t **req, int *timeout_ms)
{
	const struct wait *w = st;
	int rc = ctlcli_plugin_request("wait", args->argc, args->argv, req);

	/* The daemon checks the range; it answers when the timeout passes. */
	if (rc == EXIT_OK && w->alloc)
		json_object_set_new(*req, "alloc", json_string(w->alloc));
	if (rc == EXIT_OK && w->have_timeout) {
		json_object_set_new(*req, "timeout", json_real(w->timeout));
		if (w->timeout >= 0 && w->timeout < 1e6)
			*timeout_ms = (int)(w->timeout * 1000) + 10000;
	}
	return rc;
}

/* With --timeout, the daemon may come up within it (a hook that runs while
 * plugfs starts); without, a daemon that is not there is an error at once. */
static int wait_connect_wait_ms(void *st)
{
	const struct wait *w = st;

	/* Out of the daemon's range (0-86400 s): one try, it says why. */
	if (!w->have_timeout || !(w->timeout > 0) || w->timeout > 86400)
		return 0;
	return (int)(w->timeout * 1000);
}

/* What the daemon waits is what is left of --timeout after connecting. */
static void wait_connected(void *st, json_t *req, long waited_ms, int *timeout_ms)
{
	const struct wait *w = st;
	double left;

	if (!w->have_timeout || !(w->timeout > 0) || waited_ms <= 0)
		return;
	left = w->timeout - waited_ms / 1000.0;
	if (left < 0)
		left = 0;
	json_object_set_new(req, "timeout", json_real(left));
	if (left < 1e6)
		*timeout_ms = (int)(left * 1000) + 10000;
}

static int wait_print(void *st, const struct cli_args *args, json_t *resp,
		      const struct ctlcli_conn *conn)
{
	json_t *plugin = json_object_get(resp, "plugin");
	json_t *active = json_array_get(json_object_get(plugin, "registrations"), 0);

	printf("%s/%s: active %s (%s)\n", args->argv[0], args->argv[1],
	       json_string_value(json_object_get(plugin, "active")),
	       json_string_value(json_object_get(active, "socket")));
	return EXIT_OK;
}

static const struct option wait_longopts[] = {
    {"timeout", required_argument, NULL, 't'},
    {"alloc", required_argument, NULL, 'a'},
    {NULL, 0, NULL, 0},
};

static const struct ctlcli_verb wait_verb = {
    .cli =
	{
	    .name = "wait",
	    .usage = "Usage: plugfs wait TYPE NAME [--alloc ID] [--timeout SECONDS] [-c FILE]\n\n"
		     "Waits until plugin NAME of TYPE has an active registration, then prints\n"
		     "its active alloc and socket.  Returns at once when it already has one.\n"
		     "With --alloc, waits until alloc ID is the active one: registered, and\n"
		     "with probing on, its socket found alive (a hook that registered an\n"
		     "allocation waits so until csi.sock leads to it).  Without --timeout it\n"
		     "waits without limit.  With --timeout it also waits for the daemon\n"
		     "within it: while the control socket is missing or refuses (plugfs is\n"
		     "starting), it tries again every 150 ms; without, a daemon that is not\n"
		     "there is exit 3 at once.\n\n"
		     "  -a, --alloc ID    wait until ID is the active registration\n"
		     "  -t, --timeout S   give up after S seconds (0 = only check; decimals ok)\n"
		     "  -c FILE           config file (for control.socket)\n\n"
		     "Exit codes: 0 registered, 1 timed out or rejected, 2 usage error,\n"
		     "3 daemon unreachable.\n",
	    .shortopts = "t:a:",
	    .longopts = wait_longopts,
	    .n_operands = CLI_OPERANDS_ANY, /* TYPE NAME: ctlcli_plugin_request */
	    .option = wait_option,
	},
    .request = wait_request,
    .print = wait_print,
    .connect_wait_ms = wait_connect_wait_ms,
    .connected = wait_connected,
};

int wait_main(int argc, char *argv[])
{
	struct wait w = {0};

	return ctlcli_run(&wait_verb, &w, argc, argv);
}
