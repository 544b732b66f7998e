/* SPDX-License-Identifier: MIT */
/* Private to probe/: what the connect and the csi probes share. */
#ifndef PLUGFS_PROBE_INTERNAL_H
#define PLUGFS_PROBE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "probe.h"

/* res failed with errno e: "connection refused", "no such file", "timeout"
 * (ETIMEDOUT) or strerror. */
void probe_set_errno(struct probe_result *res, int e);
/* res failed with the printf-style message. */
__attribute__((format(printf, 2, 3))) void probe_set_error(struct probe_result *res,
							   const char *fmt, ...);
void probe_set_ok(struct probe_result *res);

/* How often a probe loop looks at its stop flag while probes are in flight. */
#define PROBE_STOP_CHECK_MS 50

/* Whether stop (may be NULL) is set. */
static inline bool probe_stopped(const bool *stop)
{
	return stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE);
}

/* probe_connect_many and probe_csi_many that end within
 * PROBE_STOP_CHECK_MS of *stop becoming true, with -ECANCELED (out is
 * then partly filled).  stop NULL: never. */
int probe_connect_until(const char *const *paths, size_t n, unsigned timeout_ms,
			struct probe_result *out, const bool *stop);
int probe_csi_until(const char *const *paths, const char *const *names, size_t n,
		    unsigned timeout_ms, struct probe_result *out, const bool *stop);

#endif
