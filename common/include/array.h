/* SPDX-License-Identifier: MIT */
/* Growing arrays: one doubling rule for every list the code appends to. */
#ifndef PLUGFS_ARRAY_H
#define PLUGFS_ARRAY_H

#include <stddef.h>

/*
 * Makes room for element n of the array *items, which has room for *cap
 * elements of elem bytes: when n == *cap the array is reallocated to twice
 * its capacity (first when it has none).  0, or -ENOMEM with the array and
 * *cap unchanged (also when the size would overflow).
 */
int plugfs_grow(void **items, size_t *cap, size_t n, size_t elem, size_t first);

/* plugfs_grow for an array of any type: PLUGFS_GROW(v, cap, n, 4). */
#define PLUGFS_GROW(arr, cap, n, first)                                                            \
	plugfs_grow((void **)&(arr), &(cap), (n), sizeof(*(arr)), (first))

#endif
