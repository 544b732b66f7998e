/* SPDX-License-Identifier: MIT */
/* plugfs status: what the daemon serves and how much. */
#include <stdio.h>

#include "commands.h"
#include "ctlcli.h"

static long long num(json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

static int status_request(void *st, const struct cli_args *args, json_t **req, int *timeout_ms)
{
	*req = json_pack("{s:s}", "op", "status");
	*timeout_ms = 30000;
	return EXIT_OK;
}

static int status_print(void *st, const struct cli_args *args, json_t *resp,
			const struct ctlcli_conn *conn)
{
	long long up;
	json_t *h;

	json_object_del(resp, "ok");
	if (args->json) {
		ctlcli_print_json(resp);
		return EXIT_OK;
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
	if ((h = json_object_get(resp, "health")))
		printf("  health:         %lld alive, %lld unknown, %lld dead; %lld plugin(s) with "
		       "none alive\n",
		       num(h, "alive"), num(h, "unknown"), num(h, "dead"), num(h, "none_alive"));
	else
		printf("  health:         not probed ([probe] mode = none)\n");
	printf("  clients:        %lld (%lld watching)\n", num(resp, "clients"),
	       num(resp, "watchers"));
	return EXIT_OK;
}

static const struct ctlcli_verb status_verb = {
    .cli =
	{
	    .name = "status",
	    .usage = "Usage: plugfs status [--json] [-c FILE]\n\n"
		     "Asks the running daemon for its version, mountpoint, state file, uptime\n"
		     "and the number of plugins, registrations and control clients.\n\n"
		     "      --json     JSON output\n"
		     "  -c FILE        config file (for control.socket)\n\n"
		     "Exit codes: 0 running, 1 failed, 2 usage error, 3 daemon unreachable.\n",
	    .json = true,
	},
    .request = status_request,
    .print = status_print,
};

int status_main(int argc, char *argv[])
{
	return ctlcli_run(&status_verb, NULL, argc, argv);
}
