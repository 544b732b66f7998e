/* SPDX-License-Identifier: MIT */
/*
 * plugfs registry: per (type, name) ordered lists of registrations, persisted
 * in SQLite ("persist, then apply"), with events for subscribers.
 *
 * Threading: every public function takes the registry's internal mutex, so a
 * registry may be shared by the control server, the filesystem and the main
 * thread.  Mutations are serialised by a second lock (the commit lock,
 * taken first) and release the mutex while their COMMIT waits for the disk:
 * getters and registry_set_runtime never wait for an fsync.  Event
 * callbacks run synchronously, after the commit and after the in-memory
 * state changed, with the mutex held: a callback must not call a mutating
 * registry function (it fails with -EDEADLK), must copy what it keeps, and
 * must not block (queue work instead).  A subscriber's wait callback
 * (registry_subscribe_wait) runs after the mutex is released, on the
 * thread that emitted, before the mutation returns: the filesystem's waits
 * there until the kernel took its invalidations, so that a mutation's
 * return still means the next lookup sees it; docs/design.md "Threads and
 * locks".  Read-only getters (registry_snapshot, registry_get_plugin) are
 * safe from a callback (the mutex is recursive).
 *
 * Errors: functions return 0 or a negative errno and write a message naming
 * the field and the rule into err (errlen bytes, always NUL-terminated when
 * errlen > 0).  -EINVAL: rejected input; -ENOENT: not found; -EIO/-ENOSPC/
 * -EROFS/-EBUSY: the store failed (nothing changed; SQLITE_FULL -> -ENOSPC,
 * SQLITE_READONLY -> -EROFS, SQLITE_BUSY -> -EBUSY, anything else -> -EIO,
 * the message carries sqlite3_errmsg); -ENOMEM; -ENOTSUP: a state file of a
 * newer schema; -EDEADLK: a mutation called from an event callback.
 *
 * Persist, then apply: a mutation validates everything, runs one BEGIN
 * IMMEDIATE ... COMMIT, and only then changes memory and emits events.  A
 * failed commit leaves memory and the file as they were and emits nothing.
 *
 * Types: the configured types are stored in the file with stable ids.  Rows
 * of a type that is in the file but no longer configured are kept untouched
 * and not served: snapshots, lookups, counts and deregister_alloc cover the
 * configured types only; configuring the type again brings them back.
 *
 * Cost: finding a plugin by (type, name) and the plugins of an alloc are
 * hash lookups, O(1) on average; within a plugin the list (the few allocs
 * of it running at once) is scanned.
 */
#ifndef PLUGFS_REGISTRY_H
#define PLUGFS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reg_model.h"

struct registry_options {
	const char *const *types; /* configured types, required, >= 1 */
	size_t n_types;
	const char *const *socket_roots; /* allowed socket prefixes; none = any */
	size_t n_socket_roots;
	int64_t tombstone_ttl;	 /* seconds */
	const char *synchronous; /* "off" | "normal" | "full" | "extra" */
	/* Clock for registered_at, updated_at and tombstone expiry; NULL =
	 * time(NULL).  Tests inject their own. */
	int64_t (*now)(void *arg);
	void *now_arg;
	/* Read-only (for tools that only look, e.g. `plugfs state dump'):
	 * the file is opened with SQLITE_OPEN_READONLY, quick_check runs on
	 * it, and it is copied with the SQLite backup API into a private
	 * in-memory database; the normal open (migration included) then runs
	 * on that copy, and the file is never written: no schema creation,
	 * no type rows, no migration, no backup, no -wal or -shm left behind
	 * (a WAL file without its -wal is read as immutable).  A newer schema
	 * is still refused.  A missing file is -ENOENT (not created); an
	 * empty one is an empty registry; a version-1 file is served as its
	 * migration stores it (ids and seq 1, 2, ... in document order,
	 * registered at the open time) and stays version 1.  A configured
	 * type absent from the file has no plugins and id 0 in
	 * registry_types.  Every mutating function (register, deregister,
	 * deregister_alloc, import_legacy_json, expire_tombstones) returns
	 * -EROFS.  synchronous is unused. */
	bool read_only;
};

