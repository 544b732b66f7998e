/* SPDX-License-Identifier: MIT */
/*
 * registry_set_runtime: a change kept in memory only.  It reaches
 * subscribers through the same delivery as persisted mutations, after
 * memory changed, and never touches the state file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "internal.h"
#include "registry.h"
#include "test_registry_util.h"

static int runtime_of(struct registry *r, const char *alloc)
{
	struct reg_plugin p;
	int state = -1;

	assert_int_equal(registry_get_plugin(r, "csi-node", "p", &p), 0);
	for (size_t i = 0; i < p.n_regs; i++)
		if (strcmp(p.regs[i].alloc, alloc) == 0)
			state = (int)p.regs[i].runtime.health;
	reg_plugin_free_contents(&p);
	return state;
}

static int count_commit(void *arg)
{
	(*(int *)arg)++;
	return 0;
}

static void test_runtime_in_memory_only(void **state)
{
	struct fixture *f = *state;
	struct reg_runtime rt = {.health = REG_HEALTH_DEAD, .since = 1234};
	char err[REG_ERR_MAX] = "";
	bool changed = false;
	int commits = 0;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	events_clear(f);
	sqlite3_commit_hook(registry_db(f->r), count_commit, &commits);
	assert_int_equal(
	    registry_set_runtime(f->r, "csi-node", "p", "a0", &rt, &changed, err, sizeof(err)), 0);
	assert_true(changed);
	assert_string_equal(f->events, "runtime csi-node/p a0;");
	assert_int_equal(runtime_of(f->r, "a0"), REG_HEALTH_DEAD);
	assert_int_equal(runtime_of(f->r, "a1"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a1"); /* a0 is older */
	/* The same state again: nothing changes, no event. */
	events_clear(f);
	assert_int_equal(
	    registry_set_runtime(f->r, "csi-node", "p", "a0", &rt, &changed, err, sizeof(err)), 0);
	assert_false(changed);
	assert_string_equal(f->events, "");
	assert_int_equal(commits, 0);
	sqlite3_commit_hook(registry_db(f->r), NULL, NULL);

	/* An update of the entry keeps it; a restart forgets it. */
	{
		static const char *const node[] = {"csi-node"};
		struct reg_spec spec = {
		    .name = "p", .alloc = "a0", .socket = "/run/csi/a0/new.sock"};

		assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	}
	assert_int_equal(runtime_of(f->r, "a0"), REG_HEALTH_DEAD);
	restart(f);
	assert_int_equal(runtime_of(f->r, "a0"), 0);
}

