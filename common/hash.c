/* SPDX-License-Identifier: MIT */
#include "hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- the intrusive table ------------------------------------------------ */

/* The bucket of a key: the 64-bit finaliser of MurmurHash3 (every input bit
 * reaches every output bit), so keys in steps (inode numbers are id * 8 +
 * a tag) fill the buckets evenly.  The middle bits of a single multiply, used
 * before, left 7 of 8 buckets empty for such keys at 100,000 plugins. */
static size_t bucket_of(size_t n_buckets, uint64_t key)
{
	uint64_t h = key;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (size_t)h & (n_buckets - 1);
}

void htab_init(struct htab *t)
{
	memset(t, 0, sizeof(*t));
}

void htab_free(struct htab *t)
{
	free(t->buckets);
	htab_init(t);
}

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv_string(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= FNV_PRIME;
	}
	return h;
}

uint64_t htab_hash_string(const char *s)
{
	return fnv_string(FNV_OFFSET, s);
}

uint64_t htab_hash_scoped(uint64_t scope, const char *s)
{
	uint64_t h = FNV_OFFSET;

	for (int i = 0; i < 8; i++) {
		h ^= (scope >> (8 * i)) & 0xff;
		h *= FNV_PRIME;
	}
	return fnv_string(h, s);
}

/* Rehashes into n buckets (a power of two); -ENOMEM with t unchanged. */
static int rehash(struct htab *t, size_t n)
{
	struct htab_node **b = calloc(n, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct htab_node *e = t->buckets[i];

		while (e) {
			struct htab_node *next = e->next;
			size_t j = bucket_of(n, e->key);

			e->next = b[j];
			b[j] = e;
			e = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = n;
	return 0;
}

static int grow(struct htab *t)
{
	return rehash(t, t->n_buckets ? t->n_buckets * 2 : 16);
}

int htab_reserve(struct htab *t, size_t n)
{
	size_t nb = t->n_buckets ? t->n_buckets : 16;

	while (n > nb) {
		if (nb > SIZE_MAX / 2 / sizeof(struct htab_node *))
			return -ENOMEM;
		nb *= 2;
	}
	return nb > t->n_buckets ? rehash(t, nb) : 0;
}

int htab_insert(struct htab *t, struct htab_node *node, uint64_t key)
{
	size_t k;

	/* Grow before inserting so a failure leaves the table unchanged. */
	if (t->n + 1 > t->n_buckets && grow(t) < 0)
		return -ENOMEM;
	k = bucket_of(t->n_buckets, key);
	node->key = key;
	node->next = t->buckets[k];
	t->buckets[k] = node;
	t->n++;
	return 0;
}

void htab_remove(struct htab *t, struct htab_node *node)
{
	struct htab_node **pp;

	if (t->n_buckets == 0)
		return;
	for (pp = &t->buckets[bucket_of(t->n_buckets, node->key)]; *pp; pp = &(*pp)->next) {
		if (*pp == node) {
			*pp = node->next;
			node->next = NULL;
			t->n--;
			return;
		}
	}
}

struct htab_node *htab_find(const struct htab *t, uint64_t key, const struct htab_node *after)
{
	struct htab_node *e;

	if (t->n_buckets == 0)
		return NULL;
	e = after ? after->next : t->buckets[bucket_of(t->n_buckets, key)];
	for (; e; e = e->next)
		if (e->key == key)
			return e;
	return NULL;
}

struct htab_node *htab_next(const struct htab *t, size_t *pos, const struct htab_node *node)
{
	if (node && node->next)
		return node->next;
	if (node)
		(*pos)++;
	for (; *pos < t->n_buckets; (*pos)++)
		if (t->buckets[*pos])
			return t->buckets[*pos];
	return NULL;
}

/* ---- the string map ----------------------------------------------------- */

void hash_init(struct hash *h)
{
	htab_init(&h->t);
}

void hash_free(struct hash *h)
{
	struct htab_node *e, *next;
	size_t pos = 0;

	for (e = htab_next(&h->t, &pos, NULL); e; e = next) {
		next = htab_next(&h->t, &pos, e);
		free(htab_entry(e, struct hash_entry, node));
	}
	htab_free(&h->t);
}

size_t hash_count(const struct hash *h)
{
	return h->t.n;
}

static struct hash_entry *find(const struct hash *h, const char *key, uint64_t hv)
{
	struct htab_node *e = NULL;

	while ((e = htab_find(&h->t, hv, e))) {
		struct hash_entry *he = htab_entry(e, struct hash_entry, node);

		if (strcmp(he->key, key) == 0)
			return he;
	}
	return NULL;
}

void *hash_get(const struct hash *h, const char *key)
{
	struct hash_entry *e = find(h, key, htab_hash_string(key));

	return e ? e->value : NULL;
}

int hash_put(struct hash *h, const char *key, void *value)
{
	uint64_t hv = htab_hash_string(key);
	struct hash_entry *e = find(h, key, hv);
	size_t len;

	if (e) {
		e->value = value;
		return 0;
	}
	len = strlen(key);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	memcpy(e->key, key, len + 1);
	e->value = value;
	if (htab_insert(&h->t, &e->node, hv) < 0) {
		free(e);
		return -ENOMEM;
	}
	return 0;
}

void *hash_del(struct hash *h, const char *key)
{
	struct hash_entry *e = find(h, key, htab_hash_string(key));
	void *value;

	if (!e)
		return NULL;
	htab_remove(&h->t, &e->node);
	value = e->value;
	free(e);
	return value;
}

struct hash_entry *hash_next(const struct hash *h, size_t *pos, struct hash_entry *e)
{
	struct htab_node *n = htab_next(&h->t, pos, e ? &e->node : NULL);

	return n ? htab_entry(n, struct hash_entry, node) : NULL;
}
