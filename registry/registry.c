/* SPDX-License-Identifier: MIT */
/*
 * The registry's public API: open and close, the import, runtime changes,
 * the getters (the mutations are group.c's).  See core.h for the units.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "log.h"
#include "store/space.h"
#include "strutil.h"

int64_t registry_now(const struct registry *r)
{
	return r->now ? r->now(r->now_arg) : (int64_t)time(NULL);
}

int registry_refuse_read_only(const struct registry *r, const char *what, char *err,
			      size_t errlen)
{
	if (!r->read_only)
		return 0;
	return plugfs_errf(err, errlen, -EROFS,
			   "state file `%s': opened read-only (registry_options.read_only); %s "
			   "is refused",
			   r->st.path, what);
}

static int refuse_in_callback(char *err, size_t errlen)
{
	if (!registry_tls_emitting)
		return 0;
	return plugfs_errf(err, errlen, -EDEADLK,
			   "registry: a mutation cannot run from an event callback");
}

int registry_find_type(const struct registry *r, const char *type, size_t *idx, char *err,
		       size_t errlen)
{
	return reg_find_type(type, (const char *const *)r->types, r->n_types, idx, err, errlen);
}

int registry_import_legacy_json(struct registry *r, const char *json, size_t *imported, char *err,
				size_t errlen)
{
	struct legacy_entry *e = NULL;
	struct batch b = {0};
	char msg[REG_ERR_MAX];
	size_t n = 0, changed = 0;
	uint64_t emits0;
	int64_t t;
	int rc;

	if ((rc = registry_refuse_read_only(r, "importing legacy JSON", err, errlen)) < 0) {
		if (imported)
			*imported = 0;
		return rc;
	}
	if ((rc = refuse_in_callback(err, errlen)) < 0) {
		if (imported)
			*imported = 0;
		return rc;
	}
	pthread_mutex_lock(&r->commit_mu);
	lock(r);
	emits0 = r->emits;
	if (!json) {
		rc = plugfs_errf(err, errlen, -EINVAL, "legacy JSON: missing");
		goto out;
	}
	if ((rc = legacy_parse(r->st.db, json, &e, &n, err, errlen)) < 0)
		goto out;
	t = registry_now(r);
	for (size_t i = 0; i < n; i++) {
		struct reg_spec spec = legacy_spec(&e[i]);
		size_t ti = 0;

		if ((rc = legacy_validate(&e[i], (const char *const *)r->types, r->n_types,
					  (const char *const *)r->roots, r->n_roots, &ti, msg,
					  sizeof(msg))) < 0) {
			rc = plugfs_errf(err, errlen, rc, "legacy JSON: %s", msg);
			goto out;
		}
		if ((rc = txn_plan_register(r, &b, ti, &spec, t)) < 0) {
			rc = plugfs_errf(err, errlen, rc, "out of memory");
			goto out;
		}
	}
	changed = b.n;
	if (b.n && (rc = space_check_room(r->space, "importing", err, errlen)) < 0) {
		changed = 0;
		goto out;
	}
	rc = txn_execute(r, &b, t, err, errlen);
	if (rc < 0)
		changed = 0;
out:
	batch_free(&b);
	legacy_free(e, n);
	if (imported)
		*imported = changed;
	pthread_mutex_unlock(&r->commit_mu);
	registry_unlock_and_wait(r, emits0);
	return rc;
}

/* ---- getters ----------------------------------------------------------- */

int registry_set_runtime(struct registry *r, const char *type, const char *name, const char *alloc,
			 const struct reg_runtime *rt, bool *changed, char *err, size_t errlen)
{
	struct plugin_node *p;
	const struct registration *g;
	struct reg_runtime kept;
	uint64_t emits0;
	ssize_t idx;
	int rc;

	if (changed)
		*changed = false;
	if (!rt)
		return plugfs_errf(err, errlen, -EINVAL, "runtime state: missing");
	if ((rc = refuse_in_callback(err, errlen)) < 0)
		return rc;
	lock(r);
	emits0 = r->emits;
	if ((rc = registry_find_type(r, type, NULL, err, errlen)) < 0)
		goto out;
	p = name && alloc ? index_find_plugin(&r->ix, type, name) : NULL;
	idx = p ? plugin_find_alloc(p, alloc) : -1;
	if (idx < 0) {
		rc = plugfs_errf(err, errlen, -ENOENT, "%s/%s: no registration of alloc %s", type,
				 name ? name : "", alloc ? alloc : "");
		goto out;
	}
	g = &p->pub.regs[idx];
	kept = *rt;
	kept.error = reg_error_intern(rt->error);
	if (!reg_runtime_differs(&g->runtime, &kept)) {
		p->pub.regs[idx].runtime = kept; /* counters only: no event */
		goto out;
	}
	txn_set_runtime(r, p, (size_t)idx, &kept);
	if (changed)
		*changed = true;
out:
	registry_unlock_and_wait(r, emits0);
	return rc;
}