static void test_runtime_refusals(void **state)
{
	struct fixture *f = *state;
	struct reg_runtime rt = {.health = REG_HEALTH_ALIVE};
	char err[REG_ERR_MAX] = "";
	bool changed = true;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	events_clear(f);
	assert_int_equal(
	    registry_set_runtime(f->r, "csi-node", "p", "zz", &rt, &changed, err, sizeof(err)),
	    -ENOENT);
	assert_false(changed);
	assert_non_null(strstr(err, "zz"));
	assert_int_equal(
	    registry_set_runtime(f->r, "csi-node", "q", "a0", &rt, NULL, err, sizeof(err)),
	    -ENOENT);
	assert_int_equal(registry_set_runtime(f->r, "gpu", "p", "a0", &rt, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(
	    registry_set_runtime(f->r, "csi-node", "p", "a0", NULL, NULL, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(f->events, "");
}

struct seen {
	struct fixture *f;
	int state_seen; /* what a subscriber reads when the event arrives */
	int rc_nested;
};

static void watch(const struct reg_event *ev, void *arg)
{
	struct seen *s = arg;
	struct reg_runtime rt = {.health = REG_HEALTH_DEAD};
	char err[REG_ERR_MAX];

	if (ev->type != REG_EV_RUNTIME)
		return;
	assert_int_equal(ev->reg->runtime.health, REG_HEALTH_ALIVE);
	assert_int_equal(ev->old_runtime->health, REG_HEALTH_UNKNOWN);
	s->state_seen = runtime_of(s->f->r, "a0");
	s->rc_nested =
	    registry_set_runtime(s->f->r, "csi-node", "p", "a0", &rt, NULL, err, sizeof(err));
}

static void test_runtime_delivery(void **state)
{
	struct fixture *f = *state;
	struct seen s = {.f = f, .state_seen = -1};
	struct reg_runtime rt = {.health = REG_HEALTH_ALIVE};
	char err[REG_ERR_MAX] = "";
	int id;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	id = registry_subscribe(f->r, watch, &s);
	assert_true(id > 0);
	assert_int_equal(
	    registry_set_runtime(f->r, "csi-node", "p", "a0", &rt, NULL, err, sizeof(err)), 0);
	assert_int_equal(s.state_seen, REG_HEALTH_ALIVE); /* memory changed before delivery */
	assert_int_equal(s.rc_nested, -EDEADLK);	  /* no change from a callback */
	assert_int_equal(runtime_of(f->r, "a0"), REG_HEALTH_ALIVE);
	registry_unsubscribe(f->r, id);
}

static int set_health(struct fixture *f, const char *alloc, enum reg_health h, const char *error)
{
	struct reg_runtime rt = {.health = h, .since = 1};
	char err[REG_ERR_MAX] = "";

	rt.error = error; /* the registry keeps its own copy (reg_error_intern) */
	return registry_set_runtime(f->r, "csi-node", "p", alloc, &rt, NULL, err, sizeof(err));
}

/* The most recent registration that is not dead; unknown counts as alive;
 * the most recent when every one is dead. */
static void test_election_skips_dead(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a2"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a2"); /* all unknown */
	events_clear(f);
	assert_int_equal(set_health(f, "a2", REG_HEALTH_DEAD, "connection refused"), 0);
	assert_string_equal(f->events, "runtime csi-node/p a2;active csi-node/p a2->a1;");
	assert_string_equal(active(f, "csi-node", "p"), "a1");
	assert_int_equal(set_health(f, "a0", REG_HEALTH_ALIVE, NULL), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a1"); /* unknown a1 is newer */
	assert_int_equal(set_health(f, "a1", REG_HEALTH_DEAD, "timeout"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a0");
	assert_int_equal(set_health(f, "a0", REG_HEALTH_DEAD, "no such file"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a2"); /* all dead: most recent */
	events_clear(f);
	assert_int_equal(set_health(f, "a1", REG_HEALTH_ALIVE, NULL), 0);
	assert_string_equal(f->events, "runtime csi-node/p a1;active csi-node/p a2->a1;");
	/* Deregistering the active one elects the next live one. */
	assert_int_equal(set_health(f, "a0", REG_HEALTH_ALIVE, NULL), 0);
	{
		char err[REG_ERR_MAX] = "";
		bool removed = false;

		assert_int_equal(
		    registry_deregister(f->r, "csi-node", "p", "a1", &removed, err, sizeof(err)),
		    0);
		assert_true(removed);
	}
	assert_string_equal(active(f, "csi-node", "p"), "a0");
}

/* Counters alone (probe time, failures) are stored without an event. */
static void test_runtime_counters_quiet(void **state)
{
	struct fixture *f = *state;
	struct reg_runtime rt = {.health = REG_HEALTH_ALIVE, .since = 5, .probed_at = 5};
	char err[REG_ERR_MAX] = "";
	bool changed = false;
	struct reg_plugin p;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(
	    registry_set_runtime(f->r, "csi-node", "p", "a0", &rt, &changed, err, sizeof(err)), 0);
	assert_true(changed);
	events_clear(f);
	rt.probed_at = 10;
	rt.failures = 1;
	assert_int_equal(
	    registry_set_runtime(f->r, "csi-node", "p", "a0", &rt, &changed, err, sizeof(err)), 0);
	assert_false(changed);
	assert_string_equal(f->events, "");
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_int_equal(p.regs[0].runtime.probed_at, 10);
	assert_int_equal(p.regs[0].runtime.failures, 1);
	reg_plugin_free_contents(&p);
	/* A new error text is an event, and the registry keeps its own
	 * copy: the caller's buffer may change at once. */
	{
		char text[32] = "timeout";

		rt.error = text;
		assert_int_equal(registry_set_runtime(f->r, "csi-node", "p", "a0", &rt, &changed,
						      err, sizeof(err)),
				 0);
		assert_true(changed);
		memset(text, 'x', sizeof(text) - 1);
	}
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_string_equal(p.regs[0].runtime.error, "timeout");
	reg_plugin_free_contents(&p);
	assert_string_equal(reg_health_name(REG_HEALTH_UNKNOWN), "unknown");
	assert_string_equal(reg_health_name(REG_HEALTH_ALIVE), "alive");
	assert_string_equal(reg_health_name(REG_HEALTH_DEAD), "dead");
}

/* A failure's text is stored once: the same pointer for the same text,
 * NULL for none, and a bounded table. */
static void test_error_text_interned(void **state)
{
	char buf[64] = "connection refused";
	const char *a = reg_error_intern(buf), *last = NULL;

	(void)state;
	assert_non_null(a);
	assert_ptr_not_equal(a, buf);
	buf[0] = 'X';
	assert_string_equal(a, "connection refused");
	assert_ptr_equal(reg_error_intern("connection refused"), a);
	assert_ptr_equal(reg_error_intern(a), a);
	assert_null(reg_error_intern(""));
	assert_null(reg_error_intern(NULL));
	for (int i = 0; i <= REG_ERROR_TEXTS_MAX; i++) {
		snprintf(buf, sizeof(buf), "grpc status 14: attempt %d", i);
		last = reg_error_intern(buf);
	}
	assert_string_equal(last, "(text not kept: more than 4096 distinct probe errors)");
	assert_ptr_equal(reg_error_intern(last), last);
	/* What was kept stays found. */
	assert_ptr_equal(reg_error_intern("connection refused"), a);
	assert_string_equal(reg_error_intern("grpc status 14: attempt 7"), "grpc status 14: attempt 7");
}

/* A registration that starts dead (probed before registering) never
 * becomes active, not even for a moment: no active event. */
static void test_register_starts_dead(void **state)
{
	struct fixture *f = *state;
	static const char *const node[] = {"csi-node"};
	struct reg_runtime dead = {.health = REG_HEALTH_DEAD, .since = 1, .failures = 1};
	struct reg_spec spec = {.name = "p", .alloc = "a1", .socket = "/run/csi/a1/csi.sock"};
	char err[REG_ERR_MAX] = "";

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	events_clear(f);
	spec.runtime = &dead;
	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	assert_string_equal(f->events, "registered csi-node/p a1;");
	assert_string_equal(active(f, "csi-node", "p"), "a0");
	assert_int_equal(runtime_of(f->r, "a1"), REG_HEALTH_DEAD);
	/* An update keeps the entry's state, whatever the spec says. */
	{
		struct reg_runtime alive = {.health = REG_HEALTH_ALIVE};

		spec.socket = "/run/csi/a1/other.sock";
		spec.runtime = &alive;
		assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	}
	assert_int_equal(runtime_of(f->r, "a1"), REG_HEALTH_DEAD);
	assert_string_equal(active(f, "csi-node", "p"), "a0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_runtime_in_memory_only), T(test_runtime_refusals),
	    T(test_runtime_delivery),	    T(test_election_skips_dead),
	    T(test_runtime_counters_quiet), T(test_register_starts_dead),
	    cmocka_unit_test(test_error_text_interned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
