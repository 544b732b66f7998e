/* SPDX-License-Identifier: MIT */
/*
 * The FUSE low-level handlers.  Each answers from the in-memory view under
 * the read lock (the write lock for forget), copies what it needs, unlocks,
 * then replies exactly once.  They never touch the registry or SQLite and
 * never call fuse_lowlevel_notify_*.
 *
 * Here: the ops table, init (what is negotiated with the kernel), statfs,
 * extended attributes and the refused changes (EROFS).  The handlers that
 * answer for an inode (lookup, forget, getattr, readlink) are in
 * ops_inode.c; open files and directories (open, read, opendir, readdir and
 * their releases) in ops_open.c; both, and this file, count requests and
 * errors with ops_count.c, below them all.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "fs_internal.h"
#include "fs_ops_internal.h"

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct plugfs_fs *fs = userdata;

	/* The kernel keeps symlink targets in its page cache; a change
	 * invalidates them (notify_inval_inode). */
	if ((conn->capable & FUSE_CAP_CACHE_SYMLINKS) && !fs->no_cache_symlinks)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	else
		conn->want &= ~(unsigned)FUSE_CAP_CACHE_SYMLINKS;
	/* Lookups in one directory need not wait for each other. */
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* Directory listings cached by the kernel, so that a warm listing
	 * costs no request.  Every change to a listing is acknowledged only
	 * once the kernel took its invalidations, in this order: the names
	 * in that directory, then the directory's inode (its attributes and
	 * cached listing go).  What keeps a READDIR made before the change,
	 * whose reply is still on its way, from filling the cache after the
	 * inode's invalidation is the first: the kernel takes the directory's
	 * lock to invalidate a name in it, and a listing holds that lock while
	 * it fills the cache (test_fs_dircache checks that the invalidation
	 * waits; on a kernel that did not, the cache would have to go).  The
	 * mtime is a guard for later listings only: with auto_inval_data the
	 * kernel compares a directory's mtime with the one its listing was
	 * cached under before it lists from the start, and every change moves
	 * the mtime forward (sync.c, touch); but an empty cache is stamped
	 * with the mtime of the listing that starts it, so the mtime alone
	 * would not stop that late reply.  With no_opendir (an ENOSYS to the
	 * first opendir) the kernel sends no opendir or releasedir at all and
	 * caches every directory (ops_open.c). */
	if ((conn->capable & FUSE_CAP_AUTO_INVAL_DATA) && !fs->no_dir_cache) {
		conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
		fs->dir_cache = true;
		fs->dir_no_open = (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0;
	}
	/* No locks, no writes, no mmap'ed writes to negotiate. */
	conn->want &=
	    ~(unsigned)(FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
	conn->time_gran = 1;
	/* Readiness: the kernel has our INIT reply as soon as this returns,
	 * and requests are served from then on.  Signalled from here, never
	 * by a thread of ours touching the mount: a thread waiting on its own
	 * mount makes the process unkillable. */
	if (fs->on_ready)
		fs->on_ready(fs->on_ready_arg);
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct plugfs_fs *fs = fs_of_req(req);
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	pthread_rwlock_rdlock(&fs->lock);
	sv.f_files = fs->view.n_nodes;
	pthread_rwlock_unlock(&fs->lock);
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC;
	fuse_reply_statfs(req, &sv);
}

/* Extended attributes: none exist; reading one answers ENODATA. */
static int node_exists(struct plugfs_fs *fs, fuse_ino_t ino)
{
	bool found;

	pthread_rwlock_rdlock(&fs->lock);
	found = fs_view_get(&fs->view, ino) != NULL;
	pthread_rwlock_unlock(&fs->lock);
	return found;
}

static void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	fs_reply_err(req, node_exists(fs_of_req(req), ino) ? ENODATA : ENOENT);
}

static void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (!node_exists(fs_of_req(req), ino))
		fs_reply_err(req, ENOENT);
	else if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

/*
 * Everything that would change the tree: read-only.  On the `ro' mount the
 * VFS refuses these before asking us, but root can `mount -o remount,rw' it
 * (FUSE does that in the kernel); then they arrive here (test_fs_tree checks
 * both).  write, fallocate and copy_file_range need a handle open for
 * writing, which fs_open and create never give: they have no handler.
 */
static void erofs(fuse_req_t req)
{
	fs_of_req(req);
	fs_reply_err(req, EROFS);
}

static void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	erofs(req);
}

static void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	erofs(req);
}

static void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	erofs(req);
}

static void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	erofs(req);
}

static void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	erofs(req);
}

static void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	erofs(req);
}

static void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	erofs(req);
}

static void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	erofs(req);
}

static void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	erofs(req);
}

static void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	erofs(req);
}

static void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	erofs(req);
}

const struct fuse_lowlevel_ops fs_ops = {
    .init = fs_init,
    .lookup = fs_lookup,
    .forget = fs_forget,
    .forget_multi = fs_forget_multi,
    .getattr = fs_getattr,
    .setattr = fs_setattr,
    .readlink = fs_readlink,
    .mknod = fs_mknod,
    .mkdir = fs_mkdir,
    .unlink = fs_unlink,
    .rmdir = fs_rmdir,
    .symlink = fs_symlink,
    .rename = fs_rename,
    .link = fs_link,
    .open = fs_open,
    .read = fs_read,
    .release = fs_release,
    .opendir = fs_opendir,
    .readdir = fs_readdir,
    .releasedir = fs_releasedir,
    .statfs = fs_statfs,
    .setxattr = fs_setxattr,
    .getxattr = fs_getxattr,
    .listxattr = fs_listxattr,
    .removexattr = fs_removexattr,
    .create = fs_create,
};
