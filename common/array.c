/* SPDX-License-Identifier: MIT */
#include "array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

int plugfs_reserve(void **items, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : first ? first : 1;
	void *a;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (elem == 0 || ncap > SIZE_MAX / elem)
		return -ENOMEM;
	a = realloc(*items, ncap * elem);
	if (!a)
		return -ENOMEM;
	*items = a;
	*cap = ncap;
	return 0;
}

int plugfs_grow(void **items, size_t *cap, size_t n, size_t elem, size_t first)
{
	if (n < *cap)
		return 0;
	if (n == SIZE_MAX)
		return -ENOMEM;
	return plugfs_reserve(items, cap, n + 1, elem, first);
}

int plugfs_grow_exact(void **items, size_t n, size_t elem)
{
	void *a;

	if (elem == 0 || n >= SIZE_MAX / elem)
		return -ENOMEM;
	a = realloc(*items, (n + 1) * elem);
	if (!a)
		return -ENOMEM;
	*items = a;
	return 0;
}
