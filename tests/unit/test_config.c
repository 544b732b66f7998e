/* SPDX-License-Identifier: MIT */
/* config/: defaults, every key, bad values with their messages and lines,
 * syntax errors, config_load and config_resolve. */
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
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

static bool all_zero(const struct plugfs_config *cfg)
{
	static const struct plugfs_config zero;

	return memcmp(cfg, &zero, sizeof(zero)) == 0;
}

static void assert_defaults(const struct plugfs_config *cfg)
{
	assert_string_equal(cfg->mountpoint, "/run/plugfs");
	assert_string_equal(cfg->socket_name, "csi.sock");
	assert_true(cfg->allow_other);
	assert_int_equal(cfg->cache_timeout, 60);
	assert_string_equal(cfg->state_path, "/var/lib/plugfs/state.db");
	assert_string_equal(cfg->synchronous, "full");
	assert_string_equal(cfg->control_socket, "/run/plugfs.sock");
	assert_string_equal(cfg->control_group, "");
	assert_int_equal(cfg->max_clients, 64);
	assert_int_equal(cfg->idle_timeout, 300);
	assert_int_equal(cfg->n_types, 2);
	assert_string_equal(cfg->types[0], "csi-controller");
	assert_string_equal(cfg->types[1], "csi-node");
	assert_int_equal(cfg->n_socket_roots, 0);
	assert_int_equal(cfg->tombstone_ttl, 86400);
	assert_int_equal(cfg->probe.dflt.mode, REG_PROBE_CONNECT);
	assert_int_equal(cfg->probe.dflt.interval_ms, 5000);
	assert_int_equal(cfg->probe.dflt.timeout_ms, 1000);
	assert_int_equal(cfg->probe.dflt.failures, 3);
	assert_int_equal(cfg->log_level, PLOG_INFO);
}

static void test_defaults(void **state)
{
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX];

	assert_int_equal(config_defaults(&cfg), 0);
	assert_defaults(&cfg);
	assert_string_equal(cfg.source, "");
	config_free(&cfg);
	assert_true(all_zero(&cfg));

	/* An empty file and one of comments only are the defaults too. */
	assert_int_equal(config_parse_string("", "empty.ini", &cfg, err, sizeof(err)), 0);
	assert_defaults(&cfg);
	assert_string_equal(cfg.source, "empty.ini");
	config_free(&cfg);
	assert_int_equal(config_parse_string("# nothing\n; here\n\n[mount]\n[log]\n", "c.ini", &cfg,
					     err, sizeof(err)),
			 0);
	assert_defaults(&cfg);
	config_free(&cfg);
}

static void test_every_key(void **state)
{
	static const char text[] = "\xEF\xBB\xBF# a full file\n"
				   "[mount]\n"
				   "mountpoint = /srv/plugfs\n"
				   "socket_name = plugin.sock\n"
				   "allow_other = no\n"
				   "cache_timeout = 0\n"
				   "[state]\n"
				   "path = /srv/state/plugfs.db ; inline comment\n"
				   "synchronous = NORMAL\n"
				   "[control]\n"
				   "socket = /srv/ctl.sock\n"
				   "group = plugfs-admins\n"
				   "max_clients = 1024\n"
				   "idle_timeout = 0\n"
				   "[registry]\n"
				   "types = csi-node\n"
				   "socket_roots = /var/nomad/client /run/csi\n"
				   "tombstone_ttl = 0\n"
				   "[log]\n"
				   "level = debug\n";
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX] = "";
	int rc;

	rc = config_parse_string(text, "full.ini", &cfg, err, sizeof(err));
	assert_string_equal(err, "");
	assert_int_equal(rc, 0);
	assert_string_equal(cfg.mountpoint, "/srv/plugfs");
	assert_string_equal(cfg.socket_name, "plugin.sock");
	assert_false(cfg.allow_other);
	assert_int_equal(cfg.cache_timeout, 0);
	assert_string_equal(cfg.state_path, "/srv/state/plugfs.db");
	assert_string_equal(cfg.synchronous, "normal");
	assert_string_equal(cfg.control_socket, "/srv/ctl.sock");
	assert_string_equal(cfg.control_group, "plugfs-admins");
	assert_int_equal(cfg.max_clients, 1024);
	assert_int_equal(cfg.idle_timeout, 0);
	assert_int_equal(cfg.n_types, 1);
	assert_string_equal(cfg.types[0], "csi-node");
	assert_int_equal(cfg.n_socket_roots, 2);
	assert_string_equal(cfg.socket_roots[0], "/var/nomad/client");
	assert_string_equal(cfg.socket_roots[1], "/run/csi");
	assert_int_equal(cfg.tombstone_ttl, 0);
	assert_int_equal(cfg.log_level, PLOG_DEBUG);
	assert_string_equal(cfg.source, "full.ini");
	config_free(&cfg);
}

