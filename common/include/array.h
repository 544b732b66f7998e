/* SPDX-License-Identifier: MIT */
/* Growing arrays: one doubling rule for every list and buffer the code
 * appends to. */
#ifndef PLUGFS_ARRAY_H
#define PLUGFS_ARRAY_H

#include <stddef.h>

/*
 * Makes room for need elements of elem bytes in the array *items, which
 * has room for *cap (malloc'd, or NULL with *cap 0; the caller owns it
 * and frees it): when need > *cap the capacity doubles, from first when
 * it is 0 (1 when first is 0 too), until it holds need, and the array is
 * reallocated to it.  0, or -ENOMEM with the array and *cap unchanged
 * (also when the size would overflow).  Nothing moves when need <= *cap.
 */
int plugfs_reserve(void **items, size_t *cap, size_t need, size_t elem, size_t first);

/* plugfs_reserve for an array of any type: PLUGFS_RESERVE(buf, cap, len + n, 4096). */
#define PLUGFS_RESERVE(arr, cap, need, first)                                                      \
	plugfs_reserve((void **)&(arr), &(cap), (need), sizeof(*(arr)), (first))

/*
 * Makes room for element n (one more than the n the array holds):
 * plugfs_reserve(items, cap, n + 1, elem, first).  0 or -ENOMEM.
 */
int plugfs_grow(void **items, size_t *cap, size_t n, size_t elem, size_t first);

/* plugfs_grow for an array of any type: PLUGFS_GROW(v, cap, n, 4). */
#define PLUGFS_GROW(arr, cap, n, first)                                                            \
	plugfs_grow((void **)&(arr), &(cap), (n), sizeof(*(arr)), (first))

/*
 * Room for element n of an array kept at exactly its n elements (no
 * capacity beside it: config lists, a registration's options, where a
 * capacity field and the room doubling leaves cost more than a realloc per
 * element): reallocates *items to n + 1 elements.  0, or -ENOMEM with the
 * array unchanged (also when the size would overflow).
 */
int plugfs_grow_exact(void **items, size_t n, size_t elem);

/* plugfs_grow_exact for an array of any type: PLUGFS_GROW_EXACT(v, n). */
#define PLUGFS_GROW_EXACT(arr, n) plugfs_grow_exact((void **)&(arr), (n), sizeof(*(arr)))

#endif
