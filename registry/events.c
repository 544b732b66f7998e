/* SPDX-License-Identifier: MIT */
/*
 * Subscribers and the delivery of events: in commit order, synchronously,
 * with the registry mutex held, after memory changed; then, with no lock
 * held, the subscribers' wait callbacks (registry_unlock_and_wait).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "array.h"

_Thread_local int registry_tls_emitting;

void registry_emit(struct registry *r, const struct reg_event *ev, size_t n)
{
	/* Only those subscribed before: one that subscribes from a callback
	 * can already read this mutation's state, so none of its events may
	 * reach it.  Subscribing appends and unsubscribing only marks the slot
	 * while emitting, so these indexes stay valid (r->subs may move). */
	size_t n_subs = r->n_subs, w = 0;

	r->emitting++;
	registry_tls_emitting++;
	for (size_t e = 0; e < n; e++)
		for (size_t i = 0; i < n_subs; i++)
			if (r->subs[i].cb)
				r->subs[i].cb(&ev[e], r->subs[i].arg);
	registry_tls_emitting--;
	r->emitting--;
	if (r->emitting)
		return;
	for (size_t i = 0; i < r->n_subs; i++)
		if (r->subs[i].cb)
			r->subs[w++] = r->subs[i];
	r->n_subs = w;
}

void registry_unlock_and_wait(struct registry *r, uint64_t emits0)
{
	struct {
		reg_wait_cb fn;
		void *arg;
	} w[REG_MAX_WAITERS];
	size_t n = 0;

	if (r->emits == emits0) {
		unlock(r);
		return;
	}
	for (size_t i = 0; i < r->n_subs && n < REG_MAX_WAITERS; i++)
		if (r->subs[i].cb && r->subs[i].wait) {
			w[n].fn = r->subs[i].wait;
			w[n++].arg = r->subs[i].arg;
		}
	if (n == 0) {
		unlock(r);
		return;
	}
	r->waits_running++;
	unlock(r);
	for (size_t i = 0; i < n; i++)
		w[i].fn(w[i].arg);
	lock(r);
	if (--r->waits_running == 0)
		pthread_cond_broadcast(&r->waits_done);
	unlock(r);
}

static int subscribe(struct registry *r, reg_event_cb cb, reg_wait_cb wait, void *arg)
{
	int id = -ENOMEM;
	size_t n_wait = 0;

	if (!cb)
		return -EINVAL;
	lock(r);
	for (size_t i = 0; i < r->n_subs; i++)
		n_wait += r->subs[i].cb && r->subs[i].wait;
	if (wait && n_wait >= REG_MAX_WAITERS) {
		id = -ENOSPC;
		goto out;
	}
	if (PLUGFS_GROW(r->subs, r->cap_subs, r->n_subs, 4) != 0)
		goto out;
	id = ++r->next_sub_id;
	r->subs[r->n_subs++] = (struct subscriber){.id = id, .cb = cb, .wait = wait, .arg = arg};
out:
	unlock(r);
	return id;
}

int registry_subscribe(struct registry *r, reg_event_cb cb, void *arg)
{
	return subscribe(r, cb, NULL, arg);
}

int registry_subscribe_wait(struct registry *r, reg_event_cb cb, reg_wait_cb wait, void *arg)
{
	return subscribe(r, cb, wait, arg);
}

void registry_unsubscribe(struct registry *r, int id)
{
	bool waiter = false;

	lock(r);
	for (size_t i = 0; i < r->n_subs; i++) {
		if (r->subs[i].id == id) {
			waiter = r->subs[i].wait != NULL;
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
	/* A thread may be about to call its wait callback (it copied it
	 * before releasing the mutex): the subscriber's owner frees arg
	 * after this returns. */
	while (waiter && !r->emitting && r->waits_running > 0)
		pthread_cond_wait(&r->waits_done, &r->mu);
	unlock(r);
}

void registry_locked(struct registry *r, void (*fn)(struct registry *r, void *arg), void *arg)
{
	lock(r);
	fn(r, arg);
	unlock(r);
}
