/* SPDX-License-Identifier: MIT */
/*
 * Validation (docs/design.md, "Validation"): a table of bad inputs for every
 * field, each rejected through the registry with its exact message and
 * nothing stored; the public reg_validate_* helpers; kind and event names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "test_registry_util.h"

static char long_name[REG_NAME_MAX + 2];   /* 129 characters */
static char max_name[REG_NAME_MAX + 1];	   /* 128 characters: fine */
static char long_value[REG_VALUE_MAX + 2]; /* 1025 bytes */
static char max_value[REG_VALUE_MAX + 1];  /* 1024 bytes: fine */
static char long_socket[PATH_MAX + 8];

static void init_strings(void)
{
	memset(long_name, 'n', REG_NAME_MAX + 1);
	memset(max_name, 'm', REG_NAME_MAX);
	memset(long_value, 'v', REG_VALUE_MAX + 1);
	memset(max_value, 'w', REG_VALUE_MAX);
	long_socket[0] = '/';
	memset(long_socket + 1, 's', PATH_MAX);
}

struct bad {
	const char *what;
	const char *types[3];
	size_t n_types;
	struct reg_spec spec;
	const char *msg;
};

/* Rows start from GOOD_SPEC and override one field: designated initializers
 * overriding earlier ones are well defined in C, so silence GCC's note. */
#pragma GCC diagnostic ignored "-Woverride-init"
#define GOOD_SPEC .name = "p", .alloc = "a0", .socket = "/run/a/a0/csi.sock"
#define NODE .types = {"csi-node"}, .n_types = 1
#define NAME_RULE "must be 1-128 characters of [A-Za-z0-9._-], not starting with `.'"
#define NORMAL_RULE "must be normalised (no `.', `..' or empty components, no trailing `/')"

static struct reg_option opt_bad_key[] = {{"a/b", "v"}};
static struct reg_option opt_dot_key[] = {{".x", "v"}};
static struct reg_option opt_empty_key[] = {{"", "v"}};
static struct reg_option opt_long_key[] = {{long_name, "v"}};
static struct reg_option opt_null_key[] = {{NULL, "v"}};
static struct reg_option opt_ctl_value[] = {{"k", "line\nbreak"}};
static struct reg_option opt_long_value[] = {{"k", long_value}};
static struct reg_option opt_bad_utf8[] = {{"k", "\xc3\x28"}};
static struct reg_option opt_null_value[] = {{"k", NULL}};
static struct reg_option opt_dup[] = {{"k", "1"}, {"j", "2"}, {"k", "3"}};

