/* SPDX-License-Identifier: MIT */
/*
 * plugfs mount's handover and stop requests, from the signals the
 * housekeeping thread takes: SIGUSR2 (a re-exec keeping the mount) and, with
 * --keep-mount, SIGTERM and SIGINT (a stop leaving the mount in systemd's
 * file descriptor store).
 */
#include <stdbool.h>
#include <string.h>

#include "daemon_internal.h"
#include "handover.h"
#include "log.h"

/* Both: the control server stops, keeping its listening socket for the next
 * program, and the FUSE loop is asked to stop for the handover. */
static void handover_now(struct daemon *d)
{
	int fd;

	fd = control_server_stop_keep_listener(d->ctl);
	__atomic_store_n(&d->ctl, NULL, __ATOMIC_SEQ_CST);
	__atomic_store_n(&d->kept_listen_fd, fd, __ATOMIC_SEQ_CST);
	if (fs_request_handover(d->fs) != 0)
		log_error("the FUSE connection cannot be handed over");
}

/*
 * SIGUSR2, the first half: no registry mutation may queue kernel
 * invalidations once the FUSE loop is gone (nobody would answer what they
 * wait on), so the control server stops first, keeping its listening
 * socket, and then the loop is asked to stop for the handover.  daemon_run
 * does the rest when fs_run returns.
 */
void daemon_request_handover(struct daemon *d)
{
	if (!__atomic_load_n(&d->ready, __ATOMIC_SEQ_CST) || !d->ctl) {
		log_warn("SIGUSR2 ignored: %s", d->ctl ? "the FUSE handshake is not answered yet"
						       : "a handover is under way");
		return;
	}
	log_info("SIGUSR2: handing the mount over to a re-executed plugfs");
	/* Still serving: a binary on disk that cannot take over is found
	 * now, not once the loop has stopped. */
	handover_pick_binary(d->reexec_path, sizeof(d->reexec_path));
	handover_now(d);
}

/*
 * --keep-mount and a stop signal: under systemd with the connection in the
 * file descriptor store, the process stops as for a re-exec (requests it
 * read are answered, the rest wait in the kernel, clients in the control
 * socket's backlog) and exits, leaving the mount for the next start or for
 * `plugfs stop-post' to detach.  Otherwise a plain stop (unmount).
 */
void daemon_request_stop(struct daemon *d, int sig)
{
	if (!__atomic_load_n(&d->stored, __ATOMIC_SEQ_CST) ||
	    !__atomic_load_n(&d->ready, __ATOMIC_SEQ_CST) || !d->ctl) {
		fs_exit(d->fs);
		return;
	}
	log_info("%s: stopping; the mount stays in systemd's file descriptor store for the next "
		 "start",
		 strsignal(sig));
	__atomic_store_n(&d->stop_keeping, true, __ATOMIC_SEQ_CST);
	handover_now(d);
}
