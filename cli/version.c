/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "version.h"

int version_main(int argc, char *argv[])
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("Usage: plugfs version\n\nPrints the version of plugfs.\n");
			return EXIT_OK;
		}
		fprintf(stderr, "plugfs version: unexpected argument `%s'\n", argv[i]);
		return EXIT_USAGE;
	}
	printf("plugfs %s\n", PLUGFS_VERSION);
	return EXIT_OK;
}
