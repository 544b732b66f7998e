/* SPDX-License-Identifier: MIT */
/* Unit tests of the control protocol that need no daemon: line framing,
 * request parsing, error responses. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "control_server_internal.h"

/* --- framing --- */

static void test_lines_split(void **state)
{
	struct ctl_linebuf lb;
	char *line = NULL;
	size_t len = 0;

	ctl_linebuf_init(&lb, 16);
	assert_int_equal(ctl_linebuf_append(&lb, "ab\ncd", 5), 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OK);
	assert_int_equal(len, 2);
	assert_string_equal(line, "ab");
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_NONE);
	assert_int_equal(ctl_linebuf_pending(&lb), 2);
	assert_int_equal(ctl_linebuf_append(&lb, "e\n\nf\n", 5), 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OK);
	assert_string_equal(line, "cde");
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OK);
	assert_int_equal(len, 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OK);
	assert_string_equal(line, "f");
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_NONE);
	assert_int_equal(ctl_linebuf_pending(&lb), 0);
	ctl_linebuf_free(&lb);
}

static void test_lines_byte_by_byte(void **state)
{
	const char *in = "{\"op\":\"list\"}\n{\"op\":\"status\"}\n";
	struct ctl_linebuf lb;
	char *line = NULL;
	size_t len = 0;
	int got = 0;

	ctl_linebuf_init(&lb, CONTROL_LINE_MAX);
	for (size_t i = 0; in[i]; i++) {
		assert_int_equal(ctl_linebuf_append(&lb, in + i, 1), 0);
		while (ctl_linebuf_next(&lb, &line, &len) == CTL_LINE_OK) {
			assert_string_equal(line,
					    got == 0 ? "{\"op\":\"list\"}" : "{\"op\":\"status\"}");
			got++;
		}
	}
	assert_int_equal(got, 2);
	ctl_linebuf_free(&lb);
}

/* A line of exactly max bytes passes; max + 1 is overlong, reported once,
 * and the next line is served normally. */
static void test_lines_limit(void **state)
{
	size_t max = CONTROL_LINE_MAX;
	char *big = malloc(max + 2);
	struct ctl_linebuf lb;
	char *line = NULL;
	size_t len = 0;

	assert_non_null(big);
	memset(big, 'x', max + 1);
	big[max] = '\n';
	ctl_linebuf_init(&lb, max);
	assert_int_equal(ctl_linebuf_append(&lb, big, max + 1), 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OK);
	assert_int_equal(len, max);

	/* max + 1 bytes, newline later, fed in pieces. */
	memset(big, 'y', max + 1);
	assert_int_equal(ctl_linebuf_append(&lb, big, max), 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_NONE);
	assert_int_equal(ctl_linebuf_append(&lb, big, 1), 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OVERLONG);
	/* The rest of the long line is dropped, even in several pieces. */
	assert_int_equal(ctl_linebuf_append(&lb, big, 1000), 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_NONE);
	assert_int_equal(ctl_linebuf_append(&lb, "zz\n{\"op\":\"list\"}\n", 18), 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OK);
	assert_string_equal(line, "{\"op\":\"list\"}");
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_NONE);

	/* An overlong line that arrives whole with its newline. */
	big[max + 1] = '\n';
	assert_int_equal(ctl_linebuf_append(&lb, big, max + 2), 0);
	assert_int_equal(ctl_linebuf_append(&lb, "ok\n", 3), 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OVERLONG);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OK);
	assert_string_equal(line, "ok");
	ctl_linebuf_free(&lb);
	free(big);
}

static void test_lines_flush(void **state)
{
	struct ctl_linebuf lb;
	char *line = NULL;
	size_t len = 0;

	ctl_linebuf_init(&lb, 64);
	assert_int_equal(ctl_linebuf_append(&lb, "a\nlast", 6), 0);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_OK);
	assert_int_equal(ctl_linebuf_next(&lb, &line, &len), CTL_LINE_NONE);
	assert_int_equal(ctl_linebuf_flush(&lb, &line, &len), CTL_LINE_OK);
	assert_string_equal(line, "last");
	assert_int_equal(ctl_linebuf_flush(&lb, &line, &len), CTL_LINE_NONE);
	ctl_linebuf_free(&lb);
}

/* --- parsing --- */

struct bad {
	const char *line;
	const char *needle; /* must appear in the message */
};

