/* SPDX-License-Identifier: MIT */
/* Line framing of the control protocol: one JSON object per line. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control_internal.h"
#include "array.h"

void ctl_linebuf_init(struct ctl_linebuf *lb, size_t max)
{
	memset(lb, 0, sizeof(*lb));
	lb->max = max;
}

void ctl_linebuf_free(struct ctl_linebuf *lb)
{
	free(lb->buf);
	memset(lb, 0, sizeof(*lb));
}

char *ctl_linebuf_space(struct ctl_linebuf *lb, size_t want, size_t *avail)
{
	if (lb->start > 0 && (lb->start == lb->len || lb->cap - lb->len < want)) {
		/* Move the unconsumed tail to the front. */
		memmove(lb->buf, lb->buf + lb->start, lb->len - lb->start);
		lb->len -= lb->start;
		lb->start = 0;
	}
	if (PLUGFS_RESERVE(lb->buf, lb->cap, lb->len + want + 1, 4096) != 0)
		return NULL;
	/* Keep one byte for the NUL that ctl_linebuf_next writes. */
	*avail = lb->cap - lb->len - 1;
	return lb->buf + lb->len;
}

void ctl_linebuf_commit(struct ctl_linebuf *lb, size_t n)
{
	lb->len += n;
}

int ctl_linebuf_append(struct ctl_linebuf *lb, const void *data, size_t n)
{
	size_t avail = 0;
	char *p = ctl_linebuf_space(lb, n, &avail);

	if (!p)
		return -ENOMEM;
	memcpy(p, data, n);
	ctl_linebuf_commit(lb, n);
	return 0;
}

size_t ctl_linebuf_pending(const struct ctl_linebuf *lb)
{
	return lb->len - lb->start;
}

enum ctl_line_result ctl_linebuf_next(struct ctl_linebuf *lb, char **line, size_t *len)
{
	for (;;) {
		char *base = lb->buf + lb->start;
		size_t avail = lb->len - lb->start;
		char *nl = avail > lb->scanned
			       ? memchr(base + lb->scanned, '\n', avail - lb->scanned)
			       : NULL;

		if (lb->discarding) {
			if (!nl) {
				/* Drop everything: it belongs to the overlong line. */
				lb->start = lb->len;
				lb->scanned = 0;
				return CTL_LINE_NONE;
			}
			lb->start += (size_t)(nl - base) + 1;
			lb->scanned = 0;
			lb->discarding = false;
			continue;
		}
		if (!nl) {
			lb->scanned = avail;
			if (avail > lb->max) {
				lb->discarding = true;
				lb->start = lb->len;
				lb->scanned = 0;
				return CTL_LINE_OVERLONG;
			}
			return CTL_LINE_NONE;
		}
		size_t n = (size_t)(nl - base);

		lb->start += n + 1;
		lb->scanned = 0;
		if (n > lb->max)
			return CTL_LINE_OVERLONG;
		*nl = '\0';
		*line = base;
		*len = n;
		return CTL_LINE_OK;
	}
}

enum ctl_line_result ctl_linebuf_flush(struct ctl_linebuf *lb, char **line, size_t *len)
{
	size_t avail = 0;

	if (lb->discarding || ctl_linebuf_pending(lb) == 0) {
		lb->discarding = false;
		lb->start = lb->len;
		return CTL_LINE_NONE;
	}
	if (!ctl_linebuf_space(lb, 1, &avail))
		return CTL_LINE_NONE;
	lb->buf[lb->len++] = '\n';
	return ctl_linebuf_next(lb, line, len);
}

void ctl_linebuf_drop(struct ctl_linebuf *lb)
{
	lb->discarding = false;
	lb->start = lb->len;
	lb->scanned = 0;
}
