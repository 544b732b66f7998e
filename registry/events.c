/* SPDX-License-Identifier: MIT */
/*
 * Subscribers and the delivery of events: in commit order, synchronously,
 * with the registry mutex held, after memory changed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "array.h"

void registry_emit(struct registry *r, const struct reg_event *ev, size_t n)
{
	/* Only those subscribed before: one that subscribes from a callback
	 * can already read this mutation's state, so none of its events may
	 * reach it.  Subscribing appends and unsubscribing only marks the slot
	 * while emitting, so these indexes stay valid (r->subs may move). */
	size_t n_subs = r->n_subs, w = 0;

	r->emitting++;
	for (size_t e = 0; e < n; e++)
		for (size_t i = 0; i < n_subs; i++)
			if (r->subs[i].cb)
				r->subs[i].cb(&ev[e], r->subs[i].arg);
	r->emitting--;
	if (r->emitting)
		return;
	for (size_t i = 0; i < r->n_subs; i++)
		if (r->subs[i].cb)
			r->subs[w++] = r->subs[i];
	r->n_subs = w;
}

int registry_subscribe(struct registry *r, reg_event_cb cb, void *arg)
{
	int id = -ENOMEM;

	if (!cb)
		return -EINVAL;
	lock(r);
	if (PLUGFS_GROW(r->subs, r->cap_subs, r->n_subs, 4) != 0)
		goto out;
	id = ++r->next_sub_id;
	r->subs[r->n_subs++] = (struct subscriber){.id = id, .cb = cb, .arg = arg};
out:
	unlock(r);
	return id;
}

void registry_unsubscribe(struct registry *r, int id)
{
	lock(r);
	for (size_t i = 0; i < r->n_subs; i++) {
		if (r->subs[i].id == id) {
			/* During an emission the array is being walked: mark
			 * the slot, registry_emit() compacts it afterwards. */
			r->subs[i].cb = NULL;
			if (!r->emitting) {
				memmove(&r->subs[i], &r->subs[i + 1],
					(r->n_subs - i - 1) * sizeof(*r->subs));
				r->n_subs--;
			}
			break;
		}
	}
	unlock(r);
}

void registry_locked(struct registry *r, void (*fn)(struct registry *r, void *arg), void *arg)
{
	lock(r);
	fn(r, arg);
	unlock(r);
}
