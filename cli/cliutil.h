/* SPDX-License-Identifier: MIT */
/*
 * What every plugfs subcommand shares: its command line (the common options
 * -c FILE, -h/--help and --json, then the verb's own), the config, messages
 * and the exit codes of commands.h.  A subcommand `<verb>_main(argc, argv)`
 * (argv[0] is the verb; cli/main.c rewrites a global `plugfs -c FILE verb
 * ...` into `verb -c FILE ...`) declares its command line once:
 *
 *   static const struct option list_longopts[] = {
 *           {"type", required_argument, NULL, 't'}, {NULL, 0, NULL, 0}};
 *   static const struct cli_verb list_verb = {
 *           .name = "list", .usage = "Usage: plugfs list ...\n",
 *           .shortopts = "t:", .longopts = list_longopts, .json = true,
 *           .option = list_option};
 *
 * and cli_parse() does the rest.  The control subcommands go one step
 * further with ctlcli_run() (ctlcli.h), the offline ones call cli_parse and
 * cli_load_config themselves.  Messages go to stderr as "plugfs <verb>: ...",
 * one line; usage errors add a hint and return EXIT_USAGE (2).
 */
#ifndef PLUGFS_CLIUTIL_H
#define PLUGFS_CLIUTIL_H

#include <getopt.h>
#include <stdbool.h>
#include <sys/types.h>

#include "commands.h"
#include "config.h"
#include "registry.h"

/* n_operands of a verb that checks its operands itself. */
#define CLI_OPERANDS_ANY (-1)
/* What cli_parse returns when the verb should go on (not an exit code). */
#define CLI_RUN (-1)
/* The most long options a verb may have of its own. */
#define CLI_LONGOPTS_MAX 16

/* One subcommand's command line. */
struct cli_verb {
	const char *name;  /* "list", "state import": messages say "plugfs list: ..." */
	const char *usage; /* the whole --help text */
	/* Its own options, on top of -c FILE and -h/--help: short ones in getopt
	 * syntax ("t:n:", NULL for none; -c, -h and -j are taken), long ones
	 * ending with {NULL, 0, NULL, 0} (NULL for none). */
	const char *shortopts;
	const struct option *longopts;
	bool json;	      /* takes --json (long only, unless shortopts has "j") */
	bool subcommands;     /* options stop at the first operand (`state -c F dump`) */
	int n_operands;	      /* exactly this many operands, or CLI_OPERANDS_ANY */
	const char *operands; /* what they are, for "missing argument FILE" */
	/* One of its own options, c as getopt_long returns it and arg its
	 * argument (or NULL), into st.  EXIT_OK, or the exit code to stop with
	 * after printing why. */
	int (*option)(void *st, int c, char *arg);
};

/* What the common options and the operands of a command line are. */
struct cli_args {
	const char *config; /* -c FILE, or what the caller set (NULL: the search) */
	bool json;	    /* --json */
	int argc;	    /* the operands, after the options */
	char **argv;
};

/*
 * Parses argv (argv[0] is the verb) for v: the common options into *args (set
 * args->config before for a default), the verb's own through v->option(st),
 * then checks the number of operands.  CLI_RUN when the verb should go on;
 * else the exit code to return: EXIT_OK after printing v->usage on stdout for
 * --help (pass it through cli_finish_output), EXIT_USAGE after a usage error,
 * or what v->option returned.
 */
int cli_parse(const struct cli_verb *v, void *st, int argc, char *argv[], struct cli_args *args);

/* "plugfs <cmd>: <message>\n" on stderr ("plugfs: ..." for cmd NULL, the
 * program itself). */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "plugfs <cmd>: <message>\nTry `plugfs <cmd> --help'.\n" on stderr;
 * returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Why the daemon at cfg->control_socket cannot be reached, from connect's
 * -errno, in one line naming the socket and the likely cause: none there
 * (ENOENT), a stale socket of a dead daemon (ECONNREFUSED), a user who may
 * not use it (EACCES: root and [control] group only), or a socket that
 * cannot be trusted (EPERM, ELOOP, ENOTDIR, EINVAL from control_connect's
 * path check: detail, its message, says which directory and why).
 */
void cli_unreachable(const char *cmd, const struct plugfs_config *cfg, int neg_errno,
		     const char *detail);

/* msg without a leading "<verb>: " (cmd's first word): the daemon's errors
 * name the operation, which "plugfs <cmd>: " already does. */
const char *cli_strip_verb(const char *cmd, const char *msg);

/* The word of words[0..n) closest to word (a typo: at most two letters
 * changed, added, removed or swapped, and fewer than half of word), or
 * NULL. */
const char *cli_closest(const char *word, const char *const *words, size_t n);

/* config_resolve(path, cfg): -c FILE when path != NULL, else $PLUGFS_CONFIG,
 * else /etc/plugfs/plugfs.ini if it exists, else the defaults.  Sets the log
 * level from the config.  EXIT_OK, or EXIT_FAILED after printing the error
 * (cfg is then empty).  Free cfg with config_free. */
int cli_load_config(const char *cmd, const char *path, struct plugfs_config *cfg);

/* Flushes stdout; on a write error (a full disk, a closed pipe) prints it and
 * returns EXIT_FAILED, else rc. */
int cli_finish_output(const char *cmd, int rc);

/* Checks that the state file at path can be trusted (plugfs_path_trust:
 * no directory above it writable by anyone but root or us, no symlink at
 * it, and what is there is a regular file), then creates the missing directories above path (0755
 * whatever the umask, plugfs_mkdir_p), like `mkdir -p' of its dirname: the state file's directory
 * on a fresh host.  EXIT_OK, or EXIT_FAILED after printing which directory is not trusted or could
 * not be made. */
int cli_make_parents(const char *cmd, const char *path);

/* Prints "state.path `PATH': is a FIFO, not a regular file" (a directory,
 * a socket, a symlink, a device) for a state path of that mode: mount,
 * state check and dump refuse it in the same words. */
void cli_state_not_regular(const char *cmd, const char *path, mode_t mode);


#endif
