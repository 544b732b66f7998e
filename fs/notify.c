/* SPDX-License-Identifier: MIT */
/*
 * The notifier: the one thread that calls fuse_lowlevel_notify_inval_*.
 *
 * Those calls block in the kernel while a request on the same directory is
 * outstanding, so they never run in a handler nor under a lock a handler
 * needs (fs->lock, the registry mutex).  A registry event queues its batch
 * (fs_notifier_post, under the registry mutex); the mutation then waits,
 * with no lock held, until everything queued so far was delivered
 * (fs_notifier_wait, the registry's wait callback): once a registration is
 * acknowledged, the kernel has already dropped what it cached of the old
 * state, and the next readlink through the mount returns the new target.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs_internal.h"
#include "array.h"
#include "clock.h"
#include "log.h"
#include "thread.h"

static void send_one(struct fs_notifier *nt, const struct fs_inval *it)
{
	int rc;

	if (it->kind == FS_INVAL_INODE)
		rc = fuse_lowlevel_notify_inval_inode(nt->se, it->ino, 0, 0);
	else
		rc = fuse_lowlevel_notify_inval_entry(nt->se, it->ino, it->name, strlen(it->name));
	/* -ENOENT: the kernel does not know that inode or name; nothing cached. */
	if (rc != 0 && rc != -ENOENT)
		log_debug("fs: invalidation of inode %llu%s%s failed: %s",
			  (unsigned long long)it->ino, it->name ? " entry " : "",
			  it->name ? it->name : "", strerror(-rc));
}

static void *notifier_main(void *arg)
{
	struct fs_notifier *nt = arg;
	struct fs_inval_batch work = {0};
	uint64_t seq;

	pthread_mutex_lock(&nt->mu);
	for (;;) {
		while (!nt->stop && nt->done_seq == nt->queued_seq)
			pthread_cond_wait(&nt->cond, &nt->mu);
		if (nt->stop)
			break;
		work = nt->queue;
		memset(&nt->queue, 0, sizeof(nt->queue));
		seq = nt->queued_seq;
		nt->busy = true;
		pthread_mutex_unlock(&nt->mu);

		for (size_t i = 0; i < work.n; i++)
			send_one(nt, &work.items[i]);
		fs_inval_batch_free(&work);

		pthread_mutex_lock(&nt->mu);
		nt->busy = false;
		nt->done_seq = seq;
		pthread_cond_broadcast(&nt->cond);
	}
	pthread_mutex_unlock(&nt->mu);
	return NULL;
}

void fs_notifier_init(struct fs_notifier *nt)
{
	memset(nt, 0, sizeof(*nt));
	pthread_mutex_init(&nt->mu, NULL);
	plugfs_cond_init_mono(&nt->cond);
}

void fs_notifier_destroy(struct fs_notifier *nt)
{
	fs_inval_batch_free(&nt->queue);
	pthread_cond_destroy(&nt->cond);
	pthread_mutex_destroy(&nt->mu);
}

int fs_notifier_start(struct fs_notifier *nt, struct fuse_session *se)
{
	int rc;

	pthread_mutex_lock(&nt->mu);
	nt->se = se;
	rc = plugfs_thread_start(&nt->thread, NULL, notifier_main, nt);
	if (rc == 0)
		nt->started = true;
	pthread_mutex_unlock(&nt->mu);
	return rc;
}

/* Appends b to the queue (emptied); with nt->mu held.  The sequence number
 * of the delivery that covers it, 0 when nothing was queued. */
static uint64_t enqueue_locked(struct fs_notifier *nt, struct fs_inval_batch *b)
{
	if (b->oom)
		log_error("fs: out of memory queueing kernel invalidations; cached entries may "
			  "be stale for up to the cache timeout");
	if (b->n == 0 || nt->stop || !nt->started) {
		fs_inval_batch_free(b);
		return 0;
	}
	/* Append to what is queued (one delivery covers both). */
	for (size_t i = 0; i < b->n; i++) {
		struct fs_inval_batch *q = &nt->queue;

		if (PLUGFS_GROW(q->items, q->cap, q->n, 16) != 0) {
			free(b->items[i].name);
			continue;
		}
		q->items[q->n++] = b->items[i];
	}
	free(b->items);
	memset(b, 0, sizeof(*b));
	pthread_cond_broadcast(&nt->cond);
	return ++nt->queued_seq;
}

void fs_notifier_wait(struct fs_notifier *nt)
{
	uint64_t my;

	pthread_mutex_lock(&nt->mu);
	my = nt->queued_seq;
	while (!nt->stop && nt->started && nt->done_seq < my)
		pthread_cond_wait(&nt->cond, &nt->mu);
	pthread_mutex_unlock(&nt->mu);
}

void fs_notifier_post(struct fs_notifier *nt, struct fs_inval_batch *b)
{
	pthread_mutex_lock(&nt->mu);
	enqueue_locked(nt, b);
	pthread_mutex_unlock(&nt->mu);
}

void fs_notifier_stop(struct fs_notifier *nt, void (*abort_conn)(void *), void *arg)
{
	int64_t deadline;
	bool aborted = false;

	if (!nt->started)
		return;
	pthread_mutex_lock(&nt->mu);
	nt->stop = true;
	pthread_cond_broadcast(&nt->cond);
	/* A notify call blocks while a lookup in that directory is outstanding;
	 * with the request loop stopped nobody answers it.  Give it a moment,
	 * then abort the connection, which fails the outstanding requests. */
	deadline = plugfs_mono_ms() + 200;
	while (nt->busy) {
		if (!aborted && plugfs_cond_wait_until(&nt->cond, &nt->mu, deadline) == ETIMEDOUT) {
			pthread_mutex_unlock(&nt->mu);
			log_warn(
			    "fs: a kernel invalidation is blocked; aborting the FUSE connection");
			if (abort_conn)
				abort_conn(arg);
			aborted = true;
			pthread_mutex_lock(&nt->mu);
		} else if (aborted) {
			pthread_cond_wait(&nt->cond, &nt->mu);
		}
	}
	pthread_mutex_unlock(&nt->mu);
	pthread_join(nt->thread, NULL);
	nt->started = false;
}
