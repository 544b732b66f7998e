/* SPDX-License-Identifier: MIT */
/*
 * The versions of the state file's schema, private to registry/: the one
 * SCHEMA_VERSION constant, the migration ladder that brings any older file
 * (or a new, empty one) to it, and the check that its tables exist.
 */
#ifndef PLUGFS_REGISTRY_SCHEMA_H
#define PLUGFS_REGISTRY_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* The version this plugfs writes (PRAGMA user_version). */
#define SCHEMA_VERSION 5

/* The version of the file on s: user_version, where version 1 is also
 * user_version 0 with a `kv' table, and 0 is a file without any table.
 * Refuses with -ENOTSUP a version newer than SCHEMA_VERSION, with -EINVAL
 * a user_version 0 file with unknown tables, and with bad (the caller's
 * choice of errno) a version-1 file without its `kv' table or a version no
 * migration starts from. */
int schema_version(struct store *s, int bad, int64_t *version, char *err, size_t errlen);

/* Brings s from version (schema_version's answer) to SCHEMA_VERSION along
 * the ladder, in one transaction; nothing to do when it is there already.
 * A file with data (version >= 1) is first backed up to <path>.v<N>.bak
 * with the backup API, unless s is an in-memory copy (s->copy).  now is
 * the registration time of migrated version-1 entries.  0 or -errno; on
 * failure the file is as it was. */
int schema_upgrade(struct store *s, int64_t version, int64_t now, char *err, size_t errlen);

/* The legacy document of a version-1 file on s, to free; NULL when none is
 * saved (an empty registry).  0 or -errno. */
int schema_read_legacy_json(struct store *s, char **json, char *err, size_t errlen);

/* Every table a new file of SCHEMA_VERSION has exists on s: 0, else code
 * and a message naming the missing one. */
int schema_check_tables(struct store *s, int code, char *err, size_t errlen);

#endif