static int plugin_cmp(const void *a, const void *b)
{
	const struct reg_plugin *x = a, *y = b;
	int c = strcmp(x->type, y->type);

	return c ? c : strcmp(x->name, y->name);
}

int registry_snapshot(struct registry *r, const char *type, struct reg_snapshot *out)
{
	const struct plugin_node *p = NULL;
	size_t pos = 0, n;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	lock(r);
	n = index_count_plugins(&r->ix);
	out->plugins = calloc(n ? n : 1, sizeof(*out->plugins));
	if (!out->plugins) {
		rc = -ENOMEM;
		goto out;
	}
	while ((p = index_next_plugin(&r->ix, &pos, p))) {
		if (p->pub.n_regs == 0 || (type && strcmp(type, p->pub.type) != 0))
			continue;
		if ((rc = reg_plugin_copy(&p->pub, &out->plugins[out->n_plugins])) < 0)
			goto out;
		out->n_plugins++;
	}
	if (out->n_plugins > 1)
		qsort(out->plugins, out->n_plugins, sizeof(*out->plugins), plugin_cmp);
out:
	unlock(r);
	if (rc < 0)
		reg_snapshot_free(out);
	return rc;
}

int registry_get_plugin(struct registry *r, const char *type, const char *name,
			struct reg_plugin *out)
{
	struct plugin_node *p;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!type || !name)
		return -ENOENT;
	lock(r);
	p = index_find_plugin(&r->ix, type, name);
	rc = p && p->pub.n_regs > 0 ? reg_plugin_copy(&p->pub, out) : -ENOENT;
	unlock(r);
	return rc;
}

int registry_get_registration(struct registry *r, const char *type, const char *name,
			      const char *alloc, struct registration *out)
{
	struct plugin_node *p;
	ssize_t idx;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!type || !name || !alloc)
		return -ENOENT;
	lock(r);
	p = index_find_plugin(&r->ix, type, name);
	idx = p ? plugin_find_alloc(p, alloc) : -1;
	rc = idx >= 0 ? registration_copy(&p->pub.regs[idx], out) : -ENOENT;
	unlock(r);
	return rc;
}

int registry_each_empty_plugin(struct registry *r, registry_empty_fn fn, void *arg)
{
	const struct plugin_node *p = NULL;
	size_t pos = 0;
	int rc = 0;

	lock(r);
	while (rc == 0 && (p = index_next_plugin(&r->ix, &pos, p))) {
		if (p->pub.n_regs == 0)
			rc = fn(arg, p->pub.type, p->pub.name, p->pub.id);
	}
	unlock(r);
	return rc;
}

int registry_each_plugin(struct registry *r, registry_plugin_fn fn, void *arg)
{
	const struct plugin_node *p = NULL;
	size_t pos = 0;
	int rc = 0;

	lock(r);
	while (rc == 0 && (p = index_next_plugin(&r->ix, &pos, p))) {
		if (p->pub.n_regs > 0)
			rc = fn(arg, &p->pub);
	}
	unlock(r);
	return rc;
}

int registry_each_plugin_slice(struct registry *r, size_t *pos, size_t max, registry_plugin_fn fn,
			       void *arg)
{
	const struct plugin_node *p = NULL;
	size_t at = *pos, seen = 0;
	int rc = 1;

	lock(r);
	for (;;) {
		p = index_next_plugin(&r->ix, &at, p);
		if (!p) {
			rc = 0;
			break;
		}
		/* Stop at a slot's start only, so the next call resumes there. */
		if (at != *pos && seen >= max)
			break;
		*pos = at;
		seen++;
		if (p->pub.n_regs > 0 && (rc = fn(arg, &p->pub)) != 0)
			break;
		rc = 1;
	}
	*pos = at;
	unlock(r);
	return rc;
}

