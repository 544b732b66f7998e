/* SPDX-License-Identifier: MIT */
/* sd_notify(3) and sd_listen_fds(3) without libsystemd: the datagram
 * protocol of $NOTIFY_SOCKET and the $LISTEN_FDS convention, a few dozen
 * lines that spare the daemon a library dependency. */
#ifndef PLUGFS_SDNOTIFY_H
#define PLUGFS_SDNOTIFY_H

/*
 * Sends state (e.g. "READY=1\nSTATUS=serving") to $NOTIFY_SOCKET: a path, or
 * an abstract socket when it starts with '@'.  0 when sent, 0 when
 * NOTIFY_SOCKET is unset (nothing to do), -errno on failure.
 */
int sd_notify_send(const char *state);

#include <stddef.h>

#define SD_NOTIFY_FDS_MAX 8
#define SD_LISTEN_FDS_START 3

/*
 * sd_notify_send with n_fds (at most SD_NOTIFY_FDS_MAX) file descriptors
 * attached (SCM_RIGHTS), as sd_pid_notify_with_fds(0, 0, ...): e.g.
 * "FDSTORE=1\nFDNAME=fuse" hands them to the service's file descriptor
 * store.  The caller keeps its fds.  0 when sent or NOTIFY_SOCKET is unset,
 * -errno.
 */
int sd_notify_send_fds(const char *state, const int *fds, size_t n_fds);

/*
 * The fds systemd passed to this process ($LISTEN_PID is ours): fds
 * SD_LISTEN_FDS_START.. (made close-on-exec), their count returned and their
 * names ($LISTEN_FDNAMES, "unknown" when unnamed) in *names, a
 * NULL-terminated array the caller frees with free() (NULL when none).
 * Removes the three variables from the environment.  0 when none, -errno.
 */
int sd_listen_fds_with_names(char ***names);

#endif
