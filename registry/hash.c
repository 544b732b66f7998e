/* SPDX-License-Identifier: MIT */
#include "hash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a, 64 bits: short keys, no adversarial input worth a keyed hash
 * (every key passed validation and comes from a privileged client). */
static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

void hash_init(struct hash *h)
{
	memset(h, 0, sizeof(*h));
}

void hash_free(struct hash *h)
{
	for (size_t i = 0; i < h->n_buckets; i++) {
		struct hash_entry *e = h->buckets[i];

		while (e) {
			struct hash_entry *next = e->next;

			free(e);
			e = next;
		}
	}
	free(h->buckets);
	hash_init(h);
}

static struct hash_entry **find(const struct hash *h, const char *key, uint64_t hv)
{
	struct hash_entry **pp;

	if (h->n_buckets == 0)
		return NULL;
	pp = &h->buckets[hv & (h->n_buckets - 1)];
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == hv && strcmp((*pp)->key, key) == 0)
			return pp;
	return NULL;
}

void *hash_get(const struct hash *h, const char *key)
{
	struct hash_entry **pp = find(h, key, hash_str(key));

	return pp ? (*pp)->value : NULL;
}

static int grow(struct hash *h)
{
	size_t n = h->n_buckets ? h->n_buckets * 2 : 16;
	struct hash_entry **b = calloc(n, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < h->n_buckets; i++) {
		struct hash_entry *e = h->buckets[i];

		while (e) {
			struct hash_entry *next = e->next;
			size_t j = e->hash & (n - 1);

			e->next = b[j];
			b[j] = e;
			e = next;
		}
	}
	free(h->buckets);
	h->buckets = b;
	h->n_buckets = n;
	return 0;
}

int hash_put(struct hash *h, const char *key, void *value)
{
	uint64_t hv = hash_str(key);
	struct hash_entry **pp = find(h, key, hv);
	struct hash_entry *e = NULL;
	size_t len;

	if (pp) {
		(*pp)->value = value;
		return 0;
	}
	/* Grow before inserting so a failure leaves the table unchanged. */
	if ((h->n + 1) * 4 > h->n_buckets * 3 && grow(h) < 0)
		return -ENOMEM;
	len = strlen(key);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	memcpy(e->key, key, len + 1);
	e->hash = hv;
	e->value = value;
	e->next = h->buckets[hv & (h->n_buckets - 1)];
	h->buckets[hv & (h->n_buckets - 1)] = e;
	h->n++;
	return 0;
}

void *hash_del(struct hash *h, const char *key)
{
	struct hash_entry **pp = find(h, key, hash_str(key));
	struct hash_entry *e;
	void *value;

	if (!pp)
		return NULL;
	e = *pp;
	*pp = e->next;
	value = e->value;
	free(e);
	h->n--;
	return value;
}

struct hash_entry *hash_next(const struct hash *h, size_t *pos, struct hash_entry *e)
{
	if (e && e->next)
		return e->next;
	if (e)
		(*pos)++;
	for (; *pos < h->n_buckets; (*pos)++)
		if (h->buckets[*pos])
			return h->buckets[*pos];
	return NULL;
}
