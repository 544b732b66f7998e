/* SPDX-License-Identifier: MIT */
/*
 * Just enough of the protobuf wire format and of gRPC's message framing to
 * read the two CSI answers the csi probe asks for (csi_pb.h).  Every field
 * of every wire type is walked (unknown ones skipped, groups included), and
 * anything cut short or malformed is refused rather than guessed at.
 */
#include <string.h>

#include "csi_pb.h"

#define GROUP_DEPTH_MAX 32

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

static int read_varint(struct pb_reader *r, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 10; i++) {
		uint8_t b;

		if (r->p >= r->end)
			return -1; /* truncated */
		b = *r->p++;
		if (i == 9 && b > 1)
			return -1; /* more than 64 bits */
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

static int skip_bytes(struct pb_reader *r, uint64_t n)
{
	if ((uint64_t)(r->end - r->p) < n)
		return -1;
	r->p += n;
	return 0;
}

/* One field after its tag; groups up to their end tag (field). */
static int read_value(struct pb_reader *r, uint32_t field, unsigned wire, unsigned depth,
		      struct pb_field *f)
{
	uint64_t v, tag;

	switch (wire) {
	case WT_VARINT:
		return read_varint(r, &f->varint);
	case WT_I64:
		return skip_bytes(r, 8);
	case WT_I32:
		return skip_bytes(r, 4);
	case WT_LEN:
		if (read_varint(r, &v) < 0 || (uint64_t)(r->end - r->p) < v)
			return -1;
		f->data = r->p;
		f->len = (size_t)v;
		r->p += v;
		return 0;
	case WT_SGROUP:
		if (depth >= GROUP_DEPTH_MAX)
			return -1;
		for (;;) {
			struct pb_field inner = {0};

			if (read_varint(r, &tag) < 0 || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
				return -1;
			if ((tag & 7) == WT_EGROUP)
				return (uint32_t)(tag >> 3) == field ? 0 : -1;
			if (read_value(r, (uint32_t)(tag >> 3), (unsigned)(tag & 7), depth + 1,
				       &inner) < 0)
				return -1;
		}
	default: /* an end group without its start, or wire types 6 and 7 */
		return -1;
	}
}

int pb_next(struct pb_reader *r, struct pb_field *f)
{
	uint64_t tag;

	memset(f, 0, sizeof(*f));
	if (r->p >= r->end)
		return 0;
	if (read_varint(r, &tag) < 0 || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
		return -1;
	f->field = (uint32_t)(tag >> 3);
	f->wire = (unsigned)(tag & 7);
	return read_value(r, f->field, f->wire, 0, f) < 0 ? -1 : 1;
}

int csi_grpc_message(const uint8_t *buf, size_t len, const uint8_t **msg, size_t *mlen,
		     const char **why)
{
	uint32_t n;

	if (len == 0) {
		*why = "no response message";
		return -1;
	}
	if (len < 5) {
		*why = "truncated response";
		return -1;
	}
	if (buf[0] != 0) {
		*why = buf[0] == 1 ? "compressed response (not asked for)" : "bad gRPC frame flag";
		return -1;
	}
	n = (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 8 | buf[4];
	if (len - 5 < n) {
		*why = "truncated response";
		return -1;
	}
	if (len - 5 > n) {
		*why = "more than one response message";
		return -1;
	}
	*msg = buf + 5;
	*mlen = n;
	return 0;
}

int csi_decode_probe(const uint8_t *msg, size_t len, bool *ready)
{
	struct pb_reader r = pb_reader_of(msg, len);
	struct pb_field f;
	bool present = false, value = false;
	int rc;

	while ((rc = pb_next(&r, &f)) == 1) {
		struct pb_reader b;
		struct pb_field g;

		if (f.field != 1)
			continue;
		if (f.wire != WT_LEN)
			return -1;
		/* google.protobuf.BoolValue; repeated occurrences merge. */
		present = true;
		b = pb_reader_of(f.data, f.len);
		while ((rc = pb_next(&b, &g)) == 1) {
			if (g.field != 1)
				continue;
			if (g.wire != WT_VARINT)
				return -1;
			value = g.varint != 0;
		}
		if (rc < 0)
			return -1;
	}
	if (rc < 0)
		return -1;
	*ready = present ? value : true; /* absent: ready (CSI spec) */
	return 0;
}

int csi_decode_string(const uint8_t *msg, size_t len, uint32_t field, const uint8_t **s, size_t *n)
{
	struct pb_reader r = pb_reader_of(msg, len);
	struct pb_field f;
	int rc;

	*s = msg;
	*n = 0;
	while ((rc = pb_next(&r, &f)) == 1) {
		if (f.field != field)
			continue;
		if (f.wire != WT_LEN)
			return -1;
		*s = f.data; /* the last one wins */
		*n = f.len;
	}
	return rc < 0 ? -1 : 0;
}

enum csi_text csi_decode_text(const uint8_t *msg, size_t len, uint32_t field, char *out,
			      size_t outsz)
{
	const uint8_t *s = NULL;
	size_t n = 0;

	out[0] = '\0';
	if (csi_decode_string(msg, len, field, &s, &n) < 0)
		return CSI_TEXT_MALFORMED;
	if (n > outsz - 1)
		return CSI_TEXT_TOO_LONG;
	if (n && memchr(s, '\0', n))
		return CSI_TEXT_NUL;
	if (n)
		memcpy(out, s, n);
	out[n] = '\0';
	return CSI_TEXT_OK;
}

int csi_decode_info(const uint8_t *msg, size_t len, const uint8_t **name, size_t *name_len)
{
	return csi_decode_string(msg, len, 1, name, name_len);
}

/* The varint field `field' of a message: the last occurrence, 0 when
 * absent (proto3's default).  0 or -1 when malformed. */
static int decode_varint_field(const uint8_t *msg, size_t len, uint32_t field, uint64_t *v)
{
	struct pb_reader r = pb_reader_of(msg, len);
	struct pb_field f;
	int rc;

	*v = 0;
	while ((rc = pb_next(&r, &f)) == 1) {
		if (f.field != field)
			continue;
		if (f.wire != WT_VARINT)
			return -1;
		*v = f.varint;
	}
	return rc < 0 ? -1 : 0;
}

int csi_decode_caps(const uint8_t *msg, size_t len, bool *controller)
{
	struct pb_reader r = pb_reader_of(msg, len);
	struct pb_field f;
	int rc;

	*controller = false;
	while ((rc = pb_next(&r, &f)) == 1) {
		struct pb_reader c;
		struct pb_field g;

		if (f.field != 1) /* capabilities */
			continue;
		if (f.wire != WT_LEN)
			return -1;
		c = pb_reader_of(f.data, f.len);
		while ((rc = pb_next(&c, &g)) == 1) {
			uint64_t type;

			if (g.field != 1) /* service; volume_expansion (2) is skipped */
				continue;
			if (g.wire != WT_LEN || decode_varint_field(g.data, g.len, 1, &type) < 0)
				return -1;
			if (type == 1) /* CONTROLLER_SERVICE */
				*controller = true;
		}
		if (rc < 0)
			return -1;
	}
	return rc < 0 ? -1 : 0;
}