enum reg_event_type {
	REG_EV_REGISTERED,
	REG_EV_UPDATED,
	REG_EV_DEREGISTERED,
	REG_EV_ACTIVE,
	REG_EV_RUNTIME, /* registry_set_runtime changed a registration */
};
/* "registered", "updated", "deregistered", "active", "runtime" */
const char *reg_event_name(enum reg_event_type t);

struct reg_event {
	enum reg_event_type type;
	const char *plugin_type;
	const char *plugin_name;
	int64_t plugin_id;
	/* REGISTERED, UPDATED, RUNTIME: the new state of the entry;
	 * DEREGISTERED: the removed entry; ACTIVE: the new active entry, or
	 * NULL when none is (the list emptied). */
	const struct registration *reg;
	/* ACTIVE only: the previous and new active alloc, either may be NULL. */
	const char *old_alloc;
	const char *new_alloc;
	/* RUNTIME only: the runtime state before the change (the new one is
	 * reg->runtime). */
	const struct reg_runtime *old_runtime;
	/* The plugin's list after the change (NULL when it emptied). */
	const struct reg_plugin *plugin;
};

typedef void (*reg_event_cb)(const struct reg_event *ev, void *arg);
/* Called with no registry lock held after the events of a mutation (or a
 * runtime change) were delivered to the callbacks; the mutation returns
 * after it.  It may block on work that does not need the registry. */
typedef void (*reg_wait_cb)(void *arg);

struct registry;

/*
 * Opens (creating when missing) the state file at db_path and loads it.
 * Runs PRAGMA quick_check, refuses a schema newer than this binary, backs a
 * version-1 file up to <db_path>.v1.bak and migrates it, persists the
 * configured types (their ids are inode sources).  db_path ":memory:" works
 * for tests.  On success *out is the registry, to be closed with
 * registry_close.
 *
 * Failures (nothing is changed in the file): -EIO "integrity check failed"
 * (not a database, quick_check found damage), -ENOTSUP (user_version newer
 * than this binary's schema version), -EINVAL (bad options, unknown tables with user_version 0, a
 * version-1 entry that fails validation: the file stays version 1), -EROFS
 * (the file can only be opened read-only).  A version-1 file is user_version
 * 1, or user_version 0 with a `kv' table; its legacy document is migrated in
 * one transaction (entries of types not configured are kept, not served) and
 * the `kv' table dropped; the backup keeps it.  Tombstones older than
 * tombstone_ttl are deleted on open (not on a full disk: they are left for
 * the next expiry, and the open goes on).  opts->read_only: none of the writes
 * above happen (see struct registry_options).
 */
int registry_open(const char *db_path, const struct registry_options *opts, struct registry **out,
		  char *err, size_t errlen);
void registry_close(struct registry *r);

/* Checks a state file offline without changing it (opened read-only,
 * never created; the checks run on an in-memory copy, migrated as
 * registry_open would).  0 when good, including an empty file and a
 * version-1 file that registry_open would migrate (the migration's own
 * words otherwise); -ENOENT when missing; -ENOTSUP when newer; -EIO with
 * the first problem found (integrity, dangling rows, a sequence counter
 * below a stored seq, a field that fails validation).  A plugin without
 * registrations is good: its row outlives its list so that its id stays the
 * same.  1 when good once rolled back: the file has a hot journal (a
 * transaction that did not end), which the next registry_open rolls back;
 * the checks ran on a copy rolled back in a private directory. */
int registry_check_file(const char *db_path, char *err, size_t errlen);

/*
 * Registers one alloc under each of types[0..n_types) in one transaction.
 * Validates everything first (nothing stored on error).  Events in order per
 * type: REGISTERED or UPDATED, then ACTIVE when the front changed.  An
 * identical re-registration is a no-op without events.
 */
int registry_register(struct registry *r, const char *const *types, size_t n_types,
		      const struct reg_spec *spec, char *err, size_t errlen);

/* Whether registry_register of spec under types would pass every rule:
 * the types configured and given once, each field of spec
 * (reg_validate_spec), its socket under the socket roots, a registry that
 * is not read-only.  Nothing is stored and nothing touched but the rules,
 * so a caller checks a request whole before it acts on it (the control
 * server, before it probes the socket).  0, or -EINVAL / -EROFS with the
 * message the registration itself would give.  Any thread. */
