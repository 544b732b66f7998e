/* SPDX-License-Identifier: MIT */
/* sd_notify(3) without libsystemd: the datagram protocol of $NOTIFY_SOCKET. */
#ifndef PLUGFS_SDNOTIFY_H
#define PLUGFS_SDNOTIFY_H

/*
 * Sends state (e.g. "READY=1\nSTATUS=serving") to $NOTIFY_SOCKET: a path, or
 * an abstract socket when it starts with '@'.  0 when sent, 0 when
 * NOTIFY_SOCKET is unset (nothing to do), -errno on failure.
 */
int sd_notify_send(const char *state);

#endif
