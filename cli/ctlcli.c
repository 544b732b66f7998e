/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

	/* The code is for programs (--json, the protocol); people get the
	 * message, which names what was wrong, once. */
	if (msg)
		cli_error(cmd, "%s", cli_strip_verb(cmd, msg));
	else
		cli_error(cmd, "unexpected answer from the daemon (%s)", code ? code : "no error");
	return EXIT_FAILED;
}

int ctlcli_call(const char *cmd, const struct plugfs_config *cfg, json_t *req, json_t **resp,
		int timeout_ms, int *fd_out)
{
	char err[512] = "";
	int fd = -1, rc;

	*resp = NULL;
	if (fd_out)
		*fd_out = -1;
	rc = control_connect(cfg->control_socket, &fd, err, sizeof(err));
	if (rc < 0) {
		cli_unreachable(cmd, cfg, rc, err);
		rc = EXIT_UNREACHABLE;
		goto out;
	}
	rc = control_exchange(fd, req, resp, timeout_ms, err, sizeof(err));
	if (rc == -ETIMEDOUT) {
		cli_error(cmd, "%s (socket %s)", err, cfg->control_socket);
		rc = EXIT_FAILED;
		goto out;
	}
	if (rc) {
		if (strstr(err, cfg->control_socket))
			cli_error(cmd, "%s", err);
		else
			cli_error(cmd, "%s (control socket %s)", err, cfg->control_socket);
		rc = EXIT_UNREACHABLE;
		goto out;
	}
	if (control_response_error(*resp, NULL)) {
		rc = ctlcli_print_error(cmd, *resp);
		goto out;
	}
	if (fd_out) {
		*fd_out = fd;
		fd = -1;
	}
	rc = EXIT_OK;
out:
	if (rc != EXIT_OK) {
		json_decref(*resp);
		*resp = NULL;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

int ctlcli_run(const struct ctlcli_verb *v, void *st, int argc, char *argv[])
{
	const char *cmd = v->cli.name;
	struct cli_args args = {0};
	struct plugfs_config cfg = {0};
	json_t *req = NULL, *resp = NULL;
	bool have_cfg = false;
	int rc, timeout_ms = -1, fd = -1;

	rc = cli_parse(&v->cli, st, argc, argv, &args);
	if (rc != CLI_RUN)
		goto out;
	rc = v->request(st, &args, &req, &timeout_ms);
	if (rc)
		goto out;
	rc = cli_load_config(cmd, args.config, &cfg);
	if (rc)
		goto out;
	have_cfg = true;
	rc = ctlcli_call(cmd, &cfg, req, &resp, timeout_ms, &fd);
	if (rc)
		goto out;
	rc = v->print(st, &args, resp,
		      &(struct ctlcli_conn){.cmd = cmd, .socket = cfg.control_socket, .fd = fd});
out:
	if (fd >= 0)
		close(fd);
	json_decref(resp);
	json_decref(req);
	if (have_cfg)
		config_free(&cfg);
	return cli_finish_output(cmd, rc);
}

void ctlcli_print_json(json_t *obj)
{
	char *s = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (s)
		printf("%s\n", s);
	free(s);
}
