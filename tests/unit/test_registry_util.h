/* SPDX-License-Identifier: MIT */
/* Fixture shared by the registry and store unit tests: a registry on a real
 * SQLite file in a fresh temporary directory, an injectable clock and an
 * event recorder. */
#ifndef PLUGFS_TEST_REGISTRY_UTIL_H
#define PLUGFS_TEST_REGISTRY_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"

#define TTL 86400

struct fixture {
	char dir[64];
	char path[128];
	struct registry *r;
	int64_t now;
	char events[8192];
	const char *types[4];
	size_t n_types;
	const char *roots[4];
	size_t n_roots;
};

int fixture_setup(void **state);
int fixture_teardown(void **state);
#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)

/* Options of f (types, roots, TTL, f's clock). */
struct registry_options fixture_options(struct fixture *f);
/* registry_open on f->path with fixture_options; returns its result and
 * subscribes the recorder on success. */
int try_open(struct fixture *f, char *err, size_t errlen);
/* Opens (asserting success) / closes and opens again. */
void reopen(struct fixture *f);
void restart(struct fixture *f);

/* Registers alloc under type/name with socket /run/csi/<alloc>/csi.sock. */
int reg(struct fixture *f, const char *type, const char *name, const char *alloc);
int dereg(struct fixture *f, const char *type, const char *name, const char *alloc);
/* The active alloc (NULL when the plugin is gone) and the list order
 * ("a1 a0"), in static buffers. */
const char *active(struct fixture *f, const char *type, const char *name);
const char *order(struct fixture *f, const char *type, const char *name);

/* Events recorded since the last clear, "registered csi-node/p a0;..." */
void events_clear(struct fixture *f);
/* Rows of a table, read through a connection of its own. */
int64_t count_rows(struct fixture *f, const char *table);
/* Runs sql on f->path through a connection of its own; asserts success. */
void exec_sql(const char *path, const char *sql);
/* The integer the first row of sql gives, read through a read-only connection. */
int64_t query_int(const char *path, const char *sql);
/* A version-1 state file at path: the legacy `kv' table whose
 * dynamic_plugin_registry row holds json, at the given user_version. */
void write_v1(const char *path, int user_version, const char *json);

#endif
