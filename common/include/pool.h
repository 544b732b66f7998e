/* SPDX-License-Identifier: MIT */
/*
 * A pool of objects of one size: carved from slabs of 64 KiB, freed onto a
 * free list and handed out again, never given back to the system before
 * pool_destroy.  An object costs its size rounded up to 8 bytes, against
 * malloc's 8-byte header and 16-byte rounding: the view's nodes (fs/),
 * hundreds of thousands of a few sizes, are 8 to 15 bytes smaller each.
 *
 * Not thread-safe: its owner's lock guards it (fs->lock, held for writing
 * wherever the view adds or frees a node).  Under AddressSanitizer a freed
 * object is poisoned until it is handed out again, so a use after free is
 * still reported.
 */
#ifndef PLUGFS_POOL_H
#define PLUGFS_POOL_H

#include <stddef.h>

struct pool {
	size_t size; /* of an object, rounded up to 8 */
	void *free;  /* freed objects, linked through their first word */
	char *cur;   /* the unused rest of the newest slab */
	char *end;
	void *slabs; /* linked through their first word */
	size_t n_live;
};

/* An empty pool of objects of size bytes (at least a pointer's). */
void pool_init(struct pool *p, size_t size);
/* A zeroed object, or NULL when out of memory. */
void *pool_alloc(struct pool *p);
/* Gives o (from pool_alloc of p, or NULL) back to the pool. */
void pool_free(struct pool *p, void *o);
/* Frees every slab (objects still handed out become invalid) and leaves
 * the pool empty, ready for pool_init again. */
void pool_destroy(struct pool *p);

#endif
