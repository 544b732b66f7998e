/* SPDX-License-Identifier: MIT */
/* Starting the program's helper threads. */
#ifndef PLUGFS_THREAD_H
#define PLUGFS_THREAD_H

#include <pthread.h>

/*
 * pthread_create(t, attr, fn, arg) (attr NULL for the defaults) with every
 * signal blocked in the new thread but those a fault raises in the thread
 * itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS: blocked, the
 * kernel would kill the process past their handlers, a sanitizer's
 * report included).  A signal sent to the process is then taken by the
 * thread that waits for it (the FUSE loop, a sigtimedwait), never by a
 * helper thread.  The caller's own mask is as it was when this returns.
 *
 * 0, or -errno (pthread_create's error: -EAGAIN, ...).  Any thread.
 */
int plugfs_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif
