/* SPDX-License-Identifier: MIT */
/*
 * The persisted mutations (register, deregister, deregister of an alloc),
 * alone or in groups: each is validated and planned on its own under the
 * registry mutex, the valid ones join one batch, and txn.c commits the
 * batch in one transaction (group commit: one fsync for all of them).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "store/space.h"
#include "strutil.h"

/* The most mutations in one transaction (the conflict check is quadratic
 * in the group). */
#define GROUP_MAX 128

/* Every rule a registration must pass, with the registry mutex held: the
 * rules only (the configured types, the socket roots, the read-only flag),
 * never the state, so that a caller may check a request before it acts on
 * it (registry_check_register) and the plan finds the same. */
static int check_register(struct registry *r, const char *const *types, size_t n_types,
			  const struct reg_spec *spec, char *err, size_t errlen)
{
	char q[128];
	int rc;

	if ((rc = registry_refuse_read_only(r, "registering", err, errlen)) < 0)
		return rc;
	if (!spec)
		return plugfs_errf(err, errlen, -EINVAL, "registration: missing");
	if (n_types == 0 || !types)
		return plugfs_errf(err, errlen, -EINVAL, "type: at least one type is required");
	for (size_t i = 0; i < n_types; i++) {
		if ((rc = registry_find_type(r, types[i], NULL, err, errlen)) < 0)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(types[i], types[j]) == 0)
				return plugfs_errf(err, errlen, -EINVAL,
						   "type `%s': given more than once",
						   plugfs_quote(q, sizeof(q), types[i]));
	}
	return reg_validate_spec(spec, (const char *const *)r->roots, r->n_roots, err, errlen);
}

int registry_check_register(struct registry *r, const char *const *types, size_t n_types,
			    const struct reg_spec *spec, char *err, size_t errlen)
{
	int rc;

	lock(r);
	rc = check_register(r, types, n_types, spec, err, errlen);
	unlock(r);
	return rc;
}

static int plan_register(struct registry *r, struct reg_mutation *m, struct batch *b, int64_t t)
{
	int rc;

	if ((rc = check_register(r, m->types, m->n_types, m->spec, m->err, sizeof(m->err))) < 0)
		return rc;
	for (size_t i = 0; i < m->n_types; i++) {
		size_t ti = 0;

		(void)registry_find_type(r, m->types[i], &ti, NULL, 0); /* found above */
		if ((rc = txn_plan_register(r, b, ti, m->spec, t)) < 0)
			return plugfs_errf(m->err, sizeof(m->err), rc, "out of memory");
	}
	/* Room on the disk, the reserve kept for deregistrations (space.h). */
	if (b->n && (rc = space_check_room(r->space, "registering", m->err, sizeof(m->err))) < 0)
		return rc;
	return 0;
}

/* Whether two sources are the same, NULL the same as "" (the control
 * socket's). */
