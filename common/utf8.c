/* SPDX-License-Identifier: MIT */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

size_t plugfs_utf8_decode(const char *s, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c = u[0], min;
	size_t len;

	if (c == 0)
		return 0;
	if (c < 0x80) {
		len = 1, min = 0;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0; /* a continuation byte, or 0xf8-0xff */
	}
	/* A NUL is no continuation byte: a truncated sequence stops here. */
	for (size_t i = 1; i < len; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (u[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	if (cp)
		*cp = c;
	return len;
}

bool plugfs_utf8_valid(const char *s)
{
	while (*s) {
		size_t n = plugfs_utf8_decode(s, NULL);

		if (n == 0)
			return false;
		s += n;
	}
	return true;
}

char *plugfs_utf8_sanitize(const char *s)
{
	size_t len = strlen(s);
	char *out = malloc(len + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = plugfs_utf8_decode(s + i, NULL);

		if (n == 0) {
			out[i++] = '?';
			continue;
		}
		memcpy(out + i, s + i, n);
		i += n;
	}
	out[len] = '\0';
	return out;
}
