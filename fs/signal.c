/* SPDX-License-Identifier: MIT */
/*
 * The signals of a mount: SIGTERM and SIGINT stop its loop (fs_exit), a
 * handover request stops it for the next program, FS_WAKE_SIGNAL wakes the
 * loop's wait (the stopper thread sends it until the loop is out), SIGPIPE
 * is ignored.  One mount per process takes them.
 */
#include <errno.h>
#include <time.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "fs_internal.h"
#include "thread.h"

/* The mount the signal handlers stop; one per process. */
static struct plugfs_fs *volatile signal_fs;
static struct sigaction old_term, old_int, old_pipe, old_wake;

/* Interrupts the loop's wait; fs_exit has already asked it to stop. */
#define FS_WAKE_SIGNAL SIGUSR1
static void on_wake_signal(int sig)
{
	(void)sig;
}

static void on_stop_signal(int sig)
{
	struct plugfs_fs *fs = signal_fs;

	if (fs)
		fs_exit(fs);
}

int fs_request_handover(struct plugfs_fs *fs)
{
	/* Without the saved FUSE_INIT the next process cannot resume. */
	if (!__atomic_load_n(&fs->can_handover, __ATOMIC_SEQ_CST))
		return -EAGAIN;
	__atomic_store_n(&fs->handover_asked, true, __ATOMIC_SEQ_CST);
	fs_exit(fs);
	return 0;
}

void fs_exit(struct plugfs_fs *fs)
{
	int saved = errno;

	fuse_session_exit(fs->se);
	/* The stopper wakes the loop until it is out (fs_stopper_start says
	 * why once is not enough); sem_post is async-signal-safe. */
	if (__atomic_load_n(&fs->stopper_started, __ATOMIC_SEQ_CST))
		sem_post(&fs->stop_sem);
	/* The loop waits in sem_wait in its own thread: a signal wakes it
	 * (FS_WAKE_SIGNAL, whose handler does nothing, so it works while the
	 * caller keeps SIGTERM blocked in that thread).  fs_run stores
	 * loop_thread before it sets loop_running: an atomic read of the flag
	 * makes the thread id visible here (fs_exit may run in another
	 * thread, or in a signal handler). */
	if (__atomic_load_n(&fs->loop_running, __ATOMIC_SEQ_CST) &&
	    !pthread_equal(pthread_self(), fs->loop_thread))
		pthread_kill(fs->loop_thread, FS_WAKE_SIGNAL);
	errno = saved;
}

void fs_install_signals(struct plugfs_fs *fs)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: a blocked wait returns EINTR */
	sa.sa_handler = on_stop_signal;
	signal_fs = fs;
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGINT, &sa, &old_int);
	sa.sa_handler = on_wake_signal;
	sigaction(FS_WAKE_SIGNAL, &sa, &old_wake);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old_pipe);
}

void fs_restore_signals(void)
{
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(FS_WAKE_SIGNAL, &old_wake, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	signal_fs = NULL;
}
struct plugfs_fs *fs_signal_owner(void)
{
	return signal_fs;
}

/*
 * libfuse's loop thread looks at the session's exit flag, then waits
 * (sem_wait) for its workers: a signal that sets the flag between the look
 * and the wait interrupts nothing, and the loop would wait until the next
 * worker ends, which may be never, while the daemon keeps serving (a stop
 * lost).  So once fs_exit ran, this thread sends FS_WAKE_SIGNAL to the loop
 * thread every 20 ms until the loop returned: one of them finds it in its
 * wait, which then returns, and the loop sees the flag.
 */
static void *stopper_main(void *arg)
{
	struct plugfs_fs *fs = arg;
	const struct timespec tick = {.tv_sec = 0, .tv_nsec = 20 * 1000 * 1000};

	while (sem_wait(&fs->stop_sem) != 0 && errno == EINTR)
		;
	while (!__atomic_load_n(&fs->stopper_quit, __ATOMIC_SEQ_CST)) {
		pthread_kill(fs->loop_thread, FS_WAKE_SIGNAL);
		nanosleep(&tick, NULL);
	}
	return NULL;
}

int fs_stopper_start(struct plugfs_fs *fs)
{
	int e;

	__atomic_store_n(&fs->stopper_quit, false, __ATOMIC_SEQ_CST);
	e = plugfs_thread_start(&fs->stopper, NULL, stopper_main, fs);
	if (e != 0)
		return e;
	__atomic_store_n(&fs->stopper_started, true, __ATOMIC_SEQ_CST);
	/* A stop asked before the thread ran: it has nothing to wait for. */
	if (fuse_session_exited(fs->se))
		sem_post(&fs->stop_sem);
	return 0;
}

void fs_stopper_stop(struct plugfs_fs *fs)
{
	if (!__atomic_load_n(&fs->stopper_started, __ATOMIC_SEQ_CST))
		return;
	__atomic_store_n(&fs->stopper_quit, true, __ATOMIC_SEQ_CST);
	__atomic_store_n(&fs->stopper_started, false, __ATOMIC_SEQ_CST);
	sem_post(&fs->stop_sem); /* a stopper that still waits */
	/* Joined before the loop thread goes on: no wake-up lands later. */
	pthread_join(fs->stopper, NULL);
}
