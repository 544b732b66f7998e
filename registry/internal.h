/* SPDX-License-Identifier: MIT */
/* Declarations shared by the files of registry/; not part of the API. */
#ifndef PLUGFS_REGISTRY_INTERNAL_H
#define PLUGFS_REGISTRY_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "err.h"
#include "registry.h"

/* Socket path rules plus, when n_roots > 0, "under one of roots". */
int reg_validate_socket(const char *field, const char *s, const char *const *roots, size_t n_roots,
			char *err, size_t errlen);

/* Everything of a spec except the type: name, alloc, socket (with roots),
 * version, kind, options (keys, values, duplicates). */
int reg_validate_spec(const struct reg_spec *spec, const char *const *roots, size_t n_roots,
		      char *err, size_t errlen);

/* Finds type among the configured types: 0 and *idx (may be NULL), or
 * -EINVAL with a message listing them. */
int reg_find_type(const char *type, const char *const *types, size_t n_types, size_t *idx,
		  char *err, size_t errlen);

/* The kind used for REG_KIND_UNSET under type. */
enum reg_kind reg_kind_for_type(const char *type);

/* Maps an SQLite result code to a negative errno. */
int reg_sqlite_errno(int rc);

/* One entry of a legacy {"Plugins": {type: {name: PluginInfo}}} document. */
struct legacy_entry {
	char *type;
	char *name;
	char *alloc;
	char *socket;
	char *version;
	enum reg_kind kind;
	struct reg_option *options; /* sorted by key */
	size_t n_options;
	/* plugfs's own keys, absent from the legacy format: Probe, CSIName */
	enum reg_probe probe;
	char *csi_name; /* NULL when absent */
};

/*
 * Reads a legacy document with SQLite's JSON functions on db (any open
 * connection).  Checks the shape and the field types, not the values (the
 * caller validates).  Entries come in document order.  0 or -errno.
 */
int legacy_parse(sqlite3 *db, const char *json, struct legacy_entry **out, size_t *n_out, char *err,
		 size_t errlen);
void legacy_free(struct legacy_entry *e, size_t n);

/* The spec of an entry (borrowing its strings), as registry_register takes. */
struct reg_spec legacy_spec(const struct legacy_entry *e);

/* Validates every field of e as registry_register does: the type one of
 * types (its index in *type_idx, may be NULL), or, when types is NULL, any
 * valid name.  0, or -EINVAL with "Plugins.<type>.<name>: <field and rule>";
 * migration, import and registry_check_file say the same. */
int legacy_validate(const struct legacy_entry *e, const char *const *types, size_t n_types,
		    const char *const *roots, size_t n_roots, size_t *type_idx, char *err,
		    size_t errlen);

/* The registry's SQLite connection, for tests that inject failures (a
 * commit hook, max_page_count).  Call with no mutation running. */
sqlite3 *registry_db(struct registry *r);

/* Sorts options by key (strcmp). */
void reg_options_sort(struct reg_option *o, size_t n);

#endif