static const struct bad bad_inputs[] = {
    /* type */
    {"unknown type", .types = {"gpu"}, .n_types = 1, .spec = {GOOD_SPEC},
     .msg = "type `gpu': must be one of the configured types (csi-controller, csi-node)"},
    {"type with a slash", .types = {"csi-node/x"}, .n_types = 1, .spec = {GOOD_SPEC},
     .msg = "type `csi-node/x': must be one of the configured types (csi-controller, csi-node)"},
    {"missing type", .types = {NULL}, .n_types = 1, .spec = {GOOD_SPEC},
     .msg = "type: missing; must be one of csi-controller, csi-node"},
    {"no types", .n_types = 0, .spec = {GOOD_SPEC}, .msg = "type: at least one type is required"},
    {"type twice", .types = {"csi-node", "csi-node"}, .n_types = 2, .spec = {GOOD_SPEC},
     .msg = "type `csi-node': given more than once"},
    /* name */
    {"name with a slash", NODE, .spec = {GOOD_SPEC, .name = "a/b"},
     .msg = "name `a/b': " NAME_RULE},
    {"empty name", NODE, .spec = {GOOD_SPEC, .name = ""}, .msg = "name `': " NAME_RULE},
    {"hidden name", NODE, .spec = {GOOD_SPEC, .name = ".p"}, .msg = "name `.p': " NAME_RULE},
    {"dot-dot name", NODE, .spec = {GOOD_SPEC, .name = ".."}, .msg = "name `..': " NAME_RULE},
    {"name with a space", NODE, .spec = {GOOD_SPEC, .name = "a b"},
     .msg = "name `a b': " NAME_RULE},
    {"name with a newline", NODE, .spec = {GOOD_SPEC, .name = "a\nb"},
     .msg = "name `a\\x0ab': " NAME_RULE},
    {"name with UTF-8", NODE, .spec = {GOOD_SPEC, .name = "pl\xc3\xbcgin"},
     .msg = "name `pl\xc3\xbcgin': " NAME_RULE},
    {"missing name", NODE, .spec = {GOOD_SPEC, .name = NULL}, .msg = "name: missing"},
    /* alloc */
    {"alloc with a slash", NODE, .spec = {GOOD_SPEC, .alloc = "../a"},
     .msg = "alloc `../a': " NAME_RULE},
    {"empty alloc", NODE, .spec = {GOOD_SPEC, .alloc = ""}, .msg = "alloc `': " NAME_RULE},
    {"hidden alloc", NODE, .spec = {GOOD_SPEC, .alloc = ".a"}, .msg = "alloc `.a': " NAME_RULE},
    {"alloc with a colon", NODE, .spec = {GOOD_SPEC, .alloc = "a:b"},
     .msg = "alloc `a:b': " NAME_RULE},
    {"missing alloc", NODE, .spec = {GOOD_SPEC, .alloc = NULL}, .msg = "alloc: missing"},
    /* socket */
    {"relative socket", NODE, .spec = {GOOD_SPEC, .socket = "run/a/csi.sock"},
     .msg = "socket `run/a/csi.sock': must be an absolute path"},
    {"empty socket", NODE, .spec = {GOOD_SPEC, .socket = ""},
     .msg = "socket `': must be an absolute path"},
    {"missing socket", NODE, .spec = {GOOD_SPEC, .socket = NULL}, .msg = "socket: missing"},
    {"socket with //", NODE, .spec = {GOOD_SPEC, .socket = "/run/a//csi.sock"},
     .msg = "socket `/run/a//csi.sock': " NORMAL_RULE},
    {"socket with .", NODE, .spec = {GOOD_SPEC, .socket = "/run/a/./csi.sock"},
     .msg = "socket `/run/a/./csi.sock': " NORMAL_RULE},
    {"socket with ..", NODE, .spec = {GOOD_SPEC, .socket = "/run/a/../b/csi.sock"},
     .msg = "socket `/run/a/../b/csi.sock': " NORMAL_RULE},
    {"socket ending in ..", NODE, .spec = {GOOD_SPEC, .socket = "/run/a/x/.."},
     .msg = "socket `/run/a/x/..': " NORMAL_RULE},
    {"socket with a trailing slash", NODE, .spec = {GOOD_SPEC, .socket = "/run/a/x/"},
     .msg = "socket `/run/a/x/': " NORMAL_RULE},
    {"socket /", NODE, .spec = {GOOD_SPEC, .socket = "/"}, .msg = "socket `/': " NORMAL_RULE},
    {"socket with a newline", NODE, .spec = {GOOD_SPEC, .socket = "/run/a/x\n.sock"},
     .msg = "socket `/run/a/x\\x0a.sock': must not contain control characters"},
    {"socket not UTF-8", NODE, .spec = {GOOD_SPEC, .socket = "/run/a/x\xff.sock"},
     .msg = "socket `/run/a/x\\xff.sock': must be valid UTF-8"},
    {"socket with DEL", NODE, .spec = {GOOD_SPEC, .socket = "/run/a/x\x7f"},
     .msg = "socket `/run/a/x\\x7f': must not contain control characters"},
    {"socket with a C1 control", NODE, .spec = {GOOD_SPEC, .socket = "/run/a/x\xc2\x9b.sock"},
     .msg = "socket `/run/a/x\\xc2\\x9b.sock': must not contain control characters"},
    {"socket of PATH_MAX bytes", NODE, .spec = {GOOD_SPEC, .socket = long_socket},
     .msg = NULL /* checked by prefix below */},
    {"socket outside the roots", NODE, .spec = {GOOD_SPEC, .socket = "/tmp/csi.sock"},
     .msg = "socket `/tmp/csi.sock': must be under one of the socket roots (/run/a, /srv/csi)"},
    {"socket in a sibling of a root", NODE, .spec = {GOOD_SPEC, .socket = "/run/ab/csi.sock"},
     .msg = "socket `/run/ab/csi.sock': must be under one of the socket roots (/run/a, /srv/csi)"},
    {"socket that is a root", NODE, .spec = {GOOD_SPEC, .socket = "/run/a"},
     .msg = "socket `/run/a': must be under one of the socket roots (/run/a, /srv/csi)"},
    /* version */
    {"version with a newline", NODE, .spec = {GOOD_SPEC, .version = "1.0\n"},
     .msg = "version `1.0\\x0a': must be printable (no control characters)"},
    {"version with an escape", NODE, .spec = {GOOD_SPEC, .version = "\x1b[31m"},
     .msg = "version `\\x1b[31m': must be printable (no control characters)"},
    {"version with DEL", NODE, .spec = {GOOD_SPEC, .version = "1\x7f"},
     .msg = "version `1\\x7f': must be printable (no control characters)"},
    {"version with a C1 control", NODE, .spec = {GOOD_SPEC, .version = "1\xc2\x85"},
     .msg = "version `1\\xc2\\x85': must be printable (no control characters)"},
    {"version not UTF-8", NODE, .spec = {GOOD_SPEC, .version = "1\xff"},
     .msg = "version `1\\xff': must be valid UTF-8"},
    {"version overlong UTF-8", NODE, .spec = {GOOD_SPEC, .version = "\xc0\xaf"},
     .msg = "version `\\xc0\\xaf': must be valid UTF-8"},
    {"version of 1025 bytes", NODE, .spec = {GOOD_SPEC, .version = long_value}, .msg = NULL},
    /* kind */
    {"unknown kind", NODE, .spec = {GOOD_SPEC, .kind = (enum reg_kind)99},
     .msg = "kind 99: must be one of controller, node, monolith"},
    /* option keys */
    {"option key with a slash", NODE, .spec = {GOOD_SPEC, .options = opt_bad_key, .n_options = 1},
     .msg = "option key `a/b': " NAME_RULE},
    {"hidden option key", NODE, .spec = {GOOD_SPEC, .options = opt_dot_key, .n_options = 1},
     .msg = "option key `.x': " NAME_RULE},
    {"empty option key", NODE, .spec = {GOOD_SPEC, .options = opt_empty_key, .n_options = 1},
     .msg = "option key `': " NAME_RULE},
    {"long option key", NODE, .spec = {GOOD_SPEC, .options = opt_long_key, .n_options = 1},
     .msg = NULL},
    {"missing option key", NODE, .spec = {GOOD_SPEC, .options = opt_null_key, .n_options = 1},
     .msg = "option key: missing"},
    {"option key twice", NODE, .spec = {GOOD_SPEC, .options = opt_dup, .n_options = 3},
     .msg = "option key `k': given more than once"},
    {"options missing", NODE, .spec = {GOOD_SPEC, .options = NULL, .n_options = 2},
     .msg = "options: missing"},
    /* option values */
    {"option value with a newline", NODE,
     .spec = {GOOD_SPEC, .options = opt_ctl_value, .n_options = 1},
     .msg = "option `k' value `line\\x0abreak': must be printable (no control characters)"},
    {"option value of 1025 bytes", NODE,
     .spec = {GOOD_SPEC, .options = opt_long_value, .n_options = 1}, .msg = NULL},
    {"option value not UTF-8", NODE, .spec = {GOOD_SPEC, .options = opt_bad_utf8, .n_options = 1},
     .msg = "option `k' value `\\xc3(': must be valid UTF-8"},
    {"missing option value", NODE, .spec = {GOOD_SPEC, .options = opt_null_value, .n_options = 1},
     .msg = "option `k' value: missing"},
};

