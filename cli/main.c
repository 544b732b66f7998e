/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "cliutil.h"
#include "commands.h"

struct command {
	const char *name;
	int (*main)(int argc, char *argv[]);
	const char *help;
};

/* Keep in the order `plugfs --help` shows them. */
static const struct command commands[] = {
	{"mount", mount_main, "Runs the daemon: mounts the filesystem and serves it"},
	{"register", register_main, "Registers an allocation of a plugin"},
	{"deregister", deregister_main, "Removes a registration, or every one of an alloc"},
	{"list", list_main, "Lists the registered plugins"},
	{"show", show_main, "Shows the registrations of one plugin"},
	{"wait", wait_main, "Waits until a plugin has an active registration"},
	{"watch", watch_main, "Prints registry events as they happen"},
	{"status", status_main, "Shows what the running daemon serves"},
	{"reload", reload_main, "Has the daemon read its config again; fails if it is refused"},
	{"metrics", metrics_main, "Prints the daemon's metrics (Prometheus text format)"},
	{"state", state_main, "Imports, dumps or checks the state file (offline)"},
	{"stop-post", stoppost_main, "After the daemon stopped: detaches its mount unless a restart follows (ExecStopPost=)"},
	{"version", version_main, "Prints the version of plugfs"},
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: plugfs [-c FILE] <command> [<args>]\n"
		   "       plugfs -V | --version\n\n"
		   "plugfs gives every CSI plugin one stable path under a FUSE mount.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nEvery command takes -c FILE (else $PLUGFS_CONFIG, else %s if it exists,\n"
		   "else built-in defaults) and --help.\n"
		   "Exit codes: 0 success, 1 failed, 2 usage error, 3 daemon unreachable.\n",
		"/etc/plugfs/plugfs.ini");
}

int main(int argc, char *argv[])
{
	const char *cfg = NULL;
	int i = 1;

	/* A global -c FILE before the subcommand is passed on to it. */
	if (i + 1 < argc && strcmp(argv[i], "-c") == 0) {
		cfg = argv[i + 1];
		i += 2;
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ||
	    strcmp(argv[i], "help") == 0) {
		usage(stdout);
		return cli_finish_output(NULL, EXIT_OK);
	}
	if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0)
		return version_main(1, (char *[]){"version", NULL});
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++) {
		if (strcmp(argv[i], commands[k].name) != 0)
			continue;
		if (cfg) {
			/* Re-insert -c FILE after the subcommand name. */
			char *nargv[argc + 1];
			int n = 0;
			nargv[n++] = argv[i];
			nargv[n++] = (char *)"-c";
			nargv[n++] = (char *)cfg;
			for (int j = i + 1; j < argc; j++)
				nargv[n++] = argv[j];
			nargv[n] = NULL;
			return commands[k].main(n, nargv);
		}
		return commands[k].main(argc - i, argv + i);
	}
	{
		const char *names[sizeof(commands) / sizeof(commands[0])];
		const char *near;

		for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
			names[k] = commands[k].name;
		near = cli_closest(argv[i], names, sizeof(names) / sizeof(names[0]));
		if (near)
			fprintf(stderr,
				"plugfs: unknown command `%s'; did you mean `%s'? "
				"See `plugfs --help'.\n",
				argv[i], near);
		else
			fprintf(stderr, "plugfs: unknown command `%s'; see `plugfs --help'\n",
				argv[i]);
	}
	return EXIT_USAGE;
}
