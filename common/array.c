/* SPDX-License-Identifier: MIT */
#include "array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int plugfs_grow(void **items, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t ncap;
	void *a;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : first;
	if (ncap <= n || ncap > SIZE_MAX / elem)
		return -ENOMEM;
	a = realloc(*items, ncap * elem);
	if (!a)
		return -ENOMEM;
	*items = a;
	*cap = ncap;
	return 0;
}
