/* SPDX-License-Identifier: MIT */
/* plugfs version: the version this program was built as. */
#include <stdio.h>

#include "cliutil.h"
#include "commands.h"
#include "version.h"

/* Takes -c FILE like every command (`plugfs -c FILE version' passes it on)
 * but needs no config, so it reads none. */
static const struct cli_verb version_verb = {
    .name = "version",
    .usage = "Usage: plugfs version\n\nPrints the version of plugfs.\n",
};

int version_main(int argc, char *argv[])
{
	struct cli_args args = {0};
	int rc = cli_parse(&version_verb, NULL, argc, argv, &args);

	if (rc == CLI_RUN) {
		printf("plugfs %s\n", PLUGFS_VERSION);
		rc = EXIT_OK;
	}
	return cli_finish_output("version", rc);
}
