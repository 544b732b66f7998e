/* SPDX-License-Identifier: MIT */
/* Group commit (registry_mutate): one transaction for many mutations, a bad
 * one failing alone, conflicts split, a failed group retried one by one;
 * the wait callbacks run after the mutex is released. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "internal.h"
#include "test_registry_util.h"

struct hook {
	int commits;
	int refuse; /* refuse this many commits, then let them through */
};

static int on_commit(void *arg)
{
	struct hook *h = arg;

	h->commits++;
	if (h->refuse > 0) {
		h->refuse--;
		return 1; /* the COMMIT becomes a ROLLBACK */
	}
	return 0;
}

struct specs {
	char sock[8][64];
	struct reg_spec spec[8];
	struct reg_mutation m[8];
};

static const char *const node[] = {"csi-node"};

static void add_reg(struct specs *s, size_t i, const char *name, const char *alloc,
		    const char *socket)
{
	snprintf(s->sock[i], sizeof(s->sock[i]), "%s", socket);
	s->spec[i] = (struct reg_spec){.name = name, .alloc = alloc, .socket = s->sock[i]};
	s->m[i] = (struct reg_mutation){
	    .op = REG_MUT_REGISTER, .types = node, .n_types = 1, .spec = &s->spec[i]};
}

static void one_commit_for_all_a_bad_one_alone(void **state)
{
	struct fixture *f = *state;
	struct hook h = {0};
	struct specs s;

	add_reg(&s, 0, "p0", "a0", "/run/csi/a0/csi.sock");
	add_reg(&s, 1, "p1", "a1", "/run/csi/a1/csi.sock");
	add_reg(&s, 2, "p2", "a2", "relative/csi.sock"); /* bad */
	add_reg(&s, 3, "p3", "a3", "/run/csi/a3/csi.sock");
	s.m[4] = (struct reg_mutation){
	    .op = REG_MUT_DEREGISTER, .type = "csi-node", .name = "nope", .alloc = "x"};
	add_reg(&s, 5, "p5", "a5", "/run/csi/a5/csi.sock");
	events_clear(f);
	sqlite3_commit_hook(registry_db(f->r), on_commit, &h);
	assert_int_equal(registry_mutate(f->r, s.m, 6), 5);
	sqlite3_commit_hook(registry_db(f->r), NULL, NULL);
	assert_int_equal(h.commits, 1);
	assert_int_equal(s.m[2].rc, -EINVAL);
	assert_non_null(strstr(s.m[2].err, "socket `relative/csi.sock': must be an absolute path"));
	for (int i = 0; i < 6; i++)
		if (i != 2)
			assert_int_equal(s.m[i].rc, 0);
	assert_int_equal(s.m[4].removed, 0);
	/* Events in the order of the array, the bad one absent. */
	assert_string_equal(f->events, "registered csi-node/p0 a0;active csi-node/p0 (null)->a0;"
				       "registered csi-node/p1 a1;active csi-node/p1 (null)->a1;"
				       "registered csi-node/p3 a3;active csi-node/p3 (null)->a3;"
				       "registered csi-node/p5 a5;active csi-node/p5 (null)->a5;");
	restart(f);
	assert_string_equal(active(f, "csi-node", "p0"), "a0");
	assert_string_equal(active(f, "csi-node", "p5"), "a5");
	assert_null(active(f, "csi-node", "p2"));
}

static void conflicts_start_a_new_transaction(void **state)
{
	struct fixture *f = *state;
	struct hook h = {0};
	struct specs s;

	assert_int_equal(reg(f, "csi-node", "q", "x0"), 0);
	add_reg(&s, 0, "p", "a0", "/run/csi/a0/csi.sock");
	add_reg(&s, 1, "p", "a1", "/run/csi/a1/csi.sock"); /* the same plugin */
	add_reg(&s, 2, "r", "b0", "/run/csi/b0/csi.sock");
	/* The same alloc: removed from q, registered under s. */
	s.m[3] = (struct reg_mutation){.op = REG_MUT_DEREGISTER_ALLOC, .alloc = "x0"};
	add_reg(&s, 4, "s", "x0", "/run/csi/x0/csi.sock");
	events_clear(f);
	sqlite3_commit_hook(registry_db(f->r), on_commit, &h);
	assert_int_equal(registry_mutate(f->r, s.m, 5), 5);
	sqlite3_commit_hook(registry_db(f->r), NULL, NULL);
	/* {p a0}, {p a1, r b0, deregister x0}, {s x0} */
	assert_int_equal(h.commits, 3);
	assert_int_equal(s.m[3].removed, 1);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_string_equal(active(f, "csi-node", "s"), "x0");
	assert_null(active(f, "csi-node", "q"));
	assert_string_equal(f->events,
			    "registered csi-node/p a0;active csi-node/p (null)->a0;"
			    "registered csi-node/p a1;active csi-node/p a0->a1;"
			    "registered csi-node/r b0;active csi-node/r (null)->b0;"
			    "deregistered csi-node/q x0 (gone);active csi-node/q x0->(null) (gone);"
			    "registered csi-node/s x0;active csi-node/s (null)->x0;");
	restart(f);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_string_equal(active(f, "csi-node", "s"), "x0");
}

