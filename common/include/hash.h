/* SPDX-License-Identifier: MIT */
/*
 * The one hash table of plugfs, in two layers.
 *
 * struct htab is an intrusive chained hash table keyed by a uint64_t: the
 * caller embeds a struct htab_node in its own object and owns that object.
 * An integer key (an inode number) is stored as is and is the whole key; a
 * string key is stored as its 64-bit hash (htab_hash_string) and the caller
 * compares the strings of the nodes htab_find returns.  Bucket indexes come
 * from a full 64-bit mix of the key (MurmurHash3's finaliser), so keys in
 * steps (inode numbers) spread evenly.
 *
 * struct hash is a map from strings to borrowed pointers built on it: it
 * copies and owns the keys, never the values.
 *
 * Both cost O(1) on average for find, insert and remove: a table doubles
 * before an insert would take it past a load factor of 1 (and fails with
 * -ENOMEM before changing anything); with the full mix of the key chains
 * stay short at that load, and the buckets cost 8 to 16 bytes per node.  Neither is thread-safe: the owner's
 * lock guards it (the registry mutex, fs->lock).
 */
#ifndef PLUGFS_HASH_H
#define PLUGFS_HASH_H

#include <stddef.h>
#include <stdint.h>

/* ---- the intrusive table ------------------------------------------------ */

struct htab_node {
	struct htab_node *next; /* chain; private to hash.c */
	uint64_t key;
};

struct htab {
	struct htab_node **buckets;
	size_t n_buckets; /* 0 or a power of two */
	size_t n;	  /* nodes in the table */
};

/* A zeroed struct htab is an empty table; htab_init does just that. */
void htab_init(struct htab *t);
/* Frees the bucket array; the nodes are the caller's (free them first, with
 * htab_next, or they leak). */
void htab_free(struct htab *t);

/* FNV-1a, 64 bits: the key under which a string is stored.  No keyed hash:
 * every key plugfs stores passed validation and came from a privileged
 * client. */
uint64_t htab_hash_string(const char *s);
/* The same over the 8 bytes of scope, then s: the key of a name within a
 * scope (a directory's entries, keyed by the directory's inode number). */
uint64_t htab_hash_scoped(uint64_t scope, const char *s);

/* Links node into the table under key (several nodes may share a key).
 * 0, or -ENOMEM with the table unchanged. */
int htab_insert(struct htab *t, struct htab_node *node, uint64_t key);
/* Room for n nodes without growing (one rehash now instead of one per
 * doubling while n are inserted).  0, or -ENOMEM with t unchanged. */
int htab_reserve(struct htab *t, size_t n);
/* Unlinks node, which must be in t. */
void htab_remove(struct htab *t, struct htab_node *node);
/* The next node under key after `after` (NULL: the first), or NULL. */
struct htab_node *htab_find(const struct htab *t, uint64_t key, const struct htab_node *after);
/* Iteration over every node: start with *pos = 0 and node = NULL; returns
 * the next node or NULL at the end.  The table must not change during an
 * iteration, except that a node may be freed (not removed) once the node
 * after it has been returned. */
struct htab_node *htab_next(const struct htab *t, size_t *pos, const struct htab_node *node);

/* The struct that contains the struct htab_node at ptr. */
#define htab_entry(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* ---- the string map ----------------------------------------------------- */

struct hash_entry {
	struct htab_node node;
	void *value;
	char key[];
};

struct hash {
	struct htab t;
};

/* A zeroed struct hash is an empty map; hash_init does just that. */
void hash_init(struct hash *h);
/* Frees the entries (not the values) and the bucket array. */
void hash_free(struct hash *h);
/* How many keys the map holds. */
size_t hash_count(const struct hash *h);

/* The value stored under key, or NULL. */
void *hash_get(const struct hash *h, const char *key);
/* Stores value under key, replacing any previous value.  0 or -ENOMEM (the
 * map is then unchanged). */
int hash_put(struct hash *h, const char *key, void *value);
/* Removes key; returns its value or NULL when absent. */
void *hash_del(struct hash *h, const char *key);

/* Iteration: start with *pos = 0 and *e = NULL; returns the next entry or
 * NULL at the end.  The map must not change during an iteration. */
struct hash_entry *hash_next(const struct hash *h, size_t *pos, struct hash_entry *e);

#endif
