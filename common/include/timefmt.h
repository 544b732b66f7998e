/* SPDX-License-Identifier: MIT */
/* RFC 3339 UTC timestamps, the one format plugfs shows times in. */
#ifndef PLUGFS_TIMEFMT_H
#define PLUGFS_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes that always suffice, NUL included: "2026-11-30T09:19:05.123Z". */
#define PLUGFS_TIME_LEN 25

/*
 * Writes t (seconds since the epoch) as RFC 3339 UTC into buf:
 * "2026-11-30T09:19:05Z", or with ms in 0..999 "2026-11-30T09:19:05.123Z"
 * (pass ms = -1 for no fraction).  21 bytes hold the form without a
 * fraction; a shorter buf gets a truncated, NUL-terminated prefix and
 * nothing is written when len is 0.
 *
 * Policy for times RFC 3339 cannot express (a year before 0000 or after
 * 9999, or t out of time_t's range): buf gets the word "invalid", never a
 * wrong date or a bare number.  Returns 0, or -ERANGE in that case.
 */
int plugfs_format_time(int64_t t, int ms, char *buf, size_t len);

#endif