int registry_check_register(struct registry *r, const char *const *types, size_t n_types,
			    const struct reg_spec *spec, char *err, size_t errlen);

/* Removes (type, name, alloc).  Unknown entry: 0, no event, no change.
 * *removed (may be NULL) says whether an entry was removed (false on an
 * error), so that a caller needs no lookup first (which would race). */
int registry_deregister(struct registry *r, const char *type, const char *name, const char *alloc,
			bool *removed, char *err, size_t errlen);

/* registry_deregister of (type, name, alloc) only while its source is
 * source (a discovery's, "discover.NAME"): a compare-and-deregister, the
 * source compared under the same locks as the removal is planned and
 * committed, so a register that made it another source in between (the
 * control socket's, of the same alloc) is kept and *removed is false.
 * source NULL or "" is the control socket's.  Any thread. */
int registry_deregister_if_source(struct registry *r, const char *type, const char *name,
				  const char *alloc, const char *source, bool *removed, char *err,
				  size_t errlen);

/* Removes every registration of alloc, across all types, in one transaction.
 * *removed (may be NULL) receives the count. */
int registry_deregister_alloc(struct registry *r, const char *alloc, size_t *removed, char *err,
			      size_t errlen);

/*
 * Group commit: the mutations m[0..n) of many clients, each validated and
 * planned alone (a bad one fails alone, with its own message, and changes
 * nothing), the valid ones committed together in one transaction (one
 * fsync), in array order.  A mutation that touches a (type, name) or an
 * alloc an earlier one of the group touches starts a new transaction, so
 * that each is planned on the state its predecessors left.  Events go out
 * in array order.  When a transaction of several fails (the disk), each of
 * its mutations is tried again alone, so that each gets its own result.
 * Each m[i].rc (and err, removed) is set; returns how many succeeded.
 */
enum reg_mutation_op { REG_MUT_REGISTER, REG_MUT_DEREGISTER, REG_MUT_DEREGISTER_ALLOC };
struct reg_mutation {
	enum reg_mutation_op op;
	/* REGISTER: as registry_register */
	const char *const *types;
	size_t n_types;
	const struct reg_spec *spec;
	/* DEREGISTER: type, name, alloc; DEREGISTER_ALLOC: alloc */
	const char *type, *name, *alloc;
	/* DEREGISTER: when set, only a registration whose source is this
	 * ("" the control socket's) is removed; another is kept, removed 0
	 * (registry_deregister_if_source).  NULL: whatever its source. */
	const char *if_source;
	/* The result: 0 or -errno with err; removed for the deregisters. */
	int rc;
	size_t removed;
	char err[REG_ERR_MAX];
};
size_t registry_mutate(struct registry *r, struct reg_mutation *m, size_t n);

/*
 * A change that is not persisted: sets the runtime state of (type, name,
 * alloc) to *rt in memory, under the registry mutex, without touching
 * SQLite.  Then the registry elects the active registration again, and
 * events go out through the same delivery as persisted mutations (in
 * order, after memory changed): RUNTIME with the entry, then ACTIVE when
 * the active one changed.  *changed (may be NULL) says whether an event
 * went out: a state that reg_runtime_differs finds the same is stored
 * (probed_at, failures) without an event.  Works on a
 * read-only registry too (nothing is written).  0; -ENOENT when there is no
 * such entry; -EINVAL for a type not configured; -EDEADLK from a callback.
 */
int registry_set_runtime(struct registry *r, const char *type, const char *name, const char *alloc,
			 const struct reg_runtime *rt, bool *changed, char *err, size_t errlen);

/* Deep copy of all plugins, or only those of type when type != NULL. */
int registry_snapshot(struct registry *r, const char *type, struct reg_snapshot *out);

/*
 * What a probe round needs of each registration of type (NULL: of every
 * type), copied under the registry mutex (registry/targets.c): the keys,
 * the socket, the probe settings and the health, in (type, name) order,
 * each plugin's registrations by seq, highest first.  Far cheaper than a
 * snapshot: one array and one block of strings.  0 or -ENOMEM; free with
 * reg_probe_targets_free (a zeroed value may be freed).
 */
