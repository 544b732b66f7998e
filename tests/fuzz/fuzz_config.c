/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a configuration file's text (config_parse_string, the
 * code path of config_load). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX];
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	memset(&cfg, 0, sizeof(cfg));
	config_parse_string(text, "fuzz.ini", &cfg, err, sizeof(err));
	config_free(&cfg);
	free(text);
	return 0;
}
