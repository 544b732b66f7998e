/* SPDX-License-Identifier: MIT */
/*
 * The upkeep of the state file's space (store_space.c), private to
 * registry/: the checkpointer thread and the reserve for deregistrations
 * (registry_start_upkeep in registry.h says what they do).  Every function
 * here but space_stop expects the registry mutex held; sp may be NULL (no
 * upkeep: they do nothing).
 */
#ifndef PLUGFS_REGISTRY_SPACE_H
#define PLUGFS_REGISTRY_SPACE_H

#include <stdbool.h>
#include <stddef.h>

struct registry;
struct store_space;

/* Starts the upkeep of r (r->space); see registry_start_upkeep. */
int space_start(struct registry *r, const struct registry_upkeep *o, char *err, size_t errlen);
/* Stops the thread, closes its connection and the reserve (kept on disk
 * for the next start), and gives the commits back to SQLite's own
 * checkpoints.  Takes the registry mutex itself (not held by the caller). */
void space_stop(struct registry *r);

/* A deregistration failed for a full disk: releases the reserve.  True
 * when it released space (the caller commits once more), false when
 * there is none to release. */
bool space_release_reserve(struct store_space *sp);

/* Before a mutation that adds rows: -ENOSPC with a message naming the
 * state file, what and the reserve while the reserve is released or
 * cannot be allocated; else 0. */
int space_check_room(struct store_space *sp, const char *what, char *err, size_t errlen);

void space_stats(struct store_space *sp, struct registry_upkeep_stats *out);

#endif
