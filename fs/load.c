/* SPDX-License-Identifier: MIT */
/*
 * The view from the registry: built at mount time with the registry mutex
 * held and subscribed in the same step (no event missed or seen twice), then
 * kept in step with the registry's events, each one waiting until the
 * kernel dropped what it cached of the old state.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "fs_internal.h"
#include "err.h"
#include "log.h"
#include "registry.h"

static void on_event(const struct reg_event *ev, void *arg)
{
	struct plugfs_fs *fs = arg;
	struct fs_inval_batch batch = {0};
	struct timespec now;
	int rc;

	clock_gettime(CLOCK_REALTIME, &now);
	pthread_rwlock_wrlock(&fs->lock);
	rc = fs_view_sync_plugin(&fs->view, ev->plugin_type, ev->plugin_name, ev->plugin_id,
				 ev->plugin, &now, &batch);
	pthread_rwlock_unlock(&fs->lock);
	if (rc != 0)
		log_error("fs: cannot update %s/%s in the tree: %s", ev->plugin_type,
			  ev->plugin_name, strerror(-rc));
	/* Outside the view lock, only queued: the registry mutex is held.
	 * The mutation waits for the kernel in on_event_wait. */
	fs_notifier_post(&fs->notifier, &batch);
	fs_inval_batch_free(&batch);
}

/* After the registry mutex is released: wait until the kernel dropped what
 * it cached of the old state (everything queued so far). */
static void on_event_wait(void *arg)
{
	struct plugfs_fs *fs = arg;

	fs_notifier_wait(&fs->notifier);
}

struct load_ctx {
	struct plugfs_fs *fs;
	int rc;
	char *err;
	size_t errlen;
};

struct empty_ctx {
	struct plugfs_fs *fs;
	const struct timespec *now;
};

/* A plugin whose list emptied: its directory, for a kernel that holds it. */
static int add_empty(void *arg, const char *type, const char *name, int64_t plugin_id)
{
	struct empty_ctx *e = arg;

	return fs_view_add_empty_plugin(&e->fs->view, type, name, plugin_id, e->now);
}

/* A plugin with registrations, as loaded at start. */
static int add_plugin(void *arg, const struct reg_plugin *p)
{
	struct empty_ctx *e = arg;

	return fs_view_sync_plugin(&e->fs->view, p->type, p->name, p->id, p, e->now, NULL);
}

/* With the registry mutex held: no event is missed or seen twice.  The
 * plugins are read in place (registry_each_plugin), not copied. */
static void load_locked(struct registry *r, void *arg)
{
	struct load_ctx *c = arg;
	struct plugfs_fs *fs = c->fs;
	const char *const *names = NULL;
	const int64_t *ids = NULL;
	struct timespec now;
	struct empty_ctx e = {.fs = fs, .now = &now};
	size_t n_types, n_plugins = 0, n_regs = 0;
	int rc;

	clock_gettime(CLOCK_REALTIME, &now);
	registry_counts(r, &n_plugins, &n_regs);
	/* Room for it all at once: a plugin is one node in the table and one
	 * name in the index (its three children are in neither), a
	 * registration one of each. */
	rc = htab_reserve(&fs->view.nodes, n_plugins + n_regs + 16);
	if (rc == 0)
		rc = htab_reserve(&fs->view.names, n_plugins + n_regs + 16);
	n_types = registry_types(r, &names, &ids);
	for (size_t i = 0; i < n_types && rc == 0; i++)
		rc = fs_view_add_type(&fs->view, ids[i], names[i], &now);
	if (rc == 0)
		rc = registry_each_plugin(r, add_plugin, &e);
	if (rc == 0)
		rc = registry_each_empty_plugin(r, add_empty, &e);
	if (rc != 0) {
		plugfs_seterr(c->err, c->errlen, "cannot build the tree: %s", strerror(-rc));
		goto out;
	}
	rc = registry_subscribe_wait(r, on_event, on_event_wait, fs);
	if (rc < 0) {
		plugfs_seterr(c->err, c->errlen, "cannot subscribe to registry events: %s",
			      strerror(-rc));
		goto out;
	}
	fs->sub_id = rc;
	rc = 0;
out:
	c->rc = rc;
}

int fs_load_and_subscribe(struct plugfs_fs *fs, struct registry *reg, char *err, size_t errlen)
{
	struct load_ctx lc = {.fs = fs, .err = err, .errlen = errlen};

	registry_locked(reg, load_locked, &lc);
	return lc.rc;
}
