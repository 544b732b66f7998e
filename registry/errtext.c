/* SPDX-License-Identifier: MIT */
/*
 * The texts of probe failures (reg_error_intern): each distinct text is
 * stored once for the life of the process, so a registration's runtime
 * state holds a pointer, not a buffer of its own, and stays a plain value
 * (copied by assignment, never freed).  Failures repeat ("connection
 * refused", "no such file", a plugin's own gRPC message), so the table stays
 * small; it is bounded all the same.  Its own mutex: the prober, the
 * control thread and the registry call it, with or without the registry
 * mutex.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "registry.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct hash texts;

static const char too_many[] = "(text not kept: more than " REG_ERROR_TEXTS_MAX_STR
			       " distinct probe errors)";

const char *reg_error_intern(const char *text)
{
	const char *kept;

	if (!text || !*text)
		return NULL;
	if (text == too_many)
		return text;
	pthread_mutex_lock(&mu);
	kept = hash_get(&texts, text);
	if (!kept) {
		char *copy = hash_count(&texts) < REG_ERROR_TEXTS_MAX ? strdup(text) : NULL;

		if (copy && hash_put(&texts, copy, copy) == 0) {
			kept = copy;
		} else {
			free(copy);
			kept = too_many;
		}
	}
	pthread_mutex_unlock(&mu);
	return kept;
}
