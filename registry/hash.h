/* SPDX-License-Identifier: MIT */
/*
 * A small chained hash table with string keys, private to registry/.
 * Keys are copied and owned by the table; values are borrowed pointers.
 * Lookups, inserts and deletes cost O(1) on average: the table doubles when
 * the load factor passes 3/4.  Not thread-safe: the registry mutex guards it.
 */
#ifndef PLUGFS_REGISTRY_HASH_H
#define PLUGFS_REGISTRY_HASH_H

#include <stddef.h>
#include <stdint.h>

struct hash_entry {
	struct hash_entry *next;
	uint64_t hash;
	void *value;
	char key[];
};

struct hash {
	struct hash_entry **buckets;
	size_t n_buckets; /* 0 or a power of two */
	size_t n;
};

/* A zeroed struct hash is an empty table; hash_init does just that. */
void hash_init(struct hash *h);
/* Frees the entries (not the values) and the bucket array. */
void hash_free(struct hash *h);

/* The value stored under key, or NULL. */
void *hash_get(const struct hash *h, const char *key);
/* Stores value under key, replacing any previous value.  0 or -ENOMEM (the
 * table is then unchanged). */
int hash_put(struct hash *h, const char *key, void *value);
/* Removes key; returns its value or NULL when absent. */
void *hash_del(struct hash *h, const char *key);

/* Iteration: start with *pos = 0 and *e = NULL; returns the next entry or
 * NULL at the end.  The table must not change during an iteration. */
struct hash_entry *hash_next(const struct hash *h, size_t *pos, struct hash_entry *e);

#endif
