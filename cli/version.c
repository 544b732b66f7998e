/* SPDX-License-Identifier: MIT */
/* plugfs version: the version this program was built as. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cliutil.h"
#include "commands.h"
#include "version.h"

/* Takes -c FILE like every command (`plugfs -c FILE version' passes it on)
 * but needs no config, so it reads none. */
static const struct cli_verb version_verb = {
    .name = "version",
    .usage = "Usage: plugfs version [--json]\n"
	     "\n"
	     "Prints the version of plugfs (\"plugfs 0.1.0\"), or with --json\n"
	     "{\"version\": \"0.1.0\"}.  `plugfs -V' does the same as `plugfs version'.\n",
    .json = true,
    .n_operands = 0,
    .operands = "",
};

int version_main(int argc, char *argv[])
{
	struct cli_args args = {0};
	int rc = cli_parse(&version_verb, NULL, argc, argv, &args);

	if (rc == CLI_RUN) {
		if (args.json) {
			json_t *o = json_pack("{s:s}", "version", PLUGFS_VERSION);
			char *s = o ? json_dumps(o, JSON_INDENT(2)) : NULL;

			if (!s) {
				cli_error("version", "out of memory");
				json_decref(o);
				return EXIT_FAILED;
			}
			printf("%s\n", s);
			free(s);
			json_decref(o);
		} else {
			printf("plugfs %s\n", PLUGFS_VERSION);
		}
		rc = EXIT_OK;
	}
	return cli_finish_output("version", rc);
}
