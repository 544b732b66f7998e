/* SPDX-License-Identifier: MIT */
/*
 * Liveness of registrations: probes of their sockets, the hysteresis that
 * turns probe results into health (struct reg_runtime), and the prober
 * thread that probes every registration each interval and applies the
 * results with registry_set_runtime (docs/design.md, "Threads and locks").
 *
 * Probes never hold the registry mutex: a round copies what it needs, probes
 * without any lock, then applies the results one registration at a time.
 */
#ifndef PLUGFS_PROBE_H
#define PLUGFS_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registry.h"

/* Sockets in flight at once in one poll set. */
#define PROBE_MAX_INFLIGHT 256

struct probe_hooks;

struct probe_options {
	/* The settings: [probe] (policy.dflt; mode REG_PROBE_DEFAULT or NONE:
	 * not probed) for a type that is not in policy.types, each type's
	 * own there; the prober runs one thread per type of policy.types (one
	 * for everything when there are none).  A registration's are
	 * reg_probe_settings_of's.  prober_start copies them. */
	struct reg_probe_policy policy;
	/* Clock for probed_at and since; NULL = time(NULL).  Tests inject one. */
	int64_t (*now)(void *arg);
	void *now_arg;
	/* NULL, or a flag (read atomically): once it is true, a round under
	 * way ends within 50 ms with -ECANCELED and applies nothing.  The
	 * prober sets its own, so that prober_stop does not wait for a
	 * round of hung probes. */
	const bool *stop;
	/* The watches (probe/watch.c, started by prober_start when watch is
	 * true): a listener's exit and a socket's creation, removal or
	 * replacement probed at once, and the rounds skip what the watches
	 * see (docs/design.md, "Semantics"). */
	bool watch;
	const char *watch_exclude; /* nothing under it is watched: the daemon's mount */
	unsigned fd_reserve;	   /* descriptors no pidfd may take (the control server's) */
	unsigned max_watches;	   /* test knob: directories watched at most (0: the kernel's) */
	bool no_pidfd;		   /* test knob: every pidfd_open refused */
	/* Set by the prober on its own copy (NULL: a round of its own): what
	 * a round asks the watches (probe_internal.h). */
	const struct probe_hooks *hooks;
	/* NULL, or the prober's threads run their first round at once (the
	 * daemon's start round, with the mount served: each verdict applied
	 * as its probe ends) rather than an interval after prober_start, and
	 * once the last of them ended it calls first_round (on that thread,
	 * no lock held; not when prober_stop came first) with the number of
	 * registrations probed (or the first -errno) and the ms since
	 * prober_start. */
	void (*first_round)(void *arg, int n, int64_t ms);
	void *first_round_arg;
};

/* Whether anything is probed at all: the default or a type's mode is not
 * none. */
bool probe_enabled(const struct probe_options *o);

/* One probe's outcome. */
struct probe_result {
	bool ok;
	unsigned took_ms; /* from the probe's start to its outcome */
	/* Not probed: this process had no fd (or memory) for the socket.  Says
	 * nothing of the plugin; its state stays as it was. */
	bool skipped;
	/* A connect probe that connected: the pid of the process that called
	 * listen() on the socket, in this pid namespace (SO_PEERCRED); 0
	 * when unknown, and when that process has exited (SO_PEERPIDFD
	 * says so: the socket is served by another, e.g. the child of a
	 * plugin that daemonised, and the pid may be anyone's by now). */
	int pid;
	/* pid is known to be that listener, alive at the probe: the
	 * kernel's SO_PEERPIDFD (Linux 6.5) named a process not exited.
	 * False with SO_PEERCRED alone: the pid may be that of a listener
	 * gone, reused by an unrelated process. */
	bool pid_sure;
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
 * The `csi' probe of n socket paths: a csi.v1.Identity/Probe gRPC call
 * (HTTP/2 with prior knowledge over the Unix socket, libcurl) to each, and
 * when names && names[i] a GetPluginInfo whose name must equal names[i].
 * All run in parallel in one libcurl multi handle on the calling thread,
 * at most PROBE_MAX_INFLIGHT in flight, each bounded by timeout_ms from its
 * own start (both calls together), so one that accepts and never answers
 * delays no other.  Alive: grpc-status 0 and `ready' true or absent (the
 * CSI spec: absent means ready), and the name when asked.  Dead, with
 * out[i].error: "not ready", "grpc status N: message", "timeout",
 * "connection refused", "no such file", "HTTP status N", "plugin name is
 * X, expected Y", a malformed or truncated answer.  names may be NULL.
 * Needs probe_global_init first.  Returns 0, -ENOMEM or -EIO (libcurl's
 * multi interface failed).
 */
int probe_csi_many(const char *const *paths, const char *const *names, size_t n,
		   unsigned timeout_ms, struct probe_result *out);

/* The longest plugin name and vendor version probe_csi_identify hands
 * back (the CSI spec's names are at most 63 bytes). */
#define PROBE_CSI_TEXT_MAX 255

/* What a CSI plugin says it is (probe_csi_identify). */
struct probe_identity {
	struct probe_result res; /* ok: every call answered; else res.error */
	/* Not ok, and the plugin did answer: GetPluginInfo's name or version
	 * is no text (longer than PROBE_CSI_TEXT_MAX bytes, a NUL byte in
	 * it).  Asked again it says the same: a caller refuses it, it does
	 * not ask again.  false for every failure to answer. */
	bool invalid;
	bool controller;	 /* GetPluginCapabilities lists CONTROLLER_SERVICE */
	bool node;		 /* csi.v1.Node/NodeGetInfo answered (not UNIMPLEMENTED) */
	/* GetPluginInfo's name and vendor_version, NUL-terminated, as the
	 * plugin sent them (bytes, not checked against any name rule). */
	char name[PROBE_CSI_TEXT_MAX + 1];
	char version[PROBE_CSI_TEXT_MAX + 1];
};

