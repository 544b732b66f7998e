/* SPDX-License-Identifier: MIT */
/*
 * Private to control/: line framing and request parsing of the control
 * protocol (docs/protocol.md).  Both are pure (no sockets, no registry) so
 * that tests/unit/test_control.c can run them without a daemon.
 */
#ifndef PLUGFS_CONTROL_INTERNAL_H
#define PLUGFS_CONTROL_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control.h"
#include "err.h"

/*
 * A JSON string of s (json.c), for text the daemon did not make: names,
 * values and messages quoting them.  JSON strings are UTF-8 and
 * json_string() refuses anything else, so text that is not valid UTF-8
 * goes out as plugfs_utf8_sanitize() makes it (each invalid byte a `?',
 * every valid character kept) and one bad value never fails a document or
 * an error response.  A new reference; NULL for a NULL s or when memory
 * ran out.
 */
json_t *ctl_json_text(const char *s);

/* --- line framing --- */

/*
 * Accumulates bytes from a stream and cuts them into lines.  A line longer
 * than `max` bytes (not counting the newline) is reported once as overlong,
 * then everything up to and including its newline is discarded.
 */
struct ctl_linebuf {
	char *buf;
	size_t start; /* first unconsumed byte */
	size_t len;   /* bytes in buf (consumed ones included) */
	size_t cap;
	size_t scanned; /* bytes after start already known to hold no '\n' */
	size_t max;
	bool discarding;
};

enum ctl_line_result {
	CTL_LINE_NONE,	   /* no complete line yet */
	CTL_LINE_OK,	   /* *line (NUL-terminated, no '\n') of *len bytes */
	CTL_LINE_OVERLONG, /* a line exceeded max; its bytes are being dropped */
};

void ctl_linebuf_init(struct ctl_linebuf *lb, size_t max);
void ctl_linebuf_free(struct ctl_linebuf *lb);
/* Room for at least `want` more bytes; returns where to write or NULL
 * (-ENOMEM).  *avail receives the room. */
char *ctl_linebuf_space(struct ctl_linebuf *lb, size_t want, size_t *avail);
/* n bytes were written at the pointer ctl_linebuf_space returned. */
void ctl_linebuf_commit(struct ctl_linebuf *lb, size_t n);
/* Appends bytes (the unit tests feed it this way). 0 or -ENOMEM. */
int ctl_linebuf_append(struct ctl_linebuf *lb, const void *data, size_t n);
/* The next line.  The pointer stays valid until the next call that changes
 * lb.  A trailing '\r' is kept (the JSON parser treats it as whitespace). */
enum ctl_line_result ctl_linebuf_next(struct ctl_linebuf *lb, char **line, size_t *len);
/* Unconsumed bytes (an incomplete last line). */
size_t ctl_linebuf_pending(const struct ctl_linebuf *lb);
/* At end of input: the incomplete last line, as if it ended in '\n'. */
enum ctl_line_result ctl_linebuf_flush(struct ctl_linebuf *lb, char **line, size_t *len);
/* Drops what was read of an unfinished line (and the rest of an overlong
 * one being discarded). */
void ctl_linebuf_drop(struct ctl_linebuf *lb);

/* --- requests --- */

enum ctl_op {
	CTL_OP_REGISTER,
	CTL_OP_DEREGISTER,
	CTL_OP_LIST,
	CTL_OP_SHOW,
	CTL_OP_WAIT,
	CTL_OP_WATCH,
	CTL_OP_STATUS,
	CTL_OP_RELOAD,
	CTL_OP_METRICS,
};
#define CTL_OP_COUNT (CTL_OP_METRICS + 1)

/* Stable error codes of the protocol. */
enum ctl_code {
	CTL_E_INVALID_ARGUMENT,
	CTL_E_PERMISSION_DENIED,
	CTL_E_NOT_FOUND,
	CTL_E_UNAVAILABLE,
	CTL_E_INTERNAL,
};
#define CTL_E_COUNT (CTL_E_INTERNAL + 1)
const char *ctl_code_name(enum ctl_code c);
/* Maps a -errno of the registry to a code. */
enum ctl_code ctl_code_from_errno(int neg_errno);

#define CTL_MAX_TYPES 64
#define CTL_MAX_OPTIONS 256
/* Largest wait timeout, seconds. */
#define CTL_WAIT_TIMEOUT_MAX 86400.0

struct control_server; /* control_server_internal.h */
struct client;
struct ctl_request;

/*
 * One operation of the protocol.  Its one table is ctl_ops (ops.c, in
 * control_server_internal.h), a row per enum ctl_op in its order: what the
 * parse accepts, what runs it and who may.
 */
struct ctl_op_desc {
	const char *name; /* "op" */
	/* Accepted fields besides "op" and "id", NULL-terminated. */
	const char *fields[11];
	/* Runs the parsed request on the server thread and answers it, now or
	 * later (a group commit, a wait, a stream). */
	void (*run)(struct control_server *srv, struct client *c, struct ctl_request *req);
	bool mutates; /* a change: uid 0 or control.group only */
};

/*
 * A parsed request.  Strings point into `root` (kept alive by the request);
 * free with ctl_request_free.
 */
struct ctl_request {
	json_t *root;
	json_t *id; /* borrowed from root, NULL when absent */
	enum ctl_op op;
	const struct ctl_op_desc *desc; /* op's row of the table it was parsed with */
	const char *types[CTL_MAX_TYPES];
	size_t n_types;	  /* register, watch (0 = all), list (0 or 1) */
	const char *type; /* deregister/show/wait; NULL for deregister --alloc */
	const char *name;
	const char *alloc;
	const char *socket;
	const char *version;  /* NULL when absent */
	const char *kind;     /* NULL when absent */
	const char *probe;    /* NULL when absent: the type's mode */
	const char *csi_name; /* NULL when absent */
	struct reg_option options[CTL_MAX_OPTIONS];
	size_t n_options;
	double timeout; /* wait: seconds; < 0 = none */
	bool stream;	/* list: a line per plugin (docs/protocol.md) */
};

/*
 * Parses one request line by ops (the op table, CTL_OP_COUNT rows in enum
 * ctl_op's order; the server's is ctl_ops): JSON (duplicate keys rejected),
 * an object, an "op" named in ops, only the fields of that op, each of the
 * right JSON type.  Values are left to the registry (names, paths, types).
 * On error returns -EINVAL, sets *code and writes a message naming the field
 * and the rule; req->id is still set when the line was an object with an
 * "id", so the error can echo it.
 */
int ctl_parse_request(const struct ctl_op_desc *ops, const char *line, size_t len,
		      struct ctl_request *req, enum ctl_code *code, char *err, size_t errlen);
void ctl_request_free(struct ctl_request *req);

/* {"ok":false,"error":{"code","message"}} with "id" when id != NULL. */
json_t *ctl_error_response(json_t *id, enum ctl_code code, const char *message);
/* {"ok":true} with "id" when id != NULL. */
json_t *ctl_ok_response(json_t *id);
/* One compact line with '\n' (malloc'd) or NULL; *len excludes the NUL. */
char *ctl_dump_line(json_t *obj, size_t *len);

#endif
