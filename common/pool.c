/* SPDX-License-Identifier: MIT */
#include "pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(a, n) ASAN_POISON_MEMORY_REGION((a), (n))
#define UNPOISON(a, n) ASAN_UNPOISON_MEMORY_REGION((a), (n))
#else
#define POISON(a, n) ((void)(a), (void)(n))
#define UNPOISON(a, n) ((void)(a), (void)(n))
#endif

/* Below malloc's mmap threshold (128 KiB): slabs come from the heap. */
#define SLAB_BYTES (64 * 1024 - 64)
#define SLAB_HEAD 8 /* the link to the previous slab */

void pool_init(struct pool *p, size_t size)
{
	memset(p, 0, sizeof(*p));
	if (size < sizeof(void *))
		size = sizeof(void *);
	p->size = (size + 7) & ~(size_t)7;
}

void *pool_alloc(struct pool *p)
{
	void *o;

	if (p->free) {
		o = p->free;
		UNPOISON(o, p->size);
		memcpy(&p->free, o, sizeof(void *));
	} else {
		if ((size_t)(p->end - p->cur) < p->size) {
			char *slab;

			if (p->size > SLAB_BYTES - SLAB_HEAD || !(slab = malloc(SLAB_BYTES)))
				return NULL;
			memcpy(slab, &p->slabs, sizeof(void *));
			p->slabs = slab;
			p->cur = slab + SLAB_HEAD;
			p->end = slab + SLAB_BYTES;
			POISON(p->cur, (size_t)(p->end - p->cur));
		}
		o = p->cur;
		p->cur += p->size;
		UNPOISON(o, p->size);
	}
	memset(o, 0, p->size);
	p->n_live++;
	return o;
}

void pool_free(struct pool *p, void *o)
{
	if (!o)
		return;
	memcpy(o, &p->free, sizeof(void *));
	p->free = o;
	p->n_live--;
	POISON(o, p->size);
}

void pool_destroy(struct pool *p)
{
	void *s = p->slabs, *next;

	while (s) {
		UNPOISON(s, SLAB_BYTES);
		memcpy(&next, s, sizeof(void *));
		free(s);
		s = next;
	}
	memset(p, 0, sizeof(*p));
}