static void test_bools_and_enums(void **state)
{
	static const struct {
		const char *value;
		bool want;
	} bools[] = {{"true", true},   {"yes", true}, {"1", true},  {"TRUE", true},
		     {"false", false}, {"no", false}, {"0", false}, {"No", false}};
	static const char *const syncs[] = {"off", "normal", "full", "extra"};
	static const char *const levels[] = {"error", "warn", "info", "debug"};
	struct plugfs_config cfg;
	char text[256], err[CONFIG_ERR_MAX];

	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		snprintf(text, sizeof(text), "[mount]\nallow_other = %s\n", bools[i].value);
		assert_int_equal(config_parse_string(text, "b.ini", &cfg, err, sizeof(err)), 0);
		assert_int_equal(cfg.allow_other, bools[i].want);
		config_free(&cfg);
	}
	for (size_t i = 0; i < 4; i++) {
		snprintf(text, sizeof(text), "[state]\nsynchronous=%s\n[log]\nlevel=%s\n", syncs[i],
			 levels[i]);
		assert_int_equal(config_parse_string(text, "e.ini", &cfg, err, sizeof(err)), 0);
		assert_string_equal(cfg.synchronous, syncs[i]);
		assert_int_equal(cfg.log_level, (enum plugfs_log_level)i);
		assert_string_equal(log_level_name(cfg.log_level), levels[i]);
		config_free(&cfg);
	}
}

static void test_numbers_at_limits(void **state)
{
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX];

	assert_int_equal(config_parse_string("[mount]\ncache_timeout = 86400\n"
					     "[control]\nmax_clients = 1\nidle_timeout = 86400\n"
					     "[registry]\ntombstone_ttl = 315360000\n",
					     "n.ini", &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.cache_timeout, 86400);
	assert_int_equal(cfg.max_clients, 1);
	assert_int_equal(cfg.idle_timeout, 86400);
	assert_int_equal(cfg.tombstone_ttl, 315360000);
	config_free(&cfg);
}

static void test_lists(void **state)
{
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX];

	/* Lists may continue on indented lines, also after an empty first line. */
	assert_int_equal(config_parse_string("[registry]\n"
					     "types =\n"
					     "    csi-controller\n"
					     "\n"
					     "\tcsi-node   monolith-x\n"
					     "socket_roots = /a\n"
					     "   /b/c\n"
					     "[log]\nlevel = warn\n",
					     "l.ini", &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.n_types, 3);
	assert_string_equal(cfg.types[0], "csi-controller");
	assert_string_equal(cfg.types[1], "csi-node");
	assert_string_equal(cfg.types[2], "monolith-x");
	assert_int_equal(cfg.n_socket_roots, 2);
	assert_string_equal(cfg.socket_roots[0], "/a");
	assert_string_equal(cfg.socket_roots[1], "/b/c");
	assert_int_equal(cfg.log_level, PLOG_WARN);
	config_free(&cfg);

	/* Empty socket_roots and group are allowed: any socket, root only. */
	assert_int_equal(config_parse_string("[registry]\nsocket_roots =\n[control]\ngroup =\n",
					     "l.ini", &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.n_socket_roots, 0);
	assert_string_equal(cfg.control_group, "");
	config_free(&cfg);
}

/* Parses text, expects -EINVAL, a message starting with "bad.ini:LINE: " and
 * containing want, and a zeroed struct. */
static void expect_error(const char *text, unsigned line, const char *want)
{
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX] = "", prefix[32];
	int rc;

	memset(&cfg, 0xa5, sizeof(cfg));
	rc = config_parse_string(text, "bad.ini", &cfg, err, sizeof(err));
	snprintf(prefix, sizeof(prefix), "bad.ini:%u: ", line);
	if (rc != -EINVAL || strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, want))
		fail_msg("text:\n%s\nrc %d, message [%s]\nexpected prefix [%s] containing [%s]",
			 text, rc, err, prefix, want);
	assert_true(all_zero(&cfg));
}

