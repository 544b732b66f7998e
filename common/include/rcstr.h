/* SPDX-License-Identifier: MIT */
/*
 * Reference-counted texts: one allocation holding a count and one or more
 * NUL-terminated strings, written once when made and never changed after.
 * A text is named by the address of its first string; a string further in
 * the block (the packed strings of a registration, reg_model.h "Sharing") lives as
 * long as the block.  Whoever holds a reference may read the block without
 * a lock: nothing writes it after rcstr_alloc's caller filled it.
 *
 * The count is atomic: the registry and the filesystem view share texts
 * (a registration's names and socket, a plugin's name) and each drops its
 * references under its own lock (the registry mutex, fs->lock), so two
 * threads may drop the last two references at once.  The last one frees.
 */
#ifndef PLUGFS_RCSTR_H
#define PLUGFS_RCSTR_H

#include <stddef.h>
#include <stdint.h>

/* A block of len bytes (the strings with their NULs), one reference, for
 * the caller to fill before it shares it; NULL when out of memory. */
char *rcstr_alloc(size_t len);
/* A new text holding a copy of text; NULL when out of memory. */
char *rcstr_new(const char *text);
/* Takes a reference to s (the first string of a block); returns s. */
char *rcstr_ref(char *s);
/* Drops a reference to s (NULL: nothing); the last one frees the block. */
void rcstr_unref(char *s);
/* The references s has now (tests and assertions only: racy otherwise). */
uint32_t rcstr_refs(const char *s);

#endif
