/* SPDX-License-Identifier: MIT */
#include "strutil.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

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

const char *plugfs_quote(char *buf, size_t len, const char *s)
{
	size_t o = 0;

	if (len == 0)
		return buf;
	/* Valid, printable UTF-8 is copied; anything else (control
	 * characters, stray bytes, the backslash itself) becomes \xNN, so a
	 * message is always valid UTF-8 and safe on a terminal. */
	for (size_t i = 0; s && s[i];) {
		const unsigned char *u = (const unsigned char *)s + i;
		uint32_t cp = 0;
		size_t n = plugfs_utf8_decode((const char *)u, &cp);
		bool ok =
		    n > 0 && cp >= 0x20 && cp != 0x7f && !(cp >= 0x80 && cp < 0xa0) && cp != '\\';

		if (i >= PLUGFS_QUOTE_SHOWN) {
			if (o + 4 > len)
				break;
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (!ok) {
			if (o + 5 > len)
				break;
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", u[0]);
			i++;
			continue;
		}
		if (o + n + 1 > len)
			break;
		memcpy(buf + o, u, n);
		o += n;
		i += n;
	}
	buf[o] = '\0';
	return buf;
}