/* Messages too long to spell out: their expected beginning and end. */
static void check_long_message(const char *what, const char *err)
{
	if (strcmp(what, "socket of PATH_MAX bytes") == 0) {
		assert_true(strncmp(err, "socket `/sss", 12) == 0);
		assert_non_null(strstr(err, "...': must be shorter than 4096 bytes (is 4097)"));
	} else if (strcmp(what, "version of 1025 bytes") == 0) {
		assert_true(strncmp(err, "version `vvv", 12) == 0);
		assert_non_null(strstr(err, "...': must be at most 1024 bytes (is 1025)"));
	} else if (strcmp(what, "long option key") == 0) {
		assert_true(strncmp(err, "option key `nnn", 15) == 0);
		assert_non_null(strstr(err, "...': " NAME_RULE));
	} else if (strcmp(what, "option value of 1025 bytes") == 0) {
		assert_true(strncmp(err, "option `k' value `vvv", 21) == 0);
		assert_non_null(strstr(err, "...': must be at most 1024 bytes (is 1025)"));
	} else {
		fail_msg("no expected message for %s", what);
	}
}

static int roots_setup(void **state)
{
	struct fixture *f;

	init_strings();
	fixture_setup(state);
	f = *state;
	registry_close(f->r);
	f->r = NULL;
	f->roots[0] = "/run/a";
	f->roots[1] = "/srv/csi";
	f->n_roots = 2;
	reopen(f);
	return 0;
}

