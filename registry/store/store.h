/* SPDX-License-Identifier: MIT */
/*
 * The SQLite store of the registry, private to registry/: open, load, and
 * the statements of each mutation (schema.c owns the schema versions and
 * their migrations).  The caller (txn.c) wraps mutations in store_begin ...
 * store_commit and serialises every call with the registry mutex.
 *
 * Its files, bottom up (each calls only files before it, and the
 * registry's value rules below them all: model.c, validate.c, legacy.c):
 * store_reserve.c, store_files.c (a file with its -wal, -shm and
 * -journal; backups), backup_same.c, store_check.c (quick_check,
 * integrity_check, the start's check on its own thread), store.c
 * (transactions, the load, the statements), store_space.c (the
 * checkpointer; space.h), store_hot.c (a file with a hot journal, from a
 * copy), check.c (the rows' check), schema.c (schema.h), store_open.c,
 * check_file.c (`state check').
 *
 * Schema (SCHEMA_VERSION 5):
 *   meta(key PRIMARY KEY, value)          key 'seq': the last seq given
 *   types(id AUTOINCREMENT, name UNIQUE)  configured types ever seen
 *   plugins(id AUTOINCREMENT, type_id, name, UNIQUE(type_id, name))
 *   registrations(id AUTOINCREMENT, plugin_id, alloc, socket, version, kind, probe, csi_name,
 *                 source, seq UNIQUE, registered_at, updated_at, UNIQUE(plugin_id, alloc))
 *   reg_options(reg_id, key, value, PRIMARY KEY(reg_id, key))
 *   tombstones(type, name, alloc, seq, deleted_at, PRIMARY KEY(type, name, alloc))
 *   holds(source, alloc, dev, ino, ctime_ns, held_at, PRIMARY KEY(source, alloc))
 *                                         the discovery's holds (registry_hold)
 * AUTOINCREMENT ids are never reused, so inode numbers derived from them
 * are stable for the life of the file.  A plugins row is never deleted: when
 * its list empties it stays (one row per (type, name) ever registered), so
 * a (type, name) that registers again keeps its id.
 */
#ifndef PLUGFS_REGISTRY_STORE_H
#define PLUGFS_REGISTRY_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "registry.h"

enum store_stmt {
	ST_INSERT_PLUGIN,
	ST_GET_TOMBSTONE,
	ST_DELETE_TOMBSTONE,
	ST_PUT_TOMBSTONE,
	ST_INSERT_REG,	     /* without probe, csi_name, source (defaults; also on version 2) */
	ST_INSERT_REG_PROBE, /* with them */
	ST_UPDATE_REG,
	ST_DELETE_REG,
	ST_DELETE_OPTIONS,
	ST_INSERT_OPTION,
	ST_SET_SEQ,
	ST_EXPIRE_TOMBSTONES,
	ST_PUT_HOLD,
	ST_DROP_HOLD,
	ST_COUNT
};

struct store {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *stmts[ST_COUNT];
	bool read_only; /* opened SQLITE_OPEN_READONLY: nothing is written */
	bool copy;	/* db is a private in-memory copy of the file at path */
	/* The copy is of the file rolled back: it had a hot journal (a
	 * transaction that did not end), which the next writable open rolls
	 * back in the file (store_hot.c). */
	bool rolled_back;
	struct reg_commit_stats commits; /* store_commit's timings */
	bool created;	/* store_open created the file (until it succeeds) */
	bool had_wal;	/* a -wal was beside the file when store_open opened it */
	struct store_check *check; /* the integrity check under way (store_check.c) */
};

/* The page size of a file store_open creates (a string, for the pragma). */
#define STORE_NEW_PAGE_SIZE "1024"

struct store_open_options {
	const char *synchronous; /* NULL = "full" */
	const char *const *types;
	size_t n_types;
	int64_t now; /* for migrated rows */
	/* Never write the file: work on a private in-memory copy of it
	 * (store_open_copy), migrated there as usual; type ids of types
	 * absent from the file are 0. */
	bool read_only;
};

/*
 * Opens, checks and migrates the file, writing nothing else: the caller
 * reads it (store_load), and only then store_open_finish writes (WAL mode,
 * the configured types), so that a file refused because a row or an index
 * cannot be read is left as it was.  With o->read_only the same runs on an
 * in-memory copy of the file (see store_open_copy).  On an error after
 * store_open succeeded, store_abandon.
 */
int store_open(struct store *s, const char *path, const struct store_open_options *o, char *err,
	       size_t errlen);
/* The writes of an open: WAL mode and o->synchronous, the configured types
 * added; fills type_ids (o->n_types) with their persisted ids. */
