/* SPDX-License-Identifier: MIT */
/*
 * What the control subcommands (register, deregister, list, show, wait,
 * watch, status) share: loading the config for the socket path, one round
 * trip to the daemon with the exit codes of DESIGN.md, and option errors.
 */
#ifndef PLUGFS_CTLCLI_H
#define PLUGFS_CTLCLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "config.h"

/* Loads the config (-c path, else $PLUGFS_CONFIG, else the default file,
 * else built-in defaults).  EXIT_OK, or prints why and returns EXIT_FAILED. */
int ctlcli_config(const char *cmd, const char *path, struct plugfs_config *cfg);

/*
 * Sends req to the daemon at cfg->control_socket and reads one answer.
 * EXIT_OK with *resp an ok answer (owned by the caller); EXIT_FAILED after
 * printing "plugfs CMD: CODE: MESSAGE" for an error answer; EXIT_UNREACHABLE
 * after printing where it looked when the daemon cannot be reached.
 * timeout_ms < 0 waits for the answer without limit.
 */
int ctlcli_call(const char *cmd, const struct plugfs_config *cfg, json_t *req, json_t **resp,
		int timeout_ms);

/* Prints the error of an {"ok":false} answer; returns EXIT_FAILED. */
int ctlcli_print_error(const char *cmd, json_t *resp);

/* getopt_long's error for argv[optind - 1] in the house style; EXIT_USAGE. */
int ctlcli_bad_option(const char *cmd, int opt, char *argv[]);

/* Prints obj as pretty JSON on stdout. */
void ctlcli_print_json(json_t *obj);

#endif