static void a_failed_group_is_retried_alone(void **state)
{
	struct fixture *f = *state;
	struct hook h = {.refuse = 1};
	struct specs s;
	size_t n_plugins = 0;

	add_reg(&s, 0, "p0", "a0", "/run/csi/a0/csi.sock");
	add_reg(&s, 1, "p1", "a1", "/run/csi/a1/csi.sock");
	add_reg(&s, 2, "p2", "a2", "/run/csi/a2/csi.sock");
	sqlite3_commit_hook(registry_db(f->r), on_commit, &h);
	assert_int_equal(registry_mutate(f->r, s.m, 3), 3);
	/* The group's commit refused, then one commit each. */
	assert_int_equal(h.commits, 4);
	/* Every commit refused: each fails alone, with its own message. */
	h = (struct hook){.refuse = 100};
	add_reg(&s, 0, "q0", "b0", "/run/csi/b0/csi.sock");
	add_reg(&s, 1, "q1", "b1", "/run/csi/b1/csi.sock");
	events_clear(f);
	assert_int_equal(registry_mutate(f->r, s.m, 2), 0);
	sqlite3_commit_hook(registry_db(f->r), NULL, NULL);
	assert_int_equal(h.commits, 3);
	assert_int_not_equal(s.m[0].rc, 0);
	assert_int_not_equal(s.m[1].rc, 0);
	assert_non_null(strstr(s.m[1].err, "committing"));
	assert_string_equal(f->events, "");
	registry_counts(f->r, &n_plugins, NULL);
	assert_int_equal(n_plugins, 3);
	assert_null(active(f, "csi-node", "q0"));
	restart(f);
	registry_counts(f->r, &n_plugins, NULL);
	assert_int_equal(n_plugins, 3);
}

/* The wait callback: another thread can take the registry mutex meanwhile. */
struct waiter {
	struct registry *r;
	int calls, unlocked;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool counted;
};

static void ignore_event(const struct reg_event *ev, void *arg)
{
	(void)ev;
	(void)arg;
}

static void *count_thread(void *arg)
{
	struct waiter *w = arg;
	size_t n = 0;

	registry_counts(w->r, &n, NULL); /* takes the registry mutex */
	pthread_mutex_lock(&w->mu);
	w->counted = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void on_wait(void *arg)
{
	struct waiter *w = arg;
	struct timespec until;
	pthread_t t;

	w->calls++;
	w->counted = false;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	assert_int_equal(pthread_create(&t, NULL, count_thread, w), 0);
	pthread_mutex_lock(&w->mu);
	while (!w->counted && pthread_cond_timedwait(&w->cond, &w->mu, &until) == 0)
		;
	w->unlocked += w->counted;
	pthread_mutex_unlock(&w->mu);
	if (w->counted)
		pthread_join(t, NULL);
	else
		pthread_detach(t); /* failed: the mutex is held; it ends with the test */
}

static void wait_callbacks_run_without_the_mutex(void **state)
{
	struct fixture *f = *state;
	struct waiter w = {.r = f->r};
	struct reg_runtime rt = {.health = REG_HEALTH_DEAD};
	int id;

	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cond, NULL);
	id = registry_subscribe_wait(f->r, ignore_event, on_wait, &w);
	assert_true(id > 0);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(w.calls, 1);
	/* No event, no wait. */
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(dereg(f, "csi-node", "p", "nope"), 0);
	assert_int_equal(w.calls, 1);
	assert_int_equal(registry_set_runtime(f->r, "csi-node", "p", "a0", &rt, NULL, NULL, 0), 0);
	assert_int_equal(w.calls, 2);
	assert_int_equal(w.unlocked, 2);
	registry_unsubscribe(f->r, id);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(w.calls, 2);
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.mu);
}

/* A mutation whose plan on the state before its group is empty (deregister
 * what is not registered yet, register what is registered already) is
 * planned again once the group that touches its plugin or alloc is
 * applied: the group's order is the order of the results. */
static void an_empty_plan_waits_for_the_group_before_it(void **state)
{
	struct fixture *f = *state;
	struct specs s;

	/* register x then deregister x, in one call */
	add_reg(&s, 0, "x", "a0", "/run/csi/a0/csi.sock");
	s.m[1] = (struct reg_mutation){
	    .op = REG_MUT_DEREGISTER, .type = "csi-node", .name = "x", .alloc = "a0"};
	add_reg(&s, 2, "y", "b0", "/run/csi/b0/csi.sock");
	s.m[3] = (struct reg_mutation){.op = REG_MUT_DEREGISTER_ALLOC, .alloc = "b0"};
	assert_int_equal(registry_mutate(f->r, s.m, 4), 4);
	assert_int_equal(s.m[1].removed, 1);
	assert_int_equal(s.m[3].removed, 1);
	assert_null(active(f, "csi-node", "x"));
	assert_null(active(f, "csi-node", "y"));
	/* z registered; deregister z then register z again as it was */
	assert_int_equal(reg(f, "csi-node", "z", "c0"), 0);
	s.m[0] = (struct reg_mutation){
	    .op = REG_MUT_DEREGISTER, .type = "csi-node", .name = "z", .alloc = "c0"};
	add_reg(&s, 1, "z", "c0", "/run/csi/c0/csi.sock");
	assert_int_equal(registry_mutate(f->r, s.m, 2), 2);
	assert_int_equal(s.m[0].removed, 1);
	assert_string_equal(active(f, "csi-node", "z"), "c0");
	restart(f);
	assert_null(active(f, "csi-node", "x"));
	assert_null(active(f, "csi-node", "y"));
	assert_string_equal(active(f, "csi-node", "z"), "c0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(one_commit_for_all_a_bad_one_alone),
	    T(conflicts_start_a_new_transaction),
	    T(a_failed_group_is_retried_alone),
	    T(an_empty_plan_waits_for_the_group_before_it),
	    T(wait_callbacks_run_without_the_mutex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