static void test_bad_inputs_rejected(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX];
	size_t np, nr;

	for (size_t i = 0; i < sizeof(bad_inputs) / sizeof(bad_inputs[0]); i++) {
		const struct bad *b = &bad_inputs[i];

		print_message("bad input: %s\n", b->what);
		memset(err, 'X', sizeof(err));
		assert_int_equal(
		    registry_register(f->r, b->types, b->n_types, &b->spec, err, sizeof(err)),
		    -EINVAL);
		if (b->msg)
			assert_string_equal(err, b->msg);
		else
			check_long_message(b->what, err);
	}
	registry_counts(f->r, &np, &nr);
	assert_int_equal(np, 0);
	assert_int_equal(nr, 0);
	assert_string_equal(f->events, "");
	assert_int_equal(count_rows(f, "registrations"), 0);
	assert_int_equal(count_rows(f, "plugins"), 0);
	assert_int_equal(count_rows(f, "reg_options"), 0);
}

/* The same rules, on the edge of being fine: everything is accepted. */
static void test_edge_inputs_accepted(void **state)
{
	struct fixture *f = *state;
	static const char *const both[] = {"csi-node", "csi-controller"};
	struct reg_option opts[] = {
	    {"Z.z_-9", max_value}, {"a", ""}, {"u", "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x94\x8c"}};
	struct reg_spec spec = {.name = max_name,
				.alloc = "A-0.b_c",
				.socket = "/srv/csi/x/y.sock",
				.version = max_value,
				.kind = REG_KIND_MONOLITH,
				.options = opts,
				.n_options = 3};
	char err[REG_ERR_MAX] = "";
	struct reg_plugin p;

	assert_int_equal(registry_register(f->r, both, 2, &spec, err, sizeof(err)), 0);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", max_name, &p), 0);
	assert_string_equal(p.regs[0].version, max_value);
	assert_int_equal(p.regs[0].n_options, 3);
	assert_string_equal(p.regs[0].options[0].key, "Z.z_-9"); /* sorted by key */
	assert_string_equal(p.regs[0].options[2].value, opts[2].value);
	reg_plugin_free_contents(&p);
	spec.socket = "/run/a/b";
	spec.name = "n";
	spec.version = "";
	assert_int_equal(registry_register(f->r, both, 1, &spec, err, sizeof(err)), 0);
	restart(f);
	assert_int_equal(registry_get_plugin(f->r, "csi-node", "n", &p), 0);
	assert_string_equal(p.regs[0].socket, "/run/a/b");
	assert_string_equal(p.regs[0].version, "");
	reg_plugin_free_contents(&p);
}

/* A socket root of `/' (the config accepts it) lets through any socket that
 * passes the other rules. */
