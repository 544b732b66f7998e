/* SPDX-License-Identifier: MIT */
/*
 * The `csi' probe (include/probe.h): a real csi.v1.Identity/Probe gRPC call
 * over each registration's Unix socket, and GetPluginInfo when a plugin
 * name is expected.  The same client identifies a plugin for discovery
 * (probe_csi_identify): GetPluginInfo, GetPluginCapabilities, NodeGetInfo.  libcurl speaks HTTP/2
 * (prior knowledge, nghttp2) and we write only the gRPC frame around the protobuf bytes (csi_pb.c).
 *
 * One libcurl multi handle per call of probe_csi_many, created and used on
 * the calling thread only (the prober, the start-up round, the control
 * server's `register'): no lock, nothing shared between threads but what
 * curl_global_init (probe_global_init, once at daemon start) set up.
 * Every transfer carries its own deadline (CURLOPT_TIMEOUT_MS, the rest of
 * the probe's budget from its start), so a plugin that accepts and never
 * answers is dead after the timeout and delays no other.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "csi_pb.h"
#include "array.h"
#include "clock.h"
#include "probe_internal.h"

/* An answer larger than this is refused (GetPluginInfo's manifest is the
 * largest thing a plugin may send; a few hundred bytes in practice). */
#define CSI_BODY_MAX (64 * 1024)
#define GRPC_MSG_MAX 96
#define NAME_SHOW_MAX 64

/* The calls, in the order they follow each other: a probe is PROBE, then
 * INFO when a name is expected; an identification INFO, CAPS, NODE. */
enum stage { STAGE_PROBE, STAGE_INFO, STAGE_CAPS, STAGE_NODE };

static const char *const stage_url[] = {
    [STAGE_PROBE] = "http://localhost/csi.v1.Identity/Probe",
    [STAGE_INFO] = "http://localhost/csi.v1.Identity/GetPluginInfo",
    [STAGE_CAPS] = "http://localhost/csi.v1.Identity/GetPluginCapabilities",
    [STAGE_NODE] = "http://localhost/csi.v1.Node/NodeGetInfo",
};

#define GRPC_UNIMPLEMENTED 12
/* How often an identification's call is asked again after libcurl 7.88
 * lost its answer (call_finish): each time loses it with the odds of the
 * first, over half with the probe starved beside busy loops, where 8 left
 * 2 to 27 of 1,000 identifications failed and 32 none of 3,000
 * (docs/design.md, Hazards).  Within the call's budget all the same. */
#define CSI_RESET_RETRIES 32

struct call {
	CURL *easy;
	struct curl_slist *headers;
	size_t idx;		   /* into paths, names and out */
	const char *want;	   /* expected plugin name, NULL = none */
	struct probe_identity *id; /* an identification's outcome, NULL: a probe */
	enum stage stage;
	int64_t start;	  /* monotonic ms */
	int64_t deadline; /* the start plus the timeout */
	int grpc_status;  /* -1: none seen yet */
	unsigned resets;  /* calls asked again after a reset (identification) */
	char grpc_message[GRPC_MSG_MAX];
	uint8_t *body;
	size_t body_len, body_cap;
	bool body_overflow;
	char curl_err[CURL_ERROR_SIZE];
};

/* An empty request message in its gRPC frame: not compressed, length 0. */
static const char empty_request[5] = {0, 0, 0, 0, 0};

int probe_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -ENOMEM;
}

void probe_global_cleanup(void)
{
	curl_global_cleanup();
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n;

	if (len > CSI_BODY_MAX - c->body_len) {
		c->body_overflow = true;
		return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
	}
	if (PLUGFS_RESERVE(c->body, c->body_cap, c->body_len + len, 256) != 0)
		return 0;
	memcpy(c->body + c->body_len, data, len);
	c->body_len += len;
	return len;
}

