/* SPDX-License-Identifier: MIT */
/* plugfs reload: has the running daemon read its config again, and says
 * whether the new one is in force. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliutil.h"
#include "commands.h"
#include "control.h"
#include "ctlcli.h"

#define CMD "reload"

static const char usage[] =
    "Usage: plugfs reload [--pid PID] [--json] [-c FILE]\n"
    "\n"
    "Asks the running daemon, over the control socket, to read its config file\n"
    "again (the one it was started with) and waits for the outcome.  A config the\n"
    "daemon refuses changes nothing: the error names the file, line and key, and\n"
    "the exit status is 1.  Settings that only a restart applies are named on\n"
    "standard error (the exit status is still 0).  The unit's ExecReload= runs\n"
    "this, so `systemctl reload plugfs' fails when the config is refused.\n"
    "\n"
    "The config is read here first, for [control] socket: when it cannot be read\n"
    "or is invalid, that is the error and the daemon is not asked.  With --pid\n"
    "(else $MAINPID, which systemd sets for ExecReload=) the daemon of that\n"
    "process is asked on the socket it listens on, wherever the config now puts\n"
    "[control] socket: a new socket path, like every setting only a restart\n"
    "applies, is then named on standard error and the rest is applied.\n"
    "\n"
    "      --pid PID  the daemon's process: its control socket, from /proc/PID/fd\n"
    "      --json     JSON output: the daemon's answer\n"
    "  -c FILE        config file (for control.socket)\n"
    "\n"
    "Exit codes: 0 reloaded, 1 refused or failed, 2 usage error, 3 daemon unreachable.\n";

static const struct option reload_longopts[] = {{"pid", required_argument, NULL, 'p'},
						{NULL, 0, NULL, 0}};

/* --pid */
static int reload_option(void *st, int c, char *arg)
{
	long *pid = st;
	char *end = NULL;

	(void)c;
	errno = 0;
	*pid = strtol(arg, &end, 10);
	if (errno || end == arg || *end || *pid <= 0 || *pid > INT_MAX) {
		cli_error(CMD, "--pid `%s' must be a process id (a positive integer)", arg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static const struct cli_verb reload_verb = {
    .name = CMD,
    .usage = usage,
    .longopts = reload_longopts,
    .json = true,
    .n_operands = 0,
    .option = reload_option,
};

/*
 * The control socket the daemon of process pid listens on: the control
 * server holds its socket file open (O_PATH), so one of /proc/PID/fd names
 * a path that is a socket.  0 with it in out, -ENOENT when none is there,
 * or -errno of /proc (-ESRCH: no such process, -EACCES: not ours).
 */
static int daemon_socket(long pid, char *out, size_t outlen)
{
	char dir[64], link[PATH_MAX + 32], target[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int rc = -ENOENT;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0 || target[0] != '/')
			continue; /* "socket:[N]", "pipe:[N]", "anon_inode:..." */
		target[n] = '\0';
		if (stat(target, &st) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		if ((size_t)snprintf(out, outlen, "%s", target) < outlen) {
			rc = 0;
			break;
		}
	}
	closedir(d);
	return rc;
}

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
	long pid = 0;
	int rc;

	rc = cli_parse(&reload_verb, &pid, argc, argv, &args);
	if (rc != CLI_RUN)
		goto out;
	if (args.argc > 0) {
		rc = cli_usage_error(CMD, "unexpected argument `%s'", args.argv[0]);
		goto out;
	}
	/* systemd's ExecReload= environment names the unit's main process. */
	if (pid == 0 && getenv("MAINPID") && *getenv("MAINPID") &&
	    (rc = reload_option(&pid, 'p', getenv("MAINPID"))) != EXIT_OK) {
		cli_error(CMD, "(from $MAINPID)");
		goto out;
	}
	rc = cli_load_config(CMD, args.config, &cfg);
	if (rc != EXIT_OK) {
		cli_error(CMD, "not reloaded: the daemon was not asked and keeps its config");
		goto out;
	}
	have_cfg = true;
	if (pid > 0) {
		/* The socket the running daemon listens on, not the one the
		 * config may name by now (a restart applies that). */
		char path[PATH_MAX];
		int e = daemon_socket(pid, path, sizeof(path));
		char *dup;

		if (e < 0) {
			cli_error(CMD, "no plugfs control socket held by process %ld (%s)", pid,
				  e == -ENOENT	? "none of its open files is a socket file"
				  : e == -ESRCH ? "no such process"
						: strerror(-e));
			rc = EXIT_UNREACHABLE;
			goto out;
		}
		if (!(dup = strdup(path))) {
			cli_error(CMD, "out of memory");
			rc = EXIT_FAILED;
			goto out;
		}
		free(cfg.control_socket);
		cfg.control_socket = dup;
	}
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
