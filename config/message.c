/* SPDX-License-Identifier: MIT */
/*
 * The first error of a parse (config_fail) and the file's text as messages
 * quote it (config_quote): the helpers every file of config/ shares, below
 * all of them (this file calls none of its siblings).
 */
#include "config_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "registry.h"
#include "strutil.h"

void config_fail(struct parse_ctx *c, unsigned line, int code, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->err_code)
		return;
	c->err_code = code;
	c->err_line = line ? line : 1;
	if (!c->err || !c->errlen)
		return;
	n = line ? snprintf(c->err, c->errlen, "%s:%u: ", c->name, line)
		 : snprintf(c->err, c->errlen, "%s: ", c->name);
	if (n < 0 || (size_t)n >= c->errlen)
		return;
	va_start(ap, fmt);
	plugfs_vseterr(c->err + n, c->errlen - (size_t)n, fmt, ap);
	va_end(ap);
}

const char *config_quote(const char *v, char *buf, size_t len)
{
	char cut[VALUE_QUOTE_MAX + 4];

	snprintf(cut, sizeof(cut), "%.*s%s", VALUE_QUOTE_MAX, v,
		 strlen(v) > VALUE_QUOTE_MAX ? "..." : "");
	return plugfs_quote(buf, len, cut);
}
