/* SPDX-License-Identifier: MIT */
/*
 * The registry's semantics (docs/design.md, "Semantics") against a real SQLite
 * file in a temporary directory; "restart" closes the registry and opens
 * it again from the same file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
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
	assert_string_equal(f->events, "registered csi-node/p a2;active csi-node/p a1->a2;");
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
	assert_string_equal(f->events, "deregistered csi-node/p a1;active csi-node/p a1->a0;");
	events_clear(f);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	assert_null(active(f, "csi-node", "p"));
	assert_string_equal(
	    f->events, "deregistered csi-node/p a0 (gone);active csi-node/p a0->(null) (gone);");
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 0);
	assert_int_equal(nr, 0);
	assert_int_equal(registry_snapshot(f->r, NULL, &s), 0);
	assert_int_equal(s.n_plugins, 0);
	reg_snapshot_free(&s);
	restart(f);
	assert_null(active(f, "csi-node", "p"));
	/* Its row stays, keeping its id (test_plugin_id_outlives_its_list). */
	assert_int_equal(count_rows(f, "plugins"), 1);
	assert_int_equal(count_rows(f, "registrations"), 0);
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
	static const char *const both[] = {"csi-controller", "csi-node"};
	struct reg_spec spec = {.name = "mono",
				.alloc = "m1",
				.socket = "/run/csi/m1/csi.sock",
				.kind = REG_KIND_MONOLITH};
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
	assert_string_equal(f->events, "deregistered csi-controller/mono m1 (gone);"
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
	struct reg_option opts[] = {{"b", "2"}, {"a", "1"}};
	struct reg_spec spec = {.name = "p",
				.alloc = "a0",
				.socket = "/run/csi/a0/csi.sock",
				.version = "v1",
				.options = opts,
				.n_options = 2};
	static const char *const node[] = {"csi-node"};
	char err[REG_ERR_MAX];
	struct reg_plugin p;
	int64_t id, seq;

	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	events_clear(f);
	/* Same data, options in another order: identical, no event. */
	opts[0] = (struct reg_option){"a", "1"};
	opts[1] = (struct reg_option){"b", "2"};
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
	for (int round = 0; round < 2; round++) { /* in memory, then from the file */
		assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
		assert_int_equal(p.regs[1].registered_at, f->now - 10);
		assert_int_equal(p.regs[1].updated_at, f->now);
		assert_int_equal(p.regs[1].id, id);
		reg_plugin_free_contents(&p);
		restart(f);
	}
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

/* registry_deregister says whether it removed something, without a lookup
 * before it. */
static void test_deregister_reports_removed(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";
	bool removed = true;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(
	    registry_deregister(f->r, "csi-node", "p", "zz", &removed, err, sizeof(err)), 0);
	assert_false(removed);
	assert_int_equal(
	    registry_deregister(f->r, "csi-node", "p", "a0", &removed, err, sizeof(err)), 0);
	assert_true(removed);
	assert_int_equal(
	    registry_deregister(f->r, "csi-node", "p", "a0", &removed, err, sizeof(err)), 0);
	assert_false(removed); /* already gone */
	removed = true;
	assert_int_equal(registry_deregister(f->r, "gpu", "p", "a0", &removed, err, sizeof(err)),
			 -EINVAL);
	assert_false(removed);
}

/* A registration of (csi-node, p, alloc) with source (NULL: the control
 * socket's). */
static int reg_from(struct fixture *f, const char *alloc, const char *source)
{
	static const char *const node[] = {"csi-node"};
	char sock[64], err[REG_ERR_MAX] = "";
	struct reg_spec s;

	snprintf(sock, sizeof(sock), "/run/csi/%s/csi.sock", alloc);
	s = (struct reg_spec){.name = "p", .alloc = alloc, .socket = sock, .source = source};
	return registry_register(f->r, node, 1, &s, err, sizeof(err));
}

/* The source of (csi-node, p, alloc) as shown ("control"), or "gone". */
static const char *source_now(struct fixture *f, const char *alloc)
{
	static char buf[64];
	struct registration g;

	if (registry_get_registration(f->r, "csi-node", "p", alloc, &g) != 0)
		return "gone";
	snprintf(buf, sizeof(buf), "%s", reg_source_name(g.source));
	registration_free_contents(&g);
	return buf;
}

/* The discovery deregisters its own with a compare-and-deregister: a
 * register of the same alloc from the control socket between its look at
 * the source and its deregistration is kept (a look, then a plain
 * deregister, removed it: the client had rc 0 and an `updated', and the
 * registration went in the same millisecond). */
static void test_deregister_if_source_keeps_a_register_in_between(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";
	bool removed = true;

	assert_int_equal(reg_from(f, "a0", "discover.nomad"), 0);
	/* The discovery looks: its own. */
	assert_string_equal(source_now(f, "a0"), "discover.nomad");
	/* The control socket registers the alloc meanwhile. */
	events_clear(f);
	assert_int_equal(reg_from(f, "a0", NULL), 0);
	assert_string_equal(f->events, "updated csi-node/p a0;");
	/* The discovery's deregistration: not its own any more. */
	assert_int_equal(registry_deregister_if_source(f->r, "csi-node", "p", "a0",
						       "discover.nomad", &removed, err,
						       sizeof(err)),
			 0);
	assert_false(removed);
	assert_string_equal(f->events, "updated csi-node/p a0;");
	assert_string_equal(source_now(f, "a0"), "control");
	restart(f);
	assert_string_equal(active(f, "csi-node", "p"), "a0");
	assert_string_equal(source_now(f, "a0"), "control");

	/* Another section's is not this one's; the control socket's own ("")
	 * and the section's own go. */
	assert_int_equal(reg_from(f, "a1", "discover.k8s"), 0);
	assert_int_equal(registry_deregister_if_source(f->r, "csi-node", "p", "a1",
						       "discover.nomad", &removed, err,
						       sizeof(err)),
			 0);
	assert_false(removed);
	assert_int_equal(registry_deregister_if_source(f->r, "csi-node", "p", "a1", "discover.k8s",
						       &removed, err, sizeof(err)),
			 0);
	assert_true(removed);
	assert_int_equal(registry_deregister_if_source(f->r, "csi-node", "p", "a0", "", &removed,
						       err, sizeof(err)),
			 0);
	assert_true(removed);
	assert_null(active(f, "csi-node", "p"));
	/* Unknown: a no-op, as registry_deregister's. */
	assert_int_equal(registry_deregister_if_source(f->r, "csi-node", "p", "zz", "discover.k8s",
						       &removed, err, sizeof(err)),
			 0);
	assert_false(removed);
}

/* In one group, the control socket's register ahead of the discovery's
 * compare-and-deregister: the deregistration is compared on what the
 * register left (planned again after it), so the register is kept. */
static void test_deregister_if_source_after_a_register_in_its_group(void **state)
{
	static const char *const node[] = {"csi-node"};
	struct fixture *f = *state;
	struct reg_spec s = {.name = "p", .alloc = "a0", .socket = "/run/csi/a0/csi.sock"};
	struct reg_mutation m[2] = {
	    {.op = REG_MUT_REGISTER, .types = node, .n_types = 1, .spec = &s},
	    {.op = REG_MUT_DEREGISTER,
	     .type = "csi-node",
	     .name = "p",
	     .alloc = "a0",
	     .if_source = "discover.nomad"},
	};

	assert_int_equal(reg_from(f, "a0", "discover.nomad"), 0);
	assert_int_equal(registry_mutate(f->r, m, 2), 2);
	assert_int_equal(m[1].removed, 0);
	assert_string_equal(source_now(f, "a0"), "control");
	restart(f);
	assert_string_equal(source_now(f, "a0"), "control");
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
	/* The (type, name) keeps its id; a registration's is never reused. */
	assert_int_equal(p.id, pid);
	assert_true(p.regs[0].id > rid);
	reg_plugin_free_contents(&p);
	/* Another plugin never gets one given before. */
	assert_int_equal(reg(f, "csi-node", "q", "a0"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "q", &p), 0);
	assert_true(p.id > pid);
	reg_plugin_free_contents(&p);
}

struct empty_seen {
	char names[256];
	int64_t ids[4];
	size_t n;
};

static int collect_empty(void *arg, const char *type, const char *name, int64_t id)
{
	struct empty_seen *e = arg;
	size_t len = strlen(e->names);

	snprintf(e->names + len, sizeof(e->names) - len, "%s/%s;", type, name);
	if (e->n < 4)
		e->ids[e->n] = id;
	e->n++;
	return 0;
}

/* The id of a (type, name) is the same for the life of the state file: its
 * list empties, it registers again (also after a close and an open), and
 * meanwhile no getter shows it. */
static void test_plugin_id_outlives_its_list(void **state)
{
	struct fixture *f = *state;
	struct empty_seen seen;
	char err[REG_ERR_MAX] = "";
	struct reg_snapshot s;
	struct reg_plugin p;
	size_t np, nr;
	int64_t pid;

	memset(&seen, 0, sizeof(seen));
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "other", "a0"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	pid = p.id;
	reg_plugin_free_contents(&p);
	assert_int_equal(registry_each_empty_plugin(f->r, collect_empty, &seen), 0);
	assert_int_equal(seen.n, 0);
	events_clear(f);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	assert_string_equal(
	    f->events, "deregistered csi-node/p a0 (gone);active csi-node/p a0->(null) (gone);");
	/* Empty: not listed, not found, not counted; its id is kept. */
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), -ENOENT);
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 1);
	assert_int_equal(nr, 1);
	assert_int_equal(registry_snapshot(f->r, NULL, &s), 0);
	assert_int_equal(s.n_plugins, 1);
	assert_string_equal(s.plugins[0].name, "other");
	reg_snapshot_free(&s);
	assert_int_equal(registry_each_empty_plugin(f->r, collect_empty, &seen), 0);
	assert_string_equal(seen.names, "csi-node/p;");
	assert_int_equal(seen.ids[0], pid);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0); /* unknown: a no-op */
	/* Registered again: the same id. */
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_int_equal(p.id, pid);
	reg_plugin_free_contents(&p);
	registry_counts(f->r, &np, NULL);
	assert_int_equal(np, 2);
	/* Emptied, closed and opened: still known, still the same id. */
	assert_int_equal(dereg(f, "csi-node", "p", "a1"), 0);
	restart(f);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(registry_each_empty_plugin(f->r, collect_empty, &seen), 0);
	assert_string_equal(seen.names, "csi-node/p;");
	assert_int_equal(seen.ids[0], pid);
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 1);
	assert_int_equal(nr, 1);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), -ENOENT);
	events_clear(f);
	assert_int_equal(reg(f, "csi-node", "p", "a2"), 0);
	assert_string_equal(f->events, "registered csi-node/p a2;active csi-node/p (null)->a2;");
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "p", &p), 0);
	assert_int_equal(p.id, pid);
	reg_plugin_free_contents(&p);
	/* One row per name ever registered, none per registration. */
	assert_int_equal(count_rows(f, "plugins"), 2);
	assert_int_equal(dereg(f, "csi-node", "p", "a2"), 0);
	assert_int_equal(registry_check_file(f->path, err, sizeof(err)), 0);
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

