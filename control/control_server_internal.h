/* SPDX-License-Identifier: MIT */
/* Private to control/: socket file creation and peer credentials. */
#ifndef PLUGFS_CONTROL_SERVER_INTERNAL_H
#define PLUGFS_CONTROL_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "control_internal.h"

/* Looks a group name up.  -ENOENT (message names the group) when unknown. */
int ctl_resolve_group(const char *group, gid_t *gid, char *err, size_t errlen);

/*
 * Creates a listening, non-blocking socket at path: mode 0660, group gid when
 * set_group, never wider at any moment.  An existing path is replaced only
 * when it is a socket nobody answers on.  *dev_out and *ino_out identify the file
 * for ctl_unlink_if_ours.
 */
int ctl_listen(const char *path, bool set_group, gid_t gid, int *fd_out, dev_t *dev_out,
	       ino_t *ino_out, char *err, size_t errlen);
/* Removes path only if it is still the socket ctl_listen created. */
void ctl_unlink_if_ours(const char *path, dev_t dev, ino_t ino);

struct ctl_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool may_mutate; /* uid 0, or the control group among its groups */
};
/* Credentials of the peer at connect() time (SO_PEERCRED, SO_PEERGROUPS). */
int ctl_peer_creds(int fd, gid_t group, bool have_group, struct ctl_peer *peer);

#endif
