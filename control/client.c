/* SPDX-License-Identifier: MIT */
/* The client half of the control protocol, used by the CLI and tests. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control_internal.h"
#include "array.h"
#include "clock.h"
#include "pathtrust.h"

/* Largest response line the client accepts (a full `list` can be big). */
#define RESPONSE_MAX (256 * 1024 * 1024)

int control_connect(const char *path, int *fd_out, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = -1, rc;

	*fd_out = -1;
	if (!path || strlen(path) >= sizeof(sa.sun_path)) {
		plugfs_seterr(err, errlen,
			      "cannot reach the plugfs daemon at %s: path too long for a "
			      "Unix socket",
			      path ? path : "(none)");
		return -ENAMETOOLONG;
	}
	/* Before a byte is sent: the socket is root's (or ours), in
	 * directories nobody else can change, or it may be anyone's. */
	if (path[0] == '/' && (rc = plugfs_path_trust("control.socket", path, 0, err, errlen)) < 0)
		return rc;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		plugfs_seterr(err, errlen, "socket(): %s", strerror(errno));
		return rc;
	}
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno == EINTR)
			continue;
		rc = -errno;
		/* The CLI says more from the errno (cli_unreachable). */
		plugfs_seterr(err, errlen, "cannot connect to the plugfs daemon at %s: %s", path,
			      strerror(errno));
		close(fd);
		return rc;
	}
	*fd_out = fd;
	return 0;
}

int control_send(int fd, json_t *req, char *err, size_t errlen)
{
	size_t len = 0, off = 0;
	char *line = ctl_dump_line(req, &len);
	int rc = 0;

	if (!line) {
		plugfs_seterr(err, errlen, "cannot encode the request");
		return -ENOMEM;
	}
	while (off < len) {
		ssize_t n = send(fd, line + off, len - off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			plugfs_seterr(err, errlen, "cannot send the request to the daemon: %s",
				      strerror(errno));
			break;
		}
		off += (size_t)n;
	}
	free(line);
	return rc;
}

/*
 * Reads exactly one line: peeks at what is there, takes bytes up to and
 * including the first newline and leaves the rest in the socket, so no
 * buffer has to live beside the fd.
 */