static void test_tombstone_gives_seq_back_until_expiry(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(count_rows(f, "tombstones"), 1);
	f->now += TTL - 1; /* still alive */
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	f->now += TTL; /* expired: a0 comes back as a new allocation */
	events_clear(f);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_string_equal(order(f, "csi-node", "p"), "a0 a1");
	assert_string_equal(f->events, "registered csi-node/p a0;active csi-node/p a1->a0;");
	assert_int_equal(count_rows(f, "tombstones"), 0);

	/* registry_expire_tombstones deletes only the old ones. */
	assert_int_equal(dereg(f, "csi-node", "p", "a1"), 0);
	f->now += 10;
	assert_int_equal(dereg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(registry_expire_tombstones(f->r, err, sizeof(err)), 0);
	f->now += TTL - 5;
	assert_int_equal(registry_expire_tombstones(f->r, err, sizeof(err)), 1);
	assert_int_equal(count_rows(f, "tombstones"), 1);
	f->now += 5;
	assert_int_equal(registry_expire_tombstones(f->r, err, sizeof(err)), 1);
	assert_int_equal(count_rows(f, "tombstones"), 0);
}

static void test_tombstoned_newest_returns_to_front(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a2"), 0);
	assert_int_equal(dereg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(dereg(f, "csi-node", "p", "a2"), 0);
	events_clear(f);
	/* a1 restarts: its original place is between a2 (gone) and a0. */
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_string_equal(order(f, "csi-node", "p"), "a1 a0");
	assert_string_equal(f->events, "registered csi-node/p a1;active csi-node/p a0->a1;");
	assert_int_equal(reg(f, "csi-node", "p", "a2"), 0);
	assert_string_equal(order(f, "csi-node", "p"), "a2 a1 a0");
}

struct nested {
	struct fixture *f;
	int rc_register, rc_dereg, rc_alloc, rc_import;
	size_t seen;
};

static void mutate_from_callback(const struct reg_event *ev, void *arg)
{
	struct nested *n = arg;
	struct reg_spec spec = {.name = "x", .alloc = "x", .socket = "/x.sock"};
	const char *type = "csi-node";
	struct reg_snapshot s;
	char err[REG_ERR_MAX];

	(void)ev;
	n->rc_register = registry_register(n->f->r, &type, 1, &spec, err, sizeof(err));
	n->rc_dereg = registry_deregister(n->f->r, "csi-node", "p", "a0", NULL, err, sizeof(err));
	n->rc_alloc = registry_deregister_alloc(n->f->r, "a0", NULL, err, sizeof(err));
	n->rc_import =
	    registry_import_legacy_json(n->f->r, "{\"Plugins\": {}}", NULL, err, sizeof(err));
	assert_int_equal(registry_snapshot(n->f->r, NULL, &s), 0);
	n->seen = s.n_plugins;
	reg_snapshot_free(&s);
}

static void test_callback_cannot_mutate(void **state)
{
	struct fixture *f = *state;
	struct nested n = {.f = f};
	int id = registry_subscribe(f->r, mutate_from_callback, &n);

	assert_true(id > 0);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(n.rc_register, -EDEADLK);
	assert_int_equal(n.rc_dereg, -EDEADLK);
	assert_int_equal(n.rc_alloc, -EDEADLK);
	assert_int_equal(n.rc_import, -EDEADLK);
	assert_int_equal(n.seen, 1);
	assert_null(active(f, "csi-node", "x"));
	assert_string_equal(active(f, "csi-node", "p"), "a0");
	registry_unsubscribe(f->r, id);
}

struct counter {
	struct fixture *f;
	int id;
	int n;
	bool unsubscribe_self;
};

static void count_event(const struct reg_event *ev, void *arg)
{
	struct counter *c = arg;

	(void)ev;
	c->n++;
	if (c->unsubscribe_self)
		registry_unsubscribe(c->f->r, c->id);
}

static void test_subscribe_unsubscribe(void **state)
{
	struct fixture *f = *state;
	struct counter a = {.f = f}, b = {.f = f, .unsubscribe_self = true};

	a.id = registry_subscribe(f->r, count_event, &a);
	b.id = registry_subscribe(f->r, count_event, &b);
	assert_true(a.id > 0 && b.id > 0 && a.id != b.id);
	assert_int_equal(registry_subscribe(f->r, NULL, NULL), -EINVAL);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0); /* registered + active */
	assert_int_equal(a.n, 2);
	assert_int_equal(b.n, 1); /* left during its first event */
	registry_unsubscribe(f->r, a.id);
	registry_unsubscribe(f->r, 12345); /* unknown: ignored */
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(a.n, 2);
	assert_int_equal(b.n, 1);
	/* The fixture's own recorder is still there. */
	assert_non_null(strstr(f->events, "active csi-node/p a0->a1;"));
}

/* A subscriber added from a callback starts with the next mutation: the
 * state it can read then already holds this one's changes. */
struct late {
	struct fixture *f;
	int id;
	size_t plugins_seen; /* by the snapshot taken when subscribing */
	int n_events;
};

static void late_count(const struct reg_event *ev, void *arg)
{
	(void)ev;
	((struct late *)arg)->n_events++;
}

static void subscribe_late(const struct reg_event *ev, void *arg)
{
	struct late *l = arg;
	struct reg_snapshot s;

	(void)ev;
	if (l->id)
		return;
	assert_int_equal(registry_snapshot(l->f->r, NULL, &s), 0);
	l->plugins_seen = s.n_plugins;
	reg_snapshot_free(&s);
	l->id = registry_subscribe(l->f->r, late_count, l);
}

static void test_subscribe_from_callback(void **state)
{
	struct fixture *f = *state;
	struct late l = {.f = f};
	int id = registry_subscribe(f->r, subscribe_late, &l);

	assert_true(id > 0);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0); /* registered + active */
	assert_true(l.id > 0);
	assert_int_equal(l.plugins_seen, 1); /* p is in what it read... */
	assert_int_equal(l.n_events, 0);     /* ...so no event of p may follow */
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(l.n_events, 2);
	registry_unsubscribe(f->r, id);
	registry_unsubscribe(f->r, l.id);
}

