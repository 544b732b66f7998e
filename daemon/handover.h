/* SPDX-License-Identifier: MIT */
/*
 * plugfs mount's handover of its mount to the next program: a re-exec on
 * SIGUSR2 ($PLUGFS_RESUME_FDS) or systemd's file descriptor store
 * ($LISTEN_FDS).
 */
#ifndef PLUGFS_HANDOVER_H
#define PLUGFS_HANDOVER_H

#include <stdbool.h>
#include <stddef.h>

#include "control.h"
#include "fs.h"

/* Under systemd ($NOTIFY_SOCKET), hands copies of the connection, its
 * FUSE_INIT and ctl's listening socket to the file descriptor store,
 * replacing what a previous mount left there.  Never blocks (it runs in the
 * FUSE init callback).  true when the connection and its FUSE_INIT were
 * handed over (systemd keeps them only with FileDescriptorStoreMax= set). */
bool handover_store(struct plugfs_fs *fs, struct control_server *ctl);
/* Takes them out of the store again (a clean stop). */
void handover_unstore(void);
/* What systemd passed from the store into h (the caller owns the fds).  1
 * when there is a connection to resume, 0 when not, -errno. */
int handover_from_systemd(struct fs_handover *h);
/*
 * Before a re-exec (SIGUSR2, while the daemon still serves): what to
 * execute.  The binary on disk (after an upgrade replaced it,
 * /proc/self/exe names the old, deleted file) when `<it> version' answers
 * "plugfs ..." within 2 s: 1 with its path in path.  Else "/proc/self/exe"
 * (the running program) with a warning naming why: 0.
 */
int handover_pick_binary(char *path, size_t pathlen);
/*
 * Executes path with this process's arguments and h in $PLUGFS_RESUME_FDS
 * (and the running program's fd in $PLUGFS_RESUME_FALLBACK); when that
 * fails, the running program.  Returns only when both failed: -errno, h's
 * descriptors still open and named in $PLUGFS_RESUME_FDS, so that
 * daemon_start resumes the mount in this process.  Warns at each step.
 */
int handover_reexec(const char *path, const struct fs_handover *h);
/* The fd of $PLUGFS_RESUME_FALLBACK (the program that handed the mount
 * over; close-on-exec from here on), or -1; the variable is unset. */
int handover_take_fallback(void);
/* A start that resumed h and failed: executes exe_fd (handover_take_fallback)
 * with this process's arguments and h in $PLUGFS_RESUME_FDS.  Returns only
 * when that failed (logged). */
void handover_fall_back(int exe_fd, const struct fs_handover *h);

#endif
