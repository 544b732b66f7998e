/* SPDX-License-Identifier: MIT */
/* control/json.c: the JSON shapes of registrations, plugins and snapshots,
 * from structs built by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"

/* 2026-11-30T09:19:05Z and a minute later. */
#define T0 INT64_C(1796030345)
#define T1 (T0 + 60)

static struct reg_option node_opts[] = {
    {(char *)"ContainerMountPoint", (char *)"/csi"},
    {(char *)"Provider", (char *)"demo"},
};

static struct registration regs[] = {
    {.id = 7,
     .type = (char *)"csi-node",
     .name = (char *)"plugin-2",
     .alloc = (char *)"a1",
     .socket = (char *)"/var/nomad/a1/csi.sock",
     .version = (char *)"v0.2",
     .kind = REG_KIND_NODE,
     .options = node_opts,
     .n_options = 2,
     .seq = 5,
     .registered_at = T0,
     .updated_at = T1},
    {.id = 3,
     .type = (char *)"csi-node",
     .name = (char *)"plugin-2",
     .alloc = (char *)"a0",
     .socket = (char *)"/var/nomad/a0/csi.sock",
     .version = (char *)"",
     .kind = REG_KIND_MONOLITH,
     .options = NULL,
     .n_options = 0,
     .seq = 2,
     .registered_at = 0,
     .updated_at = 0},
};

static void assert_dump(json_t *j, const char *want)
{
	char *got;

	assert_non_null(j);
	got = json_dumps(j, JSON_COMPACT);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_registration(void **state)
{
	json_t *j = control_json_registration(&regs[0]);

	assert_dump(j,
		    "{\"alloc\":\"a1\",\"socket\":\"/var/nomad/a1/csi.sock\",\"version\":\"v0.2\","
		    "\"kind\":\"node\",\"options\":{\"ContainerMountPoint\":\"/csi\","
		    "\"Provider\":\"demo\"},\"source\":\"control\",\"seq\":5,"
		    "\"registered_at\":\"2026-11-30T09:19:05Z\","
		    "\"updated_at\":\"2026-11-30T09:20:05Z\"}");
	json_decref(j);

	/* No options: an empty object; no version: "". */
	j = control_json_registration(&regs[1]);
	assert_non_null(j);
	assert_true(json_is_object(json_object_get(j, "options")));
	assert_int_equal(json_object_size(json_object_get(j, "options")), 0);
	assert_string_equal(json_string_value(json_object_get(j, "version")), "");
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "monolith");
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 2);
	assert_string_equal(json_string_value(json_object_get(j, "registered_at")),
			    "1970-01-01T00:00:00Z");
	json_decref(j);
}

static void test_registration_not_utf8(void **state)
{
	struct reg_option opt = {(char *)"k", (char *)"caf\xe9"};
	struct registration r = regs[1];
	json_t *j;

	r.options = &opt;
	r.n_options = 1;
	r.version = (char *)"v\xff";
	j = control_json_registration(&r);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "options"), "k")),
			    "caf?");
	assert_string_equal(json_string_value(json_object_get(j, "version")), "v?");
	json_decref(j);
	/* Valid UTF-8 goes out unchanged; in text that is not, each invalid
	 * byte becomes `?' and the valid characters around it are kept. */
	r.version = (char *)"caf\xc3\xa9";
	opt.value = (char *)"caf\xc3\xa9 \xff";
	j = control_json_registration(&r);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "version")), "caf\xc3\xa9");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "options"), "k")),
			    "caf\xc3\xa9 ?");
	json_decref(j);
}