static void test_snapshot_sorted_and_filtered(void **state)
{
	struct fixture *f = *state;
	struct reg_snapshot s;

	assert_int_equal(reg(f, "csi-node", "b", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "a", "a1"), 0);
	assert_int_equal(reg(f, "csi-node", "a", "a2"), 0);
	assert_int_equal(reg(f, "csi-controller", "c", "a0"), 0);
	assert_int_equal(registry_snapshot(f->r, NULL, &s), 0);
	assert_int_equal(s.n_plugins, 3);
	assert_string_equal(s.plugins[0].type, "csi-controller");
	assert_string_equal(s.plugins[1].name, "a");
	assert_int_equal(s.plugins[1].n_regs, 2);
	assert_string_equal(s.plugins[1].regs[0].alloc, "a2");
	assert_string_equal(s.plugins[2].name, "b");
	reg_snapshot_free(&s);
	assert_int_equal(registry_snapshot(f->r, "csi-node", &s), 0);
	assert_int_equal(s.n_plugins, 2);
	reg_snapshot_free(&s);
	assert_int_equal(registry_snapshot(f->r, "gpu", &s), 0);
	assert_int_equal(s.n_plugins, 0);
	reg_snapshot_free(&s);
}

static void test_register_several_types(void **state)
{
	struct fixture *f = *state;
	static const char *const both[] = {"csi-controller", "csi-node"};
	struct reg_spec spec = {.name = "m", .alloc = "m1", .socket = "/run/csi/m1/csi.sock"};
	char err[REG_ERR_MAX] = "";
	struct reg_plugin p;

	assert_int_equal(registry_register(f->r, both + 1, 1, &spec, err, sizeof(err)), 0);
	events_clear(f);
	/* csi-node: identical, nothing; csi-controller: new. */
	assert_int_equal(registry_register(f->r, both, 2, &spec, err, sizeof(err)), 0);
	assert_string_equal(f->events, "registered csi-controller/m m1;"
				       "active csi-controller/m (null)->m1;");
	/* Kind unset: derived from each type. */
	assert_int_equal(registry_get_plugin(f->r, "csi-controller", "m", &p), 0);
	assert_int_equal(p.regs[0].kind, REG_KIND_CONTROLLER);
	reg_plugin_free_contents(&p);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "m", &p), 0);
	assert_int_equal(p.regs[0].kind, REG_KIND_NODE);
	reg_plugin_free_contents(&p);
	events_clear(f);
	spec.version = "2";
	assert_int_equal(registry_register(f->r, both, 2, &spec, err, sizeof(err)), 0);
	assert_string_equal(f->events, "updated csi-controller/m m1;updated csi-node/m m1;");
	restart(f);
	assert_int_equal(registry_get_plugin(f->r, "csi-controller", "m", &p), 0);
	assert_string_equal(p.regs[0].version, "2");
	reg_plugin_free_contents(&p);
}

