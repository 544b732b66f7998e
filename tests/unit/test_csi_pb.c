/* SPDX-License-Identifier: MIT */
/*
 * The csi probe's protobuf and gRPC frame reader (probe/csi_pb.c): the
 * answers a CSI plugin gives, unknown fields of every wire type skipped,
 * and every truncated or malformed input refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "csi_pb.h"

#define B(...) ((const uint8_t[]){__VA_ARGS__})
#define PROBE_OK(ready_out, ...) csi_decode_probe(B(__VA_ARGS__), sizeof(B(__VA_ARGS__)), ready_out)

static void test_probe_ready(void **state)
{
	bool ready = false;

	(void)state;
	/* ready { value: true } */
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x02, 0x08, 0x01), 0);
	assert_true(ready);
	/* ready {} : present, false (proto3 default) */
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x00), 0);
	assert_false(ready);
	/* ready { value: false } written out */
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x02, 0x08, 0x00), 0);
	assert_false(ready);
	/* absent: ready (the CSI spec) */
	ready = false;
	assert_int_equal(csi_decode_probe(B(0), 0, &ready), 0);
	assert_true(ready);
	/* a multi-byte varint bool is still true */
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x03, 0x08, 0x80, 0x01), 0);
	assert_true(ready);
	/* two occurrences merge: the later empty one keeps value true */
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x02, 0x08, 0x01, 0x0a, 0x00), 0);
	assert_true(ready);
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x02, 0x08, 0x01, 0x0a, 0x02, 0x08, 0x00), 0);
	assert_false(ready);
}

static void test_probe_unknown_fields(void **state)
{
	bool ready = false;

	(void)state;
	/* field 2 varint, field 3 fixed64, field 4 bytes, field 5 fixed32,
	 * field 6 group {field 1 varint}, then ready {value: false, field 9
	 * varint inside}: every one skipped */
	assert_int_equal(PROBE_OK(&ready, 0x10, 0x96, 0x01,	       /* 2: varint 150 */
				  0x19, 1, 2, 3, 4, 5, 6, 7, 8,	       /* 3: fixed64 */
				  0x22, 0x03, 'a', 'b', 'c',	       /* 4: bytes */
				  0x2d, 1, 2, 3, 4,		       /* 5: fixed32 */
				  0x33, 0x08, 0x01, 0x34,	       /* 6: group */
				  0x0a, 0x04, 0x48, 0x05, 0x08, 0x00), /* ready */
			 0);
	assert_false(ready);
	/* nested groups */
	ready = false;
	assert_int_equal(PROBE_OK(&ready, 0x33, 0x3b, 0x3c, 0x34), 0);
	assert_true(ready);
}

static void test_probe_malformed(void **state)
{
	bool ready;

	(void)state;
	assert_int_equal(PROBE_OK(&ready, 0x0a), -1);			/* no length */
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x05, 0x08), -1);	/* cut bytes */
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x01, 0x08), -1);	/* cut inner varint */
	assert_int_equal(PROBE_OK(&ready, 0x08, 0x01), -1);		/* ready as a varint */
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x02, 0x09, 0x01), -1); /* value as fixed64, cut */
	assert_int_equal(PROBE_OK(&ready, 0x0a, 0x05, 0x0d, 1, 2, 3, 4), -1); /* value fixed32 */
	assert_int_equal(PROBE_OK(&ready, 0x19, 1, 2, 3), -1);		      /* cut fixed64 */
	assert_int_equal(PROBE_OK(&ready, 0x2d, 1, 2), -1);		      /* cut fixed32 */
	assert_int_equal(PROBE_OK(&ready, 0x10, 0x80), -1);		      /* cut varint */
	assert_int_equal(PROBE_OK(&ready, 0x33, 0x08, 0x01), -1);	      /* group not ended */
	assert_int_equal(PROBE_OK(&ready, 0x33, 0x3c), -1); /* ends the wrong group */
	assert_int_equal(PROBE_OK(&ready, 0x34), -1);	    /* end without start */
	assert_int_equal(PROBE_OK(&ready, 0x0e), -1);	    /* wire type 6 */
	assert_int_equal(PROBE_OK(&ready, 0x0f), -1);	    /* wire type 7 */
	assert_int_equal(PROBE_OK(&ready, 0x00, 0x00), -1); /* field number 0 */
	/* an 11-byte varint, and a 10-byte one with more than 64 bits */
	assert_int_equal(PROBE_OK(&ready, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				  0xff, 0xff, 0x01),
			 -1);
	assert_int_equal(
	    PROBE_OK(&ready, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02), -1);
	/* the largest 10-byte varint is fine */
	assert_int_equal(
	    PROBE_OK(&ready, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), 0);
	/* a length beyond the buffer (huge varint length) */
	assert_int_equal(PROBE_OK(&ready, 0x22, 0xff, 0xff, 0xff, 0xff, 0x0f, 'x'), -1);
}