static bool same_source(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static int plan_deregister(struct registry *r, struct reg_mutation *m, struct batch *b)
{
	struct plugin_node *p;
	ssize_t idx;
	int rc;

	if ((rc = registry_refuse_read_only(r, "deregistering", m->err, sizeof(m->err))) < 0 ||
	    (rc = registry_find_type(r, m->type, NULL, m->err, sizeof(m->err))) < 0 ||
	    (rc = reg_validate_name("name", m->name, m->err, sizeof(m->err))) < 0 ||
	    (rc = reg_validate_name("alloc", m->alloc, m->err, sizeof(m->err))) < 0)
		return rc;
	p = index_find_plugin(&r->ix, m->type, m->name);
	idx = p ? plugin_find_alloc(p, m->alloc) : -1;
	if (idx < 0)
		return 0; /* unknown: success, no event */
	/* The compare of a compare-and-deregister: on the state the removal
	 * is planned on, under the mutex and the commit lock, so no register
	 * commits between the compare and the removal. */
	if (m->if_source && !same_source(p->pub.regs[idx].source, m->if_source))
		return 0; /* another's now: kept, no event */
	if (txn_plan_remove(b, p, (size_t)idx) < 0)
		return plugfs_errf(m->err, sizeof(m->err), -ENOMEM, "out of memory");
	return 0;
}

static int plan_deregister_alloc(struct registry *r, struct reg_mutation *m, struct batch *b)
{
	struct alloc_set *s;
	int rc;

	if ((rc = registry_refuse_read_only(r, "deregistering an alloc", m->err, sizeof(m->err))) < 0 ||
	    (rc = reg_validate_name("alloc", m->alloc, m->err, sizeof(m->err))) < 0)
		return rc;
	s = index_alloc_set(&r->ix, m->alloc);
	for (size_t i = 0; s && i < s->n; i++) {
		ssize_t idx = plugin_find_alloc(s->v[i], m->alloc);

		if (idx < 0) /* cannot happen: the set mirrors the lists */
			continue;
		if (txn_plan_remove(b, s->v[i], (size_t)idx) < 0)
			return plugfs_errf(m->err, sizeof(m->err), -ENOMEM, "out of memory");
	}
	/* Events in a stable order: by type as configured, then name. */
	txn_sort(b);
	return 0;
}

/* Validates and plans m into b (empty); m->rc, m->err and m->removed (what
 * the plan removes) are set. */
static int plan(struct registry *r, struct reg_mutation *m, struct batch *b, int64_t t)
{
	int rc;

	m->err[0] = '\0';
	m->removed = 0;
	if (m->op == REG_MUT_REGISTER)
		rc = plan_register(r, m, b, t);
	else if (m->op == REG_MUT_DEREGISTER)
		rc = plan_deregister(r, m, b);
	else if (m->op == REG_MUT_DEREGISTER_ALLOC)
		rc = plan_deregister_alloc(r, m, b);
	else
		rc = plugfs_errf(m->err, sizeof(m->err), -EINVAL, "mutation: unknown operation");
	if (rc < 0)
		batch_free(b);
	else if (m->op != REG_MUT_REGISTER)
		m->removed = b->n;
	m->rc = rc;
	return rc;
}

/* Commits the members of a group that failed together one by one, so that
 * each gets its own result (memory is as it was: plans come out the same). */
static void retry_alone(struct registry *r, struct reg_mutation *m, const unsigned char *member,
			size_t from, size_t to, int64_t t)
{
	for (size_t j = from; j < to; j++) {
		struct batch one = {0};

		if (!member[j] || plan(r, &m[j], &one, t) < 0)
			continue;
		m[j].rc = txn_execute(r, &one, t, m[j].err, sizeof(m[j].err));
		if (m[j].rc < 0)
			m[j].removed = 0;
	}
}

/* Whether m, whose plan on the state before group g is empty (it
 * deregisters what is not registered, or registers what is registered as
 * it is), names a plugin or an alloc g changes: then its plan on the state
 * g leaves may not be empty, and it is planned again after g. */
static bool empty_plan_waits(struct registry *r, const struct reg_mutation *m,
			     const struct batch *g)
{
	size_t ti = 0;

	if (g->n == 0 || m->rc < 0)
		return false;
	if (m->op == REG_MUT_DEREGISTER_ALLOC)
		return txn_touches(g, -1, NULL, m->alloc);
	if (m->op == REG_MUT_DEREGISTER)
		return registry_find_type(r, m->type, &ti, NULL, 0) == 0 &&
		       txn_touches(g, (ssize_t)ti, m->name, m->alloc);
	for (size_t i = 0; i < m->n_types; i++)
		if (registry_find_type(r, m->types[i], &ti, NULL, 0) == 0 &&
		    txn_touches(g, (ssize_t)ti, m->spec->name, m->spec->alloc))
			return true;
	return false;
}

/* Whether a member of m[from..to) deregisters. */
static bool has_deregistration(const struct reg_mutation *m, const unsigned char *member,
			       size_t from, size_t to)
{
	for (size_t j = from; j < to; j++)
		if (member[j] && m[j].op != REG_MUT_REGISTER)
			return true;
	return false;
}

size_t registry_mutate(struct registry *r, struct reg_mutation *m, size_t n)
{
	unsigned char *member = calloc(n ? n : 1, 1);
	size_t i = 0, ok = 0;
	uint64_t emits0;
	int64_t t;

	for (size_t k = 0; k < n; k++) {
		m[k].rc = 0;
		m[k].removed = 0;
		m[k].err[0] = '\0';
		if (registry_tls_emitting)
			m[k].rc = plugfs_errf(m[k].err, sizeof(m[k].err), -EDEADLK,
					      "registry: a mutation cannot run from an event "
					      "callback");
		else if (!member)
			m[k].rc = plugfs_errf(m[k].err, sizeof(m[k].err), -ENOMEM, "out of memory");
	}
	if (registry_tls_emitting || !member) {
		free(member);
		return 0;
	}
	pthread_mutex_lock(&r->commit_mu);
	lock(r);
	emits0 = r->emits;
	t = registry_now(r);
	while (i < n) {
		struct batch g = {0};
		size_t from = i, members = 0;
		char err[REG_ERR_MAX] = "";
		int rc;

		for (; i < n && members < GROUP_MAX; i++) {
			struct batch one = {0};

			if (plan(r, &m[i], &one, t) < 0)
				continue; /* refused alone */
			if (one.n == 0 && empty_plan_waits(r, &m[i], &g))
				break; /* planned again on what this group leaves */
			if (one.n == 0)
				continue; /* nothing to do */
			if (g.n > 0 && txn_conflicts(&g, &one)) {
				batch_free(&one);
				break; /* planned again on what this group leaves */
			}
			if (txn_join(&g, &one) < 0) {
				batch_free(&one);
				m[i].rc = plugfs_errf(m[i].err, sizeof(m[i].err), -ENOMEM,
						      "out of memory");
				m[i].removed = 0;
				continue;
			}
			member[i] = 1;
			members++;
		}
		if (g.n == 0)
			continue;
		rc = txn_execute(r, &g, t, err, sizeof(err));
		if (rc == 0)
			continue;
		/* A full disk and a deregistration among them: each once more
		 * with the reserve released (space.h), which lets the
		 * deregistrations commit; registrations are refused by their
		 * plan now the reserve is out.  A registration alone never
		 * takes the reserve. */
		if ((rc == -ENOSPC && has_deregistration(m, member, from, i) &&
		     space_release_reserve(r->space)) ||
		    members > 1) {
			retry_alone(r, m, member, from, i, t);
			continue;
		}
		for (size_t j = from; j < i; j++) {
			if (!member[j])
				continue;
			m[j].rc = rc;
			m[j].removed = 0;
			memcpy(m[j].err, err, sizeof(err));
		}
	}
	for (size_t k = 0; k < n; k++)
		ok += m[k].rc == 0;
	pthread_mutex_unlock(&r->commit_mu);
	registry_unlock_and_wait(r, emits0);
	free(member);
	return ok;
}

static void copy_err(const struct reg_mutation *m, char *err, size_t errlen)
{
	if (err && errlen > 0) {
		strncpy(err, m->err, errlen - 1);
		err[errlen - 1] = '\0';
	}
}

int registry_register(struct registry *r, const char *const *types, size_t n_types,
		      const struct reg_spec *spec, char *err, size_t errlen)
{
	struct reg_mutation m = {
	    .op = REG_MUT_REGISTER, .types = types, .n_types = n_types, .spec = spec};

	registry_mutate(r, &m, 1);
	copy_err(&m, err, errlen);
	return m.rc;
}

int registry_deregister(struct registry *r, const char *type, const char *name, const char *alloc,
			bool *removed, char *err, size_t errlen)
{
	struct reg_mutation m = {
	    .op = REG_MUT_DEREGISTER, .type = type, .name = name, .alloc = alloc};

	registry_mutate(r, &m, 1);
	copy_err(&m, err, errlen);
	if (removed)
		*removed = m.rc == 0 && m.removed > 0;
	return m.rc;
}

int registry_deregister_if_source(struct registry *r, const char *type, const char *name,
				  const char *alloc, const char *source, bool *removed, char *err,
				  size_t errlen)
{
	struct reg_mutation m = {.op = REG_MUT_DEREGISTER,
				 .type = type,
				 .name = name,
				 .alloc = alloc,
				 .if_source = source ? source : ""};

	registry_mutate(r, &m, 1);
	copy_err(&m, err, errlen);
	if (removed)
		*removed = m.rc == 0 && m.removed > 0;
	return m.rc;
}

int registry_deregister_alloc(struct registry *r, const char *alloc, size_t *removed, char *err,
			      size_t errlen)
{
	struct reg_mutation m = {.op = REG_MUT_DEREGISTER_ALLOC, .alloc = alloc};

	registry_mutate(r, &m, 1);
	copy_err(&m, err, errlen);
	if (removed)
		*removed = m.rc == 0 ? m.removed : 0;
	return m.rc;
}
