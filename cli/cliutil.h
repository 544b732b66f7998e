/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the plugfs subcommands.  Conventions for a subcommand
 * `<verb>_main(argc, argv)` (argv[0] is the verb; cli/main.c rewrites a global
 * `plugfs -c FILE verb ...` into `verb -c FILE ...`):
 *
 *   static const struct option longopts[] = {
 *           CLI_COMMON_LONGOPTS,              // --help
 *           {"json", no_argument, NULL, 'j'},
 *           {0}};
 *   cli_getopt_reset();
 *   while ((c = getopt_long(argc, argv, ":c:hj", longopts, NULL)) != -1) {
 *           switch (c) {
 *           case 'c': config = optarg; break;
 *           case 'h': usage(stdout); return EXIT_OK;
 *           case 'j': json = true; break;
 *           default: return cli_option_error("verb", c, argv);
 *           }
 *   }
 *   ...
 *   if (cli_load_config("verb", config, &cfg) != EXIT_OK) return EXIT_FAILED;
 *
 * The optstring starts with ':' so that getopt stays silent and these helpers
 * print the message.  Messages go to stderr as "plugfs <verb>: ...", one line;
 * usage errors add a hint and return EXIT_USAGE (2).
 */
#ifndef PLUGFS_CLIUTIL_H
#define PLUGFS_CLIUTIL_H

#include <getopt.h>

#include "commands.h"
#include "config.h"
#include "registry.h"

/* The long options every subcommand has (-c FILE is short only). */
/* clang-format off */
#define CLI_COMMON_LONGOPTS {"help", no_argument, NULL, 'h'}
/* clang-format on */

/* Makes the next getopt_long call start afresh on a new argv (for commands
 * that parse more than once, e.g. `state -c F dump --json`). */
void cli_getopt_reset(void);

/* "plugfs <cmd>: <message>\n" on stderr. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "plugfs <cmd>: <message>\nTry `plugfs <cmd> --help'.\n" on stderr;
 * returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports what getopt_long returned as '?' (unknown option) or ':' (missing
 * argument), naming the option; returns EXIT_USAGE. */
int cli_option_error(const char *cmd, int c, char *const argv[]);

/* config_resolve(path, cfg): -c FILE when path != NULL, else $PLUGFS_CONFIG,
 * else /etc/plugfs/plugfs.ini if it exists, else the defaults.  Sets the log
 * level from the config.  EXIT_OK, or EXIT_FAILED after printing the error
 * (cfg is then empty).  Free cfg with config_free. */
int cli_load_config(const char *cmd, const char *path, struct plugfs_config *cfg);

/* The registry options of cfg.  They borrow cfg's strings: cfg must outlive
 * registry_open (the registry copies what it keeps). */
void cli_registry_options(const struct plugfs_config *cfg, struct registry_options *opts);

/* Flushes stdout; on a write error (a full disk, a closed pipe) prints it and
 * returns EXIT_FAILED, else rc. */
int cli_finish_output(const char *cmd, int rc);

/* Creates the missing directories above path (0755), like `mkdir -p' of its
 * dirname: the state file's directory on a fresh host.  EXIT_OK, or
 * EXIT_FAILED after printing which directory could not be made. */
int cli_make_parents(const char *cmd, const char *path);

#endif