static void test_plugin(void **state)
{
	struct reg_plugin p = {.id = 1,
			       .type = (char *)"csi-node",
			       .name = (char *)"plugin-2",
			       .regs = regs,
			       .n_regs = 2};
	json_t *j = control_json_plugin(&p), *list;

	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "csi-node");
	assert_string_equal(json_string_value(json_object_get(j, "name")), "plugin-2");
	assert_string_equal(json_string_value(json_object_get(j, "active")), "a1");
	list = json_object_get(j, "registrations");
	assert_int_equal(json_array_size(list), 2);
	/* In list order, active first. */
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "alloc")),
			    "a1");
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "alloc")),
			    "a0");
	json_decref(j);

	/* Keys in this order, as documented. */
	p.regs = &regs[1];
	p.n_regs = 1;
	j = control_json_plugin(&p);
	assert_dump(j, "{\"type\":\"csi-node\",\"name\":\"plugin-2\",\"active\":\"a0\","
		       "\"registrations\":[{\"alloc\":\"a0\",\"socket\":\"/var/nomad/a0/csi.sock\","
		       "\"version\":\"\",\"kind\":\"monolith\",\"options\":{},"
		       "\"source\":\"control\",\"seq\":2,"
		       "\"registered_at\":\"1970-01-01T00:00:00Z\","
		       "\"updated_at\":\"1970-01-01T00:00:00Z\"}]}");
	json_decref(j);

	/* An empty list (not produced by the registry): active is null. */
	p.n_regs = 0;
	j = control_json_plugin(&p);
	assert_dump(j, "{\"type\":\"csi-node\",\"name\":\"plugin-2\",\"active\":null,"
		       "\"registrations\":[]}");
	json_decref(j);
}

static void test_snapshot(void **state)
{
	struct reg_plugin plugins[] = {
	    {.id = 1,
	     .type = (char *)"csi-controller",
	     .name = (char *)"plugin-1",
	     .regs = &regs[1],
	     .n_regs = 1},
	    {.id = 2,
	     .type = (char *)"csi-node",
	     .name = (char *)"plugin-2",
	     .regs = regs,
	     .n_regs = 2},
	};
	struct reg_snapshot s = {.plugins = plugins, .n_plugins = 2};
	json_t *j = control_json_snapshot(&s), *arr;

	assert_non_null(j);
	assert_int_equal(json_object_size(j), 1);
	arr = json_object_get(j, "plugins");
	assert_int_equal(json_array_size(arr), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 0), "type")),
			    "csi-controller");
	assert_string_equal(json_string_value(json_object_get(json_array_get(arr, 1), "active")),
			    "a1");
	json_decref(j);

	s.n_plugins = 0;
	j = control_json_snapshot(&s);
	assert_dump(j, "{\"plugins\":[]}");
	json_decref(j);
}

/* The writer of list --json and state dump --json, a plugin at a time,
 * prints what json_dumpf(JSON_INDENT(2)) prints of the whole snapshot. */
static void check_writer(const struct reg_snapshot *s)
{
	json_t *j = control_json_snapshot(s);
	char *whole = json_dumps(j, JSON_INDENT(2)), *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct control_json_writer w;

	assert_non_null(whole);
	assert_non_null(f);
	control_json_plugins_begin(&w, f);
	for (size_t i = 0; i < s->n_plugins; i++) {
		json_t *p = control_json_plugin(&s->plugins[i]);

		assert_int_equal(control_json_plugins_add(&w, p), 0);
		json_decref(p);
	}
	assert_int_equal(control_json_plugins_end(&w), 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(strlen(text), strlen(whole) + 1);
	assert_memory_equal(text, whole, strlen(whole));
	assert_int_equal(text[strlen(whole)], '\n');
	free(text);
	free(whole);
	json_decref(j);
}

static void test_writer(void **state)
{
	struct reg_plugin plugins[] = {
	    {.id = 1, .type = (char *)"csi-node", .name = (char *)"plugin-1", .regs = &regs[1],
	     .n_regs = 1},
	    {.id = 2, .type = (char *)"csi-node", .name = (char *)"plugin-2", .regs = regs,
	     .n_regs = 2},
	};
	struct reg_snapshot s = {.plugins = plugins, .n_plugins = 0};

	check_writer(&s);
	s.n_plugins = 1;
	check_writer(&s);
	s.n_plugins = 2;
	check_writer(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_registration),
	    cmocka_unit_test(test_registration_not_utf8),
	    cmocka_unit_test(test_plugin),
	    cmocka_unit_test(test_snapshot),
	    cmocka_unit_test(test_writer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
