/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "control.h"
#include "ctlcli.h"

int ctlcli_print_error(const char *cmd, json_t *resp)
{
	const char *code = NULL;
	const char *msg = control_response_error(resp, &code);

	fprintf(stderr, "plugfs %s: %s: %s\n", cmd, code ? code : "internal",
		msg ? msg : "unexpected answer");
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
		fprintf(stderr, "plugfs %s: %s (socket %s)\n", cmd, err, cfg->control_socket);
		return EXIT_FAILED;
	}
	if (rc) {
		fprintf(stderr, "plugfs %s: %s\n", cmd, err);
		if (!strstr(err, cfg->control_socket))
			fprintf(stderr, "plugfs %s: control socket: %s\n", cmd,
				cfg->control_socket);
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
