/* SPDX-License-Identifier: MIT */
/* Private to config/: the [discover.NAME] sections (discover.c). */
#ifndef PLUGFS_CONFIG_DISCOVER_H
#define PLUGFS_CONFIG_DISCOVER_H

#include <stddef.h>

#include "config.h"

#define DISCOVER_SECTION_PREFIX "discover."

/* keys.c: the NAME of a section named "discover.NAME" (possibly ""), or NULL when
 * section is not one. */
const char *config_discover_section_name(const char *section);

/* The entry of name, added (first seen on line, with the defaults) when
 * new.  NULL: out of memory, or more than PLUGFS_DISCOVER_MAX sections
 * (*too_many set). */
struct plugfs_discover *config_discover_entry(struct plugfs_config *cfg, const char *name,
					      unsigned line, bool *too_many);

struct parse_ctx;

/* `name = value' in the [discover.NAME] section the parse is in.  1 (go
 * on) or 0 with the error recorded in c. */
int config_discover_key(struct parse_ctx *c, const char *name, const char *value);

/* After the whole file: every section has a root, a fixed type is one of
 * [registry] types, no root is at, in or above the mount or another
 * section's root.  0, or -EINVAL with the message in msg and the line in
 * *line. */
int config_discover_finish(struct plugfs_config *cfg, unsigned mount_line, unsigned *line,
			   char *msg, size_t len);

void config_discover_free(struct plugfs_config *cfg);

#endif
