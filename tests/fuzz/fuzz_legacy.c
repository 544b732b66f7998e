/* SPDX-License-Identifier: MIT */
/* libFuzzer target: a legacy registry document (legacy_parse with SQLite's
 * JSON functions, then legacy_validate on every entry), as state import and
 * the version-1 migration read it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static sqlite3 *db;
	static const char *const types[] = {"csi-controller", "csi-node"};
	struct legacy_entry *e = NULL;
	char err[REG_ERR_MAX];
	char *json = malloc(size + 1);
	size_t n = 0;

	if (!json)
		return 0;
	if (!db && sqlite3_open(":memory:", &db) != SQLITE_OK)
		abort();
	memcpy(json, data, size);
	json[size] = '\0';
	if (legacy_parse(db, json, &e, &n, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < n; i++)
			legacy_validate(&e[i], types, 2, NULL, 0, NULL, err, sizeof(err));
		legacy_free(e, n);
	}
	free(json);
	return 0;
}