int store_open_finish(struct store *s, const struct store_open_options *o, int64_t *type_ids,
		      char *err, size_t errlen);
void store_close(struct store *s);
/* Closes s after a refusal, writing nothing: no checkpoint of a -wal that
 * was there before the open into the file (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE),
 * that -wal kept; a file the open created is removed again. */
void store_abandon(struct store *s);

/* Opens s->db on an existing path with SQLITE_OPEN_READONLY and query_only,
 * leaving no file behind: a WAL database without its -wal file (no
 * connection open) is opened immutable, since SQLite would otherwise create
 * the -wal and -shm and keep them.  -ENOENT (and nothing created) when path
 * does not exist.  s->path must be set. */
int store_open_db_read_only(struct store *s, const char *path, char *err, size_t errlen);

/* Opens path read-only (store_open_db_read_only), runs quick_check on it,
 * copies it with the backup API into a private in-memory database that
 * becomes s->db (s->copy) and closes the file again: nothing is written to
 * it.  A file with a hot journal is read from a copy rolled back in a
 * private directory (store_hot_copy_open; s->rolled_back).  s->path must
 * be set. */
int store_open_copy(struct store *s, const char *path, char *err, size_t errlen);

/* Copies path and its hot `-journal' into a new private directory (under
 * $TMPDIR, else /tmp), opens the copy for writing as s->db and reads it,
 * which rolls the copy back; *dir_out gets the directory, for
 * store_hot_copy_remove.  The file and its journal are only read.  0 or
 * -errno with err naming the file and the step. */
int store_hot_copy_open(struct store *s, const char *path, char **dir_out, char *err,
			size_t errlen);
/* Removes the copy and the directory (dir may be NULL: nothing). */
void store_hot_copy_remove(const char *dir);

/* BEGIN IMMEDIATE; first rolls back a transaction left open by a ROLLBACK
 * that failed, so that one bad moment of the disk does not fail every later
 * mutation. */
int store_begin(struct store *s, char *err, size_t errlen);
int store_commit(struct store *s, char *err, size_t errlen);
void store_rollback(struct store *s);

/* The highest seq ever given (meta 'seq', registrations, tombstones). */
int store_last_seq(struct store *s, int64_t *seq, char *err, size_t errlen);

/*
 * Loads what the store holds for the configured types, in two queries (not
 * one per plugin or registration):
 *
 * - fn for each stored registration, plugin by plugin (plugin id
 *   ascending), a plugin's registrations in no particular order (the
 *   callee orders them by seq); r is filled but for its options (strings
 *   owned by the callee on success);
 * - empty_fn for each plugins row without registrations (its list
 *   emptied), in the same pass, type being the configured type's string;
 * - then opt_fn for each option, registration by registration, each one's
 *   by key, with the (type, name, alloc) it belongs to (type: the
 *   configured type's string).
 *
 * type_idx indexes the configured types.  A negative return stops the load.
 */
typedef int (*store_load_fn)(void *arg, size_t type_idx, int64_t plugin_id, struct registration *r,
			     char *err, size_t errlen);
typedef int (*store_load_empty_fn)(void *arg, size_t type_idx, int64_t plugin_id, const char *type,
				   const char *name, char *err, size_t errlen);
typedef int (*store_load_opt_fn)(void *arg, const char *type, const char *name, const char *alloc,
				 const char *key, const char *value, char *err, size_t errlen);
int store_load(struct store *s, const char *const *types, size_t n_types, store_load_fn fn,
	       store_load_empty_fn empty_fn, store_load_opt_fn opt_fn, void *arg, char *err,
	       size_t errlen);

int store_insert_plugin(struct store *s, int64_t type_id, const char *name, int64_t *id, char *err,
			size_t errlen);
/* Looks up and deletes the tombstone of (type, name, alloc).  *seq receives
 * its seq when it exists and deleted_at > cutoff, else 0. */
int store_take_tombstone(struct store *s, const char *type, const char *name, const char *alloc,
			 int64_t cutoff, int64_t *seq, char *err, size_t errlen);
/* Inserts r (options included) under plugin_id; sets r->id. */
int store_insert_reg(struct store *s, int64_t plugin_id, struct registration *r, char *err,
		     size_t errlen);
/* Rewrites socket, version, kind, updated_at and options of r->id. */
int store_update_reg(struct store *s, const struct registration *r, char *err, size_t errlen);
/* Deletes r->id and leaves a tombstone (type, name, alloc, seq, now). */
int store_delete_reg(struct store *s, const struct registration *r, int64_t now, char *err,
		     size_t errlen);
