/* SPDX-License-Identifier: MIT */
/* plugfs metrics: the daemon's figures in the Prometheus text format, on
 * stdout or into a file for node_exporter's textfile collector. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cliutil.h"
#include "commands.h"
#include "ctlcli.h"
#include "pathtrust.h"

#define CMD "metrics"

struct metrics_cli {
	const char *textfile; /* --textfile, or NULL: stdout */
};

static int metrics_option(void *st, int c, char *arg)
{
	struct metrics_cli *mc = st;

	(void)c; /* --textfile */
	if (arg[0] == '\0' || arg[strlen(arg) - 1] == '/') {
		cli_error(CMD, "--textfile `%s' must name a file", arg);
		return EXIT_USAGE;
	}
	mc->textfile = arg;
	return EXIT_OK;
}

static int metrics_request(void *st, const struct cli_args *args, json_t **req, int *timeout_ms)
{
	(void)st;
	(void)args;
	*req = json_pack("{s:s}", "op", "metrics");
	*timeout_ms = 30000;
	return EXIT_OK;
}

/* Writes len bytes of text to path as a whole: a temporary file in the same
 * directory, then renameat(), so a collector never reads half a file.  The
 * directory is opened first and must be trusted (plugfs_trusted_dir_open:
 * this runs as root from plugfs-metrics.service, and a symlink someone else
 * planted, or a directory others may write, would let them choose where root
 * writes); both names are taken relative to its fd, so nothing renamed
 * above it afterwards moves the write. */
static int write_atomically(const char *path, const char *text, size_t len)
{
	char dir[PATH_MAX], name[NAME_MAX + 1], tmp[NAME_MAX + 16], why[PATH_MAX + 256];
	char *slash;
	int dfd = -1, fd = -1, rc = EXIT_FAILED;
	bool created = false;

	if (path[0] == '/') {
		if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
			goto too_long;
	} else if (!getcwd(dir, sizeof(dir)) || strlen(dir) + 1 + strlen(path) >= sizeof(dir)) {
		goto too_long;
	} else {
		size_t n = strlen(dir);

		snprintf(dir + n, sizeof(dir) - n, "%s%s", strcmp(dir, "/") == 0 ? "" : "/", path);
	}
	slash = strrchr(dir, '/');
	if (snprintf(name, sizeof(name), "%s", slash + 1) >= (int)sizeof(name) ||
	    strlen(name) + 11 > NAME_MAX)
		goto too_long;
	slash[slash == dir ? 1 : 0] = '\0';
	dfd = plugfs_trusted_dir_open("directory", dir, why, sizeof(why));
	if (dfd < 0) {
		cli_error(CMD, "--textfile `%s': %s", path, why);
		goto out;
	}
	/* A new name of our own beside it (O_EXCL: never someone else's file
	 * or symlink). */
	for (unsigned i = 0; fd < 0 && i < 16; i++) {
		uint32_t r = 0;

		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint32_t)getpid() * 2654435761u + i;
		snprintf(tmp, sizeof(tmp), "%s.tmp%08x", name, (unsigned)r);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		cli_error(CMD, "--textfile `%s': cannot create a file beside it: %s", path,
			  strerror(errno));
		goto out;
	}
	created = true;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			cli_error(CMD, "--textfile `%s': writing %s: %s", path, tmp,
				  strerror(errno));
			goto out;
		}
		off += (size_t)w;
	}
	if (fchmod(fd, 0644) != 0 || close(fd) != 0) {
		fd = -1;
		cli_error(CMD, "--textfile `%s': writing %s: %s", path, tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, name) != 0) {
		cli_error(CMD, "--textfile `%s': renaming %s onto it: %s", path, tmp,
			  strerror(errno));
		goto out;
	}
	created = false;
	rc = EXIT_OK;
	goto out;
too_long:
	cli_error(CMD, "--textfile `%s': the path is too long", path);
out:
	if (fd >= 0)
		close(fd);
	if (created)
		unlinkat(dfd, tmp, 0);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

static int metrics_print(void *st, const struct cli_args *args, json_t *resp,
			 const struct ctlcli_conn *conn)
{
	const struct metrics_cli *mc = st;
	json_t *text = json_object_get(resp, "metrics");

	(void)args;
	(void)conn;
	if (!json_is_string(text)) {
		cli_error(CMD, "the daemon's answer has no metrics");
		return EXIT_FAILED;
	}
	if (mc->textfile)
		return write_atomically(mc->textfile, json_string_value(text),
					json_string_length(text));
	fwrite(json_string_value(text), 1, json_string_length(text), stdout);
	return EXIT_OK;
}

static const struct option metrics_longopts[] = {
    {"textfile", required_argument, NULL, 'T'},
    {NULL, 0, NULL, 0},
};

static const struct ctlcli_verb metrics_verb = {
    .cli =
	{
	    .name = CMD,
	    .usage = "Usage: plugfs metrics [--textfile FILE] [-c FILE]\n\n"
		     "Asks the running daemon for its metrics and prints them in the\n"
		     "Prometheus text format: registrations and plugins per type and health,\n"
		     "switches of the active registration, probes, FUSE requests and errors,\n"
		     "control clients, requests and answers, commit latency.  With --textfile\n"
		     "they are written to FILE instead, whole (a temporary file renamed onto\n"
		     "it), for node_exporter's textfile collector; a timer runs that.\n\n"
		     "      --textfile FILE  write FILE (mode 0644) instead of printing\n"
		     "  -c FILE              config file (for control.socket)\n\n"
		     "Exit codes: 0 done, 1 failed, 2 usage error, 3 daemon unreachable.\n",
	    .longopts = metrics_longopts,
	    .option = metrics_option,
	},
    .request = metrics_request,
    .print = metrics_print,
};

int metrics_main(int argc, char *argv[])
{
	struct metrics_cli mc = {0};

	return ctlcli_run(&metrics_verb, &mc, argc, argv);
}
