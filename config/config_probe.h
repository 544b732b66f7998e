/* SPDX-License-Identifier: MIT */
/* Private to config/: the [probe.TYPE] sections (probe_types.c; the
 * section name's rule in keys.c). */
#ifndef PLUGFS_CONFIG_PROBE_H
#define PLUGFS_CONFIG_PROBE_H

#include <stddef.h>

#include "config.h"

#define PROBE_SECTION_PREFIX "probe."

/* keys.c: the TYPE of a section named "probe.TYPE" (possibly ""), or NULL
 * when section is not one. */
const char *config_probe_section_type(const char *section);

struct parse_ctx;

/* The entry of type in c->cfg->probe.types, added (first seen on line)
 * when new.  NULL: out of memory. */
struct reg_probe_type *config_probe_type_entry(struct parse_ctx *c, const char *type,
					       unsigned line);

/* `name = value' in the [probe.TYPE] section the parse is in: one of
 * [probe]'s keys.  1 (go on) or 0 with the error recorded in c. */
int config_probe_type_key(struct parse_ctx *c, const char *name, const char *value);

/* After the whole file: every section's type is one of [registry] types
 * (what a section does not set is [probe]'s: reg_probe_settings_of).  0,
 * or -EINVAL with the message in msg and the section's line in *line. */
int config_probe_types_finish(const struct parse_ctx *c, unsigned *line, char *msg, size_t len);

void config_probe_types_free(struct plugfs_config *cfg);

#endif