int control_recv(int fd, json_t **resp, int timeout_ms, char *err, size_t errlen)
{
	int64_t deadline = plugfs_deadline_ms(timeout_ms);
	char *buf = NULL;
	size_t len = 0, cap = 0;
	json_error_t jerr;
	int rc;

	*resp = NULL;
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int wait = plugfs_poll_ms(deadline);
		char *nl;
		ssize_t n;

		rc = poll(&pfd, 1, wait);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			plugfs_seterr(err, errlen, "poll: %s", strerror(errno));
			goto out;
		}
		if (rc == 0) {
			rc = -ETIMEDOUT;
			plugfs_seterr(err, errlen, "no answer from the daemon within %d ms",
				      timeout_ms);
			goto out;
		}
		if (cap - len < 65536) {
			if (cap >= RESPONSE_MAX) {
				rc = -EMSGSIZE;
				plugfs_seterr(err, errlen,
					      "answer from the daemon exceeds %d bytes",
					      RESPONSE_MAX);
				goto out;
			}
			if (PLUGFS_RESERVE(buf, cap, len + 65536, 65536 * 2) != 0) {
				rc = -ENOMEM;
				plugfs_seterr(err, errlen, "out of memory");
				goto out;
			}
		}
		n = recv(fd, buf + len, cap - len - 1, MSG_PEEK);
		if (n < 0 && errno == ECONNRESET && len == 0) {
			/* Closed with our request unread: it was never taken. */
			rc = -ECONNABORTED;
			plugfs_seterr(
			    err, errlen,
			    "the daemon closed the connection before it read the request");
			goto out;
		}
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			rc = errno == ECONNRESET ? -EPIPE : -errno;
			plugfs_seterr(err, errlen, "lost the connection to the daemon: %s",
				      strerror(errno));
			goto out;
		}
		if (n == 0) {
			/* Closed before a byte of the answer: -ECONNABORTED (a
			 * daemon handing over answers what it read and closes
			 * the rest unread, a daemon killed may have done it:
			 * every operation may be sent again). */
			rc = len ? -EPIPE : -ECONNABORTED;
			plugfs_seterr(err, errlen, "the daemon closed the connection%s",
				      len ? " in the middle of an answer" : "");
			goto out;
		}
		nl = memchr(buf + len, '\n', (size_t)n);
		if (nl)
			n = nl - (buf + len) + 1;
		/* Consume what was peeked (up to the newline). */
		n = recv(fd, buf + len, (size_t)n, 0);
		if (n <= 0) {
			rc = -EIO;
			plugfs_seterr(err, errlen, "lost the connection to the daemon");
			goto out;
		}
		len += (size_t)n;
		if (nl)
			break;
	}
	*resp = json_loadb(buf, len, 0, &jerr);
	if (!*resp || !json_is_object(*resp)) {
		json_decref(*resp);
		*resp = NULL;
		rc = -EPROTO;
		plugfs_seterr(err, errlen,
			      "the daemon sent something that is not a JSON object: %s", jerr.text);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

void control_reader_init(struct control_reader *rd, int fd)
{
	*rd = (struct control_reader){.fd = fd};
}

void control_reader_free(struct control_reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
	rd->off = rd->len = rd->cap = 0;
}

int control_reader_next(struct control_reader *rd, json_t **obj, int timeout_ms, char *err,
			size_t errlen)
{
	int64_t deadline = plugfs_deadline_ms(timeout_ms);
	size_t scanned = 0;
	json_error_t jerr;

	*obj = NULL;
	for (;;) {
		/* No buffer yet before the first read (NULL: no offset on it). */
		char *start = rd->buf ? rd->buf + rd->off : NULL;
		char *nl = rd->len > rd->off ? memchr(start + scanned, '\n',
						       rd->len - rd->off - scanned)
					     : NULL;
		struct pollfd pfd = {.fd = rd->fd, .events = POLLIN};
		int wait, rc;
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - start) + 1;

			rd->off += l;
			*obj = json_loadb(start, l, 0, &jerr);
			if (!*obj || !json_is_object(*obj)) {
				json_decref(*obj);
				*obj = NULL;
				plugfs_seterr(err, errlen,
					      "the daemon sent something that is not a JSON "
					      "object: %s",
					      jerr.text);
				return -EPROTO;
			}
			return 0;
		}
		scanned = rd->len - rd->off;
		/* Room: move the partial line to the front, grow when full. */
		if (rd->off > 0) {
			memmove(rd->buf, start, scanned);
			rd->len = scanned;
			rd->off = 0;
		}
		if (rd->cap - rd->len < 65536) {
			if (rd->cap >= RESPONSE_MAX) {
				plugfs_seterr(err, errlen, "answer from the daemon exceeds %d bytes",
					      RESPONSE_MAX);
				return -EMSGSIZE;
			}
			if (PLUGFS_RESERVE(rd->buf, rd->cap, rd->len + 65536, 65536 * 2) != 0) {
				plugfs_seterr(err, errlen, "out of memory");
				return -ENOMEM;
			}
		}
		wait = plugfs_poll_ms(deadline);
		rc = poll(&pfd, 1, wait);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0) {
			rc = -errno;
			plugfs_seterr(err, errlen, "poll: %s", strerror(errno));
			return rc;
		}
		if (rc == 0) {
			plugfs_seterr(err, errlen, "no answer from the daemon within %d ms",
				      timeout_ms);
			return -ETIMEDOUT;
		}
		n = recv(rd->fd, rd->buf + rd->len, rd->cap - rd->len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			rc = errno == ECONNRESET ? -EPIPE : -errno;
			plugfs_seterr(err, errlen, "lost the connection to the daemon: %s",
				      strerror(errno));
			return rc;
		}
		if (n == 0) {
			plugfs_seterr(err, errlen, "the daemon closed the connection%s",
				      rd->len ? " in the middle of an answer" : "");
			return rd->len ? -EPIPE : -ECONNABORTED;
		}
		rd->len += (size_t)n;
	}
}

int control_call(const char *path, json_t *req, json_t **resp, int timeout_ms, char *err,
		 size_t errlen)
{
	int fd = -1, rc;

	*resp = NULL;
	rc = control_connect(path, &fd, err, errlen);
	if (rc)
		return rc;
	rc = control_exchange(fd, req, resp, timeout_ms, err, errlen);
	close(fd);
	return rc;
}

int control_exchange(int fd, json_t *req, json_t **resp, int timeout_ms, char *err, size_t errlen)
{
	char rerr[256];
	int rc;

	*resp = NULL;
	rc = control_send(fd, req, err, errlen);
	if (rc == -EPIPE || rc == -ECONNRESET) {
		/* A refusal line may be waiting in our receive queue. */
		rc = control_recv(fd, resp, 1000, rerr, sizeof(rerr));
		if (rc == 0)
			return 0;
		/* Else the daemon closed the connection (or shut its reading
		 * side, handing over) before it took the request. */
		plugfs_seterr(err, errlen,
			      "the daemon closed the connection before it took the request");
		return -ECONNABORTED;
	}
	if (rc)
		return rc;
	return control_recv(fd, resp, timeout_ms, err, errlen);
}

const char *control_response_error(json_t *resp, const char **code)
{
	json_t *e;
	const char *c, *m;

	if (json_is_true(json_object_get(resp, "ok")))
		return NULL;
	e = json_object_get(resp, "error");
	c = json_string_value(json_object_get(e, "code"));
	m = json_string_value(json_object_get(e, "message"));
	if (code)
		*code = c ? c : "internal";
	return m ? m : "the daemon answered with an error but no message";
}