static void test_parse_bad(void **state)
{
	static const struct bad cases[] = {
	    {"{", "malformed JSON"},
	    {"not json", "malformed JSON"},
	    {"[1,2]", "must be a JSON object, got an array"},
	    {"{\"op\":\"list\",\"op\":\"list\"}", "malformed JSON"}, /* duplicate key */
	    /* Every op: the list comes from the op table (it named seven). */
	    {"{}", "field `op' is required (register, deregister, list, show, wait, watch, "
		   "status, reload, metrics)"},
	    {"{\"op\":3}", "field `op' must be a string, got a number"},
	    {"{\"op\":\"frobnicate\"}", "unknown op `frobnicate'"},
	    {"{\"op\":\"list\",\"colour\":\"red\"}", "list: unknown field `colour'"},
	    {"{\"op\":\"status\",\"type\":\"csi-node\"}", "status: unknown field `type'"},
	    {"{\"op\":\"list\",\"type\":1}", "list: field `type' must be a string, got a number"},
	    {"{\"op\":\"register\",\"name\":\"n\",\"alloc\":\"a\",\"socket\":\"/s\"}",
	     "register: field `types' is required"},
	    {"{\"op\":\"register\",\"types\":\"csi-node\",\"name\":\"n\",\"alloc\":\"a\","
	     "\"socket\":\"/s\"}",
	     "field `types' must be an array of strings, got a string"},
	    {"{\"op\":\"register\",\"types\":[],\"name\":\"n\",\"alloc\":\"a\",\"socket\":\"/s\"}",
	     "field `types' must hold at least one type"},
	    {"{\"op\":\"register\",\"types\":[1],\"name\":\"n\",\"alloc\":\"a\",\"socket\":\"/s\"}",
	     "field `types'[0] must be a string, got a number"},
	    {"{\"op\":\"register\",\"types\":[\"t\",\"t\"],\"name\":\"n\",\"alloc\":\"a\","
	     "\"socket\":\"/s\"}",
	     "lists `t' twice"},
	    {"{\"op\":\"register\",\"types\":[\"t\"],\"alloc\":\"a\",\"socket\":\"/s\"}",
	     "register: field `name' is required"},
	    {"{\"op\":\"register\",\"types\":[\"t\"],\"name\":null,\"alloc\":\"a\","
	     "\"socket\":\"/s\"}",
	     "field `name' must be a string, got null"},
	    {"{\"op\":\"register\",\"types\":[\"t\"],\"name\":\"n\",\"alloc\":\"a\","
	     "\"socket\":\"/s\",\"options\":[]}",
	     "field `options' must be an object of strings, got an array"},
	    {"{\"op\":\"register\",\"types\":[\"t\"],\"name\":\"n\",\"alloc\":\"a\","
	     "\"socket\":\"/s\",\"options\":{\"k\":1}}",
	     "option `k' must be a string, got a number"},
	    {"{\"op\":\"register\",\"types\":[\"t\"],\"name\":\"n\",\"alloc\":\"a\","
	     "\"socket\":\"/s\",\"version\":true}",
	     "field `version' must be a string, got a boolean"},
	    {"{\"op\":\"deregister\",\"type\":\"t\",\"name\":\"n\"}",
	     "deregister: field `alloc' is required"},
	    {"{\"op\":\"deregister\",\"type\":\"t\",\"alloc\":\"a\"}",
	     "fields `type' and `name' go together"},
	    {"{\"op\":\"show\",\"type\":\"t\"}", "show: field `name' is required"},
	    {"{\"op\":\"wait\",\"type\":\"t\",\"name\":\"n\",\"timeout\":\"5\"}",
	     "field `timeout' must be a number of seconds, got a string"},
	    {"{\"op\":\"wait\",\"type\":\"t\",\"name\":\"n\",\"timeout\":-1}",
	     "field `timeout' must be between 0 and 86400 seconds"},
	    {"{\"op\":\"watch\",\"types\":{}}", "field `types' must be an array of strings"},
	    {"{\"op\":\"list\",\"id\":[1]}", "field `id' must be a string or an integer"},
	    {"{\"op\":\"list\",\"type\":\"a\\u0000b\"}", "malformed JSON"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ctl_request req;
		enum ctl_code code = CTL_E_INTERNAL;
		char err[512] = "";
		int rc = ctl_parse_request(ctl_ops, cases[i].line, strlen(cases[i].line), &req,
					   &code, err, sizeof(err));

		if (rc != -EINVAL || code != CTL_E_INVALID_ARGUMENT ||
		    !strstr(err, cases[i].needle))
			fail_msg("case %zu `%s': rc %d code %d message `%s', wanted `%s'", i,
				 cases[i].line, rc, code, err, cases[i].needle);
		ctl_request_free(&req);
	}
}

static void test_parse_register(void **state)
{
	const char *line = "{\"op\":\"register\",\"id\":7,\"types\":[\"csi-controller\","
			   "\"csi-node\"],\"name\":\"ebs\",\"alloc\":\"a1\",\"socket\":"
			   "\"/run/a1/csi.sock\",\"version\":\"1.2\",\"kind\":\"monolith\","
			   "\"options\":{\"zone\":\"eu-1\",\"fs\":\"ext4\"}}";
	struct ctl_request req;
	enum ctl_code code;
	char err[256] = "";

	assert_int_equal(
	    ctl_parse_request(ctl_ops, line, strlen(line), &req, &code, err, sizeof(err)), 0);
	assert_int_equal(req.op, CTL_OP_REGISTER);
	assert_true(req.desc->mutates);
	assert_int_equal(json_integer_value(req.id), 7);
	assert_int_equal(req.n_types, 2);
	assert_string_equal(req.types[0], "csi-controller");
	assert_string_equal(req.types[1], "csi-node");
	assert_string_equal(req.name, "ebs");
	assert_string_equal(req.alloc, "a1");
	assert_string_equal(req.socket, "/run/a1/csi.sock");
	assert_string_equal(req.version, "1.2");
	assert_string_equal(req.kind, "monolith");
	assert_int_equal(req.n_options, 2);
	assert_string_equal(req.options[0].key, "zone");
	assert_string_equal(req.options[0].value, "eu-1");
	ctl_request_free(&req);
}

static void test_parse_others(void **state)
{
	struct ctl_request req;
	enum ctl_code code;
	char err[256] = "";
	const char *l1 = "{\"op\":\"deregister\",\"alloc\":\"a1\"}";
	const char *l2 = "{\"op\":\"wait\",\"type\":\"csi-node\",\"name\":\"x\",\"timeout\":2.5,"
			 "\"id\":\"w\"}";
	const char *l3 = "  {\"op\":\"watch\"}\r";
	const char *l4 = "{\"op\":\"list\"}";

	assert_int_equal(ctl_parse_request(ctl_ops, l1, strlen(l1), &req, &code, err, sizeof(err)),
			 0);
	assert_int_equal(req.op, CTL_OP_DEREGISTER);
	assert_null(req.type);
	assert_null(req.name);
	assert_string_equal(req.alloc, "a1");
	ctl_request_free(&req);

	assert_int_equal(ctl_parse_request(ctl_ops, l2, strlen(l2), &req, &code, err, sizeof(err)),
			 0);
	assert_int_equal(req.op, CTL_OP_WAIT);
	assert_false(req.desc->mutates);
	assert_true(req.timeout > 2.4 && req.timeout < 2.6);
	assert_string_equal(json_string_value(req.id), "w");
	ctl_request_free(&req);

	assert_int_equal(ctl_parse_request(ctl_ops, l3, strlen(l3), &req, &code, err, sizeof(err)),
			 0);
	assert_int_equal(req.op, CTL_OP_WATCH);
	assert_int_equal(req.n_types, 0);
	ctl_request_free(&req);

	assert_int_equal(ctl_parse_request(ctl_ops, l4, strlen(l4), &req, &code, err, sizeof(err)),
			 0);
	assert_int_equal(req.op, CTL_OP_LIST);
	assert_null(req.type);
	assert_true(req.timeout < 0);
	ctl_request_free(&req);
}

/* The op table: a row per enum ctl_op in its order, each named, run by a
 * function, its fields the ones the parse accepts; the mutations are
 * register, deregister and reload (docs/protocol.md). */
static void test_op_table(void **state)
{
	for (size_t i = 0; i < CTL_OP_COUNT; i++) {
		const struct ctl_op_desc *d = &ctl_ops[i];
		struct ctl_request req;
		enum ctl_code code;
		char line[128], err[512] = "", want[256];
		size_t n;

		assert_non_null(d->name);
		assert_non_null(d->run);
		assert_int_equal(d->mutates, i == CTL_OP_REGISTER || i == CTL_OP_DEREGISTER ||
						 i == CTL_OP_RELOAD);
		snprintf(line, sizeof(line), "{\"op\":\"%s\",\"zz\":1}", d->name);
		assert_int_equal(
		    ctl_parse_request(ctl_ops, line, strlen(line), &req, &code, err, sizeof(err)),
		    -EINVAL);
		assert_int_equal(req.op, i);
		assert_ptr_equal(req.desc, d);
		n = (size_t)snprintf(want, sizeof(want), "%s: unknown field `zz'; accepted: op, id",
				     d->name);
		for (size_t k = 0; d->fields[k]; k++)
			n += (size_t)snprintf(want + n, sizeof(want) - n, ", %s", d->fields[k]);
		assert_string_equal(err, want);
		ctl_request_free(&req);
	}
}

/* An error on an object with an id still echoes the id. */
static void test_error_echoes_id(void **state)
{
	const char *line = "{\"op\":\"nope\",\"id\":\"r1\"}";
	struct ctl_request req;
	enum ctl_code code;
	char err[256] = "";
	json_t *resp;
	size_t len = 0;
	char *out;

	assert_int_equal(
	    ctl_parse_request(ctl_ops, line, strlen(line), &req, &code, err, sizeof(err)), -EINVAL);
	resp = ctl_error_response(req.id, code, err);
	assert_non_null(resp);
	out = ctl_dump_line(resp, &len);
	assert_non_null(out);
	assert_int_equal(out[len - 1], '\n');
	assert_null(memchr(out, '\n', len - 1));
	assert_non_null(strstr(out, "\"ok\":false"));
	assert_non_null(strstr(out, "\"code\":\"invalid_argument\""));
	assert_non_null(strstr(out, "\"id\":\"r1\""));
	free(out);
	json_decref(resp);
	ctl_request_free(&req);
}

/* A message carrying bytes that are not UTF-8 still makes a response. */
static void test_error_message_not_utf8(void **state)
{
	json_t *resp = ctl_error_response(NULL, CTL_E_NOT_FOUND, "bad \xff\xfe name");
	const char *msg;

	assert_non_null(resp);
	msg = json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
	assert_string_equal(msg, "bad ?? name");
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(resp, "error"), "code")),
	    "not_found");
	json_decref(resp);
}

