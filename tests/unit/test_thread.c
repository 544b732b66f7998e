/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "thread.h"

/* What the new thread found: its signal mask, whether it was detached. */
struct seen {
	sigset_t mask;
	int detach;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool done;
};

static void *record(void *arg)
{
	struct seen *s = arg;
	pthread_attr_t a;

	pthread_sigmask(SIG_BLOCK, NULL, &s->mask);
	pthread_getattr_np(pthread_self(), &a);
	pthread_attr_getdetachstate(&a, &s->detach);
	pthread_attr_destroy(&a);
	pthread_mutex_lock(&s->mu);
	s->done = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void seen_init(struct seen *s)
{
	sigemptyset(&s->mask);
	s->detach = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->done = false;
}

static void seen_wait(struct seen *s)
{
	pthread_mutex_lock(&s->mu);
	while (!s->done)
		pthread_cond_wait(&s->cond, &s->mu);
	pthread_mutex_unlock(&s->mu);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
}

/* The signals the program handles or a person sends are blocked in the new
 * thread, although the caller blocks none of them. */
static void test_blocks_signals(void **state)
{
	const int sigs[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGUSR1,
			    SIGUSR2, SIGPIPE, SIGCHLD, SIGALRM, SIGRTMIN};
	struct seen s;
	sigset_t none, old;
	pthread_t t;

	(void)state;
	seen_init(&s);
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, &old);
	assert_int_equal(plugfs_thread_start(&t, NULL, record, &s), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	seen_wait(&s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		assert_true(sigismember(&s.mask, sigs[i]));
	assert_int_equal(s.detach, PTHREAD_CREATE_JOINABLE);
}

/* A fault's signal stays deliverable to its handler, also when the caller
 * blocks it. */
static void test_faults_unblocked(void **state)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
	struct seen s;
	sigset_t faults, old;
	pthread_t t;

	(void)state;
	seen_init(&s);
	sigemptyset(&faults);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&faults, sigs[i]);
	pthread_sigmask(SIG_SETMASK, &faults, &old);
	assert_int_equal(plugfs_thread_start(&t, NULL, record, &s), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	seen_wait(&s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		assert_false(sigismember(&s.mask, sigs[i]));
}

/* The caller's mask is the same after the call, to the signal. */
static void test_caller_mask_kept(void **state)
{
	struct seen s;
	sigset_t mine, after, old;
	pthread_t t;

	(void)state;
	seen_init(&s);
	sigemptyset(&mine);
	sigaddset(&mine, SIGUSR1);
	pthread_sigmask(SIG_SETMASK, &mine, &old);
	assert_int_equal(plugfs_thread_start(&t, NULL, record, &s), 0);
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	assert_int_equal(pthread_join(t, NULL), 0);
	seen_wait(&s);
	for (int sig = 1; sig < SIGRTMAX; sig++)
		assert_int_equal(sigismember(&after, sig), sig == SIGUSR1);
}

/* The attributes are pthread_create's: a detached thread is detached. */
static void test_attr(void **state)
{
	struct seen s;
	pthread_attr_t a;
	pthread_t t;

	(void)state;
	seen_init(&s);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	assert_int_equal(plugfs_thread_start(&t, &a, record, &s), 0);
	pthread_attr_destroy(&a);
	seen_wait(&s);
	assert_int_equal(s.detach, PTHREAD_CREATE_DETACHED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_blocks_signals),
	    cmocka_unit_test(test_faults_unblocked),
	    cmocka_unit_test(test_caller_mask_kept),
	    cmocka_unit_test(test_attr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