/*
 * Identification of n CSI plugins (discovery): to each of paths, over the
 * csi probe's client, csi.v1.Identity/GetPluginInfo, then
 * GetPluginCapabilities (UNIMPLEMENTED: no capability), then
 * csi.v1.Node/NodeGetInfo (UNIMPLEMENTED: not a node plugin).  Parallel
 * and bounded as probe_csi_many (at most PROBE_MAX_INFLIGHT in flight, the
 * three calls of one plugin within timeout_ms from its start), so a plugin
 * that accepts and never answers holds back no other.  out[i] (caller's
 * array of n) is paths[i]'s; out[i].res.error as probe_csi_many's, or
 * "plugin name longer than 255 bytes", "plugin name has a NUL byte" (the
 * same for the version), which are the plugin's answer: out[i].invalid.
 * stop as probe_csi_until's (NULL: none).  Needs probe_global_init first;
 * any thread, one multi handle per call.  Returns 0, -ENOMEM, -EIO or
 * -ECANCELED.
 */
int probe_csi_identify(const char *const *paths, size_t n, unsigned timeout_ms,
		       struct probe_identity *out, const bool *stop);

struct plugfs_own_mount;
/*
 * The daemon's own mount (common's fsutil.h), where no probe of this
 * process ever looks up a path (docs/design.md, Hazards): every probe's
 * connect() runs on a connector thread, which first resolves the socket's
 * path one name at a time, stopping before the mount; a path that leads
 * there (a symlink on the way or at its end, a bind mount of it) fails at
 * once, dead with "socket path leads into plugfs's own mount", and is
 * never connected to (the csi probe's libcurl only after such a connect
 * made).  The watcher's adder checks it the same way before it watches a
 * socket's directory.  Takes a reference of its own; NULL drops it.  The
 * daemon sets it before its first probe; any thread.
 */
void probe_set_own_mount(struct plugfs_own_mount *m);

/* libcurl's global set-up, once per process before any thread probes (the
 * daemon's start); probe_global_cleanup at its end.  0 or -ENOMEM. */
int probe_global_init(void);
void probe_global_cleanup(void);

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
 * One round of every registration, synchronously: snapshots the registry,
 * probes each registration by the settings of its type and its own mode
 * when it has one (those of one mode and timeout together, the groups on threads of their own, all
 * in parallel: bounded by the largest timeout per PROBE_MAX_INFLIGHT) and applies each result with
 * registry_set_runtime as its probe ends (events, and a new active registration, go out then).  A
 * registration whose mode is none is not probed (and goes back to unknown if it was).  Tests and
 * benchmarks use it (the daemon's start round is the prober's first, o->first_round).  Returns the
 * number probed or -errno.
 */
int probe_round(struct registry *r, const struct probe_options *o);
/* The same for the registrations of one type only. */
int probe_round_type(struct registry *r, const struct probe_options *o, const char *type);

/*
 * The start's connect pass, before the mount is served: every probed
 * registration connected to once (csi ones too), its verdict applied as
 * its connect ends, except that a csi registration that accepts stays as
 * it is (unknown) until the prober's first round asks it.  A missing,
 * refusing or hung socket (the timeout) is dead before any consumer is
 * served; a plugin that accepts and never answers costs no wait here.
 * Returns how many were probed, or -errno.
 */
int probe_start_connect(struct registry *r, const struct probe_options *o);

/* The first probe of a registration of type that is not in the registry
 * yet (a `register'), by its override probe over its type's mode, csi_name
 * the plugin name its csi probe expects (NULL or "" = none): *rt is what
 * probe_next_runtime makes of an unknown state, alive or dead; unknown
 * when its mode is none.  Blocks at most the type's timeout; o->stop ends
 * it as a round's (within 50 ms, *rt unknown). */
void probe_first(const char *type, const char *socket, enum reg_probe probe, const char *csi_name,
		 const struct probe_options *o, struct reg_runtime *rt);

/* What was probed since the process started, for metrics (atomics: any
 * thread may read them). */
struct probe_stats {
	uint64_t ok, failed;	/* probes, by outcome (rounds and first probes) */
	uint64_t rounds;	/* probe_round calls that probed */
	uint64_t last_round_ms; /* how long the last round took */
};
void probe_stats(struct probe_stats *out);

struct prober;

/* Starts the prober: two threads per type of o->policy.types (also those whose
 * mode is none: a registration of theirs may have a mode of its own), one
 * for the registrations its probes connect to (and those not probed), one
 * for those it asks over csi, each a round of them every interval of its
 * type, until prober_stop (without types: two threads, every registration,
 * the default interval); o->first_round: the first rounds at once.
 * The options are copied.  Nothing is started when !probe_enabled(o) (*out is
 * then NULL, and prober_stop(NULL) does nothing).  0 or -errno. */
int prober_start(struct registry *r, const struct probe_options *o, struct prober **out, char *err,
		 size_t errlen);
/* Stops the threads (a round under way ends within 50 ms, its results not
 * applied) and frees p.  NULL is a no-op. */
void prober_stop(struct prober *p);

/* What the watches see, for metrics (zero when none run). */
struct probe_watch_stats {
	bool on;
	size_t pidfd, inotify, poll;		   /* registrations by watch kind */
	size_t dirs;				   /* directories watched */
	uint64_t events;			   /* events since the start */
	uint64_t probes;			   /* probes events made */
	uint64_t no_pidfd, watch_limit, fds_short; /* fallbacks since the start */
};
/* Any thread; p may be NULL. */
void prober_watch_stats(struct prober *p, struct probe_watch_stats *out);

#endif
