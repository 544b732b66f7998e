/* SPDX-License-Identifier: MIT */
/*
 * plugfs mount's handover of its mount to the next program: a re-exec on
 * SIGUSR2 ($PLUGFS_RESUME_FDS) or systemd's file descriptor store
 * ($LISTEN_FDS).
 */
#ifndef PLUGFS_HANDOVER_H
#define PLUGFS_HANDOVER_H

#include <stdbool.h>

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
/* Executes the binary on disk with this process's arguments and h in
 * $PLUGFS_RESUME_FDS.  Returns only on failure, having closed h's fds and
 * detached the mount at mountpoint. */
void handover_reexec(const char *mountpoint, const struct fs_handover *h);

#endif