size_t registry_types(struct registry *r, const char *const **names, const int64_t **ids)
{
	if (names)
		*names = (const char *const *)r->types;
	if (ids)
		*ids = r->type_ids;
	return r->n_types;
}

void registry_counts(struct registry *r, size_t *n_plugins, size_t *n_registrations)
{
	lock(r);
	if (n_plugins)
		*n_plugins = index_count_plugins(&r->ix) - r->ix.n_empty;
	if (n_registrations)
		*n_registrations = r->ix.n_regs;
	unlock(r);
}

void registry_release_memory(struct registry *r)
{
	/* The connection is the writers': the commit lock, not the mutex. */
	pthread_mutex_lock(&r->commit_mu);
	sqlite3_db_release_memory(r->st.db);
	pthread_mutex_unlock(&r->commit_mu);
}

void registry_commit_stats(struct registry *r, struct reg_commit_stats *out)
{
	lock(r);
	*out = r->commit_stats;
	unlock(r);
}

int registry_expire_tombstones(struct registry *r, char *err, size_t errlen)
{
	int64_t n = 0;
	int rc;

	if ((rc = registry_refuse_read_only(r, "expiring tombstones", err, errlen)) < 0)
		return rc;
	if ((rc = refuse_in_callback(err, errlen)) < 0)
		return rc;
	pthread_mutex_lock(&r->commit_mu);
	rc = store_expire_tombstones(&r->st, registry_now(r) - r->ttl, &n, err, errlen);
	lock(r);
	r->commit_stats = r->st.commits;
	unlock(r);
	pthread_mutex_unlock(&r->commit_mu);
	return rc < 0 ? rc : (int)(n > 0x7fffffff ? 0x7fffffff : n);
}

/* ---- the discovery's holds --------------------------------------------- */

int registry_hold(struct registry *r, const char *source, const char *alloc, uint64_t dev,
		  uint64_t ino, int64_t ctime_ns, char *err, size_t errlen)
{
	struct reg_hold h = {.source = source,
			     .alloc = alloc,
			     .dev = dev,
			     .ino = ino,
			     .ctime_ns = ctime_ns,
			     .held_at = registry_now(r)};
	int rc;

	if ((rc = registry_refuse_read_only(r, "storing a hold", err, errlen)) < 0 ||
	    (rc = refuse_in_callback(err, errlen)) < 0)
		return rc;
	if ((rc = reg_validate_hold(source, alloc, err, errlen)) < 0)
		return rc;
	pthread_mutex_lock(&r->commit_mu);
	rc = store_put_hold(&r->st, &h, err, errlen);
	pthread_mutex_unlock(&r->commit_mu);
	return rc;
}

int registry_unhold(struct registry *r, const char *source, const char *alloc, char *err,
		    size_t errlen)
{
	int rc;

	if ((rc = registry_refuse_read_only(r, "deleting a hold", err, errlen)) < 0 ||
	    (rc = refuse_in_callback(err, errlen)) < 0)
		return rc;
	pthread_mutex_lock(&r->commit_mu);
	rc = store_drop_hold(&r->st, source, alloc, err, errlen);
	pthread_mutex_unlock(&r->commit_mu);
	return rc;
}

int registry_holds(struct registry *r, registry_hold_fn fn, void *arg, char *err, size_t errlen)
{
	int rc;

	if ((rc = refuse_in_callback(err, errlen)) < 0)
		return rc;
	pthread_mutex_lock(&r->commit_mu);
	rc = store_read_holds(&r->st, fn, arg, err, errlen);
	pthread_mutex_unlock(&r->commit_mu);
	return rc;
}

/* ---- open and close ---------------------------------------------------- */

static int load_one(void *arg, size_t type_idx, int64_t plugin_id, struct registration *g,
		    char *err, size_t errlen)
{
	return index_load(arg, type_idx, plugin_id, g, err, errlen);
}

static int load_empty(void *arg, size_t type_idx, int64_t plugin_id, const char *type,
		      const char *name, char *err, size_t errlen)
{
	return index_load_empty(arg, type_idx, plugin_id, type, name, err, errlen);
}

static int load_option(void *arg, const char *type, const char *name, const char *alloc,
		       const char *key, const char *value, char *err, size_t errlen)
{
	return index_load_option(arg, type, name, alloc, key, value, err, errlen);
}