/* Printable ASCII of s (n bytes) into out; anything else becomes `?'. */
static void printable(char *out, size_t outlen, const char *s, size_t n)
{
	size_t j = 0;

	for (size_t i = 0; i < n && j + 1 < outlen; i++)
		out[j++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[j] = '\0';
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* grpc-message is percent-encoded (the gRPC HTTP/2 protocol). */
static void set_grpc_message(struct call *c, const char *v, size_t n)
{
	char dec[GRPC_MSG_MAX];
	size_t j = 0;

	for (size_t i = 0; i < n && j + 1 < sizeof(dec); i++) {
		int hi, lo;

		if (v[i] == '%' && i + 2 < n && (hi = hexval(v[i + 1])) >= 0 &&
		    (lo = hexval(v[i + 2])) >= 0) {
			dec[j++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			dec[j++] = v[i];
		}
	}
	printable(c->grpc_message, sizeof(c->grpc_message), dec, j);
}

/* Response headers and, for HTTP/2, trailers: libcurl hands both to the
 * header callback, one line at a time.  A trailers-only response (an error
 * the plugin answers at once) carries grpc-status in its headers. */
static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n;
	const char *colon = memchr(line, ':', len);
	const char *v, *end = line + len;
	size_t name_len;

	if (!colon)
		return len;
	name_len = (size_t)(colon - line);
	for (v = colon + 1; v < end && (*v == ' ' || *v == '\t'); v++)
		;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	if (name_len == 11 && strncasecmp(line, "grpc-status", 11) == 0) {
		int s = 0;
		const char *p = v;

		for (; p < end && *p >= '0' && *p <= '9' && s < 1000; p++)
			s = s * 10 + (*p - '0');
		c->grpc_status = p == end && p > v ? s : 2; /* garbage: UNKNOWN */
	} else if (name_len == 12 && strncasecmp(line, "grpc-message", 12) == 0) {
		set_grpc_message(c, v, (size_t)(end - v));
	}
	return len;
}

/* Sets up c's easy handle for its stage, the budget left from its start.
 * -1 when the budget is spent or curl refuses (res set). */
static int call_prepare(struct call *c, const char *path, struct probe_result *res)
{
	int64_t left = c->deadline - plugfs_mono_ms();
	const char *url = stage_url[c->stage];
	CURL *e = c->easy;
	CURLcode cc = CURLE_OK;

	if (left <= 0) {
		probe_set_error(res, "timeout");
		return -1;
	}
	c->grpc_status = -1;
	c->grpc_message[0] = '\0';
	c->body_len = 0;
	c->body_overflow = false;
	c->curl_err[0] = '\0';
#define SET(opt, val)                                                                              \
	do {                                                                                       \
		if (cc == CURLE_OK)                                                                \
			cc = curl_easy_setopt(e, opt, val);                                        \
	} while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_UNIX_SOCKET_PATH, path);
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
	SET(CURLOPT_PROTOCOLS_STR, "http");
	SET(CURLOPT_NOPROXY, "*"); /* never a proxy from the environment */
	SET(CURLOPT_NOSIGNAL, 1L);
	/* One connection per call, used once: a probe tests the plugin, not a
	 * connection a previous call left (and libcurl 7.88 fails a second
	 * stream on a gRPC server's HTTP/2 connection). */
	SET(CURLOPT_FRESH_CONNECT, 1L);
	SET(CURLOPT_FORBID_REUSE, 1L);
	SET(CURLOPT_TIMEOUT_MS, (long)left);
	SET(CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	SET(CURLOPT_HTTPHEADER, c->headers);
	SET(CURLOPT_POSTFIELDS, empty_request);
	SET(CURLOPT_POSTFIELDSIZE, (long)sizeof(empty_request));
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, c);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, c);
	SET(CURLOPT_ERRORBUFFER, c->curl_err);
	SET(CURLOPT_PRIVATE, c);
#undef SET
	if (cc != CURLE_OK) {
		probe_set_error(res, "curl: %s", curl_easy_strerror(cc));
		return -1;
	}
	return 0;
}

/* The transport's failure as an error. */
static void set_curl_error(struct call *c, CURLcode cc, struct probe_result *res)
{
	long oserr = 0;

	if (cc == CURLE_OPERATION_TIMEDOUT) {
		probe_set_error(res, "timeout");
		return;
	}
	if (cc == CURLE_WRITE_ERROR && c->body_overflow) {
		probe_set_error(res, "response larger than %d bytes", CSI_BODY_MAX);
		return;
	}
	if (cc == CURLE_COULDNT_CONNECT &&
	    curl_easy_getinfo(c->easy, CURLINFO_OS_ERRNO, &oserr) == CURLE_OK && oserr > 0) {
		probe_set_errno(res, (int)oserr);
		return;
	}
	probe_set_error(res, "%s", c->curl_err[0] ? c->curl_err : curl_easy_strerror(cc));
}

