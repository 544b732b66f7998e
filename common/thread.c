/* SPDX-License-Identifier: MIT */
#include "thread.h"

#include <signal.h>

int plugfs_thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
	sigset_t block, old;
	int rc;

	sigfillset(&block);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&block, faults[i]);
	pthread_sigmask(SIG_SETMASK, &block, &old);
	rc = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -rc;
}