static char **copy_strv(const char *const *v, size_t n)
{
	char **c = calloc(n ? n : 1, sizeof(*c));

	for (size_t i = 0; c && i < n; i++) {
		c[i] = strdup(v[i]);
		if (!c[i]) {
			for (size_t j = 0; j < i; j++)
				free(c[j]);
			free(c);
			return NULL;
		}
	}
	return c;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static int check_options(const struct registry_options *o, char *err, size_t errlen)
{
	char q[128];
	int rc;

	if (!o || !o->types || o->n_types == 0)
		return plugfs_errf(err, errlen, -EINVAL,
				   "registry.types: at least one type is required");
	for (size_t i = 0; i < o->n_types; i++) {
		if ((rc = reg_validate_name("registry.types entry", o->types[i], err, errlen)) < 0)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(o->types[i], o->types[j]) == 0)
				return plugfs_errf(err, errlen, -EINVAL,
						   "registry.types: `%s' given more than once",
						   plugfs_quote(q, sizeof(q), o->types[i]));
	}
	for (size_t i = 0; i < o->n_socket_roots; i++) {
		/* `/' is a root too: it covers every socket (reg_path_under). */
		if ((rc = reg_validate_path("registry.socket_roots entry", o->socket_roots[i], true,
					    err, errlen)) < 0)
			return rc;
	}
	if (o->tombstone_ttl < 0)
		return plugfs_errf(err, errlen, -EINVAL,
				   "registry.tombstone_ttl %lld: must be 0 or more seconds",
				   (long long)o->tombstone_ttl);
	return 0;
}

/*
 * A start on a full disk: the reserve the last run kept beside the state
 * file (store_reserve.c, `<path>-reserve') is released, so that the
 * start's own writes (the types' commit, SQLite's -wal and -shm) fit; the
 * upkeep allocates it again once there is room, and refuses registrations
 * meanwhile.  True when it released space.
 */