/* The text field `field' of GetPluginInfoResponse msg into out
 * (PROBE_CSI_TEXT_MAX + 1): true; else false with res set, and c->id->invalid
 * when it was decoded and is no text plugfs takes (the plugin's answer,
 * which asking again does not change). */
static bool info_text(struct call *c, const uint8_t *msg, size_t mlen, uint32_t field, char *out,
		      const char *what, struct probe_result *res)
{
	switch (csi_decode_text(msg, mlen, field, out, PROBE_CSI_TEXT_MAX + 1)) {
	case CSI_TEXT_OK:
		return true;
	case CSI_TEXT_TOO_LONG:
		probe_set_error(res, "plugin %s longer than %d bytes", what, PROBE_CSI_TEXT_MAX);
		break;
	case CSI_TEXT_NUL:
		probe_set_error(res, "plugin %s has a NUL byte", what);
		break;
	case CSI_TEXT_MALFORMED:
		probe_set_error(res, "malformed GetPluginInfoResponse");
		return false;
	}
	c->id->invalid = true;
	return false;
}

/* The answer of an identification's call in msg (mlen bytes): true when
 * the next call follows (c->stage set), else res holds the outcome. */
static bool identify_step(struct call *c, const uint8_t *msg, size_t mlen, struct probe_result *res)
{
	const uint8_t *s = NULL;
	size_t n = 0;

	switch (c->stage) {
	case STAGE_INFO:
		/* Each read walks the whole message: a malformed one is told
		 * as such, before any text of it. */
		if (!info_text(c, msg, mlen, 1, c->id->name, "name", res) ||
		    !info_text(c, msg, mlen, 2, c->id->version, "version", res))
			return false;
		c->stage = STAGE_CAPS;
		return true;
	case STAGE_CAPS:
		if (csi_decode_caps(msg, mlen, &c->id->controller) < 0) {
			probe_set_error(res, "malformed GetPluginCapabilitiesResponse");
			return false;
		}
		c->stage = STAGE_NODE;
		return true;
	case STAGE_NODE:
		if (csi_decode_string(msg, mlen, 1, &s, &n) < 0) {
			probe_set_error(res, "malformed NodeGetInfoResponse");
			return false;
		}
		c->id->node = true;
		probe_set_ok(res);
		return false;
	case STAGE_PROBE:
		break;
	}
	probe_set_error(res, "internal error: no such call");
	return false;
}

enum csi_transfer csi_transfer_outcome(int cc, bool grpc_status_seen, bool body_seen,
				       bool may_ask_again)
{
	switch ((CURLcode)cc) {
	case CURLE_OK:
		return CSI_ANSWERED;
	case CURLE_HTTP2_STREAM:
		if (grpc_status_seen)
			return CSI_ANSWERED;
		return !body_seen && may_ask_again ? CSI_ASK_AGAIN : CSI_FAILED;
	case CURLE_HTTP2:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		/* grpc-status comes last: what failed after it is the sending
		 * of a body no longer read, or the connection's end. */
		return grpc_status_seen ? CSI_ANSWERED : CSI_FAILED;
	default:
		return CSI_FAILED;
	}
}

/* A finished transfer: true when the next stage follows (c->stage set:
 * GetPluginInfo after a ready Probe, an identification's next call), else
 * res holds the outcome. */