static void test_info_name(void **state)
{
	const uint8_t msg[] = {0x0a, 0x03, 'a', 'b', 'c', 0x12, 0x01, '1', 0x1a, 0x00};
	const uint8_t *name = NULL;
	size_t len = 99;

	(void)state;
	assert_int_equal(csi_decode_info(msg, sizeof(msg), &name, &len), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(name, "abc", 3);
	assert_int_equal(csi_decode_info(msg, 0, &name, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(csi_decode_info(B(0x0a, 0x04, 'a'), 3, &name, &len), -1);
	assert_int_equal(csi_decode_info(B(0x08, 0x01), 2, &name, &len), -1);
}

/* GetPluginInfoResponse's name as text: a name with a NUL byte or longer
 * than the buffer takes is decoded and told apart from a malformed message
 * (the plugin answered: refused, not asked again). */
static void test_info_text(void **state)
{
	uint8_t msg[2 + 3 + 300];
	char out[8];

	(void)state;
	assert_int_equal(csi_decode_text(B(0x0a, 0x03, 'a', 'b', 'c'), 5, 1, out, sizeof(out)),
			 CSI_TEXT_OK);
	assert_string_equal(out, "abc");
	/* Absent: empty. */
	assert_int_equal(csi_decode_text(B(0x12, 0x01, '1'), 3, 1, out, sizeof(out)), CSI_TEXT_OK);
	assert_string_equal(out, "");
	/* As long as the buffer takes: kept; one more: too long. */
	assert_int_equal(csi_decode_text(B(0x0a, 0x07, '1', '2', '3', '4', '5', '6', '7'), 9, 1,
					 out, sizeof(out)),
			 CSI_TEXT_OK);
	assert_string_equal(out, "1234567");
	assert_int_equal(csi_decode_text(B(0x0a, 0x08, '1', '2', '3', '4', '5', '6', '7', '8'), 10,
					 1, out, sizeof(out)),
			 CSI_TEXT_TOO_LONG);
	assert_string_equal(out, "");
	/* A NUL byte anywhere in it. */
	assert_int_equal(csi_decode_text(B(0x0a, 0x03, 'a', 0, 'c'), 5, 1, out, sizeof(out)),
			 CSI_TEXT_NUL);
	assert_string_equal(out, "");
	assert_int_equal(csi_decode_text(B(0x0a, 0x01, 0), 3, 1, out, sizeof(out)), CSI_TEXT_NUL);
	/* The last occurrence is the one told of. */
	assert_int_equal(csi_decode_text(B(0x0a, 0x01, 0, 0x0a, 0x01, 'x'), 6, 1, out, sizeof(out)),
			 CSI_TEXT_OK);
	assert_string_equal(out, "x");
	/* Malformed: truncated, or the field not length-delimited. */
	assert_int_equal(csi_decode_text(B(0x0a, 0x04, 'a'), 3, 1, out, sizeof(out)),
			 CSI_TEXT_MALFORMED);
	assert_int_equal(csi_decode_text(B(0x08, 0x01), 2, 1, out, sizeof(out)),
			 CSI_TEXT_MALFORMED);
	/* A name of 300 bytes, the version (2) of 255 in a buffer of 256:
	 * the name too long, the version kept. */
	{
		char big[256];
		uint8_t *p = msg;

		*p++ = 0x0a;
		*p++ = 0xac; /* 300 = 0x12c: varint 0xac 0x02 */
		*p++ = 0x02;
		memset(p, 'n', 300);
		p += 300;
		assert_int_equal(csi_decode_text(msg, (size_t)(p - msg), 1, big, sizeof(big)),
				 CSI_TEXT_TOO_LONG);
		p = msg;
		*p++ = 0x12;
		*p++ = 0xff; /* 255: varint 0xff 0x01 */
		*p++ = 0x01;
		memset(p, 'v', 255);
		p += 255;
		assert_int_equal(csi_decode_text(msg, (size_t)(p - msg), 2, big, sizeof(big)),
				 CSI_TEXT_OK);
		assert_int_equal(strlen(big), 255);
	}
}

/* GetPluginInfoResponse's vendor_version, NodeGetInfoResponse's node_id. */
static void test_string_field(void **state)
{
	const uint8_t msg[] = {0x0a, 0x03, 'a',	 'b',  'c',  0x12, 0x05, '1',  '.',  '2', '.',
			       '3',  0x1a, 0x04, 0x0a, 0x00, 0x12, 0x00, 0x12, 0x01, '9'};
	const uint8_t *s = NULL;
	size_t n = 99;

	(void)state;
	/* The last occurrence wins, after a map entry (field 3) it skips. */
	assert_int_equal(csi_decode_string(msg, sizeof(msg), 2, &s, &n), 0);
	assert_int_equal(n, 1);
	assert_memory_equal(s, "9", 1);
	assert_int_equal(csi_decode_string(msg, sizeof(msg) - 3, 2, &s, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(s, "1.2.3", 5);
	/* Absent: length 0. */
	assert_int_equal(csi_decode_string(msg, sizeof(msg), 4, &s, &n), 0);
	assert_int_equal(n, 0);
	/* The field as a varint, or a truncated message: malformed. */
	assert_int_equal(csi_decode_string(B(0x10, 0x01), 2, 2, &s, &n), -1);
	assert_int_equal(csi_decode_string(B(0x12, 0x05, '1'), 3, 2, &s, &n), -1);
}

/* GetPluginCapabilitiesResponse: capabilities (1) of PluginCapability,
 * whose service (1) has a type (1); CONTROLLER_SERVICE is 1. */
static void test_caps(void **state)
{
	bool ctl = true;

	(void)state;
	/* No capabilities. */
	assert_int_equal(csi_decode_caps(NULL, 0, &ctl), 0);
	assert_false(ctl);
	/* One: service CONTROLLER_SERVICE. */
	assert_int_equal(csi_decode_caps(B(0x0a, 0x04, 0x0a, 0x02, 0x08, 0x01), 6, &ctl), 0);
	assert_true(ctl);
	/* VOLUME_ACCESSIBILITY_CONSTRAINTS (2) and a volume expansion (2) only. */
	assert_int_equal(csi_decode_caps(B(0x0a, 0x04, 0x0a, 0x02, 0x08, 0x02, 0x0a, 0x04, 0x12,
					   0x02, 0x08, 0x01),
					 12, &ctl),
			 0);
	assert_false(ctl);
	/* CONTROLLER_SERVICE after others, an unknown field (7, fixed32) first. */
	assert_int_equal(csi_decode_caps(B(0x3d, 1, 2, 3, 4, 0x0a, 0x04, 0x0a, 0x02, 0x08, 0x03,
					   0x0a, 0x04, 0x0a, 0x02, 0x08, 0x01),
					 17, &ctl),
			 0);
	assert_true(ctl);
	/* A service with no type: UNKNOWN, not a controller. */
	assert_int_equal(csi_decode_caps(B(0x0a, 0x02, 0x0a, 0x00), 4, &ctl), 0);
	assert_false(ctl);
	/* Malformed: capabilities as a varint, a service as a varint, a type
	 * as a string, a truncated capability. */
	assert_int_equal(csi_decode_caps(B(0x08, 0x01), 2, &ctl), -1);
	assert_int_equal(csi_decode_caps(B(0x0a, 0x02, 0x08, 0x01), 4, &ctl), -1);
	assert_int_equal(csi_decode_caps(B(0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 'x'), 7, &ctl), -1);
	assert_int_equal(csi_decode_caps(B(0x0a, 0x04, 0x0a, 0x02, 0x08), 5, &ctl), -1);
}

static void test_grpc_frame(void **state)
{
	const uint8_t *msg = NULL;
	size_t n = 0;
	const char *why = NULL;

	(void)state;
	assert_int_equal(csi_grpc_message(B(0, 0, 0, 0, 2, 0x0a, 0x00), 7, &msg, &n, &why), 0);
	assert_int_equal(n, 2);
	assert_int_equal(msg[0], 0x0a);
	assert_int_equal(csi_grpc_message(B(0, 0, 0, 0, 0), 5, &msg, &n, &why), 0);
	assert_int_equal(n, 0);
	assert_int_equal(csi_grpc_message(B(0), 0, &msg, &n, &why), -1);
	assert_string_equal(why, "no response message");
	assert_int_equal(csi_grpc_message(B(0, 0, 0), 3, &msg, &n, &why), -1);
	assert_string_equal(why, "truncated response");
	assert_int_equal(csi_grpc_message(B(0, 0, 0, 0, 3, 1, 2), 7, &msg, &n, &why), -1);
	assert_string_equal(why, "truncated response");
	assert_int_equal(csi_grpc_message(B(0, 0xff, 0xff, 0xff, 0xff, 1), 6, &msg, &n, &why), -1);
	assert_string_equal(why, "truncated response");
	assert_int_equal(csi_grpc_message(B(0, 0, 0, 0, 0, 0), 6, &msg, &n, &why), -1);
	assert_string_equal(why, "more than one response message");
	assert_int_equal(csi_grpc_message(B(1, 0, 0, 0, 0), 5, &msg, &n, &why), -1);
	assert_string_equal(why, "compressed response (not asked for)");
	assert_int_equal(csi_grpc_message(B(7, 0, 0, 0, 0), 5, &msg, &n, &why), -1);
	assert_string_equal(why, "bad gRPC frame flag");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_probe_ready),	    cmocka_unit_test(test_probe_unknown_fields),
	    cmocka_unit_test(test_probe_malformed), cmocka_unit_test(test_info_name),
	    cmocka_unit_test(test_info_text),	    cmocka_unit_test(test_grpc_frame),
	    cmocka_unit_test(test_string_field),    cmocka_unit_test(test_caps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
