/* SPDX-License-Identifier: MIT */
/*
 * UTF-8: the one validator and the one sanitizer of plugfs.
 *
 * Valid means what RFC 3629 (and jansson, which refuses anything else in a
 * JSON string) means: no overlong forms, no surrogates (U+D800-U+DFFF), no
 * code point above U+10FFFF, no truncated sequence, no stray continuation
 * byte.  Every function takes a NUL-terminated string; a NUL inside a
 * sequence makes it truncated, so nothing is read past the terminator.
 */
#ifndef PLUGFS_UTF8_H
#define PLUGFS_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length (1-4) of the valid UTF-8 sequence at s, with its code point in *cp
 * when cp is not NULL; 0 when the bytes at s do not start a valid sequence
 * (and for the terminating NUL, which is no character). */
size_t plugfs_utf8_decode(const char *s, uint32_t *cp);

/* True when all of s is valid UTF-8 (the empty string is). */
bool plugfs_utf8_valid(const char *s);

/*
 * A copy of s in which every valid character is kept and each byte that is
 * not part of a valid sequence becomes `?': "caf\xc3\xa9 \xff" gives
 * "caf\xc3\xa9 ?", and the three bytes of a surrogate "\xed\xa0\x80" give
 * "???".  The result is valid UTF-8 of the same length as s, so one bad
 * byte neither loses the text around it nor hides that something was
 * replaced.  Returns a malloc'd string the caller frees, or NULL when
 * memory ran out.
 */
char *plugfs_utf8_sanitize(const char *s);

#endif
