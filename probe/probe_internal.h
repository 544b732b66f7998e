/* SPDX-License-Identifier: MIT */
/* Private to probe/: what the connect and the csi probes share. */
#ifndef PLUGFS_PROBE_INTERNAL_H
#define PLUGFS_PROBE_INTERNAL_H

#include <stdint.h>

#include "probe.h"

/* res failed with errno e: "connection refused", "no such file", "timeout"
 * (ETIMEDOUT) or strerror. */
void probe_set_errno(struct probe_result *res, int e);
/* res failed with the printf-style message. */
__attribute__((format(printf, 2, 3))) void probe_set_error(struct probe_result *res,
							   const char *fmt, ...);
void probe_set_ok(struct probe_result *res);
/* CLOCK_MONOTONIC in ms. */
int64_t probe_now_ms(void);

#endif
