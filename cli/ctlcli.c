/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliutil.h"
#include "commands.h"
#include "control.h"
#include "ctlcli.h"

int ctlcli_plugin_request(const char *cmd, int nargs, char *const args[], json_t **req)
{
	*req = NULL;
	if (nargs != 2)
		return cli_usage_error(cmd, "expected TYPE and NAME, got %d argument%s", nargs,
				       nargs == 1 ? "" : "s");
	*req = json_pack("{s:s, s:s, s:s}", "op", cmd, "type", args[0], "name", args[1]);
	if (!*req)
		return cli_usage_error(cmd, "TYPE and NAME must be UTF-8 text");
	return EXIT_OK;
}

int ctlcli_print_error(const char *cmd, json_t *resp)
{
	const char *code = NULL;
	const char *msg = control_response_error(resp, &code);

	cli_error(cmd, "%s: %s", code ? code : "internal", msg ? msg : "unexpected answer");
	return EXIT_FAILED;
}

int ctlcli_call(const char *cmd, const struct plugfs_config *cfg, json_t *req, json_t **resp,
		int timeout_ms)
{
	char err[512] = "";
	int rc;

	*resp = NULL;
	rc = control_call(cfg->control_socket, req, resp, timeout_ms, err, sizeof(err));
	if (rc == -ETIMEDOUT) {
		cli_error(cmd, "%s (socket %s)", err, cfg->control_socket);
		return EXIT_FAILED;
	}
	if (rc) {
		cli_error(cmd, "%s", err);
		if (!strstr(err, cfg->control_socket))
			cli_error(cmd, "control socket: %s", cfg->control_socket);
		return EXIT_UNREACHABLE;
	}
	if (control_response_error(*resp, NULL)) {
		ctlcli_print_error(cmd, *resp);
		json_decref(*resp);
		*resp = NULL;
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

void ctlcli_print_json(json_t *obj)
{
	char *s = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (s)
		printf("%s\n", s);
	free(s);
}