/* Bytes that look like UTF-8 but that jansson refuses (a surrogate, an
 * overlong form) are replaced too: the client gets the real error, not
 * "internal: out of memory". */
static void test_error_message_surrogate(void **state)
{
	json_t *resp = ctl_error_response(NULL, CTL_E_INVALID_ARGUMENT, "x \xed\xa0\x80 y");

	(void)state;
	assert_non_null(resp);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(resp, "error"), "message")),
	    "x ??? y");
	json_decref(resp);
	resp = ctl_error_response(NULL, CTL_E_INVALID_ARGUMENT, "x \xc0\xaf y");
	assert_non_null(resp);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(resp, "error"), "message")),
	    "x ?? y");
	json_decref(resp);
}

static void test_codes(void **state)
{
	assert_string_equal(ctl_code_name(ctl_code_from_errno(-EINVAL)), "invalid_argument");
	assert_string_equal(ctl_code_name(ctl_code_from_errno(-ENOENT)), "not_found");
	assert_string_equal(ctl_code_name(ctl_code_from_errno(-EACCES)), "permission_denied");
	assert_string_equal(ctl_code_name(ctl_code_from_errno(-ENOSPC)), "unavailable");
	assert_string_equal(ctl_code_name(ctl_code_from_errno(-EIO)), "unavailable");
	assert_string_equal(ctl_code_name(ctl_code_from_errno(-ENOMEM)), "internal");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lines_split),
	    cmocka_unit_test(test_lines_byte_by_byte),
	    cmocka_unit_test(test_lines_limit),
	    cmocka_unit_test(test_lines_flush),
	    cmocka_unit_test(test_parse_bad),
	    cmocka_unit_test(test_parse_register),
	    cmocka_unit_test(test_parse_others),
	    cmocka_unit_test(test_op_table),
	    cmocka_unit_test(test_error_echoes_id),
	    cmocka_unit_test(test_error_message_not_utf8),
	    cmocka_unit_test(test_error_message_surrogate),
	    cmocka_unit_test(test_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
