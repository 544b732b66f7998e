/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the csi probe's reader of a plugin's answer
 * (probe/csi_pb.c), as csi.c runs it: the body of a unary gRPC response
 * (csi_grpc_message), then the message as a ProbeResponse and as a
 * GetPluginInfoResponse (its name and version) and as a
 * GetPluginCapabilitiesResponse; the raw input through the decoders and the
 * field walker too.  Whatever it gets, a field it hands back lies inside
 * the input. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csi_pb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const uint8_t *p, size_t len, const uint8_t *buf, size_t size)
{
	if (len > 0 && (p < buf || p > buf + size || len > (size_t)(buf + size - p)))
		abort();
}

static void decode(const uint8_t *msg, size_t len)
{
	const uint8_t *name = NULL;
	size_t name_len = 0;
	bool ready = false;

	(void)csi_decode_probe(msg, len, &ready);
	if (csi_decode_info(msg, len, &name, &name_len) == 0)
		inside(name, name_len, msg, len);
	if (csi_decode_string(msg, len, 2, &name, &name_len) == 0)
		inside(name, name_len, msg, len);
	(void)csi_decode_caps(msg, len, &ready);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes: ASan sees a read past the answer. */
	uint8_t *buf = malloc(size ? size : 1);
	const uint8_t *msg = NULL;
	const char *why = NULL;
	size_t mlen = 0;
	struct pb_reader r;
	struct pb_field f;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (csi_grpc_message(buf, size, &msg, &mlen, &why) == 0) {
		inside(msg, mlen, buf, size);
		decode(msg, mlen);
	} else if (!why) {
		abort(); /* a refusal always says why */
	}
	decode(buf, size);
	r = (struct pb_reader){buf, buf + size};
	while (pb_next(&r, &f) == 1)
		if (f.wire == 2)
			inside(f.data, f.len, buf, size);
	free(buf);
	return 0;
}
