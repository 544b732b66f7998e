/* SPDX-License-Identifier: MIT */
/*
 * The message half of the `-errno` plus message convention: library
 * functions return 0 or -errno and write what went wrong into a caller's
 * buffer (char *err, size_t errlen).  These are the only formatters for it.
 */
#ifndef PLUGFS_ERR_H
#define PLUGFS_ERR_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Formats the printf-style message into err, truncated to errlen - 1 bytes
 * and always NUL-terminated.  Writes nothing when err is NULL or errlen is 0,
 * so callers that do not want a message pass (NULL, 0).
 */
void plugfs_vseterr(char *err, size_t errlen, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
void plugfs_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* As plugfs_seterr, then returns rc: `return plugfs_errf(err, errlen,
 * -EINVAL, "name `%s': ...", s);`. */
int plugfs_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
