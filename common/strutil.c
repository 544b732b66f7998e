/* SPDX-License-Identifier: MIT */
#include "strutil.h"

#include <string.h>

/* Appends s at *o in buf (len bytes), as much as fits before the NUL;
 * *o counts every byte of s even when it did not fit. */
static void append(char *buf, size_t len, size_t *o, const char *s)
{
	size_t n = strlen(s);

	if (*o + 1 < len) {
		size_t room = len - 1 - *o;

		memcpy(buf + *o, s, n < room ? n : room);
	}
	*o += n;
}

size_t plugfs_join(char *buf, size_t len, const char *const *items, size_t n, const char *sep)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		if (i)
			append(buf, len, &o, sep);
		append(buf, len, &o, items[i]);
	}
	if (len)
		buf[o < len ? o : len - 1] = '\0';
	return o;
}
