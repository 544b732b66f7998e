/* SPDX-License-Identifier: MIT */
/*
 * Liveness of registrations: probes of their sockets, the hysteresis that
 * turns probe results into health (struct reg_runtime), and the prober
 * thread that probes every registration each interval and applies the
 * results with registry_set_runtime (docs/design.md, "Threads and locks").
 *
 * Probes never hold the registry mutex: a round takes a snapshot, probes
 * without any lock, then applies the results one registration at a time.
 */
#ifndef PLUGFS_PROBE_H
#define PLUGFS_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registry.h"

/* Sockets in flight at once in one poll set. */
#define PROBE_MAX_INFLIGHT 64

struct probe_options {
	bool enabled;	      /* false: [probe] mode = none, nothing is probed */
	unsigned interval_ms; /* between rounds */
	unsigned timeout_ms;  /* per probe */
	unsigned failures;    /* consecutive failures before alive turns dead, >= 1 */
	/* Clock for probed_at and since; NULL = time(NULL).  Tests inject one. */
	int64_t (*now)(void *arg);
	void *now_arg;
};

/* One probe's outcome. */
struct probe_result {
	bool ok;
	/* Not probed: this process had no fd (or memory) for the socket.  Says
	 * nothing of the plugin; its state stays as it was. */
	bool skipped;
	char error[REG_HEALTH_ERR_MAX]; /* "" when ok: "connection refused",
					   "no such file", "timeout", or strerror */
};

/*
 * The `connect' probe of n socket paths: a non-blocking connect() to each,
 * at most PROBE_MAX_INFLIGHT in flight, each bounded by timeout_ms from its
 * own start (poll), so a socket that never completes delays no other.  A
 * connection made, or EAGAIN (a full backlog: the plugin is there but busy)
 * is alive; ECONNREFUSED, ENOENT and every other error are dead, except a
 * socket() that fails for want of an fd or memory (EMFILE, ENFILE, ENOBUFS,
 * ENOMEM): that one is skipped, the daemon's problem.  out[i] is
 * the result of paths[i] (caller's array of n).  Returns 0 or -ENOMEM.
 */
int probe_connect_many(const char *const *paths, size_t n, unsigned timeout_ms,
		       struct probe_result *out);

/*
 * The hysteresis: the runtime state after a probe with result res, from
 * old.  A success makes it alive (failures 0, error "").  A failure counts
 * one more consecutive failure and keeps the error; an alive registration
 * turns dead when the count reaches `failures'; an unknown one (never
 * probed: a new registration) or a dead one is dead at once.  since is now
 * when health changed, else old's; probed_at is now.  A skipped probe
 * leaves old as it is.
 */
void probe_next_runtime(const struct reg_runtime *old, const struct probe_result *res,
			unsigned failures, int64_t now, struct reg_runtime *out);

/*
 * One round, synchronously on the calling thread: snapshots the registry,
 * probes every registration in parallel (bounded by the timeout) and
 * applies the results with registry_set_runtime (events, and a new active
 * registration, go out then).  Used at start, before the daemon reports
 * ready, and by the prober thread.  Returns the number probed or -errno.
 */
int probe_round(struct registry *r, const struct probe_options *o);

/* The first probe of a registration that is not in the registry yet (a
 * `register'): *rt is what probe_next_runtime makes of an unknown state,
 * alive or dead.  Blocks at most o->timeout_ms. */
void probe_first(const char *socket, const struct probe_options *o, struct reg_runtime *rt);

struct prober;

/* Starts the prober thread: a round every interval_ms until prober_stop.
 * The options are copied.  Nothing is started when !o->enabled (*out is
 * then NULL, and prober_stop(NULL) does nothing).  0 or -errno. */
int prober_start(struct registry *r, const struct probe_options *o, struct prober **out, char *err,
		 size_t errlen);
/* Stops the thread (waits for a round under way: at most one timeout per
 * PROBE_MAX_INFLIGHT registrations) and frees p.  NULL is a no-op. */
void prober_stop(struct prober *p);

#endif
