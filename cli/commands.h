/* SPDX-License-Identifier: MIT */
/* The plugfs subcommands: one file each, `<verb>_main(argc, argv)` where
 * argv[0] is the subcommand's name.  Exit codes (docs/design.md): */
#ifndef PLUGFS_COMMANDS_H
#define PLUGFS_COMMANDS_H

#define EXIT_OK 0
#define EXIT_FAILED 1      /* rejected input, operation failed, timeout */
#define EXIT_USAGE 2       /* bad command line */
#define EXIT_UNREACHABLE 3 /* the daemon cannot be reached */

int version_main(int argc, char *argv[]);
int state_main(int argc, char *argv[]);
int stoppost_main(int argc, char *argv[]);
int register_main(int argc, char *argv[]);
int deregister_main(int argc, char *argv[]);
int list_main(int argc, char *argv[]);
int show_main(int argc, char *argv[]);
int wait_main(int argc, char *argv[]);
int watch_main(int argc, char *argv[]);
int status_main(int argc, char *argv[]);
int reload_main(int argc, char *argv[]);
int metrics_main(int argc, char *argv[]);
int mount_main(int argc, char *argv[]);

#endif
