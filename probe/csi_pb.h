/* SPDX-License-Identifier: MIT */
/*
 * Private to probe/: the protobuf wire format and gRPC framing the csi
 * probe reads (csi_pb.c).  Nothing here allocates; results point into the
 * caller's buffer, or are copied into one it gives.
 */
#ifndef PLUGFS_CSI_PB_H
#define PLUGFS_CSI_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pb_reader {
	const uint8_t *p, *end;
};

/* A reader of the len bytes at msg (msg may be NULL when len is 0: an
 * empty message, and no offset is applied to a null pointer). */
static inline struct pb_reader pb_reader_of(const uint8_t *msg, size_t len)
{
	return (struct pb_reader){msg, msg ? msg + len : msg};
}

struct pb_field {
	uint32_t field;
	unsigned wire;	     /* 0 varint, 1 i64, 2 len, 3 group, 5 i32 */
	uint64_t varint;     /* wire 0 */
	const uint8_t *data; /* wire 2 */
	size_t len;
};

/* The next field of r: 1 (f filled), 0 at the end, -1 when truncated or
 * malformed (a bad tag, an over-long varint, an unmatched group). */
int pb_next(struct pb_reader *r, struct pb_field *f);

/* The one message of a unary gRPC response body (5-byte prefix: flag 0,
 * big-endian length): 0 and *msg, *mlen, or -1 and *why. */
int csi_grpc_message(const uint8_t *buf, size_t len, const uint8_t **msg, size_t *mlen,
		     const char **why);

/* csi.v1.ProbeResponse: *ready is its `ready' (a BoolValue), true when the
 * field is absent (the CSI spec: the caller SHALL assume ready).  0 or -1
 * when malformed. */
int csi_decode_probe(const uint8_t *msg, size_t len, bool *ready);

/* csi.v1.GetPluginInfoResponse: its `name' (not NUL-terminated; length 0
 * when absent).  0 or -1 when malformed. */
int csi_decode_info(const uint8_t *msg, size_t len, const uint8_t **name, size_t *name_len);

/* The string (or bytes) field `field' of a message: the last occurrence
 * (not NUL-terminated; length 0 when absent), e.g. GetPluginInfoResponse's
 * vendor_version (2), NodeGetInfoResponse's node_id (1).  0 or -1 when
 * malformed or the field is not length-delimited. */
int csi_decode_string(const uint8_t *msg, size_t len, uint32_t field, const uint8_t **s, size_t *n);

/* What csi_decode_text makes of a string field. */
enum csi_text {
	CSI_TEXT_MALFORMED = -1, /* the message is */
	CSI_TEXT_OK = 0,	 /* copied */
	/* Decoded, and no text plugfs takes: an answer, not a failure to
	 * answer (asked again, the plugin says the same). */
	CSI_TEXT_TOO_LONG = 1, /* longer than outsz - 1 bytes */
	CSI_TEXT_NUL = 2,      /* has a NUL byte */
};

/* The string field `field' of a message as text: its last occurrence
 * copied into out (outsz > 0 bytes), NUL-terminated ("" when absent):
 * CSI_TEXT_OK.  One longer than outsz - 1 bytes or with a NUL byte in it
 * leaves out "" and gives CSI_TEXT_TOO_LONG or CSI_TEXT_NUL (too long is
 * told first); a malformed message CSI_TEXT_MALFORMED. */
enum csi_text csi_decode_text(const uint8_t *msg, size_t len, uint32_t field, char *out,
			      size_t outsz);

/* csi.v1.GetPluginCapabilitiesResponse: *controller when one of its
 * capabilities (1) is a service (1) of type CONTROLLER_SERVICE (1).  Other
 * capabilities (volume expansion, other service types, fields unknown) are
 * skipped.  0 or -1 when malformed. */
int csi_decode_caps(const uint8_t *msg, size_t len, bool *controller);

#endif