static bool call_finish(struct call *c, CURLcode cc, struct probe_result *res)
{
	const uint8_t *msg = NULL, *name = NULL;
	const char *why = NULL;
	size_t mlen = 0, name_len = 0;
	long http = 0;
	bool ready = false;

	/* A gRPC server that answers at once with trailers only (UNIMPLEMENTED,
	 * from the headers alone) and resets the stream after it, before
	 * libcurl has sent the request's body, makes libcurl 7.88 fail the
	 * transfer: after the answer was handed over, which then stands, or
	 * with nothing of it (a few calls in a hundred), when an
	 * identification asks again on a new connection, within its budget,
	 * at most CSI_RESET_RETRIES times. */
	switch (csi_transfer_outcome((int)cc, c->grpc_status >= 0, c->body_len > 0,
				     c->id && c->resets < CSI_RESET_RETRIES)) {
	case CSI_ASK_AGAIN:
		c->resets++;
		return true; /* the same stage again */
	case CSI_FAILED:
		set_curl_error(c, cc, res);
		return false;
	case CSI_ANSWERED:
		break;
	}
	(void)curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &http);
	if (http != 200) {
		probe_set_error(res, "HTTP status %ld", http);
		return false;
	}
	if (c->grpc_status < 0) {
		probe_set_error(res, "no grpc-status in the response");
		return false;
	}
	/* A plugin without a capability or a node service may say so. */
	if (c->id && c->grpc_status == GRPC_UNIMPLEMENTED && c->stage == STAGE_CAPS) {
		c->id->controller = false;
		c->stage = STAGE_NODE;
		return true;
	}
	if (c->id && c->grpc_status == GRPC_UNIMPLEMENTED && c->stage == STAGE_NODE) {
		c->id->node = false;
		probe_set_ok(res);
		return false;
	}
	if (c->grpc_status != 0) {
		probe_set_error(res, "grpc status %d%s%s", c->grpc_status,
				c->grpc_message[0] ? ": " : "", c->grpc_message);
		return false;
	}
	if (csi_grpc_message(c->body, c->body_len, &msg, &mlen, &why) < 0) {
		probe_set_error(res, "%s", why);
		return false;
	}
	if (c->id)
		return identify_step(c, msg, mlen, res);
	if (c->stage == STAGE_PROBE) {
		if (csi_decode_probe(msg, mlen, &ready) < 0) {
			probe_set_error(res, "malformed ProbeResponse");
			return false;
		}
		if (!ready) {
			probe_set_error(res, "not ready");
			return false;
		}
		if (c->want) {
			c->stage = STAGE_INFO;
			return true;
		}
		probe_set_ok(res);
		return false;
	}
	if (csi_decode_info(msg, mlen, &name, &name_len) < 0) {
		probe_set_error(res, "malformed GetPluginInfoResponse");
		return false;
	}
	if (name_len != strlen(c->want) || memcmp(name, c->want, name_len) != 0) {
		char shown[NAME_SHOW_MAX + 1];

		printable(shown, sizeof(shown), (const char *)name, name_len);
		probe_set_error(res, "plugin name is %s%s, expected %s", name_len ? shown : "empty",
				name_len > NAME_SHOW_MAX ? "..." : "", c->want);
		return false;
	}
	probe_set_ok(res);
	return false;
}

static void call_free(struct call *c)
{
	if (c->easy)
		curl_easy_cleanup(c->easy);
	curl_slist_free_all(c->headers);
	free(c->body);
	memset(c, 0, sizeof(*c));
}

/* Starts the probe (id NULL) or the identification of paths[idx] in slot
 * c: 0 when it is in flight, -1 when it finished at once (res set). */
static int call_start(CURLM *m, struct call *c, size_t idx, const char *path, const char *want,
		      struct probe_identity *id, unsigned timeout_ms, struct probe_result *res)
{
	struct curl_slist *h = NULL;

	memset(c, 0, sizeof(*c));
	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		probe_set_errno(res, ENAMETOOLONG); /* as the connect probe says it */
		return -1;
	}
	c->idx = idx;
	c->want = want;
	c->id = id;
	c->stage = id ? STAGE_INFO : STAGE_PROBE;
	c->start = plugfs_mono_ms();
	c->deadline = c->start + timeout_ms;
	c->easy = curl_easy_init();
	h = curl_slist_append(NULL, "content-type: application/grpc");
	c->headers = h;
	if (h)
		h = curl_slist_append(h, "te: trailers");
	if (h)
		h = curl_slist_append(h, "user-agent: plugfs-probe");
	if (h)
		h = curl_slist_append(h, "expect:"); /* never 100-continue */
	if (!c->easy || !h) {
		probe_set_error(res, "out of memory");
		goto fail;
	}
	if (call_prepare(c, path, res) < 0)
		goto fail;
	if (curl_multi_add_handle(m, c->easy) != CURLM_OK) {
		probe_set_error(res, "curl: cannot add a transfer");
		goto fail;
	}
	return 0;
fail:
	call_free(c);
	return -1;
}

int probe_csi_many(const char *const *paths, const char *const *names, size_t n,
		   unsigned timeout_ms, struct probe_result *out)
{
	return probe_csi_until(paths, names, n, timeout_ms, out, NULL);
}