/* Each key with bad values; the bad line is line 3 of the text. */
static void test_bad_values(void **state)
{
	static const struct {
		const char *section, *key, *value, *want;
	} bad[] = {
	    {"mount", "mountpoint", "run/plugfs",
	     "[mount] mountpoint = `run/plugfs': expected an absolute, normalised path"},
	    {"mount", "mountpoint", "", "[mount] mountpoint = `': expected an absolute"},
	    {"mount", "mountpoint", "/run/../plugfs", "expected an absolute, normalised path"},
	    {"mount", "mountpoint", "/run//plugfs", "expected an absolute, normalised path"},
	    {"mount", "mountpoint", "/run/./plugfs", "expected an absolute, normalised path"},
	    {"mount", "mountpoint", "/run/plugfs/", "no trailing `/'"},
	    {"mount", "socket_name", "a/b", "[mount] socket_name"},
	    {"mount", "socket_name", "", "[mount] socket_name"},
	    {"mount", "socket_name", ".hidden", "[mount] socket_name"},
	    {"mount", "socket_name", "info",
	     "[mount] socket_name = `info': expected a name other than `allocs' and `info'"},
	    {"mount", "socket_name", "allocs", "expected a name other than `allocs' and `info'"},
	    {"mount", "allow_other", "maybe",
	     "[mount] allow_other = `maybe': expected true, false, yes, no, 1 or 0"},
	    {"mount", "allow_other", "", "[mount] allow_other = `': expected true, false"},
	    {"mount", "cache_timeout", "abc",
	     "[mount] cache_timeout = `abc': expected a whole number of seconds 0-86400"},
	    {"mount", "cache_timeout", "-1",
	     "[mount] cache_timeout = `-1': expected a whole number of seconds 0-86400"},
	    {"mount", "cache_timeout", "86401", "expected a whole number of seconds 0-86400"},
	    {"mount", "cache_timeout", "1.5", "expected a whole number of seconds 0-86400"},
	    {"mount", "cache_timeout", "99999999999999999999999",
	     "expected a whole number of seconds 0-86400"},
	    {"mount", "cache_timeout", "", "expected a whole number of seconds 0-86400"},
	    {"state", "path", "state.db",
	     "[state] path = `state.db': expected an absolute, normalised path"},
	    {"state", "synchronous", "fast",
	     "[state] synchronous = `fast': expected off, normal, full or extra"},
	    {"control", "socket", "plugfs.sock",
	     "[control] socket = `plugfs.sock': expected an absolute, normalised path of at most "
	     "107 bytes"},
	    {"control", "socket",
	     "/run/"
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	     "aaaaaaaaaaaaaaaaaa.sock",
	     "at most 107 bytes (a Unix socket address)"},
	    {"control", "group", "-wheel",
	     "[control] group = `-wheel': expected empty (mutations by root only) or a group name"},
	    {"control", "group", "a b", "[control] group = `a b': expected empty"},
	    {"control", "group", "abcdefghijklmnopqrstuvwxyz0123456",
	     "expected empty (mutations by root only) or a group name: 1-32"},
	    {"control", "max_clients", "0",
	     "[control] max_clients = `0': expected a whole number 1-1024"},
	    {"control", "max_clients", "1025", "expected a whole number 1-1024"},
	    {"control", "idle_timeout", "5m",
	     "[control] idle_timeout = `5m': expected a whole number of seconds 0-86400"},
	    {"registry", "types", "",
	     "[registry] types is empty; expected at least one plugin type"},
	    {"registry", "types", "csi-node csi/node", "[registry] types: type"},
	    {"registry", "types", "csi-node csi-node",
	     "[registry] types: `csi-node' is listed twice"},
	    {"registry", "socket_roots", "/a relative",
	     "[registry] socket_roots: `relative': expected absolute, normalised paths"},
	    {"registry", "socket_roots", "/a /a", "[registry] socket_roots: `/a' is listed twice"},
	    {"registry", "tombstone_ttl", "-5",
	     "[registry] tombstone_ttl = `-5': expected a whole number of seconds 0-315360000"},
	    {"registry", "tombstone_ttl", "315360001",
	     "expected a whole number of seconds 0-315360000"},
	    {"probe", "mode", "csi-ish", "[probe] mode = `csi-ish': expected connect, csi or none"},
	    {"probe", "interval", "0.01",
	     "[probe] interval = `0.01': expected a number of seconds 0.05-3600, at most 3 "
	     "decimals (e.g. 0.5)"},
	    {"probe", "interval", "3601", "expected a number of seconds 0.05-3600"},
	    {"probe", "interval", "1.2345", "expected a number of seconds 0.05-3600"},
	    {"probe", "interval", "1.", "expected a number of seconds 0.05-3600"},
	    {"probe", "interval", ".5", "expected a number of seconds 0.05-3600"},
	    {"probe", "interval", "5s", "expected a number of seconds 0.05-3600"},
	    {"probe", "interval", "-1", "expected a number of seconds 0.05-3600"},
	    {"probe", "timeout", "0",
	     "[probe] timeout = `0': expected a number of seconds 0.01-60"},
	    {"probe", "timeout", "60.001", "expected a number of seconds 0.01-60"},
	    {"probe", "failures", "0", "[probe] failures = `0': expected a whole number 1-100"},
	    {"probe", "failures", "101", "expected a whole number 1-100"},
	    {"log", "level", "verbose",
	     "[log] level = `verbose': expected error, warn, info or debug"},
	};
	char text[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "# line 1\n[%s]\n%s = %s\n# line 4\n", bad[i].section,
			 bad[i].key, bad[i].value);
		expect_error(text, 3, bad[i].want);
	}
}

