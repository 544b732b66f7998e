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

#endif
