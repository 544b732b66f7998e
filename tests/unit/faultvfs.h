/* SPDX-License-Identifier: MIT */
/*
 * faultvfs: a test-only SQLite VFS that wraps the default one and fails the
 * Nth I/O call, the way SQLite's own I/O error tests do (test_vfs.c,
 * "ioerr" in its tcl suite).  Registered as the default VFS, so every
 * connection the registry opens (sqlite3_open_v2 with a NULL VFS) goes
 * through it.
 *
 * Counted calls: xRead, xWrite, xSync, xTruncate and xFileSize of every
 * file (state file, -wal, -journal, backup).  Armed with faultvfs_arm(n,
 * ...), the nth counted call from then on fails with the chosen code
 * instead of reaching the disk; with persist, every later call fails too
 * (a disk that stays full or broken), else only that one (a transient
 * error).  faultvfs_disarm stops failing.  Not thread-safe: for tests that
 * drive the registry from one thread.
 */
#ifndef PLUGFS_TEST_FAULTVFS_H
#define PLUGFS_TEST_FAULTVFS_H

#include <stdbool.h>

/* Registers the shim as the default VFS (once; later calls do nothing). */
void faultvfs_install(void);
/* Fails the nth counted call from now (n >= 1) with rc (SQLITE_IOERR or
 * SQLITE_FULL; the shim picks the extended code of the call for IOERR),
 * and every later one when persist. */
void faultvfs_arm(int n, int rc, bool persist);
/* Stops failing and counting; returns the calls counted since the arm. */
int faultvfs_disarm(void);
/* Whether a call failed since the last arm. */
bool faultvfs_fired(void);

#endif
