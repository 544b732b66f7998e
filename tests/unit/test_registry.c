/* SPDX-License-Identifier: MIT */
/*
 * The registry's semantics (DESIGN.md "Semantics") against a real SQLite
 * file in a temporary directory; "restart" closes the registry and opens
 * it again from the same file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "registry.h"
#include "test_registry_util.h"

static void test_register_persists_and_reopens(void **state)
{
	struct fixture *f = *state;
	struct reg_plugin p;
	int64_t id0, id1, pid;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_int_equal(p.n_regs, 2);
	assert_string_equal(p.regs[0].alloc, "a1");
	assert_string_equal(p.regs[1].alloc, "a0");
	assert_true(p.regs[0].seq > p.regs[1].seq);
	assert_string_equal(p.regs[0].socket, "/run/csi/a1/csi.sock");
	assert_int_equal(p.regs[0].kind, REG_KIND_NODE);
	assert_string_equal(p.regs[0].type, "csi-node");
	assert_string_equal(p.regs[0].name, "p");
	assert_int_equal(p.regs[0].registered_at, f->now);
	id1 = p.regs[0].id;
	id0 = p.regs[1].id;
	pid = p.id;
	reg_plugin_free_contents(&p);

	restart(f);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_int_equal(p.n_regs, 2);
	assert_string_equal(p.regs[0].alloc, "a1");
	assert_string_equal(p.regs[1].alloc, "a0");
	assert_int_equal(p.regs[0].id, id1);
	assert_int_equal(p.regs[1].id, id0);
	assert_int_equal(p.id, pid);
	reg_plugin_free_contents(&p);

	assert_int_equal(dereg(f, "csi-node", "p", "a1"), 0);
	restart(f);
	assert_string_equal(active(f, "csi-node", "p"), "a0");
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	restart(f);
	assert_null(active(f, "csi-node", "p"));
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), -ENOENT);
}

/* Scenario 1: register a0, a1; restart; a0 registers again: a1 stays active. */
static void test_scenario1_restore_keeps_order(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a1");
	restart(f);
	events_clear(f);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a1");
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_string_equal(f->events, ""); /* identical: no event */
}