static void test_long_value_is_cut_in_message(void **state)
{
	char text[256], value[150];

	memset(value, 'x', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	snprintf(text, sizeof(text), "[log]\nlevel = %s\n", value);
	expect_error(
	    text, 2,
	    "[log] level = `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...': "
	    "expected error, warn, info or debug");
}

/* What the file holds is quoted in messages: control characters, stray
 * bytes and `\' as \xNN, so a message cannot drive the terminal. */
static void test_messages_escape_file_text(void **state)
{
	expect_error("[log]\nlevel = \x1b[31mred\n", 2,
		     "[log] level = `\\x1b[31mred': expected error, warn, info or debug");
	expect_error("[log]\nle\x1bvel = info\n", 2, "unknown key `le\\x1bvel' in [log]");
	expect_error("le\x1bvel = info\n", 1, "key `le\\x1bvel' is outside of any section");
	expect_error("[mo\x1bunt]\n", 1, "unknown section [mo\\x1bunt]");
	expect_error("[mount]\njust \x9b words\n", 2, "got `just \\x9b words'");
	expect_error("[registry]\nsocket_roots = /a rel\x07\n", 2,
		     "[registry] socket_roots: `rel\\x07': expected absolute");
	expect_error("[mount]\nmountpoint = /run/\xc3\xa9t\xc3\xa9\\x\x01\n", 2,
		     "[mount] mountpoint = `/run/\xc3\xa9t\xc3\xa9\\x5cx\\x01': expected");
}

static void test_unknown_names(void **state)
{
	expect_error("[mount]\nmountpoint = /x\nalow_other = true\n", 3,
		     "unknown key `alow_other' in [mount]; known keys: mountpoint, socket_name, "
		     "allow_other, cache_timeout");
	expect_error("[mount]\n\n[mout]\nallow_other = true\n", 3,
		     "unknown section [mout]; expected [mount], [state], [control], [registry], "
		     "[probe], [probe.TYPE], [discover.NAME] or [log]");
	/* An unknown section without keys is an error too. */
	expect_error("[log]\nlevel = info\n[extra]\n", 3, "unknown section [extra]");
	expect_error("[ mount ]\n", 1, "unknown section [ mount ]");
	expect_error("# top\nlevel = info\n", 2,
		     "key `level' is outside of any section; expected it under [mount]");
	expect_error("[state]\npath = /a\n[state]\npath = /b\n", 4,
		     "duplicate key `path' in [state] (first set on line 2)");
	expect_error("[mount] trailing\n", 1,
		     "unexpected text after `[mount]'; a section line holds only `[section]'");
	/* A section may appear twice with different keys. */
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX];
	assert_int_equal(config_parse_string("[mount]\nallow_other = 0\n[log]\nlevel = warn\n"
					     "[mount] ; again\ncache_timeout = 5\n",
					     "ok.ini", &cfg, err, sizeof(err)),
			 0);
	assert_false(cfg.allow_other);
	assert_int_equal(cfg.cache_timeout, 5);
	config_free(&cfg);
}

static void test_syntax_errors(void **state)
{
	expect_error(
	    "[mount]\nmountpoint = /x\njust some words\n", 3,
	    "expected `key = value', `[section]' or a comment (`#' or `;'), got `just some "
	    "words'");
	expect_error("# c\n\n[mount\nallow_other = 1\n", 3,
		     "section line `[mount' has no closing `]'");
	/* The first error wins: syntax before a bad value, and the other way. */
	expect_error("[mount]\nnonsense\ncache_timeout = x\n", 2, "expected `key = value'");
	expect_error("[mount]\ncache_timeout = x\nnonsense\n", 2, "[mount] cache_timeout = `x'");
	expect_error("[mout]\nnonsense\n", 1, "unknown section [mout]");
	/* Only lists may continue on indented lines. */
	expect_error("[mount]\nmountpoint = /x\n  allow_other = true\n", 3,
		     "indented line continues the value of `mountpoint' in [mount]; only the lists "
		     "`types' and `socket_roots' may continue");
	expect_error("[registry]\ntypes = a\n   b c\n  b\n", 4, "`b' is listed twice");
	/* Lines longer than inih's buffer. */
	char text[512];
	char roots[300];
	size_t n = 0;
	while (n + 12 < sizeof(roots)) {
		memcpy(roots + n, " /abcdefghij", 12);
		n += 12;
	}
	roots[n] = '\0';
	snprintf(text, sizeof(text), "[registry]\n\nsocket_roots =%s\n", roots);
	expect_error(text, 3, "line is longer than 197 characters");
	/* Windows line ends are fine. */
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX];
	assert_int_equal(
	    config_parse_string("[log]\r\nlevel = debug\r\n", "crlf.ini", &cfg, err, sizeof(err)),
	    0);
	assert_int_equal(cfg.log_level, PLOG_DEBUG);
	config_free(&cfg);
}

static void test_cross_checks(void **state)
{
	expect_error("[mount]\nmountpoint = /srv/p\n[control]\nsocket = /srv/p/ctl.sock\n", 4,
		     "[control] socket `/srv/p/ctl.sock' is inside [mount] mountpoint `/srv/p'");
	expect_error("[state]\npath = /run/plugfs/x.db\n", 2,
		     "[state] path `/run/plugfs/x.db' is inside [mount] mountpoint `/run/plugfs'");
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX];
	/* A sibling with the mountpoint as a prefix of its name is outside. */
	assert_int_equal(config_parse_string("[control]\nsocket = /run/plugfs.sock2\n", "ok.ini",
					     &cfg, err, sizeof(err)),
			 0);
	config_free(&cfg);
	/* The mountpoint itself is inside too (at or below). */
	expect_error("[mount]\nmountpoint = /run/p\n[control]\nsocket = /run/p\n", 4,
		     "[control] socket `/run/p' is inside [mount] mountpoint `/run/p'");
	expect_error("[mount]\nmountpoint = /run/p\n[state]\npath = /run/p\n", 4,
		     "[state] path `/run/p' is inside [mount] mountpoint `/run/p'");
	assert_int_equal(config_parse_string("[mount]\nmountpoint = /run\n[control]\nsocket = "
					     "/runx/a.sock\n[state]\npath = /runx/s.db\n",
					     "ok.ini", &cfg, err, sizeof(err)),
			 0);
	config_free(&cfg);
}

