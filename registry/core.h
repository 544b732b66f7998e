/* SPDX-License-Identifier: MIT */
/*
 * The registry object and the units that work on it, private to registry/,
 * top down: each file calls only files below it (the layers test checks it).
 *   group.c     the mutations (register, deregister), alone or in groups
 *   targets.c   what a probe round copies (registry_probe_targets)
 *   registry.c  the public API (open, close, the import, runtime changes, getters)
 *   txn.c       a mutation: plan, prepare, persist, apply, emit
 * the SQLite layer, store/ (store/store.h, store/schema.h, store/space.h):
 *   store/check_file.c   `state check' (registry_check_file)
 *   store/store_open.c   opening the file, or a private copy of it
 *   store/schema.c       schema versions and the migration ladder
 *   store/check.c        the rows' check (store_check_rows)
 *   store/store_hot.c    a file with a hot journal, read from a copy
 *   store/store_space.c  the checkpointer (the upkeep, space.h)
 *   store/store.c        transactions, the load, each mutation's statements
 *   store/store_check.c  quick_check, integrity_check, the start's check on
 *                        its own thread
 *   store/backup_same.c  whether a backup holds the file being migrated
 *   store/store_files.c  a file with its -wal, -shm and -journal; backups
 *   store/store_reserve.c  the reserve for deregistrations
 * and the values and rules both build on:
 *   legacy.c    the legacy JSON document (internal.h)
 *   index.c     the in-memory lookups (index.h)
 *   validate.c  the rules of names, paths, sockets and specs (internal.h)
 *   events.c    subscribers and the delivery of events
 *   errtext.c   the one stored copy of each probe failure's text
 *   model.c     the value types (registry.h, reg_model.h)
 * Every function here expects the registry mutex held by its caller.
 */
#ifndef PLUGFS_REGISTRY_CORE_H
#define PLUGFS_REGISTRY_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index.h"
#include "internal.h"
#include "store/store.h"

struct subscriber {
	int id;
	reg_event_cb cb;  /* NULL once unsubscribed during an emission */
	reg_wait_cb wait; /* NULL: nothing to wait for after the mutex */
	void *arg;
};

/* The most subscribers with a wait callback. */
#define REG_MAX_WAITERS 8

struct registry {
	pthread_mutex_t mu; /* recursive: getters work from event callbacks */
	/* Taken before mu by every writer of the store (mutations, expiry,
	 * import): one transaction at a time, and nothing changes what a
	 * mutation planned while its commit runs without mu. */
	pthread_mutex_t commit_mu;
	pthread_cond_t waits_done;	      /* with mu: waits_running dropped to 0 */
	int waits_running;		      /* threads in their wait callbacks */
	uint64_t emits;			      /* emissions so far (a caller's "did I emit") */
	struct reg_commit_stats commit_stats; /* st.commits, copied under mu */
	struct store st;
	char **types;
	int64_t *type_ids;
	size_t n_types;
	char **roots;
	size_t n_roots;
	int64_t ttl;
	bool read_only;
	int64_t (*now)(void *arg);
	void *now_arg;
	int64_t last_seq;
	struct reg_index ix;
	struct subscriber *subs;
	size_t n_subs, cap_subs;
	int next_sub_id;
	int emitting; /* > 0 while callbacks run */
	/* The upkeep (space.h), NULL when none runs. */
	struct store_space *space;
};

/* > 0 while this thread runs event callbacks (registry_emit): a mutation
 * from one is refused before it takes a lock. */
extern _Thread_local int registry_tls_emitting;

static inline void lock(struct registry *r)
{
	pthread_mutex_lock(&r->mu);
}

static inline void unlock(struct registry *r)
{
	pthread_mutex_unlock(&r->mu);
}

/* The registry's clock (registry_options.now, else time(NULL)). */
int64_t registry_now(const struct registry *r);
/* -EROFS, naming the state file and what (e.g. "registering"), for every
 * mutation of a registry opened read-only; else 0. */
int registry_refuse_read_only(const struct registry *r, const char *what, char *err,
			      size_t errlen);
/* Finds type among the configured types: 0 and its index in *idx (idx
 * may be NULL), or -EINVAL with the message in err. */
int registry_find_type(const struct registry *r, const char *type, size_t *idx, char *err,
		       size_t errlen);

/* ---- events.c ---- */

/* Delivers ev[0..n) to every subscriber of before the call, in order.
 * Subscribers see the state after the change (the caller applied it). */
void registry_emit(struct registry *r, const struct reg_event *ev, size_t n);
/* Releases the mutex (taken once by the caller) and, when an emission
 * happened since r->emits was emits0, runs the subscribers' wait callbacks
 * with no lock held (the filesystem's waits until the kernel took its
 * invalidations): a mutation returns only once they returned. */
void registry_unlock_and_wait(struct registry *r, uint64_t emits0);

/* ---- txn.c ---- */

enum change_op { CH_INSERT, CH_UPDATE, CH_REMOVE };

struct change {
	enum change_op op;
	size_t type_idx;
	struct plugin_node *p;	/* NULL before planning an INSERT of a new plugin */
	bool new_plugin;	/* p was created by this mutation */
	size_t idx;		/* UPDATE, REMOVE: index in p->pub.regs */
	struct registration nr; /* INSERT, UPDATE: the new entry (owned) */
	struct alloc_set *set;	/* INSERT: the set p joins */
	int64_t plugin_id;	/* INSERT: p's id (a new plugin's, from persist) */
};

/* One mutation: its planned changes, and what it needs after its commit
 * (allocated before it).  A zeroed batch is empty. */
struct batch {
	struct change *c;
	size_t n, cap;
	struct reg_event *ev; /* 2 per change at most */
	size_t n_ev;
	struct registration *dead_regs; /* removed entries, alive until emitted */
	size_t n_dead_regs;
};

void batch_free(struct batch *b);

/* Plans registering spec (validated) under the configured type ti at time
 * t into b; nothing when identical to what is registered.  0 or -ENOMEM. */
int txn_plan_register(struct registry *r, struct batch *b, size_t ti, const struct reg_spec *spec,
		      int64_t t);
/* Plans removing regs[idx] of p into b.  0 or -ENOMEM. */
int txn_plan_remove(struct batch *b, struct plugin_node *p, size_t idx);
/* Whether a change of one touches a plugin or an alloc a change of g
 * touches (then one is planned again after g is applied). */
bool txn_conflicts(const struct batch *g, const struct batch *one);
/* Whether a change of g touches alloc, or the plugin (configured type
 * type_idx, name) when name is not NULL. */
bool txn_touches(const struct batch *g, ssize_t type_idx, const char *name, const char *alloc);
/* Moves the planned changes of one (not prepared) to the end of g.  0 or
 * -ENOMEM (then both are as they were). */
int txn_join(struct batch *g, struct batch *one);
/* Orders the planned changes by type (as configured), then plugin name, so
 * that their events come in a stable order. */
void txn_sort(struct batch *b);
/* Sets regs[idx].runtime of p to *rt (different from what it is), elects
 * the active registration again and emits RUNTIME, and ACTIVE when the
 * active one changed.  Nothing is persisted; cannot fail. */
void txn_set_runtime(struct registry *r, struct plugin_node *p, size_t idx,
		     const struct reg_runtime *rt);
/* Runs b: prepare, persist in one transaction, apply to memory, emit.
 * The caller holds r->commit_mu and the mutex (once: it is released while
 * the transaction commits).  Consumes b.  A failure changes nothing
 * (memory, file, no event). */
int txn_execute(struct registry *r, struct batch *b, int64_t t, char *err, size_t errlen);

#endif
