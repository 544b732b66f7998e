/* SPDX-License-Identifier: MIT */
/* plugfs reload: has the running daemon read its config again, and says
 * whether the new one is in force. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cliutil.h"
#include "commands.h"
#include "control.h"
#include "ctlcli.h"

#define CMD "reload"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

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
    "applies, is then named on standard error and the rest is applied.  The process\n"
    "must run plugfs (this program, or the one an upgrade replaced at its path) and\n"
    "listen on the socket file it holds; else nothing is sent and the exit status\n"
    "is 3.\n"
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
 * Whether process pid runs plugfs: its /proc/PID/exe is the file this CLI
 * runs (/proc/self/exe, the same device and inode: a daemon started from
 * it, or re-executed on SIGUSR2 after an upgrade, which executes the binary
 * on disk), or the file that was at this CLI's path until an upgrade
 * replaced it (the link reads "PATH (deleted)": a daemon not re-executed
 * since, or one whose re-exec fell back to the running program).  A root
 * process that merely holds a socket file is none of these.  0, or -errno
 * with why filled (-EPERM: not plugfs).
 */
static int is_plugfs(long pid, char *why, size_t whylen)
{
	static const char del[] = " (deleted)";
	char exe[64], link[PATH_MAX], self[PATH_MAX];
	struct stat st, me;
	ssize_t n, m;

	snprintf(exe, sizeof(exe), "/proc/%ld/exe", pid);
	if (stat("/proc/self/exe", &me) != 0 ||
	    (m = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0) {
		int e = errno;

		snprintf(why, whylen, "cannot tell which program this is (/proc/self/exe: %s)",
			 strerror(e));
		return -e;
	}
	self[m] = '\0';
	n = readlink(exe, link, sizeof(link) - 1);
	if (n <= 0) {
		int e = errno;
		char dir[64];

		snprintf(dir, sizeof(dir), "/proc/%ld", pid);
		if (e == ENOENT && access(dir, F_OK) == 0) {
			snprintf(why, whylen,
				 "process %ld is not plugfs: it runs no program file (a kernel "
				 "thread)",
				 pid);
			return -EPERM;
		}
		if (e == ENOENT)
			e = ESRCH;
		snprintf(why, whylen, "cannot tell whether process %ld is plugfs (%s: %s)", pid,
			 exe, e == ESRCH ? "no such process" : strerror(e));
		return -e;
	}
	link[n] = '\0';
	if (stat(exe, &st) == 0 && st.st_dev == me.st_dev && st.st_ino == me.st_ino)
		return 0;
	if ((size_t)n == (size_t)m + sizeof(del) - 1 && strncmp(link, self, (size_t)m) == 0 &&
	    strcmp(link + m, del) == 0)
		return 0;
	snprintf(why, whylen,
		 "process %ld is not plugfs: it runs %s, which is neither this program (%s) nor "
		 "the one an upgrade replaced at that path",
		 pid, link, self);
	return -EPERM;
}

/* The process that called listen() on the socket fd is connected to, in
 * our pid namespace (SO_PEERCRED): a pid, or -errno. */
static long listener_pid(int fd)
{
	struct ucred cr = {0};
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
		return -errno;
	return cr.pid > 0 ? cr.pid : -ESRCH;
}

/* What --pid was checked against, again on every connection. */
struct daemon_id {
	long pid;
	int pidfd; /* the process, -1 without pidfd_open (an old kernel) */
};

/* Whether the process d->pidfd names has exited since it was opened. */
static bool exited(const struct daemon_id *d)
{
	struct pollfd p = {.fd = d->pidfd, .events = POLLIN};

	return d->pidfd >= 0 && poll(&p, 1, 0) > 0;
}

/*
 * ctlcli's check of each connection, before anything is sent on it: the
 * process is (still) plugfs and is the one that listens on the socket
 * connected to, so that the answer is the daemon's, not that of another
 * process holding a socket file.  EXIT_OK, else EXIT_UNREACHABLE after
 * saying which rule failed.
 */
static int check_daemon(int fd, void *arg)
{
	const struct daemon_id *d = arg;
	char why[2 * PATH_MAX + 160];
	long lp;

	if (is_plugfs(d->pid, why, sizeof(why)) != 0) {
		cli_error(CMD, "not asked: %s; --pid must name the plugfs daemon", why);
		return EXIT_UNREACHABLE;
	}
	lp = listener_pid(fd);
	if (lp != d->pid) {
		if (lp < 0)
			cli_error(CMD,
				  "not asked: cannot tell who listens on the socket of process %ld "
				  "(SO_PEERCRED: %s)",
				  d->pid, strerror((int)-lp));
		else
			cli_error(CMD,
				  "not asked: the socket held by process %ld is listened on by "
				  "process %ld: not its control socket",
				  d->pid, lp);
		return EXIT_UNREACHABLE;
	}
	if (exited(d)) {
		cli_error(CMD, "not asked: process %ld exited while it was checked", d->pid);
		return EXIT_UNREACHABLE;
	}
	return EXIT_OK;
}

/*
 * The control socket the daemon of process pid listens on: the control
 * server holds its socket file open (O_PATH), so one of /proc/PID/fd names
 * a path that is a socket, and a connection to it is accepted by a socket
 * process pid listens on (SO_PEERCRED), which is what a socket file held
 * by any process but the one serving it is not.  0 with it in out,
 * -ENOENT when no socket file is held, -ENOTCONN when none held is one
 * pid listens on (why says why), or -errno of /proc (-ESRCH: no such
 * process, -EACCES: not ours).
 */
static int daemon_socket(long pid, char *out, size_t outlen, char *why, size_t whylen)
{
	char dir[64], link[PATH_MAX + 32], target[PATH_MAX], err[512];
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
		long lp;
		int fd = -1;

		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0 || target[0] != '/')
			continue; /* "socket:[N]", "pipe:[N]", "anon_inode:..." */
		target[n] = '\0';
		if (stat(target, &st) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		if ((size_t)snprintf(out, outlen, "%s", target) >= outlen)
			continue;
		rc = -ENOTCONN;
		if (control_connect(target, &fd, err, sizeof(err)) != 0) {
			snprintf(why, whylen, "%s", err);
			continue;
		}
		lp = listener_pid(fd);
		close(fd);
		if (lp == pid) {
			rc = 0;
			break;
		}
		if (lp < 0)
			snprintf(why, whylen, "%s: SO_PEERCRED: %s", target, strerror((int)-lp));
		else
			snprintf(why, whylen, "%s is listened on by process %ld, not %ld", target,
				 lp, pid);
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
	struct daemon_id id = {.pid = 0, .pidfd = -1};
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
		 * config may name by now (a restart applies that); first
		 * that the process is plugfs (check_daemon checks both again
		 * on the connection the request goes on). */
		char path[PATH_MAX], why[2 * PATH_MAX + 160] = "";
		int e;
		char *dup;

		id.pid = pid;
		id.pidfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
		e = is_plugfs(pid, why, sizeof(why));
		if (e == -EPERM) {
			cli_error(CMD, "not asked: %s; --pid must name the plugfs daemon", why);
			rc = EXIT_UNREACHABLE;
			goto out;
		}
		if (e == 0)
			e = daemon_socket(pid, path, sizeof(path), why, sizeof(why));
		else if (e == -ESRCH || e == -EACCES)
			why[0] = '\0'; /* said below, as for /proc/PID/fd */
		if (e < 0) {
			cli_error(CMD, "no plugfs control socket held by process %ld (%s%s%s)", pid,
				  e == -ENOENT	   ? "none of its open files is a socket file"
				  : e == -ESRCH	   ? "no such process"
				  : e == -ENOTCONN ? "none of its socket files is one it listens on"
						   : strerror(-e),
				  why[0] ? ": " : "", why);
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
	rc = ctlcli_call_checked(CMD, &cfg, req, &resp, 30000, NULL, pid > 0 ? check_daemon : NULL,
				 &id);
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
	if (id.pidfd >= 0)
		close(id.pidfd);
	return cli_finish_output(CMD, rc);
}
