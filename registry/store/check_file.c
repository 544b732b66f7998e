/* SPDX-License-Identifier: MIT */
/*
 * `state check' (registry_check_file in registry.h): a state file checked
 * as registry_open would open it, on a private copy (store_open_copy):
 * the migration, the tables, the rows (store_check_rows), the load's own
 * queries and the integrity check.  Above the rest of the store.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "schema.h"
#include "store.h"

/* The load's callbacks for a check: never called (no configured type). */
static int load_reg_none(void *arg, size_t type_idx, int64_t plugin_id, struct registration *r,
			 char *err, size_t errlen)
{
	(void)arg, (void)type_idx, (void)plugin_id, (void)r, (void)err, (void)errlen;
	return 0;
}

static int load_empty_none(void *arg, size_t type_idx, int64_t plugin_id, const char *type,
			   const char *name, char *err, size_t errlen)
{
	(void)arg, (void)type_idx, (void)plugin_id, (void)type, (void)name, (void)err,
	    (void)errlen;
	return 0;
}

static int load_opt_none(void *arg, const char *type, const char *name, const char *alloc,
			 const char *key, const char *value, char *err, size_t errlen)
{
	(void)arg, (void)type, (void)name, (void)alloc, (void)key, (void)value, (void)err,
	    (void)errlen;
	return 0;
}

int registry_check_file(const char *db_path, char *err, size_t errlen)
{
	struct store s = {0};
	int64_t version;
	int rc;

	if (!db_path || !db_path[0])
		return plugfs_errf(err, errlen, -EINVAL, "state.path: missing");
	if (access(db_path, F_OK) < 0)
		return plugfs_errf(err, errlen, -errno, "state file `%s': %s", db_path,
				   strerror(errno));
	s.path = strdup(db_path);
	if (!s.path)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	/* On a private copy, brought to SCHEMA_VERSION as registry_open would
	 * (what the migration refuses, in its words), then the rows. */
	if ((rc = store_open_copy(&s, db_path, err, errlen)) < 0 ||
	    (rc = schema_version(&s, -EIO, &version, err, errlen)) < 0)
		goto out;
	if ((rc = schema_upgrade(&s, version, (int64_t)time(NULL), err, errlen)) < 0) {
		if (rc != -ENOMEM)
			rc = -EIO;
		goto out;
	}
	if ((rc = schema_check_tables(&s, -EIO, err, errlen)) < 0)
		goto out;
	if ((rc = store_check_rows(&s, err, errlen)) < 0)
		goto out;
	/* The load's own queries, as the mount runs them (with no configured
	 * type every row is read and none kept): a schema whose columns they
	 * do not find (damage in sqlite_master) is refused in the mount's
	 * words, not passed. */
	if ((rc = store_load(&s, NULL, 0, load_reg_none, load_empty_none, load_opt_none, NULL, err,
			     errlen)) < 0) {
		if (rc != -ENOMEM)
			rc = -EIO;
		goto out;
	}
	/* An index that does not match its table passes quick_check and
	 * store_check_rows, and fails the daemon's load. */
	if ((rc = store_integrity_check(&s, err, errlen)) == 0 && s.rolled_back)
		rc = 1;
out:
	store_close(&s);
	return rc;
}