struct reg_probe_target {
	int64_t id; /* the registration's persisted id */
	const char *type, *name, *alloc, *socket;
	const char *csi_name; /* "" when not given */
	enum reg_probe probe;
	struct reg_runtime runtime;
};
struct reg_probe_targets {
	struct reg_probe_target *t;
	size_t n;
	char *strings; /* where the strings of t are */
};
int registry_probe_targets(struct registry *r, const char *type, struct reg_probe_targets *out);
/* The same, of the registrations keep(arg, type, g) keeps only: asked once
 * per registration, under the registry mutex (it must not block, nor call
 * the registry); keep NULL keeps all.  A round leaves out what the watches
 * see (probe/live.c): neither copied nor sorted. */
typedef bool (*reg_target_keep_fn)(void *arg, const char *type, const struct registration *g);
int registry_probe_targets_kept(struct registry *r, const char *type, reg_target_keep_fn keep,
				void *arg, struct reg_probe_targets *out);
void reg_probe_targets_free(struct reg_probe_targets *t);

/* Deep copy of one plugin.  -ENOENT when it has no registration. */
int registry_get_plugin(struct registry *r, const char *type, const char *name,
			struct reg_plugin *out);
/* Deep copy of one registration, (type, name, alloc), without copying
 * its plugin's list (free with registration_free_contents).  -ENOENT when
 * there is none. */
int registry_get_registration(struct registry *r, const char *type, const char *name,
			      const char *alloc, struct registration *out);

/*
 * The (type, name) of the configured types that were registered once and
 * whose list is empty now.  Such a plugin keeps its persisted id (its row
 * stays in the state file), so registering it again gives back the same id;
 * meanwhile it is in no snapshot, count or lookup.  Calls fn for each, in no
 * particular order, with the registry mutex held (the strings are borrowed
 * for the call); stops at fn's first non-zero return and returns it, else 0.
 */
typedef int (*registry_empty_fn)(void *arg, const char *type, const char *name, int64_t plugin_id);
int registry_each_empty_plugin(struct registry *r, registry_empty_fn fn, void *arg);

/*
 * Every plugin with at least one registration, without copying: calls fn
 * for each, in no particular order, with the registry mutex held (p is
 * borrowed for the call); stops at fn's first non-zero return and returns
 * it, else 0.  O(n): what building the filesystem view at start uses.
 */
typedef int (*registry_plugin_fn)(void *arg, const struct reg_plugin *p);
int registry_each_plugin(struct registry *r, registry_plugin_fn fn, void *arg);

/*
 * registry_each_plugin a slice at a time, taking the mutex once per call
 * (a walk of any size never holds it long): from *pos (0 to begin) whole
 * slots of the index until at least max plugins were seen, *pos then where
 * the next call goes on.  1 while more remain, 0 at the end, or fn's first
 * non-zero return.  Across calls: a plugin that has registrations during
 * the whole walk is seen at least once, and twice at most when the index
 * grew between two calls (its table only grows, by powers of two, which
 * never moves an entry to a slot before the one it was in); one registered
 * or emptied meanwhile may or may not be seen.
 */
int registry_each_plugin_slice(struct registry *r, size_t *pos, size_t max, registry_plugin_fn fn,
			       void *arg);

/* Configured types and their persisted ids (stable across restarts).  The
 * arrays belong to the registry and live as long as it. */
size_t registry_types(struct registry *r, const char *const **names, const int64_t **ids);

/* Counts for status. */
void registry_counts(struct registry *r, size_t *n_plugins, size_t *n_registrations);
/* Gives back the memory SQLite's page cache holds for the state file's
 * connection (sqlite3_db_release_memory): the load read every page once,
 * and nothing reads them again but the next commit, which reads the few it
 * needs.  The daemon calls it once the view is built. */
void registry_release_memory(struct registry *r);

/* The commits of mutations since the registry opened, for metrics: how
 * long each COMMIT took (its fsync included), per bucket of
 * reg_commit_bounds (seconds; counts[REG_COMMIT_BUCKETS] is above the
 * last), their sum, and the commits that failed. */
#define REG_COMMIT_BUCKETS 12
extern const double reg_commit_bounds[REG_COMMIT_BUCKETS];
struct reg_commit_stats {
	uint64_t counts[REG_COMMIT_BUCKETS + 1];
	double sum_seconds;
	uint64_t failed;
};
void registry_commit_stats(struct registry *r, struct reg_commit_stats *out);

