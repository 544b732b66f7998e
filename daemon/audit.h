/* SPDX-License-Identifier: MIT */
/* The daemon's audit log (daemon/audit.c). */
#ifndef PLUGFS_DAEMON_AUDIT_H
#define PLUGFS_DAEMON_AUDIT_H

#include <stdint.h>

#include "registry.h"

/* A registry subscriber (arg unused): logs each event as one line, and
 * for an `active' event caused by a health change, why (" (a2: connection
 * refused x3)").  Subscribe it from one registry only. */
void audit_log_change(const struct reg_event *ev, void *arg);
/* One line after the start-up probe round of n registrations, which took
 * ms: how many are dead, and which. */
void audit_probed_at_start(struct registry *r, int n, int64_t ms);

#endif
