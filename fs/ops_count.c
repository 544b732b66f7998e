/* SPDX-License-Identifier: MIT */
/*
 * The request and error counts of the FUSE handlers (fs_of_req,
 * fs_reply_err) and what the metrics read of them (fs_error_counts): below
 * every handler file (ops.c, ops_inode.c, ops_open.c), calling none.
 */
#include <errno.h>

#include "fs_internal.h"
#include "fs_ops_internal.h"

/* Every handler starts here: it counts the request. */
struct plugfs_fs *fs_of_req(fuse_req_t req)
{
	struct plugfs_fs *fs = fuse_req_userdata(req);

	__atomic_fetch_add(&fs->requests, 1, __ATOMIC_RELAXED);
	return fs;
}

static const int fs_counted_errnos[FS_N_COUNTED_ERRNOS] = {ENOENT, EROFS, ENODATA, ENOMEM};
static const char *const counted_names[FS_N_COUNTED_ERRNOS + 1] = {"ENOENT", "EROFS", "ENODATA",
								   "ENOMEM", "other"};

/* fuse_reply_err, counting errors (0 is a success: release, forget). */
void fs_reply_err(fuse_req_t req, int err)
{
	struct plugfs_fs *fs = fuse_req_userdata(req);
	size_t i = 0;

	if (err != 0) {
		while (i < FS_N_COUNTED_ERRNOS && fs_counted_errnos[i] != err)
			i++;
		__atomic_fetch_add(&fs->errors[i], 1, __ATOMIC_RELAXED);
	}
	fuse_reply_err(req, err);
}

size_t fs_error_counts(struct plugfs_fs *fs, const char **names, unsigned long long *counts,
		       size_t max)
{
	for (size_t i = 0; i <= FS_N_COUNTED_ERRNOS && i < max; i++) {
		names[i] = counted_names[i];
		counts[i] = __atomic_load_n(&fs->errors[i], __ATOMIC_RELAXED);
	}
	return FS_N_COUNTED_ERRNOS + 1;
}