/* Socket roots follow the registry's path rule: absolute and normalised
 * (so no trailing `/'), `/' itself allowed (it covers every socket). */
static void test_socket_roots_rule(void **state)
{
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX];

	(void)state;
	expect_error("[registry]\nsocket_roots = /run/\n", 2,
		     "[registry] socket_roots: `/run/': expected absolute, normalised paths");
	expect_error("[registry]\nsocket_roots = /run/./a\n", 2,
		     "[registry] socket_roots: `/run/./a': expected absolute, normalised paths");
	expect_error("[registry]\nsocket_roots = //run\n", 2,
		     "[registry] socket_roots: `//run': expected absolute, normalised paths");
	expect_error("[registry]\nsocket_roots = /run/\xc2\x9b\n", 2,
		     "[registry] socket_roots: `/run/\\xc2\\x9b': expected absolute");
	assert_int_equal(config_parse_string("[registry]\nsocket_roots = / /run\n", "ok.ini", &cfg,
					     err, sizeof(err)),
			 0);
	assert_int_equal(cfg.n_socket_roots, 2);
	assert_string_equal(cfg.socket_roots[0], "/");
	config_free(&cfg);
	/* A control socket is a file: `/' is no socket address. */
	expect_error("[control]\nsocket = /\n", 2, "[control] socket = `/': expected an absolute");
}

/* --- files --- */

struct tmp {
	char dir[64];
	char path[128];
};

static int setup_tmp(void **state)
{
	struct tmp *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	strcpy(t->dir, "/tmp/plugfs-test-config.XXXXXX");
	if (!mkdtemp(t->dir)) {
		free(t);
		return -1;
	}
	snprintf(t->path, sizeof(t->path), "%s/plugfs.ini", t->dir);
	*state = t;
	return 0;
}