/* Scenario 2: register a0, a1; reboot (nobody re-registers); a2: active a2. */
static void test_scenario2_new_after_reboot(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	restart(f);
	events_clear(f);
	assert_int_equal(reg(f, "csi-node", "p", "a2"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a2");
	assert_string_equal(order(f, "csi-node", "p"), "a2 a1 a0");
	assert_string_equal(f->events,
			    "registered csi-node/p a2;active csi-node/p a1->a2;");
}

/* Scenario 3: register a0, a1, deregister a0: active a1, no active event. */
static void test_scenario3_old_leaves(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	events_clear(f);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a1");
	assert_string_equal(f->events, "deregistered csi-node/p a0;");
	restart(f);
	assert_string_equal(order(f, "csi-node", "p"), "a1");
}

/* Scenario 4: a0, a1; deregister a1: a0; deregister a0: plugin gone. */
static void test_scenario4_fall_back_then_gone(void **state)
{
	struct fixture *f = *state;
	struct reg_snapshot s;
	size_t np, nr;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	events_clear(f);
	assert_int_equal(dereg(f, "csi-node", "p", "a1"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a0");
	assert_string_equal(f->events,
			    "deregistered csi-node/p a1;active csi-node/p a1->a0;");
	events_clear(f);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	assert_null(active(f, "csi-node", "p"));
	assert_string_equal(f->events,
			    "deregistered csi-node/p a0 (gone);active csi-node/p a0->(null) (gone);");
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 0);
	assert_int_equal(nr, 0);
	assert_int_equal(registry_snapshot(f->r, NULL, &s), 0);
	assert_int_equal(s.n_plugins, 0);
	reg_snapshot_free(&s);
	restart(f);
	assert_null(active(f, "csi-node", "p"));
	assert_int_equal(count_rows(f, "plugins"), 0);
}

/* Scenario 5: a0, a1; deregister a0; a0 registers again: a1 stays active. */
static void test_scenario5_task_restart_of_old(void **state)
{
	struct fixture *f = *state;
	struct reg_plugin p;
	int64_t seq0;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	seq0 = p.regs[1].seq;
	reg_plugin_free_contents(&p);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	restart(f); /* the tombstone is persisted too */
	events_clear(f);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a1");
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_string_equal(f->events, "registered csi-node/p a0;");
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_int_equal(p.regs[1].seq, seq0);
	reg_plugin_free_contents(&p);
	assert_int_equal(count_rows(f, "tombstones"), 0);
}

/* Scenario 6: one alloc under two types; deregister --alloc removes both. */
static void test_scenario6_deregister_alloc(void **state)
{
	struct fixture *f = *state;
	static const char *const both[] = { "csi-controller", "csi-node" };
	struct reg_spec spec = { .name = "mono", .alloc = "m1", .socket = "/run/csi/m1/csi.sock",
				 .kind = REG_KIND_MONOLITH };
	size_t removed = 99;
	char err[REG_ERR_MAX];

	assert_int_equal(registry_register(f->r, both, 2, &spec, err, sizeof(err)), 0);
	assert_int_equal(reg(f, "csi-node", "other", "x1"), 0);
	assert_string_equal(active(f, "csi-controller", "mono"), "m1");
	assert_string_equal(active(f, "csi-node", "mono"), "m1");
	restart(f);
	events_clear(f);
	assert_int_equal(registry_deregister_alloc(f->r, "m1", &removed, err, sizeof(err)), 0);
	assert_int_equal(removed, 2);
	assert_null(active(f, "csi-controller", "mono"));
	assert_null(active(f, "csi-node", "mono"));
	assert_string_equal(active(f, "csi-node", "other"), "x1");
	assert_string_equal(f->events,
			    "deregistered csi-controller/mono m1 (gone);"
			    "active csi-controller/mono m1->(null) (gone);"
			    "deregistered csi-node/mono m1 (gone);"
			    "active csi-node/mono m1->(null) (gone);");
	restart(f);
	assert_null(active(f, "csi-node", "mono"));
	assert_int_equal(count_rows(f, "registrations"), 1);
	/* Unknown alloc: success, nothing removed, no event. */
	events_clear(f);
	assert_int_equal(registry_deregister_alloc(f->r, "m1", &removed, err, sizeof(err)), 0);
	assert_int_equal(removed, 0);
	assert_string_equal(f->events, "");
}

static void test_update_in_place(void **state)
{
	struct fixture *f = *state;
	struct reg_option opts[] = { { "b", "2" }, { "a", "1" } };
	struct reg_spec spec = { .name = "p", .alloc = "a0", .socket = "/run/csi/a0/csi.sock",
				 .version = "v1", .options = opts, .n_options = 2 };
	static const char *const node[] = { "csi-node" };
	char err[REG_ERR_MAX];
	struct reg_plugin p;
	int64_t id, seq;

	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	events_clear(f);
	/* Same data, options in another order: identical, no event. */
	opts[0] = (struct reg_option){ "a", "1" };
	opts[1] = (struct reg_option){ "b", "2" };
	f->now += 10;
	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	assert_string_equal(f->events, "");
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	id = p.regs[1].id;
	seq = p.regs[1].seq;
	assert_int_equal(p.regs[1].updated_at, f->now - 10);
	assert_int_equal(p.regs[1].n_options, 2);
	assert_string_equal(p.regs[1].options[0].key, "a");
	reg_plugin_free_contents(&p);

	/* Changed data: updated in place, not moved, registered_at kept. */
	spec.version = "v2";
	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	assert_string_equal(f->events, "updated csi-node/p a0;");
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	restart(f);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_string_equal(p.regs[1].version, "v2");
	assert_int_equal(p.regs[1].id, id);
	assert_int_equal(p.regs[1].seq, seq);
	assert_int_equal(p.regs[1].registered_at, f->now - 10);
	assert_int_equal(p.regs[1].updated_at, f->now);
	assert_int_equal(p.regs[1].n_options, 2);
	reg_plugin_free_contents(&p);

	/* Socket and options changes are updates too. */
	events_clear(f);
	spec.n_options = 1;
	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	spec.socket = "/run/csi/a0/other.sock";
	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	assert_string_equal(f->events, "updated csi-node/p a0;updated csi-node/p a0;");
	restart(f);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_string_equal(p.regs[1].socket, "/run/csi/a0/other.sock");
	assert_int_equal(p.regs[1].n_options, 1);
	reg_plugin_free_contents(&p);
	assert_int_equal(count_rows(f, "reg_options"), 1);
}

static void test_deregister_unknown_is_noop(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	events_clear(f);
	assert_int_equal(dereg(f, "csi-node", "p", "zz"), 0);
	assert_int_equal(dereg(f, "csi-node", "nope", "a0"), 0);
	assert_int_equal(dereg(f, "csi-controller", "p", "a0"), 0);
	assert_string_equal(f->events, "");
	assert_string_equal(order(f, "csi-node", "p"), "a0");
	assert_int_equal(count_rows(f, "tombstones"), 0);
}

static void test_seq_is_global_and_persisted(void **state)
{
	struct fixture *f = *state;
	struct reg_plugin p;
	int64_t s1;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	f->now += 2 * TTL; /* the tombstone expires at the next open */
	restart(f);
	assert_int_equal(count_rows(f, "tombstones"), 0);
	assert_int_equal(reg(f, "csi-controller", "q", "b0"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-controller", "q", &p), 0);
	s1 = p.regs[0].seq;
	assert_true(s1 > 1); /* a0 had seq 1, never given again */
	reg_plugin_free_contents(&p);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_true(p.regs[0].seq > s1);
	reg_plugin_free_contents(&p);
}

static void test_plugin_ids_not_reused(void **state)
{
	struct fixture *f = *state;
	struct reg_plugin p;
	int64_t pid, rid;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	pid = p.id;
	rid = p.regs[0].id;
	reg_plugin_free_contents(&p);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	restart(f);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_true(p.id > pid);
	assert_true(p.regs[0].id > rid);
	reg_plugin_free_contents(&p);
}

static void test_types_persisted(void **state)
{
	struct fixture *f = *state;
	const char *const *names;
	const int64_t *ids;
	int64_t c, n;

	assert_int_equal(registry_types(f->r, &names, &ids), 2);
	assert_string_equal(names[0], "csi-controller");
	assert_string_equal(names[1], "csi-node");
	c = ids[0];
	n = ids[1];
	assert_true(c != n);
	restart(f);
	assert_int_equal(registry_types(f->r, &names, &ids), 2);
	assert_int_equal(ids[0], c);
	assert_int_equal(ids[1], n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_register_persists_and_reopens),
		T(test_scenario1_restore_keeps_order),
		T(test_scenario2_new_after_reboot),
		T(test_scenario3_old_leaves),
		T(test_scenario4_fall_back_then_gone),
		T(test_scenario5_task_restart_of_old),
		T(test_scenario6_deregister_alloc),
		T(test_update_in_place),
		T(test_deregister_unknown_is_noop),
		T(test_seq_is_global_and_persisted),
		T(test_plugin_ids_not_reused),
		T(test_types_persisted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
