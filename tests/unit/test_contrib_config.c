/* SPDX-License-Identifier: MIT */
/* contrib/plugfs.ini, the example config shipped with plugfs, is accepted by
 * the parser and sets every key to its built-in default (so installing it
 * changes nothing, and the documented defaults are the real ones). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "config.h"

#define EXAMPLE PLUGFS_FIXTURES "/../../contrib/plugfs.ini"

static void assert_lists_equal(char **a, size_t na, char **b, size_t nb)
{
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++)
		assert_string_equal(a[i], b[i]);
}

static void test_example_is_the_defaults(void **state)
{
	struct plugfs_config ex, def;
	char err[CONFIG_ERR_MAX] = "";
	int rc;

	(void)state;
	rc = config_load(EXAMPLE, &ex, err, sizeof(err));
	if (rc != 0)
		fail_msg("%s: %s", EXAMPLE, err);
	assert_int_equal(config_defaults(&def), 0);

	assert_string_equal(ex.mountpoint, def.mountpoint);
	assert_string_equal(ex.socket_name, def.socket_name);
	assert_int_equal(ex.allow_other, def.allow_other);
	assert_int_equal(ex.cache_timeout, def.cache_timeout);
	assert_string_equal(ex.state_path, def.state_path);
	assert_string_equal(ex.synchronous, def.synchronous);
	assert_string_equal(ex.control_socket, def.control_socket);
	assert_string_equal(ex.control_group, def.control_group);
	assert_int_equal(ex.max_clients, def.max_clients);
	assert_int_equal(ex.idle_timeout, def.idle_timeout);
	assert_lists_equal(ex.types, ex.n_types, def.types, def.n_types);
	assert_lists_equal(ex.socket_roots, ex.n_socket_roots, def.socket_roots,
			   def.n_socket_roots);
	assert_int_equal(ex.tombstone_ttl, def.tombstone_ttl);
	assert_int_equal(ex.probe.dflt.mode, def.probe.dflt.mode);
	assert_int_equal(ex.probe.dflt.interval_ms, def.probe.dflt.interval_ms);
	assert_int_equal(ex.probe.dflt.timeout_ms, def.probe.dflt.timeout_ms);
	assert_int_equal(ex.probe.dflt.failures, def.probe.dflt.failures);
	assert_int_equal(ex.log_level, def.log_level);
	config_free(&ex);
	config_free(&def);
}

/* Uncommenting the Nomad example of socket_roots gives a valid file too. */
static void test_example_socket_roots_hint_is_valid(void **state)
{
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX] = "";

	(void)state;
	assert_int_equal(config_parse_string("[registry]\nsocket_roots = /var/lib/nomad/client/csi/plugins\n",
					     "hint", &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.n_socket_roots, 1);
	assert_string_equal(cfg.socket_roots[0], "/var/lib/nomad/client/csi/plugins");
	config_free(&cfg);
}

/* Uncommenting the example's [discover.nomad] block (every line from the
 * section header to the blank line after it) gives a valid file, with the
 * values the comments say. */
static void test_example_discover_block_is_valid(void **state)
{
	char line[512], text[4096] = "", err[CONFIG_ERR_MAX] = "";
	struct plugfs_config cfg;
	const struct plugfs_discover *d;
	bool in = false;
	FILE *f = fopen(EXAMPLE, "r");

	(void)state;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "#   [discover.nomad]", 20) == 0)
			in = true;
		else if (in && strncmp(line, "#   ", 4) != 0)
			break;
		if (in)
			strncat(text, line + 4, sizeof(text) - strlen(text) - 1);
	}
	fclose(f);
	assert_true(in);
	if (config_parse_string(text, "hint", &cfg, err, sizeof(err)) != 0)
		fail_msg("the [discover.nomad] example: %s\n%s", err, text);
	d = config_discover_find(&cfg, "nomad");
	assert_non_null(d);
	assert_string_equal(d->root, "/var/lib/nomad/client/csi/plugins");
	assert_int_equal(d->layout, PLUGFS_DISCOVER_ALLOC);
	assert_string_equal(d->socket, "csi.sock");
	assert_null(d->type);
	assert_null(d->plugin);
	assert_int_equal(d->forget_after, 3600);
	config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_example_is_the_defaults),
	    cmocka_unit_test(test_example_socket_roots_hint_is_valid),
	    cmocka_unit_test(test_example_discover_block_is_valid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
