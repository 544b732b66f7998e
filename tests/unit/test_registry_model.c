/* SPDX-License-Identifier: MIT */
/*
 * The registry's value types (registry/model.c): which registration is
 * active, deep copies that own their strings, comparison of what is
 * registered, the probe modes' spelling and the resolver of a
 * registration's probe settings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "registry.h"

static struct reg_option opts[] = {{"a", "1"}, {"b", "2"}};

static struct registration regs[] = {
    {.id = 2,
     .type = "csi-node",
     .name = "p",
     .alloc = "a1",
     .socket = "/run/a1.sock",
     .version = "1",
     .kind = REG_KIND_NODE,
     .options = opts,
     .n_options = 2,
     .seq = 9},
    {.id = 1,
     .type = "csi-node",
     .name = "p",
     .alloc = "a0",
     .socket = "/run/a0.sock",
     .version = "",
     .kind = REG_KIND_NODE,
     .seq = 4},
};

static void test_active(void **state)
{
	struct reg_plugin p = {.type = "csi-node", .name = "p", .regs = regs, .n_regs = 2};

	(void)state;
	assert_null(reg_plugin_active(NULL));
	/* A zeroed index means the first (most recent) one. */
	assert_ptr_equal(reg_plugin_active(&p), &regs[0]);
	p.active = 1;
	assert_ptr_equal(reg_plugin_active(&p), &regs[1]);
	p.active = 2; /* none active */
	assert_null(reg_plugin_active(&p));
	p.active = 0;
	p.n_regs = 0;
	assert_null(reg_plugin_active(&p));
}

static void test_copy_and_compare(void **state)
{
	struct reg_plugin src = {
	    .id = 7, .type = "csi-node", .name = "p", .regs = regs, .n_regs = 2, .active = 1};
	struct reg_plugin dst;
	struct registration g;

	(void)state;
	assert_int_equal(reg_plugin_copy(&src, &dst), 0);
	assert_int_equal(dst.id, 7);
	assert_int_equal(dst.n_regs, 2);
	assert_ptr_equal(reg_plugin_active(&dst), &dst.regs[1]);
	assert_string_equal(reg_plugin_active(&dst)->alloc, "a0");
	assert_ptr_not_equal(dst.regs[0].options, opts);
	assert_string_equal(dst.regs[0].options[1].value, "2");
	assert_true(registration_same_data(&dst.regs[0], &regs[0]));
	assert_false(registration_same_data(&dst.regs[0], &regs[1]));
	reg_plugin_free_contents(&dst);
	assert_null(dst.regs);
	reg_plugin_free_contents(&dst); /* freeing an empty value again is fine */

	/* NULL strings become "", so a copy is always printable. */
	assert_int_equal(registration_copy(&(struct registration){.alloc = "x"}, &g), 0);
	assert_string_equal(g.version, "");
	assert_string_equal(g.alloc, "x");
	g.version[0] = '\0';
	assert_false(registration_same_data(&g, &regs[1])); /* sockets differ */
	registration_free_contents(&g);
}

/* The probe modes' one spelling: each name parses back to its mode, the
 * default has none, and nothing else parses (no case folding here). */
static void test_probe_spelling(void **state)
{
	enum reg_probe p = REG_PROBE_DEFAULT;

	(void)state;
	assert_null(reg_probe_name(REG_PROBE_DEFAULT));
	for (int m = REG_PROBE_NONE; m < REG_PROBE_COUNT; m++) {
		assert_non_null(reg_probe_name((enum reg_probe)m));
		assert_int_equal(reg_probe_parse(reg_probe_name((enum reg_probe)m), &p), 0);
		assert_int_equal(p, m);
	}
	assert_string_equal(reg_probe_name(REG_PROBE_CONNECT), "connect");
	assert_int_equal(reg_probe_parse("CSI", &p), -EINVAL);
	assert_int_equal(reg_probe_parse("default", &p), -EINVAL);
	assert_int_equal(reg_probe_parse(NULL, &p), -EINVAL);
}

/* The one resolver: a registration's own mode over its type's settings,
 * key by key, over [probe]; a mode no level sets is none. */
static void test_probe_settings_of(void **state)
{
	const struct reg_probe_type types[] = {
	    {"csi-node", {REG_PROBE_CSI, 0, 2000, 0}}, /* mode and timeout only */
	    {"csi-controller", {0, 0, 0, 0}},	       /* an empty section */
	};
	struct reg_probe_policy p = {
	    .dflt = {REG_PROBE_CONNECT, 5000, 1000, 3}, .types = types, .n_types = 2};
	struct reg_probe_settings s;

	(void)state;
	reg_probe_settings_of(&p, "csi-node", REG_PROBE_DEFAULT, &s);
	assert_int_equal(s.mode, REG_PROBE_CSI);
	assert_int_equal(s.interval_ms, 5000);
	assert_int_equal(s.timeout_ms, 2000);
	assert_int_equal(s.failures, 3);
	reg_probe_settings_of(&p, "csi-node", REG_PROBE_NONE, &s);
	assert_int_equal(s.mode, REG_PROBE_NONE);
	assert_int_equal(s.timeout_ms, 2000); /* the type's timeout stays */
	reg_probe_settings_of(&p, "csi-controller", REG_PROBE_DEFAULT, &s);
	assert_int_equal(s.mode, REG_PROBE_CONNECT);
	assert_int_equal(s.timeout_ms, 1000);
	reg_probe_settings_of(&p, "not-listed", REG_PROBE_CSI, &s);
	assert_int_equal(s.mode, REG_PROBE_CSI);
	assert_int_equal(s.failures, 3);
	reg_probe_settings_of(&p, NULL, REG_PROBE_DEFAULT, &s);
	assert_int_equal(s.mode, REG_PROBE_CONNECT);
	/* A policy that sets no mode (a zeroed one) probes nothing. */
	memset(&p, 0, sizeof(p));
	reg_probe_settings_of(&p, "csi-node", REG_PROBE_DEFAULT, &s);
	assert_int_equal(s.mode, REG_PROBE_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_active),
	    cmocka_unit_test(test_copy_and_compare),
	    cmocka_unit_test(test_probe_spelling),
	    cmocka_unit_test(test_probe_settings_of),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
