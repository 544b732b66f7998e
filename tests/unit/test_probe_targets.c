/* SPDX-License-Identifier: MIT */
/*
 * What a probe round copies of the registry (registry_probe_targets):
 * order, fields, the type filter, copies that outlive the registration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

/* What a round probes (registry_probe_targets): every registration of
 * the type asked (or of every type), in (type, name) order and each
 * plugin's by seq, highest first, with its socket, probe, csi name and
 * health, none of it pointing into the registry (it outlives a
 * deregistration). */
static void test_probe_targets(void **state)
{
	static const char *const types[] = {"csi-node", "csi-controller"};
	const struct registry_options ro = {
	    .types = types, .n_types = 2, .tombstone_ttl = 60, .synchronous = "off"};
	struct reg_spec q0 = {.name = "q", .alloc = "q0", .socket = "/run/q0.sock"};
	struct reg_spec p0 = {.name = "p", .alloc = "p0", .socket = "/run/p0.sock"};
	struct reg_spec p1 = {.name = "p", .alloc = "p1", .socket = "/run/p1.sock",
			      .probe = REG_PROBE_CSI, .csi_name = "x.csi"};
	struct reg_spec c0 = {.name = "c", .alloc = "c0", .socket = "/run/c0.sock"};
	struct reg_runtime dead = {.health = REG_HEALTH_DEAD, .probed_at = 7, .failures = 3};
	struct reg_probe_targets t = {0};
	struct registry *r = NULL;
	char err[REG_ERR_MAX] = "";

	(void)state;
	assert_int_equal(registry_open(":memory:", &ro, &r, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, &types[0], 1, &q0, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, &types[0], 1, &p0, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, &types[0], 1, &p1, err, sizeof(err)), 0);
	assert_int_equal(registry_register(r, &types[1], 1, &c0, err, sizeof(err)), 0);
	assert_int_equal(
	    registry_set_runtime(r, "csi-node", "p", "p0", &dead, NULL, err, sizeof(err)), 0);

	assert_int_equal(registry_probe_targets(r, NULL, &t), 0);
	assert_int_equal(t.n, 4);
	assert_string_equal(t.t[0].type, "csi-controller");
	assert_string_equal(t.t[0].alloc, "c0");
	assert_string_equal(t.t[1].name, "p");
	assert_string_equal(t.t[1].alloc, "p1"); /* most recent first */
	assert_string_equal(t.t[1].socket, "/run/p1.sock");
	assert_int_equal(t.t[1].probe, REG_PROBE_CSI);
	assert_string_equal(t.t[1].csi_name, "x.csi");
	assert_string_equal(t.t[2].alloc, "p0");
	assert_string_equal(t.t[2].csi_name, "");
	assert_int_equal(t.t[2].runtime.health, REG_HEALTH_DEAD);
	assert_int_equal(t.t[2].runtime.failures, 3);
	assert_int_equal(t.t[1].runtime.health, REG_HEALTH_UNKNOWN);
	assert_string_equal(t.t[3].type, "csi-node");
	assert_string_equal(t.t[3].name, "q");
	/* Copies: still readable after the registration is gone. */
	assert_int_equal(registry_deregister(r, "csi-node", "q", "q0", NULL, err, sizeof(err)), 0);
	assert_string_equal(t.t[3].socket, "/run/q0.sock");
	reg_probe_targets_free(&t);
	reg_probe_targets_free(&t); /* zeroed: freed again harmlessly */

	assert_int_equal(registry_probe_targets(r, "csi-node", &t), 0);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.t[0].alloc, "p1");
	assert_string_equal(t.t[1].alloc, "p0");
	reg_probe_targets_free(&t);
	assert_int_equal(registry_probe_targets(r, "csi-other", &t), 0);
	assert_int_equal(t.n, 0);
	reg_probe_targets_free(&t);
	/* Names alike beyond their first 16 bytes, and one a prefix of
	 * another: strcmp's order. */
	{
		static const char *const names[] = {"a-very-long-common-name-b", "a-very-long-common-name",
						    "a-very-long-common-name-a", "a-very-long-c", "b"};
		static const char *const want[] = {"a-very-long-c", "a-very-long-common-name",
						   "a-very-long-common-name-a",
						   "a-very-long-common-name-b", "b", "p", "p"};

		for (size_t i = 0; i < 5; i++) {
			struct reg_spec sp = {.name = names[i], .alloc = "x", .socket = "/run/x.sock"};

			assert_int_equal(registry_register(r, &types[0], 1, &sp, err, sizeof(err)), 0);
		}
		assert_int_equal(registry_probe_targets(r, "csi-node", &t), 0);
		assert_int_equal(t.n, 7);
		for (size_t i = 0; i < 7; i++)
			assert_string_equal(t.t[i].name, want[i]);
		reg_probe_targets_free(&t);
	}
	registry_close(r);
}

/* Keeps the registrations whose alloc does not end in '0'; counts calls. */
static bool keep_not0(void *arg, const char *type, const struct registration *g)
{
	(void)type;
	(*(int *)arg)++;
	return g->alloc[strlen(g->alloc) - 1] != '0';
}

static void test_probe_targets_kept(void **state)
{
	static const char *const types[] = {"csi-node", "csi-controller"};
	const struct registry_options ro = {
	    .types = types, .n_types = 2, .tombstone_ttl = 60, .synchronous = "off"};
	struct reg_spec s[] = {
	    {.name = "q", .alloc = "q0", .socket = "/run/q0.sock"},
	    {.name = "p", .alloc = "p0", .socket = "/run/p0.sock"},
	    {.name = "p", .alloc = "p1", .socket = "/run/p1.sock"},
	    {.name = "c", .alloc = "c0", .socket = "/run/c0.sock"},
	};
	struct reg_probe_targets t = {0};
	struct registry *r = NULL;
	char err[REG_ERR_MAX] = "";
	int calls = 0;

	(void)state;
	assert_int_equal(registry_open(":memory:", &ro, &r, err, sizeof(err)), 0);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(registry_register(r, &types[i == 3], 1, &s[i], err, sizeof(err)), 0);
	/* What the filter leaves out is not copied; each asked once. */
	assert_int_equal(registry_probe_targets_kept(r, NULL, keep_not0, &calls, &t), 0);
	assert_int_equal(calls, 4);
	assert_int_equal(t.n, 1);
	assert_string_equal(t.t[0].alloc, "p1");
	assert_string_equal(t.t[0].name, "p");
	assert_string_equal(t.t[0].socket, "/run/p1.sock");
	reg_probe_targets_free(&t);
	/* NULL keeps all. */
	assert_int_equal(registry_probe_targets_kept(r, "csi-node", NULL, NULL, &t), 0);
	assert_int_equal(t.n, 3);
	reg_probe_targets_free(&t);
	registry_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_probe_targets),
	    cmocka_unit_test(test_probe_targets_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