static bool release_kept_reserve(const char *db_path)
{
	char path[4096];
	struct statvfs vfs;
	struct stat st;
	bool done = false;
	int fd;

	if (snprintf(path, sizeof(path), "%s-reserve", db_path) >= (int)sizeof(path) ||
	    (fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return false;
	/* Only when the space is short: less free than the reserve holds. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    st.st_size > 0 && fstatvfs(fd, &vfs) == 0 &&
	    (unsigned long long)vfs.f_bavail * vfs.f_frsize < (unsigned long long)st.st_size &&
	    ftruncate(fd, 0) == 0) {
		log_warn("state file `%s': the disk is full: released the reserve `%s' (%lld "
			 "bytes) that the last run kept, for the start's own writes; "
			 "registrations are refused until it can be allocated again",
			 db_path, path, (long long)st.st_size);
		done = true;
	}
	close(fd);
	return done;
}

static int open_once(const char *db_path, const struct registry_options *opts,
		     struct registry **out, char *err, size_t errlen);

int registry_open(const char *db_path, const struct registry_options *opts, struct registry **out,
		  char *err, size_t errlen)
{
	int rc = open_once(db_path, opts, out, err, errlen);

	/* A full disk fails the open as ENOSPC (a commit) or EIO (SQLite's
	 * -shm): either way with the space short, once more with the reserve
	 * released. */
	if ((rc == -ENOSPC || rc == -EIO) && opts && !opts->read_only &&
	    release_kept_reserve(db_path))
		rc = open_once(db_path, opts, out, err, errlen);
	return rc;
}

static int open_once(const char *db_path, const struct registry_options *opts,
		     struct registry **out, char *err, size_t errlen)
{
	struct registry *r = NULL;
	pthread_mutexattr_t attr;
	struct store_open_options so;
	int64_t n, n_plugins = 0, n_regs = 0;
	int rc;

	*out = NULL;
	if (!db_path || !db_path[0])
		return plugfs_errf(err, errlen, -EINVAL, "state.path: missing");
	if ((rc = check_options(opts, err, errlen)) < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&r->mu, &attr);
	pthread_mutexattr_destroy(&attr);
	pthread_mutex_init(&r->commit_mu, NULL);
	pthread_cond_init(&r->waits_done, NULL);
	r->n_types = opts->n_types;
	r->types = copy_strv(opts->types, opts->n_types);
	r->type_ids = calloc(opts->n_types, sizeof(*r->type_ids));
	r->n_roots = opts->n_socket_roots;
	r->roots = copy_strv(opts->socket_roots, opts->n_socket_roots);
	r->ttl = opts->tombstone_ttl;
	r->read_only = opts->read_only;
	r->now = opts->now;
	r->now_arg = opts->now_arg;
	if (!r->types || !r->type_ids || !r->roots) {
		rc = plugfs_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	so = (struct store_open_options){
	    .synchronous = opts->synchronous,
	    .types = (const char *const *)r->types,
	    .n_types = r->n_types,
	    .now = registry_now(r),
	    .read_only = r->read_only,
	};
	if ((rc = store_open(&r->st, db_path, &so, err, errlen)) < 0)
		goto fail;
	/* The index sized once for what the store holds, not doubled
	 * (and rehashed) a dozen times while it loads. */
	if ((rc = store_query_int(&r->st, "SELECT count(*) FROM plugins", &n_plugins,
				  "counting plugins", err, errlen)) < 0 ||
	    (rc = store_query_int(&r->st, "SELECT count(*) FROM registrations", &n_regs,
				  "counting registrations", err, errlen)) < 0)
		goto fail;
	r->ix.types = (const char *const *)r->types;
	if (index_reserve(&r->ix, (size_t)n_plugins, (size_t)n_regs) < 0) {
		rc = plugfs_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	/* Read whole before anything is written (store_open_finish): a
	 * damaged index that quick_check cannot see fails here, and the
	 * refused file is left as it was. */
	if ((rc = store_last_seq(&r->st, &r->last_seq, err, errlen)) < 0 ||
	    (rc = store_load(&r->st, (const char *const *)r->types, r->n_types, load_one,
			     load_empty, load_option, &r->ix, err, errlen)) < 0 ||
	    (rc = store_open_finish(&r->st, &so, r->type_ids, err, errlen)) < 0)
		goto fail;
	/* Expired tombstones only take space (register ignores them): on a
	 * full disk the start goes on without deleting them, so that a host
	 * that filled up can start and deregister. */
	if (!r->read_only &&
	    (rc = store_expire_tombstones(&r->st, registry_now(r) - r->ttl, &n, err, errlen)) < 0 &&
	    rc != -ENOSPC)
		goto fail;
	*out = r;
	return 0;
fail:
	/* A damaged file: refused in the integrity check's words. */
	rc = store_check_settle(&r->st, rc, err, errlen);
	store_abandon(&r->st); /* a refusal writes nothing */
	registry_close(r);
	return rc;
}

sqlite3 *registry_db(struct registry *r)
{
	return r->st.db;
}

int registry_start_upkeep(struct registry *r, const struct registry_upkeep *o, char *err,
			  size_t errlen)
{
	int rc;

	lock(r);
	if (r->space)
		rc = plugfs_errf(err, errlen, -EALREADY, "state file `%s': upkeep already runs",
				 r->st.path);
	else if (r->read_only || r->st.copy || strcmp(r->st.path, ":memory:") == 0)
		rc = plugfs_errf(err, errlen, -EINVAL,
				 "state file `%s': no upkeep for a registry that is not a file "
				 "opened for writing",
				 r->st.path);
	else
		rc = space_start(&r->st, &r->commit_mu, o, &r->space, err, errlen);
	unlock(r);
	return rc;
}

void registry_upkeep_stats(struct registry *r, struct registry_upkeep_stats *out)
{
	lock(r);
	space_stats(r->space, out);
	unlock(r);
}

/* The commits stop telling the checkpointer (under the mutex, as they run
 * under it), then it stops. */
static void upkeep_stop(struct registry *r)
{
	struct store_space *sp = r->space;

	if (!sp)
		return;
	lock(r);
	space_unhook(sp);
	r->space = NULL;
	unlock(r);
	space_stop(sp);
}

void registry_close(struct registry *r)
{
	if (!r)
		return;
	upkeep_stop(r);
	index_free(&r->ix);
	store_close(&r->st);
	free_strv(r->types, r->n_types);
	free(r->type_ids);
	free_strv(r->roots, r->n_roots);
	free(r->subs);
	pthread_cond_destroy(&r->waits_done);
	pthread_mutex_destroy(&r->commit_mu);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
