/* SPDX-License-Identifier: MIT */
/* The Prometheus text format, in memory (include/metrics.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "array.h"

void metrics_free(struct metrics *m)
{
	free(m->buf);
	*m = (struct metrics){0};
}

static void put(struct metrics *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct metrics *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (m->failed)
		return;
	for (;;) {
		size_t room = m->cap - m->len;

		va_start(ap, fmt);
		n = vsnprintf(m->buf ? m->buf + m->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			m->failed = true;
			return;
		}
		if ((size_t)n < room) {
			m->len += (size_t)n;
			return;
		}
		if (PLUGFS_RESERVE(m->buf, m->cap, m->len + (size_t)n + 1, 4096) != 0) {
			m->failed = true;
			return;
		}
	}
}

static void put_value(struct metrics *m, double v)
{
	if (isnan(v))
		put(m, " NaN\n");
	else if (isinf(v))
		put(m, v > 0 ? " +Inf\n" : " -Inf\n");
	else if (v == (double)(long long)v && fabs(v) < 9e15)
		put(m, " %lld\n", (long long)v);
	else
		put(m, " %.17g\n", v);
}

static void put_escaped(struct metrics *m, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			put(m, "\\\\");
		else if (*s == '"')
			put(m, "\\\"");
		else if (*s == '\n')
			put(m, "\\n");
		else
			put(m, "%c", *s);
	}
}

static void put_labels(struct metrics *m, const char *const *labels, const char *le)
{
	bool any = false;

	if ((!labels || !labels[0]) && !le)
		return;
	put(m, "{");
	for (size_t i = 0; labels && labels[i]; i += 2) {
		put(m, "%s%s=\"", any ? "," : "", labels[i]);
		put_escaped(m, labels[i + 1] ? labels[i + 1] : "");
		put(m, "\"");
		any = true;
	}
	if (le)
		put(m, "%sle=\"%s\"", any ? "," : "", le);
	put(m, "}");
}

void metrics_family(struct metrics *m, const char *name, const char *type, const char *help)
{
	put(m, "# HELP %s ", name);
	for (const char *s = help; *s; s++) {
		if (*s == '\\')
			put(m, "\\\\");
		else if (*s == '\n')
			put(m, "\\n");
		else
			put(m, "%c", *s);
	}
	put(m, "\n# TYPE %s %s\n", name, type);
}

void metrics_sample(struct metrics *m, const char *name, const char *const *labels, double value)
{
	put(m, "%s", name);
	put_labels(m, labels, NULL);
	put_value(m, value);
}

void metrics_histogram(struct metrics *m, const char *name, const double *bounds, size_t n,
		       const uint64_t *counts, double sum)
{
	uint64_t acc = 0;
	char le[32];

	for (size_t i = 0; i <= n; i++) {
		acc += counts[i];
		if (i < n)
			snprintf(le, sizeof(le), "%g", bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		put(m, "%s_bucket", name);
		put_labels(m, NULL, le);
		put_value(m, (double)acc);
	}
	put(m, "%s_sum", name);
	put_value(m, sum);
	put(m, "%s_count", name);
	put_value(m, (double)acc);
}