/*
 * The upkeep of the state file's space (registry/store/store_space.c), started
 * by the daemon after registry_open; registry_close stops it.  Without it
 * SQLite checkpoints its WAL itself (every 1,000 pages, in the commit) and
 * there is no reserve.
 *
 * - Checkpoints on a thread of its own with a connection of its own (never
 *   the registry mutex, never a FUSE handler): a PASSIVE checkpoint (it
 *   blocks no writer) once the WAL holds checkpoint_bytes that the last
 *   checkpoint did not copy, a RESTART
 *   (writers wait for it) once it holds wal_limit_bytes, so that the next
 *   commit starts the WAL again, and a TRUNCATE (the -wal to 0 bytes) after
 *   idle_ms without a commit.  journal_size_limit is wal_limit_bytes.
 * - The reserve: a file of reserve_bytes beside the state file
 *   (`<path>-reserve', allocated with posix_fallocate).  A deregistration
 *   (deregister, deregister_alloc) whose commit fails for a full disk
 *   releases it (truncates it to 0) and commits again.  While it is
 *   released, or cannot be allocated for want of space, registrations and
 *   imports are refused (-ENOSPC, naming the reserve); the upkeep thread
 *   allocates it again once that much space is free (every second), under
 *   the registry mutex, so that it never takes the space a deregistration
 *   is committing into.
 *
 * 0 in a field is its default: 128 KiB, 4 x checkpoint_bytes, 1000 ms,
 * 256 KiB.  o may be NULL (every default).  reserve_bytes SIZE_MAX: no
 * reserve.  0 or -errno (a reserve path that is not a regular file of
 * ours, a connection that cannot be opened); a full disk is not an error
 * (the reserve waits for space).
 */
struct registry_upkeep {
	size_t checkpoint_bytes;
	size_t wal_limit_bytes;
	unsigned idle_ms;
	size_t reserve_bytes;
};
int registry_start_upkeep(struct registry *r, const struct registry_upkeep *o, char *err,
			  size_t errlen);

/* What the upkeep did since it started, for metrics and tests. */
struct registry_upkeep_stats {
	bool running;
	uint64_t passive, restart, truncate; /* checkpoints that ran to their end */
	uint64_t failed;		     /* checkpoints that failed (busy, full disk) */
	bool reserve_held;		     /* the reserve is allocated */
	uint64_t reserve_released;	     /* deregistrations that needed it */
};
void registry_upkeep_stats(struct registry *r, struct registry_upkeep_stats *out);

/* Deletes tombstones older than tombstone_ttl; returns how many or -errno.
 * (register ignores expired tombstones anyway; this only reclaims space.) */
int registry_expire_tombstones(struct registry *r, char *err, size_t errlen);

/*
 * The discovery's holds (daemon/discover.c): an allocation of source
 * (REG_SOURCE_DISCOVER + a section's name) deregistered by hand, or
 * forgotten after forget_after, whose socket (dev, ino, ctime) is still
 * there is not registered again until another socket is; the hold is
 * stored so that a restart keeps it.  registry_hold stores or replaces the hold of
 * (source, alloc), registry_unhold deletes it (none: a no-op), and
 * registry_holds calls fn for each stored one, (source, alloc) order (a
 * negative return stops and is returned).  Each is one transaction of its
 * own, under the commit lock; not from inside an event callback.  0 or
 * -errno with err.
 */
struct reg_hold {
	const char *source;
	const char *alloc;
	uint64_t dev, ino;
	int64_t ctime_ns; /* the socket's change time, ns since the epoch */
	int64_t held_at;  /* unix seconds */
};
int registry_hold(struct registry *r, const char *source, const char *alloc, uint64_t dev,
		  uint64_t ino, int64_t ctime_ns, char *err, size_t errlen);
int registry_unhold(struct registry *r, const char *source, const char *alloc, char *err,
		    size_t errlen);
typedef int (*registry_hold_fn)(void *arg, const struct reg_hold *h, char *err, size_t errlen);
int registry_holds(struct registry *r, registry_hold_fn fn, void *arg, char *err, size_t errlen);

