/* SPDX-License-Identifier: MIT */
/*
 * Private to the FUSE handlers of fs/: the ops table (ops.c) names the
 * handlers of ops_inode.c and ops_open.c; all three share the request
 * counting and error reply of ops_count.c.
 */
#ifndef PLUGFS_FS_OPS_INTERNAL_H
#define PLUGFS_FS_OPS_INTERNAL_H

#include "fs_internal.h"

/* ops_count.c: the filesystem of req, counting the request. */
struct plugfs_fs *fs_of_req(fuse_req_t req);
/* fuse_reply_err, counting errors (0 is a success: release, forget). */
void fs_reply_err(fuse_req_t req, int err);

/* ops_inode.c */
void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_readlink(fuse_req_t req, fuse_ino_t ino);

/* ops_open.c */
void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

#endif