static int teardown_tmp(void **state)
{
	struct tmp *t = *state;

	unlink(t->path);
	rmdir(t->dir);
	free(t);
	unsetenv("PLUGFS_CONFIG");
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void test_load_file(void **state)
{
	struct tmp *t = *state;
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX], want[256];

	write_file(t->path, "[mount]\ncache_timeout = 7\n");
	assert_int_equal(config_load(t->path, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.cache_timeout, 7);
	assert_string_equal(cfg.source, t->path);
	config_free(&cfg);

	/* Errors name the file and the line. */
	write_file(t->path, "[mount]\n\ncache_timeout = abc\n");
	assert_int_equal(config_load(t->path, &cfg, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want),
		 "%s:3: [mount] cache_timeout = `abc': expected a whole number of seconds 0-86400",
		 t->path);
	assert_string_equal(err, want);
	assert_true(all_zero(&cfg));

	/* A NUL byte is named with its line. */
	FILE *f = fopen(t->path, "w");
	assert_non_null(f);
	fwrite("[log]\nlevel = info\0x\n", 1, 21, f);
	fclose(f);
	assert_int_equal(config_load(t->path, &cfg, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:2: NUL byte", t->path);
	assert_non_null(strstr(err, want));
}

static void test_load_missing(void **state)
{
	struct tmp *t = *state;
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX], want[256];

	assert_int_equal(config_load(t->path, &cfg, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "cannot open config file %s: No such file or directory",
		 t->path);
	assert_string_equal(err, want);
	assert_true(all_zero(&cfg));

	assert_int_equal(config_load(t->dir, &cfg, err, sizeof(err)), -EISDIR);
	assert_non_null(strstr(err, t->dir));
	assert_non_null(strstr(err, "expected a regular file"));
}

static void test_resolve_order(void **state)
{
	struct tmp *t = *state;
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX], env_path[160], want[256];

	write_file(t->path, "[mount]\ncache_timeout = 1\n");
	snprintf(env_path, sizeof(env_path), "%s/env.ini", t->dir);
	write_file(env_path, "[mount]\ncache_timeout = 2\n");

	/* -c wins over $PLUGFS_CONFIG. */
	setenv("PLUGFS_CONFIG", env_path, 1);
	assert_int_equal(config_resolve(t->path, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.cache_timeout, 1);
	assert_string_equal(cfg.source, t->path);
	config_free(&cfg);

	/* Without -c: $PLUGFS_CONFIG. */
	assert_int_equal(config_resolve(NULL, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.cache_timeout, 2);
	assert_string_equal(cfg.source, env_path);
	config_free(&cfg);

	/* A $PLUGFS_CONFIG that does not exist is an error naming it. */
	unlink(env_path);
	assert_int_equal(config_resolve(NULL, &cfg, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "cannot open config file %s", env_path);
	assert_non_null(strstr(err, want));

	/* So is a -c file that does not exist, even when $PLUGFS_CONFIG is fine. */
	setenv("PLUGFS_CONFIG", t->path, 1);
	assert_int_equal(config_resolve(env_path, &cfg, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, env_path));

	/* Neither: the default file when it exists, else the built-in defaults. */
	unsetenv("PLUGFS_CONFIG");
	if (access(CONFIG_DEFAULT_PATH, F_OK) != 0) {
		assert_int_equal(config_resolve(NULL, &cfg, err, sizeof(err)), 0);
		assert_defaults(&cfg);
		assert_string_equal(cfg.source, "");
		config_free(&cfg);
	} else {
		int rc = config_resolve(NULL, &cfg, err, sizeof(err));
		if (rc == 0)
			assert_string_equal(cfg.source, CONFIG_DEFAULT_PATH);
		config_free(&cfg);
	}
}

static void test_probe_keys(void **state)
{
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX] = "";

	(void)state;
	assert_int_equal(config_parse_string("[probe]\nmode = none\ninterval = 0.2\n"
					     "timeout = 0.05\nfailures = 1\n",
					     "p.ini", &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.probe.dflt.mode, REG_PROBE_NONE);
	assert_int_equal(cfg.probe.dflt.interval_ms, 200);
	assert_int_equal(cfg.probe.dflt.timeout_ms, 50);
	assert_int_equal(cfg.probe.dflt.failures, 1);
	assert_string_equal(reg_probe_name(cfg.probe.dflt.mode), "none");
	config_free(&cfg);
	assert_int_equal(config_parse_string("[probe]\nmode = CONNECT\ninterval = 3600\n"
					     "timeout = 1.250\n",
					     "p.ini", &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(cfg.probe.dflt.mode, REG_PROBE_CONNECT);
	assert_int_equal(cfg.probe.dflt.interval_ms, 3600000);
	assert_int_equal(cfg.probe.dflt.timeout_ms, 1250);
	assert_string_equal(reg_probe_name(cfg.probe.dflt.mode), "connect");
	config_free(&cfg);
	assert_int_equal(
	    config_parse_string("[probe]\nmode = csi\n", "p.ini", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.probe.dflt.mode, REG_PROBE_CSI);
	assert_string_equal(reg_probe_name(cfg.probe.dflt.mode), "csi");
	config_free(&cfg);
}

/* [probe.TYPE]: a type's own settings over [probe]; the rest inherited. */
static void test_probe_type_sections(void **state)
{
	struct plugfs_config cfg;
	struct reg_probe_settings st;
	char err[CONFIG_ERR_MAX] = "";

	(void)state;
	/* The section may come before [registry] and before [probe]. */
	assert_int_equal(
	    config_parse_string("[probe.csi-controller]\nmode = csi\ntimeout = 2\n"
				"[registry]\ntypes = csi-controller csi-node\n"
				"[probe]\nmode = connect\ninterval = 10\nfailures = 4\n"
				"[probe.csi-node]\n"
				"[probe.csi-controller]\nfailures = 2\n",
				"t.ini", &cfg, err, sizeof(err)),
	    0);
	assert_int_equal(cfg.probe.n_types, 2);
	reg_probe_settings_of(&cfg.probe, "csi-controller", REG_PROBE_DEFAULT, &st);
	assert_int_equal(st.mode, REG_PROBE_CSI);
	assert_int_equal(st.interval_ms, 10000); /* from [probe] */
	assert_int_equal(st.timeout_ms, 2000);
	assert_int_equal(st.failures, 2);	      /* the section again, later */
	reg_probe_settings_of(&cfg.probe, "csi-node", REG_PROBE_DEFAULT,
			      &st); /* an empty section: all [probe] */
	assert_int_equal(st.mode, REG_PROBE_CONNECT);
	assert_int_equal(st.interval_ms, 10000);
	assert_int_equal(st.timeout_ms, 1000);
	assert_int_equal(st.failures, 4);
	reg_probe_settings_of(&cfg.probe, NULL, REG_PROBE_DEFAULT, &st);
	assert_int_equal(st.failures, 4);
	config_free(&cfg);
	assert_null(cfg.probe.types);

	/* A type not in [registry] types, named with the section's line. */
	expect_error("[registry]\ntypes = csi-node\n[probe.csi-controller]\nmode = csi\n", 3,
		     "[probe.csi-controller]: `csi-controller' is not one of [registry] types "
		     "(csi-node); a [probe.TYPE] section sets the probes of one registered type");
	expect_error("[log]\nlevel = info\n[probe.nope]\n", 3,
		     "[probe.nope]: `nope' is not one of [registry] types (csi-controller, "
		     "csi-node)");
	/* A TYPE that breaks the name rule, or none. */
	expect_error("[log]\nlevel = info\n[probe.]\n", 3, "[probe.TYPE] section: TYPE");
	expect_error("[log]\nlevel = info\n[probe.a/b]\n", 3, "[probe.TYPE] section: TYPE");
	/* Its keys are [probe]'s, with the same rules, named by the section. */
	expect_error("[probe.csi-node]\nmode = connect\nretries = 3\n", 3,
		     "unknown key `retries' in [probe.csi-node]; known keys: mode, interval, "
		     "timeout, failures");
	expect_error("[probe.csi-node]\nmode = connect\nmode = csi\n", 3,
		     "duplicate key `mode' in [probe.csi-node] (first set on line 2)");
	expect_error("[probe.csi-node]\n\ntimeout = 61\n", 3,
		     "[probe.csi-node] timeout = `61': expected a number of seconds 0.01-60");
	expect_error("[probe.csi-node]\n\nmode = grpc\n", 3,
		     "[probe.csi-node] mode = `grpc': expected connect, csi or none");
	/* The same key in [probe] and [probe.TYPE] is not a duplicate. */
	assert_int_equal(config_parse_string("[probe]\nmode = none\n[probe.csi-node]\nmode = csi\n",
					     "t.ini", &cfg, err, sizeof(err)),
			 0);
	reg_probe_settings_of(&cfg.probe, "csi-node", REG_PROBE_DEFAULT, &st);
	assert_int_equal(st.mode, REG_PROBE_CSI);
	reg_probe_settings_of(&cfg.probe, "csi-controller", REG_PROBE_DEFAULT, &st);
	assert_int_equal(st.mode, REG_PROBE_NONE);
	config_free(&cfg);
	/* A type name longer than inih's section buffer still works. */
	assert_int_equal(
	    config_parse_string(
		"[registry]\ntypes = a-very-long-type-name-beyond-fifty-characters-x\n"
		"[probe.a-very-long-type-name-beyond-fifty-characters-x]\nfailures = 9\n",
		"t.ini", &cfg, err, sizeof(err)),
	    0);
	reg_probe_settings_of(&cfg.probe, "a-very-long-type-name-beyond-fifty-characters-x",
			      REG_PROBE_DEFAULT, &st);
	assert_int_equal(st.failures, 9);
	config_free(&cfg);
}

/* [discover.NAME]: a watched directory, its defaults, its keys' rules. */
static void test_discover_sections(void **state)
{
	struct plugfs_config cfg;
	const struct plugfs_discover *d;
	char err[CONFIG_ERR_MAX] = "";

	(void)state;
	/* Before [registry] and [mount]; defaults for what is not set. */
	assert_int_equal(
	    config_parse_string("[discover.nomad]\nroot = /var/lib/nomad/client/csi/plugins\n"
				"[discover.kubelet]\nroot = /var/lib/kubelet/plugins\n"
				"layout = plugin\nsocket = plugin.sock\ntype = csi-node\n"
				"name = ebs\nforget_after = 0\n"
				"[registry]\ntypes = csi-controller csi-node\n"
				"[discover.nomad]\nforget_after = 60\n",
				"t.ini", &cfg, err, sizeof(err)),
	    0);
	assert_string_equal(err, "");
	assert_int_equal(cfg.n_discover, 2);
	d = config_discover_find(&cfg, "nomad");
	assert_non_null(d);
	assert_ptr_equal(d, &cfg.discover[0]);
	assert_string_equal(d->root, "/var/lib/nomad/client/csi/plugins");
	assert_int_equal(d->layout, PLUGFS_DISCOVER_ALLOC);
	assert_string_equal(d->socket, "csi.sock");
	assert_null(d->type);
	assert_null(d->plugin);
	assert_int_equal(d->forget_after, 60); /* the section again, later */
	assert_int_equal(d->line, 1);
	d = config_discover_find(&cfg, "kubelet");
	assert_non_null(d);
	assert_string_equal(d->root, "/var/lib/kubelet/plugins");
	assert_int_equal(d->layout, PLUGFS_DISCOVER_PLUGIN);
	assert_string_equal(discover_layout_name(d->layout), "plugin");
	assert_string_equal(d->socket, "plugin.sock");
	assert_string_equal(d->type, "csi-node");
	assert_string_equal(d->plugin, "ebs");
	assert_int_equal(d->forget_after, 0);
	assert_null(config_discover_find(&cfg, "nope"));
	assert_false(config_discover_equal(&cfg.discover[0], &cfg.discover[1]));
	assert_true(config_discover_equal(&cfg.discover[1], &cfg.discover[1]));
	config_free(&cfg);
	assert_null(cfg.discover);

	/* The defaults: 3600 s, auto, alloc; no section, no discovery. */
	assert_int_equal(
	    config_parse_string("[discover.a]\nroot = /r\ntype = auto\nname = auto\n", "t.ini",
				&cfg, err, sizeof(err)),
	    0);
	assert_int_equal(cfg.discover[0].forget_after, 3600);
	assert_null(cfg.discover[0].type);
	assert_null(cfg.discover[0].plugin);
	config_free(&cfg);
	assert_int_equal(config_parse_string("", "t.ini", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.n_discover, 0);
	config_free(&cfg);

	/* The section's name follows the name rule. */
	expect_error("[log]\nlevel = info\n[discover.]\n", 3, "[discover.NAME] section: NAME");
	expect_error("[log]\nlevel = info\n[discover.a b]\n", 3,
		     "[discover.NAME] section: NAME");
	/* root is required, named at the section's line. */
	expect_error("[log]\nlevel = info\n[discover.x]\nlayout = alloc\n", 3,
		     "[discover.x]: `root' is required; expected the directory to watch");
	/* Each key's rule, at its line. */
	expect_error("[discover.x]\nlayout = alloc\nroot = relative/dir\n", 3,
		     "[discover.x] root = `relative/dir': expected an absolute, normalised "
		     "directory other than `/'");
	expect_error("[discover.x]\nlayout = alloc\nroot = /\n", 3,
		     "[discover.x] root = `/': expected");
	expect_error("[discover.x]\nroot = /r\nroot = /s\n", 3,
		     "duplicate key `root' in [discover.x] (first set on line 2)");
	expect_error("[discover.x]\nroot = /r\nlayout = flat\n", 3,
		     "[discover.x] layout = `flat': expected alloc (ROOT/<alloc id>/SOCKET) or "
		     "plugin (ROOT/<plugin name>/SOCKET)");
	expect_error("[discover.x]\nroot = /r\nsocket = a/b.sock\n", 3,
		     "[discover.x] socket");
	expect_error("[discover.x]\nroot = /r\nname = -bad name\n", 3,
		     "[discover.x] name");
	expect_error("[discover.x]\nroot = /r\nforget_after = -1\n", 3,
		     "[discover.x] forget_after = `-1': expected a whole number of seconds "
		     "0-315360000 (0: never)");
	expect_error("[discover.x]\nroot = /r\nforget_after = 315360001\n", 3,
		     "forget_after = `315360001'");
	expect_error("[discover.x]\nroot = /r\nintervall = 3\n", 3,
		     "unknown key `intervall' in [discover.x]; known keys: root, layout, socket, "
		     "type, name, forget_after");
	/* No key continues on an indented line. */
	expect_error("[discover.x]\nroot = /r\n  /s\n", 3,
		     "indented line continues the value of a key in [discover.x]");
	/* A fixed type is one of [registry] types, once the whole file is read. */
	expect_error("[discover.x]\nroot = /r\ntype = csi-other\n[registry]\ntypes = csi-node\n",
		     3,
		     "[discover.x] type = `csi-other': expected auto or one of [registry] types "
		     "(csi-node)");
	/* Roots neither in nor above the mount, nor in or above another root. */
	expect_error("[discover.x]\nroot = /run/plugfs/plugins\n", 2,
		     "[discover.x] root `/run/plugfs/plugins' overlaps [mount] mountpoint "
		     "`/run/plugfs'; expected a directory neither in nor above the mount");
	expect_error("[discover.x]\nroot = /srv\n[mount]\nmountpoint = /srv/plugfs\n", 4,
		     "[discover.x] root `/srv' overlaps [mount] mountpoint `/srv/plugfs'");
	expect_error("[discover.a]\nroot = /var/lib\n[discover.b]\nroot = /var/lib/x\n", 4,
		     "[discover.b] root `/var/lib/x' overlaps [discover.a] root `/var/lib'; "
		     "expected roots neither the same nor one inside another");
	expect_error("[discover.a]\nroot = /v\n[discover.b]\nroot = /v\n", 4,
		     "[discover.b] root `/v' overlaps [discover.a] root `/v'");
	/* Neighbours by name are not inside each other. */
	assert_int_equal(config_parse_string("[discover.a]\nroot = /v\n[discover.b]\nroot = /vx\n",
					     "t.ini", &cfg, err, sizeof(err)),
			 0);
	config_free(&cfg);
}

/* At most PLUGFS_DISCOVER_MAX sections; a long name beyond inih's section
 * buffer still works. */
static void test_discover_limits(void **state)
{
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX] = "", want[128];
	char *text = calloc(PLUGFS_DISCOVER_MAX + 1, 64);
	size_t n = 0;

	(void)state;
	assert_non_null(text);
	for (int i = 0; i <= PLUGFS_DISCOVER_MAX; i++)
		n += (size_t)sprintf(text + n, "[discover.d%d]\nroot = /r%d\n", i, i);
	snprintf(want, sizeof(want), "[discover.d%d]: more than %d [discover.NAME] sections",
		 PLUGFS_DISCOVER_MAX, PLUGFS_DISCOVER_MAX);
	expect_error(text, 2 * PLUGFS_DISCOVER_MAX + 1, want);
	/* One fewer is fine. */
	*strstr(text, "[discover.d64]") = '\0';
	assert_int_equal(config_parse_string(text, "t.ini", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.n_discover, PLUGFS_DISCOVER_MAX);
	config_free(&cfg);
	free(text);
	assert_int_equal(
	    config_parse_string("[discover.a-very-long-section-name-beyond-fifty-characters]\n"
				"root = /r\n",
				"t.ini", &cfg, err, sizeof(err)),
	    0);
	assert_string_equal(cfg.discover[0].name,
			    "a-very-long-section-name-beyond-fifty-characters");
	config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_every_key),
	    cmocka_unit_test(test_bools_and_enums),
	    cmocka_unit_test(test_numbers_at_limits),
	    cmocka_unit_test(test_lists),
	    cmocka_unit_test(test_bad_values),
	    cmocka_unit_test(test_probe_keys),
	    cmocka_unit_test(test_probe_type_sections),
	    cmocka_unit_test(test_discover_sections),
	    cmocka_unit_test(test_discover_limits),
	    cmocka_unit_test(test_long_value_is_cut_in_message),
	    cmocka_unit_test(test_messages_escape_file_text),
	    cmocka_unit_test(test_unknown_names),
	    cmocka_unit_test(test_syntax_errors),
	    cmocka_unit_test(test_cross_checks),
	    cmocka_unit_test(test_socket_roots_rule),
	    cmocka_unit_test_setup_teardown(test_load_file, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_load_missing, setup_tmp, teardown_tmp),
	    cmocka_unit_test_setup_teardown(test_resolve_order, setup_tmp, teardown_tmp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
