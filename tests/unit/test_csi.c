/* SPDX-License-Identifier: MIT */
/*
 * The csi probe's reading of a finished transfer (probe/csi.c,
 * csi_transfer_outcome): a complete gRPC answer stands whatever libcurl
 * says of the stream after it; a stream dropped with nothing of an answer
 * is asked again while it may; every other failure is the outcome.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <stdbool.h>

#include "probe_internal.h"

/* grpc-status arrived (a trailers-only UNIMPLEMENTED, or the trailers
 * after the message), then libcurl 7.88 failed the stream or the send of
 * the request's body the server no longer reads: the answer stands. */
static void test_answer_then_stream_error(void **state)
{
	static const CURLcode after[] = {CURLE_HTTP2_STREAM, CURLE_HTTP2, CURLE_SEND_ERROR,
					 CURLE_RECV_ERROR};

	(void)state;
	for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
		for (int body = 0; body < 2; body++) {
			assert_int_equal(csi_transfer_outcome(after[i], true, body, true),
					 CSI_ANSWERED);
			assert_int_equal(csi_transfer_outcome(after[i], true, body, false),
					 CSI_ANSWERED);
		}
	}
	assert_int_equal(csi_transfer_outcome(CURLE_OK, true, false, false), CSI_ANSWERED);
	/* Done without grpc-status: answered, the caller says it lacks one. */
	assert_int_equal(csi_transfer_outcome(CURLE_OK, false, false, true), CSI_ANSWERED);
}

/* The stream failed and nothing of an answer came: asked again while the
 * call may be, else a failure. */
static void test_nothing_then_stream_error(void **state)
{
	(void)state;
	assert_int_equal(csi_transfer_outcome(CURLE_HTTP2_STREAM, false, false, true),
			 CSI_ASK_AGAIN);
	assert_int_equal(csi_transfer_outcome(CURLE_HTTP2_STREAM, false, false, false), CSI_FAILED);
	/* Part of a body and no grpc-status: the answer was cut. */
	assert_int_equal(csi_transfer_outcome(CURLE_HTTP2_STREAM, false, true, true), CSI_FAILED);
	assert_int_equal(csi_transfer_outcome(CURLE_HTTP2, false, false, true), CSI_FAILED);
	assert_int_equal(csi_transfer_outcome(CURLE_SEND_ERROR, false, false, true), CSI_FAILED);
	assert_int_equal(csi_transfer_outcome(CURLE_RECV_ERROR, false, true, true), CSI_FAILED);
}

/* What is not a stream's error stays the outcome, grpc-status or not: a
 * timeout, an answer too large (the body callback's refusal), no
 * connection. */
static void test_other_failures(void **state)
{
	static const CURLcode other[] = {CURLE_OPERATION_TIMEDOUT, CURLE_WRITE_ERROR,
					 CURLE_COULDNT_CONNECT, CURLE_OUT_OF_MEMORY,
					 CURLE_ABORTED_BY_CALLBACK};

	(void)state;
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		for (int seen = 0; seen < 2; seen++)
			assert_int_equal(csi_transfer_outcome(other[i], seen, false, true),
					 CSI_FAILED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_answer_then_stream_error),
	    cmocka_unit_test(test_nothing_then_stream_error),
	    cmocka_unit_test(test_other_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
