/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cliutil.h"
#include "clock.h"
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

/* Connects to cfg->control_socket; while it is missing or refuses (a daemon
 * that is not up yet), again every CONNECT_RETRY_MS until wait_ms passed.
 * EXIT_OK with *fd_out and *waited_ms, else EXIT_UNREACHABLE after saying
 * why; a wait that ran out is named by waiting (e.g. "--timeout"). */
#define CONNECT_RETRY_MS 150
static int ctlcli_connect(const char *cmd, const struct plugfs_config *cfg, int wait_ms,
			  const char *waiting, int *fd_out, long *waited_ms)
{
	char err[512] = "";
	long start = plugfs_mono_ms(), left;
	int rc;

	*waited_ms = 0;
	for (;;) {
		rc = control_connect(cfg->control_socket, fd_out, err, sizeof(err));
		*waited_ms = plugfs_mono_ms() - start;
		left = wait_ms - *waited_ms;
		if (rc == 0)
			return EXIT_OK;
		if ((rc != -ENOENT && rc != -ECONNREFUSED) || left <= 0)
			break;
		if (left > CONNECT_RETRY_MS)
			left = CONNECT_RETRY_MS;
		nanosleep(&(struct timespec){.tv_nsec = left * 1000000L}, NULL);
	}
	if (wait_ms > 0 && (rc == -ENOENT || rc == -ECONNREFUSED))
		cli_error(cmd,
			  "no daemon came up within %g s (%s); the last try:", wait_ms / 1000.0,
			  waiting);
	cli_unreachable(cmd, cfg, rc, err);
	return EXIT_UNREACHABLE;
}

/*
 * A daemon that hands over (SIGUSR2, a restart that keeps the mount)
 * answers every request it read and closes the other connections before
 * it read theirs: a send then fails with EPIPE, or the connection closes
 * before a byte of an answer (control_exchange's -ECONNABORTED).  Such a
 * request was not taken: it is sent again, on a new connection that waits
 * in the listening socket's backlog for the next program.  A daemon killed
 * may have taken it; every operation is safe to send again then too
 * (register of the same data and deregister are idempotent, the rest only
 * read).  It is resent every CLOSED_RETRY_MS for CLOSED_RETRY_WINDOW_MS,
 * also while the socket is missing or refuses (a restart that rebinds it),
 * a window far longer than a re-exec takes (test_fs_reexec_stress prints
 * their durations) or a restart under systemd (RestartSec=1s).
 */
#define CLOSED_RETRY_WINDOW_MS 30000
#define CLOSED_RETRY_MS 100
#define CLOSED_AGAIN (-1) /* ctlcli_exchange: send it again */

/* The rest of ctlcli_call on fd, a connection it owns: closed, unless handed
 * over in *fd_out on EXIT_OK (fd_out may be where fd came from).  With
 * may_retry, a connection closed before an answer returns CLOSED_AGAIN
 * without a word. */
static int ctlcli_exchange(const char *cmd, const struct plugfs_config *cfg, int fd, json_t *req,
			   json_t **resp, int timeout_ms, int *fd_out, bool may_retry)
{
	char err[512] = "";
	int rc;

	*resp = NULL;
	if (fd_out)
		*fd_out = -1;
	rc = control_exchange(fd, req, resp, timeout_ms, err, sizeof(err));
	if (rc == -ECONNABORTED && may_retry) {
		rc = CLOSED_AGAIN;
		goto out;
	}
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
	if (rc != EXIT_OK) { /* CLOSED_AGAIN included */
		json_decref(*resp);
		*resp = NULL;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Whether a request first sent at start_ms may be sent again now, after a
 * pause of CLOSED_RETRY_MS; *left_ms receives what is left of the window
 * (for the reconnect). */
static bool closed_retry_left(long start_ms, long *left_ms)
{
	*left_ms = start_ms + CLOSED_RETRY_WINDOW_MS - plugfs_mono_ms();
	return *left_ms > 0;
}

static void closed_retry_pause(void)
{
	nanosleep(&(struct timespec){.tv_nsec = CLOSED_RETRY_MS * 1000000L}, NULL);
}

#define CLOSED_WAITING "after the daemon closed the connection unanswered"

/* The request sent, and sent again when the connection closed before an
 * answer (see above). */
int ctlcli_call(const char *cmd, const struct plugfs_config *cfg, json_t *req, json_t **resp,
		int timeout_ms, int *fd_out)
{
	return ctlcli_call_checked(cmd, cfg, req, resp, timeout_ms, fd_out, NULL, NULL);
}

int ctlcli_call_checked(const char *cmd, const struct plugfs_config *cfg, json_t *req,
			json_t **resp, int timeout_ms, int *fd_out, int (*check)(int fd, void *arg),
			void *arg)
{
	long waited, start = plugfs_mono_ms(), left = 0;
	int fd = -1, rc;

	*resp = NULL;
	if (fd_out)
		*fd_out = -1;
	for (int tries = 0;; tries++) {
		rc = ctlcli_connect(cmd, cfg, tries ? (int)left : 0, CLOSED_WAITING, &fd, &waited);
		if (rc)
			return rc;
		if (check && (rc = check(fd, arg)) != EXIT_OK) {
			close(fd);
			return rc;
		}
		rc = ctlcli_exchange(cmd, cfg, fd, req, resp, timeout_ms, fd_out,
				     closed_retry_left(start, &left));
		if (rc != CLOSED_AGAIN)
			return rc;
		closed_retry_pause();
	}
}

int ctlcli_run(const struct ctlcli_verb *v, void *st, int argc, char *argv[])
{
	const char *cmd = v->cli.name;
	struct cli_args args = {0};
	struct plugfs_config cfg = {0};
	json_t *req = NULL, *resp = NULL;
	bool have_cfg = false;
	int rc, timeout_ms = -1, fd = -1;
	long waited = 0, start, left = 0;

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
	rc = ctlcli_connect(cmd, &cfg, v->connect_wait_ms ? v->connect_wait_ms(st) : 0, "--timeout",
			    &fd, &waited);
	if (rc)
		goto out;
	if (v->connected)
		v->connected(st, req, waited, &timeout_ms);
	start = plugfs_mono_ms();
	for (;;) {
		rc = ctlcli_exchange(cmd, &cfg, fd, req, &resp, timeout_ms, &fd,
				     closed_retry_left(start, &left));
		if (rc != CLOSED_AGAIN)
			break;
		closed_retry_pause();
		rc = ctlcli_connect(cmd, &cfg, (int)left, CLOSED_WAITING, &fd, &waited);
		if (rc)
			goto out;
	}
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
