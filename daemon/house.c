/* SPDX-License-Identifier: MIT */
/*
 * plugfs mount's housekeeping thread: takes SIGHUP (reload), SIGUSR2
 * (re-exec) and, with --keep-mount, SIGTERM and SIGINT with sigtimedwait,
 * pings systemd's watchdog while the FUSE loop keeps up, and expires
 * tombstones hourly.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "daemon_internal.h"
#include "clock.h"
#include "log.h"
#include "sdnotify.h"
#include "thread.h"

#define EXPIRY_INTERVAL_S 3600

static void expire_tombstones(struct daemon *d)
{
	char err[REG_ERR_MAX];
	int n = registry_expire_tombstones(d->reg, err, sizeof(err));

	if (n < 0)
		log_error("tombstone expiry failed: %s", err);
	else if (n > 0)
		log_info("expired %d tombstone(s)", n);
}

/* systemd's watchdog interval for this process ($WATCHDOG_USEC, when
 * $WATCHDOG_PID is unset or ours), in ms; 0 when there is none. */
static long long watchdog_ms(void)
{
	const char *us = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	long long v;

	if (!us || (pid && strtol(pid, NULL, 10) != (long)getpid()))
		return 0;
	v = strtoll(us, NULL, 10) / 1000;
	return v > 0 ? v : 0;
}

/*
 * WATCHDOG=1 only while the FUSE loop keeps up (fs_loop_progress): a loop
 * that leaves requests waiting and serves none is hung, and systemd's
 * watchdog then stops the daemon (WatchdogSec=); plugfs stop-post and the
 * next start take it from there.
 */
static void watchdog_ping(struct daemon *d)
{
	if (!__atomic_load_n(&d->ready, __ATOMIC_SEQ_CST) || !d->fs)
		return;
	if (fs_loop_progress(d->fs))
		sd_notify_send("WATCHDOG=1");
	else
		log_warn("watchdog: FUSE requests wait and none was served; not pinging systemd");
}

/* SIGHUP, SIGUSR2, systemd's watchdog and the hourly tombstone expiry,
 * until d->stopping. */
static void *house_main(void *arg)
{
	struct daemon *d = arg;
	long long wd_ms = watchdog_ms();
	int64_t expire_at, ping_at;
	sigset_t hup;
	int sig;

	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	sigaddset(&hup, SIGUSR2);
	if (d->keep_mount) {
		/* Blocked in every thread: taken here, not by the loop. */
		sigaddset(&hup, SIGTERM);
		sigaddset(&hup, SIGINT);
	}
	expire_at = ping_at = plugfs_mono_ms();
	while (!__atomic_load_n(&d->stopping, __ATOMIC_SEQ_CST)) {
		int64_t now = plugfs_mono_ms(), wake;
		struct timespec wait;

		if (now >= expire_at) {
			expire_tombstones(d);
			expire_at = now + EXPIRY_INTERVAL_S * 1000;
		}
		wake = expire_at;
		if (wd_ms > 0) {
			if (now >= ping_at) {
				watchdog_ping(d);
				ping_at = now + wd_ms / 3;
			}
			if (ping_at < wake)
				wake = ping_at;
		}
		wait = plugfs_timespec_ms(wake - now);
		sig = sigtimedwait(&hup, NULL, &wait);
		if (__atomic_load_n(&d->stopping, __ATOMIC_SEQ_CST))
			break;
		if (sig == SIGHUP)
			daemon_reload_by_signal(d);
		else if (sig == SIGUSR2)
			daemon_request_handover(d);
		else if (sig == SIGTERM || sig == SIGINT)
			daemon_request_stop(d, sig);
	}
	return NULL;
}

int daemon_house_start(struct daemon *d)
{
	/* SIGTERM and SIGINT go to the FUSE loop (the main thread); the
	 * thread takes its own with sigtimedwait. */
	int rc = plugfs_thread_start(&d->house, NULL, house_main, d);

	if (rc == 0)
		d->house_started = true;
	return rc;
}

void daemon_house_stop(struct daemon *d)
{
	if (!d->house_started)
		return;
	__atomic_store_n(&d->stopping, true, __ATOMIC_SEQ_CST);
	pthread_kill(d->house, SIGHUP);
	pthread_join(d->house, NULL);
	d->house_started = false;
}
