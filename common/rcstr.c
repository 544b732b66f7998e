/* SPDX-License-Identifier: MIT */
#include "rcstr.h"

#include <stdlib.h>
#include <string.h>

/* The count in front of the text: 4 bytes, so a block costs its strings
 * plus 4 (and malloc's own header). */
struct rcstr {
	uint32_t refs;
	char s[];
};

static struct rcstr *block_of(const char *s)
{
	return (struct rcstr *)(void *)(uintptr_t)(s - offsetof(struct rcstr, s));
}

char *rcstr_alloc(size_t len)
{
	struct rcstr *b;

	if (len > SIZE_MAX - sizeof(*b))
		return NULL;
	b = malloc(sizeof(*b) + len);
	if (!b)
		return NULL;
	b->refs = 1;
	return b->s;
}

char *rcstr_new(const char *text)
{
	size_t len = strlen(text) + 1;
	char *s = rcstr_alloc(len);

	if (s)
		memcpy(s, text, len);
	return s;
}

char *rcstr_ref(char *s)
{
	__atomic_add_fetch(&block_of(s)->refs, 1, __ATOMIC_RELAXED);
	return s;
}

void rcstr_unref(char *s)
{
	/* Release our writes (none after the fill) and acquire the other
	 * holders' before the free. */
	if (s && __atomic_sub_fetch(&block_of(s)->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(block_of(s));
}

uint32_t rcstr_refs(const char *s)
{
	return __atomic_load_n(&block_of(s)->refs, __ATOMIC_RELAXED);
}