int store_set_seq(struct store *s, int64_t seq, char *err, size_t errlen);
/* Deletes tombstones with deleted_at <= cutoff; *n receives the count. */
int store_expire_tombstones(struct store *s, int64_t cutoff, int64_t *n, char *err, size_t errlen);

/* The discovery's hold of (source, alloc): stores or replaces it, deletes
 * it (none: a no-op), reads every one (fn, in (source, alloc) order; a
 * negative return stops).  Autocommit: each is its own transaction. */
int store_put_hold(struct store *s, const struct reg_hold *h, char *err, size_t errlen);
int store_drop_hold(struct store *s, const char *source, const char *alloc, char *err,
		    size_t errlen);
typedef int (*store_hold_fn)(void *arg, const struct reg_hold *h, char *err, size_t errlen);
int store_read_holds(struct store *s, store_hold_fn fn, void *arg, char *err, size_t errlen);

/* The rows of a file at SCHEMA_VERSION, by the rules register applies
 * (registry/validate.c): foreign keys, the sequence counter not below any
 * stored seq, type and plugin names, every field of every registration and
 * option.  0, or -EIO naming the first bad row: "state file `P': table `T',
 * row ID (...): field `value': rule".  store_open and registry_check_file
 * both run it: one rule set. */
int store_check_rows(struct store *s, char *err, size_t errlen);

/* PRAGMA quick_check: 0 when its only answer is "ok", else -EIO and a
 * message with SQLite's answer. */
int store_quick_check(struct store *s, char *err, size_t errlen);
/* The same with PRAGMA integrity_check, which also compares every index
 * with its table (quick_check does not): what `state check' runs, as the
 * start's load would fail on such an index. */
int store_integrity_check(struct store *s, char *err, size_t errlen);
/* pragma (quick_check or integrity_check) on db, the file at path. */
int store_run_check(sqlite3 *db, const char *path, const char *pragma, char *err,
		    size_t errlen);
/*
 * The start's integrity_check of s's file, on a connection and a thread
 * of its own (store_check.c), while this thread goes on reading;
 * when no thread can start, it runs here and returns its verdict.
 * store_check_join waits for it: 0, or its refusal (-EIO and SQLite's
 * answer); 0 when none is under way.  Every write of the file comes after
 * a join (store_open_finish, a migration); store_abandon and store_close
 * join too.  store_check_settle joins after a failure rc of the opening
 * thread: the check's refusal when it failed (the file is damaged: that
 * is the cause), else rc and err as they were.
 */
int store_check_start(struct store *s, char *err, size_t errlen);
int store_check_join(struct store *s, char *err, size_t errlen);
int store_check_settle(struct store *s, int rc, char *err, size_t errlen);
/* Whether the table name exists (store.c, like the rest of this block). */
int store_table_exists(struct store *s, const char *name, bool *exists, char *err, size_t errlen);
/* Runs a one-value query; *out receives column 0 (0 when there is no row). */
int store_query_int(struct store *s, const char *sql, int64_t *out, const char *what, char *err,
		    size_t errlen);

/* Runs sql (any number of statements): 0 or -errno naming what. */
int store_exec(struct store *s, const char *sql, const char *what, char *err, size_t errlen);
/* The id of the type name, inserted when missing. */
int store_ensure_type(struct store *s, const char *name, int64_t *id, char *err, size_t errlen);
/* store_files.c: copies the whole database of s to the new file dest with
 * the SQLite backup API.  dest must not exist (-EEXIST: an earlier backup is never
 * replaced; a symlink there is not followed).  The copy is written to
 * dest.partial and linked to dest once complete, so dest only ever appears
 * whole (a kill halfway leaves dest.partial, removed by the next backup);
 * on failure there is no dest. */
int store_backup_to(struct store *s, const char *dest, char *err, size_t errlen);
/* store_files.c: copies src's main database over dst's with the backup API;
 * an SQLite result code. */
int store_backup_db(sqlite3 *dst, sqlite3 *src);
/* store_files.c: unlinks path and its -wal, -shm and -journal, ignoring
 * errors. */
void store_remove_files(const char *path);
/* Whether the file at path (a regular file of ours, not a symlink, without
 * a -journal) holds the same database as s: user_version, schema and every
 * row.  What a migration killed between its backup and its commit leaves:
 * the next one takes it as its own backup.  (registry/store/backup_same.c) */
bool store_backup_same(struct store *s, const char *path);

/* The error of the last failing call on s, as "state file `PATH': what:
 * sqlite message", followed by " (ENOSPC: No space left on device)" (the
 * errno's name and text) when the file itself failed: a full disk, an I/O
 * error, a file that cannot be opened or written.  Returns the -errno. */
int store_fail(struct store *s, int rc, const char *what, char *err, size_t errlen);

#endif
