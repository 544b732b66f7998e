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

/* Told of each probe as it ends: out[i] is final when done(arg, i) is
 * called (on the probing thread, once per i, in the order they end; none
 * after a stop).  So a caller applies each verdict when its own probe
 * ends, not when the slowest of the call does. */
struct probe_each {
	void (*done)(void *arg, size_t i);
	void *arg;
};

/* probe_connect_until and probe_csi_until that tell each (NULL: none). */
int probe_connect_each(const char *const *paths, size_t n, unsigned timeout_ms,
		       struct probe_result *out, const bool *stop, const struct probe_each *each);
int probe_csi_each(const char *const *paths, const char *const *names, size_t n,
		   unsigned timeout_ms, struct probe_result *out, const bool *stop,
		   const struct probe_each *each);

/*
 * What a finished call of the csi probe's comes to (csi.c), from libcurl's
 * result cc (a CURLcode), whether grpc-status arrived (the header callback
 * saw it: in the headers of a trailers-only answer, or in the trailers,
 * which follow the message), whether any of the body did, and whether the
 * call may be asked again (an identification below its retries).  A pure
 * function of its inputs; any thread.
 *   CSI_ANSWERED   the answer is whole: its grpc-status and body decide.
 *                  cc CURLE_OK, or a stream's or connection's error
 *                  (CURLE_HTTP2_STREAM, CURLE_HTTP2, CURLE_SEND_ERROR,
 *                  CURLE_RECV_ERROR) once grpc-status arrived: a server
 *                  that answers before the request's body is sent (a
 *                  trailers-only UNIMPLEMENTED, a RST_STREAM after it)
 *                  makes libcurl 7.88 fail the transfer after handing the
 *                  answer over (fixed in curl 8.3.0);
 *   CSI_ASK_AGAIN  CURLE_HTTP2_STREAM with nothing of an answer (the same
 *                  race, the answer dropped), when it may: the same call
 *                  on a new connection;
 *   CSI_FAILED     the transport's failure is the outcome (a timeout, an
 *                  answer too large, a refused connection, ...).
 */
enum csi_transfer { CSI_ANSWERED, CSI_ASK_AGAIN, CSI_FAILED };
enum csi_transfer csi_transfer_outcome(int cc, bool grpc_status_seen, bool body_seen,
				       bool may_ask_again);

/* The registrations of one probe mode only (REG_PROBE_CONNECT: also those
 * not probed, which it sets back to unknown; REG_PROBE_DEFAULT: every
 * one), of type (NULL: every type): a prober thread's round
 * (include/probe.h, probe_round_type). */
int probe_round_lane(struct registry *r, const struct probe_options *o, const char *type,
		     enum reg_probe lane);

/*
 * What a round of the prober asks the watches (probe/live.c gives them;
 * round.c calls them through these pointers, so neither file calls the
 * other's functions).  arg is live's.
 */
struct probe_hooks {
	void *arg;
	/* Before a round copies the registry: a mark of the verdicts the
	 * events applied so far; end when the round applied its own. */
	uint64_t (*begin)(void *arg);
	void (*end)(void *arg, uint64_t mark);
	/* Whether registration id, of health rt, needs no probe this round:
	 * what it would find is what the watches see. */
	bool (*skip)(void *arg, int64_t id, enum reg_probe mode, const struct reg_runtime *rt);
	/* Whether an event applied a verdict on id after mark: the round's
	 * result is older and is not applied. */
	bool (*newer)(void *arg, int64_t id, uint64_t mark);
	/* A round's result of id, applied (the listener's pid, to watch). */
	void (*result)(void *arg, int64_t id, const struct probe_result *res);
};

/*
 * Whether a round may leave registration out (the hooks' skip), from its
 * probe mode, its health rt and what the watches have of it (watch_of's
 * mask, watch.h): a missing socket whose name is watched (its creation
 * would be seen), or in connect mode one alive, no failure counted, with a
 * watched name and a pidfd sure to be its socket's listener (its exit or
 * its replacement would be seen).  A pidfd of a pid alone (SO_PEERCRED: the
 * listener may have handed the socket on and exited, its pid reused) is
 * no such word: those keep being connected to.  Pure.
 */
bool live_may_skip(enum reg_probe mode, const struct reg_runtime *rt, unsigned watch_mask);

struct live;
/* The watches of the registrations of r probed by o (the prober's copy,
 * which outlives it): a watcher, a registry subscription and the thread
 * that probes what the events name.  0 or -errno with err. */
int live_start(struct registry *r, const struct probe_options *o, struct live **out, char *err,
	       size_t errlen);
const struct probe_hooks *live_hooks(struct live *l);
void live_stop(struct live *l);
void live_stats(struct live *l, struct probe_watch_stats *out);

#endif