static void test_many_plugins(void **state)
{
	struct fixture *f = *state;
	char name[32], alloc[32], err[REG_ERR_MAX];
	size_t np, nr, removed;

	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "p%d", i % 100);
		snprintf(alloc, sizeof(alloc), "a%d", i);
		assert_int_equal(reg(f, (i / 100) % 2 ? "csi-node" : "csi-controller", name, alloc),
				 0);
	}
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 200);
	assert_int_equal(nr, 500);
	restart(f);
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 200);
	assert_int_equal(nr, 500);
	assert_string_equal(order(f, "csi-node", "p1"), "a301 a101");
	for (int i = 0; i < 500; i += 2) {
		snprintf(alloc, sizeof(alloc), "a%d", i);
		assert_int_equal(registry_deregister_alloc(f->r, alloc, &removed, err, sizeof(err)),
				 0);
		assert_int_equal(removed, 1);
	}
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 100);
	assert_int_equal(nr, 250);
	assert_null(active(f, "csi-controller", "p0"));
}

struct reader {
	struct fixture *f;
	atomic_int *stop;
	long rounds; /* each thread has its own reader */
	int bad;
};

static void *read_loop(void *arg)
{
	struct reader *rd = arg;

	while (!atomic_load(rd->stop)) {
		struct reg_snapshot s;
		struct reg_plugin p;

		if (registry_snapshot(rd->f->r, NULL, &s) < 0) {
			rd->bad++;
			continue;
		}
		for (size_t i = 0; i < s.n_plugins; i++) {
			if (s.plugins[i].n_regs == 0)
				rd->bad++;
			for (size_t j = 1; j < s.plugins[i].n_regs; j++)
				if (s.plugins[i].regs[j - 1].seq <= s.plugins[i].regs[j].seq)
					rd->bad++;
		}
		reg_snapshot_free(&s);
		if (registry_get_plugin(rd->f->r, "csi-node", "p", &p) == 0) {
			if (p.n_regs == 0)
				rd->bad++;
			reg_plugin_free_contents(&p);
		}
		rd->rounds++;
	}
	return NULL;
}

