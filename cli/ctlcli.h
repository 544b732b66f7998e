/* SPDX-License-Identifier: MIT */
/*
 * What the control subcommands (register, deregister, list, show, wait,
 * watch, status) share beyond cliutil.h: one round trip to the daemon with
 * the exit codes of DESIGN.md, and printing answers.
 */
#ifndef PLUGFS_CTLCLI_H
#define PLUGFS_CTLCLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "config.h"

/*
 * Sends req to the daemon at cfg->control_socket and reads one answer.
 * EXIT_OK with *resp an ok answer (owned by the caller); EXIT_FAILED after
 * printing "plugfs CMD: CODE: MESSAGE" for an error answer; EXIT_UNREACHABLE
 * after printing where it looked when the daemon cannot be reached.
 * timeout_ms < 0 waits for the answer without limit.
 */
int ctlcli_call(const char *cmd, const struct plugfs_config *cfg, json_t *req, json_t **resp,
		int timeout_ms);

/*
 * The request {"op": cmd, "type": args[0], "name": args[1]} of a subcommand
 * taking TYPE NAME (show, wait) from its nargs operands.  EXIT_OK with *req
 * (owned by the caller), else EXIT_USAGE after printing the usage error.
 */
int ctlcli_plugin_request(const char *cmd, int nargs, char *const args[], json_t **req);

/* Prints the error of an {"ok":false} answer; returns EXIT_FAILED. */
int ctlcli_print_error(const char *cmd, json_t *resp);

/* Prints obj as pretty JSON on stdout. */
void ctlcli_print_json(json_t *obj);

#endif
