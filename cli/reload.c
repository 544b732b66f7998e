/* SPDX-License-Identifier: MIT */
/* plugfs reload: has the running daemon read its config again, and says
 * whether the new one is in force. */
#include <stdio.h>
#include <string.h>

#include "cliutil.h"
#include "commands.h"
#include "control.h"
#include "ctlcli.h"

#define CMD "reload"

static const char usage[] =
    "Usage: plugfs reload [--json] [-c FILE]\n"
    "\n"
    "Asks the running daemon, over the control socket, to read its config file\n"
    "again (the one it was started with) and waits for the outcome.  A config the\n"
    "daemon refuses changes nothing: the error names the file, line and key, and\n"
    "the exit status is 1.  Settings that only a restart applies are named on\n"
    "standard error (the exit status is still 0).  The unit's ExecReload= runs\n"
    "this, so `systemctl reload plugfs' fails when the config is refused.\n"
    "\n"
    "The config is read here first, for [control] socket: when it cannot be read\n"
    "or is invalid, that is the error and the daemon is not asked.\n"
    "\n"
    "      --json     JSON output: the daemon's answer\n"
    "  -c FILE        config file (for control.socket)\n"
    "\n"
    "Exit codes: 0 reloaded, 1 refused or failed, 2 usage error, 3 daemon unreachable.\n";

static const struct cli_verb reload_verb = {
    .name = CMD,
    .usage = usage,
    .json = true,
};

/* The strings of the array a, joined with ", ", into buf. */
static void join(json_t *a, char *buf, size_t len)
{
	size_t i, used = 0;
	json_t *v;

	buf[0] = '\0';
	json_array_foreach(a, i, v)
	{
		int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
				 json_string_value(v) ? json_string_value(v) : "?");

		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

int reload_main(int argc, char *argv[])
{
	struct cli_args args = {0};
	struct plugfs_config cfg = {0};
	json_t *req = NULL, *resp = NULL, *restart, *applied;
	const char *source;
	char list[512];
	bool have_cfg = false;
	int rc;

	rc = cli_parse(&reload_verb, NULL, argc, argv, &args);
	if (rc != CLI_RUN)
		goto out;
	if (args.argc > 0) {
		rc = cli_usage_error(CMD, "unexpected argument `%s'", args.argv[0]);
		goto out;
	}
	rc = cli_load_config(CMD, args.config, &cfg);
	if (rc != EXIT_OK) {
		cli_error(CMD, "not reloaded: the daemon was not asked and keeps its config");
		goto out;
	}
	have_cfg = true;
	req = json_pack("{s:s}", "op", "reload");
	if (!req) {
		cli_error(CMD, "out of memory");
		rc = EXIT_FAILED;
		goto out;
	}
	rc = ctlcli_call(CMD, &cfg, req, &resp, 30000, NULL);
	if (rc != EXIT_OK)
		goto out;
	json_object_del(resp, "ok");
	if (args.json) {
		ctlcli_print_json(resp);
		goto out;
	}
	source = json_string_value(json_object_get(resp, "config"));
	printf("reloaded %s\n", source && source[0] ? source : "the built-in defaults");
	applied = json_object_get(resp, "applied");
	if (json_array_size(applied) > 0) {
		join(applied, list, sizeof(list));
		printf("  applied: %s\n", list);
	}
	restart = json_object_get(resp, "restart_needed");
	if (json_array_size(restart) > 0) {
		join(restart, list, sizeof(list));
		cli_error(CMD, "changed, applied only by a restart (systemctl restart plugfs): %s",
			  list);
	}
out:
	json_decref(req);
	json_decref(resp);
	if (have_cfg)
		config_free(&cfg);
	return cli_finish_output(CMD, rc);
}