/* Imports legacy JSON ({"Plugins": {type: {name: PluginInfo}}}) in one
 * transaction, as if each entry were registered in document order.  Types
 * not configured are rejected (nothing imported). *imported may be NULL.
 * PluginInfo: AllocID and ConnectionInfo.SocketPath required strings;
 * Version optional; Type ("controller" | "node" | "monolith") becomes kind,
 * absent = derived from the type; Options a string map; Name, when present,
 * equals its key.  Every field is validated as for registry_register and
 * errors name the entry ("legacy JSON: Plugins.csi-node.p: ...").
 * *imported receives the entries that changed something (identical entries
 * are no-ops).  The JSON is read with SQLite's JSON functions. */
int registry_import_legacy_json(struct registry *r, const char *json, size_t *imported, char *err,
				size_t errlen);

/* Subscribes cb; returns a positive subscription id or -errno.  Events are
 * delivered in commit order.  Safe from a callback: cb then gets the events
 * of the next mutation on, none of the one being delivered (whose changes
 * are already in what cb's owner can read). */
int registry_subscribe(struct registry *r, reg_event_cb cb, void *arg);
/* As registry_subscribe, with wait called after each emission that reached
 * cb, once the mutex is released (see reg_wait_cb).  At most 8 such
 * subscribers (-ENOSPC).  Unsubscribing one waits until no thread is in its
 * wait callback; it must not be called from one. */
int registry_subscribe_wait(struct registry *r, reg_event_cb cb, reg_wait_cb wait, void *arg);
/* Unknown ids are ignored.  Safe from a callback (also its own): cb gets no
 * further event. */
void registry_unsubscribe(struct registry *r, int id);

/* Runs fn with the registry mutex held (e.g. take a snapshot and subscribe
 * without missing or doubling an event).  fn must not mutate (the commit
 * lock is taken before the mutex, never after). */
void registry_locked(struct registry *r, void (*fn)(struct registry *r, void *arg), void *arg);

/* Validation helpers, shared with config and the CLI.  0 or -EINVAL with a
 * message naming `field` and the rule. */
int reg_validate_name(const char *field, const char *s, char *err, size_t errlen);
int reg_validate_printable(const char *field, const char *s, char *err, size_t errlen);
/* A CSI plugin name (GetPluginInfo's `name'): 1-63 of [A-Za-z0-9.-],
 * beginning and ending with a letter or a digit. */
int reg_validate_csi_name(const char *field, const char *s, char *err, size_t errlen);
/* probe and csi_name together: probe is one of the modes, and a csi_name
 * ("" or NULL = none) comes only with probe csi and follows
 * reg_validate_csi_name. */
int reg_validate_probe(enum reg_probe probe, const char *csi_name, char *err, size_t errlen);
/* A registration's source: NULL or "" (the control socket), or
 * REG_SOURCE_DISCOVER followed by a name (reg_validate_name). */
#define REG_SOURCE_DISCOVER "discover."
int reg_validate_source(const char *source, char *err, size_t errlen);
/* A discovery's hold (registry_hold): source is a discovery's
 * (REG_SOURCE_DISCOVER + a name), alloc follows reg_validate_name. */
int reg_validate_hold(const char *source, const char *alloc, char *err, size_t errlen);
/* How a source is shown: "control" for NULL or "", else source. */
static inline const char *reg_source_name(const char *source)
{
	return source && *source ? source : "control";
}
/*
 * The path rules, the same for sockets, socket roots and the config's
 * paths: absolute, normalised (no empty, `.' or `..' component, no
 * trailing `/'), no control characters (C0, DEL, C1), shorter than
 * PATH_MAX.  `/' itself is accepted only when root_ok (a socket root, a
 * directory); reg_validate_socket_path is reg_validate_path(..., false)
 * and valid UTF-8 (what the protocol can carry).
 */
int reg_validate_path(const char *field, const char *s, bool root_ok, char *err, size_t errlen);
int reg_validate_socket_path(const char *field, const char *s, char *err, size_t errlen);
/*
 * The one "under a root" rule: true when path is strictly below root,
 * component by component ("/run/a.sock" is under "/run"; "/run" itself and
 * "/runx/a.sock" are not).  A trailing `/' on root is ignored, and a root
 * of `/' covers every absolute path but `/' itself.  Pure string work: no
 * symlink is followed (both sides passed reg_validate_path).
 */
bool reg_path_under(const char *path, const char *root);

#endif
