/* SPDX-License-Identifier: MIT */
/*
 * The registry's value types (registry/model.c): which registration is
 * active, deep copies that own their strings, comparison of what is
 * registered.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_active),
	    cmocka_unit_test(test_copy_and_compare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