/* Readers on other threads always see whole, ordered lists. */
static void test_concurrent_readers(void **state)
{
	struct fixture *f = *state;
	atomic_int stop = 0;
	struct reader rd[2] = {{.f = f, .stop = &stop}, {.f = f, .stop = &stop}};
	pthread_t th[2];
	char alloc[32];

	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, read_loop, &rd[i]), 0);
	for (int i = 0; i < 150; i++) {
		snprintf(alloc, sizeof(alloc), "a%d", i);
		assert_int_equal(reg(f, "csi-node", "p", alloc), 0);
		if (i % 3 == 0)
			assert_int_equal(dereg(f, "csi-node", "p", alloc), 0);
		if (i % 10 == 9) {
			snprintf(alloc, sizeof(alloc), "a%d", i - 1);
			assert_int_equal(dereg(f, "csi-node", "p", alloc), 0);
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(rd[i].bad, 0);
		assert_true(rd[i].rounds > 0);
	}
	assert_string_equal(active(f, "csi-node", "p"), "a149");
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
	    T(test_deregister_reports_removed),
	    T(test_deregister_if_source_keeps_a_register_in_between),
	    T(test_deregister_if_source_after_a_register_in_its_group),
	    T(test_seq_is_global_and_persisted),
	    T(test_plugin_ids_not_reused),
	    T(test_plugin_id_outlives_its_list),
	    T(test_types_persisted),
	    T(test_tombstone_gives_seq_back_until_expiry),
	    T(test_tombstoned_newest_returns_to_front),
	    T(test_callback_cannot_mutate),
	    T(test_subscribe_unsubscribe),
	    T(test_subscribe_from_callback),
	    T(test_snapshot_sorted_and_filtered),
	    T(test_register_several_types),
	    T(test_many_plugins),
	    T(test_concurrent_readers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
