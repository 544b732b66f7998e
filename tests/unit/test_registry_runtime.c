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
			state = p.regs[i].runtime.state;
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
	struct reg_runtime rt = {.state = 3, .since = 1234};
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
	assert_int_equal(runtime_of(f->r, "a0"), 3);
	assert_int_equal(runtime_of(f->r, "a1"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a1"); /* no liveness rule yet */
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
	assert_int_equal(runtime_of(f->r, "a0"), 3);
	restart(f);
	assert_int_equal(runtime_of(f->r, "a0"), 0);
}

static void test_runtime_refusals(void **state)
{
	struct fixture *f = *state;
	struct reg_runtime rt = {.state = 1};
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
	struct reg_runtime rt = {.state = 9};
	char err[REG_ERR_MAX];

	if (ev->type != REG_EV_RUNTIME)
		return;
	assert_int_equal(ev->reg->runtime.state, 5);
	s->state_seen = runtime_of(s->f->r, "a0");
	s->rc_nested =
	    registry_set_runtime(s->f->r, "csi-node", "p", "a0", &rt, NULL, err, sizeof(err));
}

static void test_runtime_delivery(void **state)
{
	struct fixture *f = *state;
	struct seen s = {.f = f, .state_seen = -1};
	struct reg_runtime rt = {.state = 5};
	char err[REG_ERR_MAX] = "";
	int id;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	id = registry_subscribe(f->r, watch, &s);
	assert_true(id > 0);
	assert_int_equal(
	    registry_set_runtime(f->r, "csi-node", "p", "a0", &rt, NULL, err, sizeof(err)), 0);
	assert_int_equal(s.state_seen, 5);	 /* memory changed before delivery */
	assert_int_equal(s.rc_nested, -EDEADLK); /* no change from a callback */
	assert_int_equal(runtime_of(f->r, "a0"), 5);
	registry_unsubscribe(f->r, id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_runtime_in_memory_only),
	    T(test_runtime_refusals),
	    T(test_runtime_delivery),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