static void test_root_slash_allows_any_socket(void **state)
{
	struct fixture *f = *state;
	static const char *const node[] = {"csi-node"};
	struct reg_spec spec = {.name = "p", .alloc = "a1", .socket = "/run/x/../y.sock"};
	char err[REG_ERR_MAX] = "";
	int rc;

	registry_close(f->r);
	f->r = NULL;
	f->roots[0] = "/";
	f->n_roots = 1;
	rc = try_open(f, err, sizeof(err));
	if (rc != 0)
		fail_msg("registry_open with socket_roots `/': %d %s", rc, err);
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_string_equal(active(f, "csi-node", "p"), "a0");
	assert_int_equal(registry_register(f->r, node, 1, &spec, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "socket `/run/x/../y.sock': " NORMAL_RULE);
}

static void test_deregister_inputs(void **state)
{
	struct fixture *f = *state;
	char err[REG_ERR_MAX] = "";

	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	events_clear(f);
	assert_int_equal(registry_deregister(f->r, "gpu", "p", "a0", NULL, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(
	    err, "type `gpu': must be one of the configured types (csi-controller, csi-node)");
	assert_int_equal(registry_deregister(f->r, "csi-node", "p/", "a0", NULL, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "name `p/': " NAME_RULE);
	assert_int_equal(registry_deregister(f->r, "csi-node", "p", NULL, NULL, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "alloc: missing");
	assert_int_equal(registry_deregister_alloc(f->r, ".a0", NULL, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "alloc `.a0': " NAME_RULE);
	assert_string_equal(f->events, "");
	assert_string_equal(order(f, "csi-node", "p"), "a0");
}

/* The one "under a root" rule: strictly below, component-wise; `/' covers
 * every absolute path. */
static void test_path_under(void **state)
{
	(void)state;
	assert_true(reg_path_under("/run/a.sock", "/run"));
	assert_true(reg_path_under("/run/x/a.sock", "/run"));
	assert_false(reg_path_under("/run", "/run"));	      /* the root itself */
	assert_false(reg_path_under("/runx/a.sock", "/run")); /* a sibling prefix */
	assert_false(reg_path_under("/ru", "/run"));
	assert_false(reg_path_under("/var/a.sock", "/run"));
	/* A trailing `/' on the root is ignored. */
	assert_true(reg_path_under("/run/a.sock", "/run/"));
	assert_false(reg_path_under("/run", "/run/"));
	assert_false(reg_path_under("/run/", "/run/"));
	assert_false(reg_path_under("/runx/a.sock", "/run/"));
	/* `/' covers every absolute path, but not `/' itself. */
	assert_true(reg_path_under("/a.sock", "/"));
	assert_true(reg_path_under("/run/x/a.sock", "/"));
	assert_false(reg_path_under("/", "/"));
	assert_false(reg_path_under("a.sock", "/"));
}

static void test_public_helpers(void **state)
{
	char err[REG_ERR_MAX] = "";
	enum reg_kind k = REG_KIND_UNSET;

	(void)state;
	init_strings();
	assert_int_equal(reg_validate_name("field", "ok-1.2_3", err, sizeof(err)), 0);
	assert_int_equal(reg_validate_name("field", max_name, err, sizeof(err)), 0);
	assert_int_equal(reg_validate_name("field", long_name, err, sizeof(err)), -EINVAL);
	assert_int_equal(reg_validate_name("my field", "a b", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "my field `a b': " NAME_RULE);
	assert_int_equal(reg_validate_printable("v", "tab\there", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "v `tab\\x09here': must be printable (no control characters)");
	assert_int_equal(reg_validate_printable("v", "\xed\xa0\x80", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "must be valid UTF-8")); /* a surrogate */
	assert_int_equal(reg_validate_printable("v", "\xf4\x90\x80\x80", err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(reg_validate_printable("v", "\xe2\x82", err, sizeof(err)), -EINVAL);
	assert_int_equal(reg_validate_printable("v", "", err, sizeof(err)), 0);
	assert_int_equal(reg_validate_socket_path("s", "/a/b.c/..d/.e", err, sizeof(err)), 0);
	assert_int_equal(reg_validate_socket_path("s", "/a/b/.", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "s `/a/b/.': " NORMAL_RULE);
	/* `/' is a path only where a root is allowed. */
	assert_int_equal(reg_validate_socket_path("s", "/", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "s `/': " NORMAL_RULE);
	assert_int_equal(reg_validate_path("r", "/", true, err, sizeof(err)), 0);
	assert_int_equal(reg_validate_path("r", "/run", true, err, sizeof(err)), 0);
	assert_int_equal(reg_validate_path("r", "/run/", true, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "r `/run/': " NORMAL_RULE);
	assert_int_equal(reg_validate_path("r", "run", true, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "r `run': must be an absolute path");
	assert_int_equal(reg_validate_path("r", "//", true, err, sizeof(err)), -EINVAL);
	/* A tiny buffer is NUL-terminated; errlen 0 is allowed. */
	assert_int_equal(reg_validate_name("field", "", err, 6), -EINVAL);
	assert_string_equal(err, "field");
	assert_int_equal(reg_validate_name("field", "", NULL, 0), -EINVAL);

	assert_string_equal(reg_kind_name(REG_KIND_CONTROLLER), "controller");
	assert_string_equal(reg_kind_name(REG_KIND_NODE), "node");
	assert_string_equal(reg_kind_name(REG_KIND_MONOLITH), "monolith");
	assert_null(reg_kind_name(REG_KIND_UNSET));
	assert_null(reg_kind_name((enum reg_kind)42));
	assert_int_equal(reg_kind_parse("node", &k), 0);
	assert_int_equal(k, REG_KIND_NODE);
	assert_int_equal(reg_kind_parse("monolith", &k), 0);
	assert_int_equal(k, REG_KIND_MONOLITH);
	assert_int_equal(reg_kind_parse("Node", &k), -EINVAL);
	assert_int_equal(reg_kind_parse("", &k), -EINVAL);
	assert_int_equal(reg_kind_parse(NULL, &k), -EINVAL);
	assert_string_equal(reg_event_name(REG_EV_REGISTERED), "registered");
	assert_string_equal(reg_event_name(REG_EV_UPDATED), "updated");
	assert_string_equal(reg_event_name(REG_EV_DEREGISTERED), "deregistered");
	assert_string_equal(reg_event_name(REG_EV_ACTIVE), "active");
	assert_string_equal(reg_event_name(REG_EV_RUNTIME), "runtime");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_bad_inputs_rejected, roots_setup,
					    fixture_teardown),
	    cmocka_unit_test_setup_teardown(test_edge_inputs_accepted, roots_setup,
					    fixture_teardown),
	    T(test_root_slash_allows_any_socket),
	    T(test_deregister_inputs),
	    cmocka_unit_test(test_path_under),
	    cmocka_unit_test(test_public_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
