/* SPDX-License-Identifier: MIT */
/*
 * What the control subcommands (register, deregister, list, show, wait,
 * watch, status) share beyond cliutil.h: the whole run of one (command line,
 * request, config, round trip to the daemon with the exit codes of
 * commands.h, answer), so that each declares its options, builds its request
 * and prints the answer.
 */
#ifndef PLUGFS_CTLCLI_H
#define PLUGFS_CTLCLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "cliutil.h"
#include "config.h"

/* The connection an answer came on, for a verb that reads more (watch). */
struct ctlcli_conn {
	const char *cmd;    /* the verb, for messages */
	const char *socket; /* control.socket */
	int fd;
};

/* A control subcommand: st is what its options collect (its own type). */
struct ctlcli_verb {
	struct cli_verb cli;
	/* Builds the request from st and args (the operands, --json).  EXIT_OK
	 * with *req (the runner frees it), and *timeout_ms changed if the answer
	 * may not take longer (it starts at -1, no limit); else the exit code
	 * after printing why. */
	int (*request)(void *st, const struct cli_args *args, json_t **req, int *timeout_ms);
	/* Prints resp, the daemon's ok answer (the runner frees it), read on
	 * conn, which stays open until this returns.  Returns the exit code. */
	int (*print)(void *st, const struct cli_args *args, json_t *resp,
		     const struct ctlcli_conn *conn);
	/* Optional: how long (ms) to keep trying to connect while the control
	 * socket is missing or refuses (a daemon not up yet); 0 or NULL: one
	 * try.  Called after request. */
	int (*connect_wait_ms)(void *st);
	/* Optional: called once connected, waited_ms after the first try, to
	 * shorten what req and *timeout_ms allow by that time. */
	void (*connected)(void *st, json_t *req, long waited_ms, int *timeout_ms);
};

/*
 * Runs v on argv (argv[0] is the verb): cli_parse, v->request, the config
 * (cli_load_config), one request to the daemon (as ctlcli_call, retrying the
 * connection for v->connect_wait_ms), v->print.
 * Returns the exit code, after flushing stdout (cli_finish_output).
 */
int ctlcli_run(const struct ctlcli_verb *v, void *st, int argc, char *argv[]);

/*
 * Sends req to the daemon at cfg->control_socket and reads one answer.
 * EXIT_OK with *resp an ok answer (owned by the caller); EXIT_FAILED after
 * printing "plugfs CMD: CODE: MESSAGE" for an error answer; EXIT_UNREACHABLE
 * after printing where it looked when the daemon cannot be reached.
 * timeout_ms < 0 waits for the answer without limit.  fd_out NULL closes the
 * connection; else *fd_out is the connection on EXIT_OK (the caller closes
 * it), -1 otherwise.
 */
int ctlcli_call(const char *cmd, const struct plugfs_config *cfg, json_t *req, json_t **resp,
		int timeout_ms, int *fd_out);

/*
 * As ctlcli_call, with check(fd, arg) called on every connection made (a
 * request sent again after a handover makes a new one) before a byte is
 * sent on it: EXIT_OK lets it be sent; any other exit code, after check
 * printed why, closes the connection and is returned.  check may be NULL.
 */
int ctlcli_call_checked(const char *cmd, const struct plugfs_config *cfg, json_t *req,
			json_t **resp, int timeout_ms, int *fd_out, int (*check)(int fd, void *arg),
			void *arg);

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