/* The outcome of paths[i]: out[i], or ids[i].res when identifying. */
static struct probe_result *result_of(struct probe_result *out, struct probe_identity *ids,
				      size_t i)
{
	return ids ? &ids[i].res : &out[i];
}

/* The probes (ids NULL) or the identifications (out NULL) of paths. */
static int run_calls(const char *const *paths, const char *const *names, size_t n,
		     unsigned timeout_ms, struct probe_result *out, struct probe_identity *ids,
		     const bool *stop, const struct probe_each *each)
{
	struct call *slots = NULL;
	bool *busy = NULL;
	CURLM *m = NULL;
	size_t next = 0, live = 0;
	int rc = -ENOMEM;

	if (n == 0)
		return 0;
	slots = calloc(PROBE_MAX_INFLIGHT, sizeof(*slots));
	busy = calloc(PROBE_MAX_INFLIGHT, sizeof(*busy));
	m = curl_multi_init();
	if (!slots || !busy || !m ||
	    curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING) != CURLM_OK)
		goto out;
	while (next < n || live > 0) {
		CURLMsg *msg;
		int running = 0, queued;

		/* Fill the window. */
		for (size_t s = 0; next < n && live < PROBE_MAX_INFLIGHT && s < PROBE_MAX_INFLIGHT;
		     s++) {
			if (busy[s])
				continue;
			if (ids)
				memset(&ids[next], 0, sizeof(ids[next]));
			result_of(out, ids, next)->took_ms = 0;
			if (call_start(m, &slots[s], next, paths[next], names ? names[next] : NULL,
				       ids ? &ids[next] : NULL, timeout_ms,
				       result_of(out, ids, next)) == 0) {
				busy[s] = true;
				live++;
			} else if (each) {
				each->done(each->arg, next);
			}
			next++;
		}
		if (live == 0)
			continue;
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			rc = -EIO;
			goto out;
		}
		while ((msg = curl_multi_info_read(m, &queued))) {
			struct call *c = NULL;
			struct probe_result *res;
			CURLcode cc;
			size_t idx;

			if (msg->msg != CURLMSG_DONE)
				continue;
			cc = msg->data.result;
			(void)curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			curl_multi_remove_handle(m, c->easy);
			res = result_of(out, ids, c->idx);
			if (call_finish(c, cc, res)) {
				if (call_prepare(c, paths[c->idx], res) == 0) {
					if (curl_multi_add_handle(m, c->easy) == CURLM_OK)
						continue;
					probe_set_error(res, "curl: cannot add a transfer");
				}
			}
			res->took_ms = (unsigned)(plugfs_mono_ms() - c->start);
			idx = c->idx;
			call_free(c);
			busy[c - slots] = false;
			live--;
			if (each)
				each->done(each->arg, idx);
		}
		/* Woken by any transfer's activity or its timer (curl shortens
		 * the wait to its next timeout), and to look at stop. */
		if (live > 0 && curl_multi_poll(m, NULL, 0, stop ? PROBE_STOP_CHECK_MS : 1000,
						NULL) != CURLM_OK) {
			rc = -EIO;
			goto out;
		}
		if (probe_stopped(stop)) {
			rc = -ECANCELED;
			goto out;
		}
	}
	rc = 0;
out:
	for (size_t s = 0; slots && s < PROBE_MAX_INFLIGHT; s++) {
		if (busy && busy[s]) {
			curl_multi_remove_handle(m, slots[s].easy);
			call_free(&slots[s]);
		}
	}
	if (m)
		curl_multi_cleanup(m);
	free(slots);
	free(busy);
	return rc;
}

int probe_csi_until(const char *const *paths, const char *const *names, size_t n,
		    unsigned timeout_ms, struct probe_result *out, const bool *stop)
{
	return run_calls(paths, names, n, timeout_ms, out, NULL, stop, NULL);
}

int probe_csi_each(const char *const *paths, const char *const *names, size_t n,
		   unsigned timeout_ms, struct probe_result *out, const bool *stop,
		   const struct probe_each *each)
{
	return run_calls(paths, names, n, timeout_ms, out, NULL, stop, each);
}

int probe_csi_identify(const char *const *paths, size_t n, unsigned timeout_ms,
		       struct probe_identity *out, const bool *stop)
{
	return run_calls(paths, NULL, n, timeout_ms, NULL, out, stop, NULL);
}
