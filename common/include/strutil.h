/* SPDX-License-Identifier: MIT */
/* String helpers shared by the libraries and the CLI. */
#ifndef PLUGFS_STRUTIL_H
#define PLUGFS_STRUTIL_H

#include <stddef.h>

/*
 * Writes the n strings of items into buf, sep between each two ("a, b, c"
 * for sep ", "), the way messages list the accepted values.  buf (len
 * bytes) is always NUL-terminated when len > 0: a list that does not fit is
 * cut, mid-item if need be, like snprintf.  n = 0 gives "".
 *
 * Returns the length the whole list has (without the NUL), so a result of
 * len or more means it was cut.
 */
size_t plugfs_join(char *buf, size_t len, const char *const *items, size_t n, const char *sep);

/* How many bytes of a string plugfs_quote shows before its "...". */
#define PLUGFS_QUOTE_SHOWN 80
/* A buffer of this many bytes holds any answer of plugfs_quote. */
#define PLUGFS_QUOTE_MAX (4 * PLUGFS_QUOTE_SHOWN + 4)

/*
 * Writes s into buf (len bytes, always NUL-terminated when len > 0) the
 * way a message quotes a value it was given: valid, printable UTF-8 as it
 * is; control characters, stray bytes and `\' as \xNN; cut with "..."
 * after PLUGFS_QUOTE_SHOWN bytes of s.  What does not fit in buf is left
 * out at a character's edge.  A NULL s gives "".  Returns buf.
 */
const char *plugfs_quote(char *buf, size_t len, const char *s);

#endif
