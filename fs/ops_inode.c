/* SPDX-License-Identifier: MIT */
/*
 * The FUSE handlers that answer for an inode of the view: lookup (which
 * counts the kernel's reference), forget, getattr and readlink (ops.c says
 * how every handler locks and replies).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_internal.h"
#include "fs_ops_internal.h"

static void fill_entry(struct plugfs_fs *fs, const struct fs_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = fs_ino(n);
	e->attr_timeout = fs->cache_timeout;
	e->entry_timeout = fs->cache_timeout;
	fs_node_attr(n, &e->attr);
}

void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct plugfs_fs *fs = fs_of_req(req);
	struct fuse_entry_param e;
	struct fs_node *dir, *n;
	int err = 0;

#ifdef PLUGFS_FAULTS
	/* Test-only: a lookup of this name is never answered (a handler that
	 * hangs), so that tests can hold a directory's inode lock. */
	if (fs->fault_hang_lookup && strcmp(name, fs->fault_hang_lookup) == 0)
		for (;;)
			pause();
#endif
	pthread_rwlock_rdlock(&fs->lock);
	dir = fs_view_get(&fs->view, parent);
	if (!dir) {
		err = ENOENT;
	} else if (dir->kind != FS_DIR) {
		err = ENOTDIR;
	} else if ((n = fs_view_child(&fs->view, dir, name)) != NULL) {
		fs_node_ref(n);
		fill_entry(fs, n, &e);
	} else {
		/* A negative entry the kernel may cache; an added name is
		 * invalidated (notify_inval_entry) before it is acknowledged. */
		memset(&e, 0, sizeof(e));
		e.ino = 0;
		e.entry_timeout = fs->cache_timeout;
	}
	pthread_rwlock_unlock(&fs->lock);
	if (err)
		fs_reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
}

void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct plugfs_fs *fs = fs_of_req(req);

	pthread_rwlock_wrlock(&fs->lock);
	fs_view_forget(&fs->view, ino, nlookup);
	pthread_rwlock_unlock(&fs->lock);
	fuse_reply_none(req);
}

void fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct plugfs_fs *fs = fs_of_req(req);

	pthread_rwlock_wrlock(&fs->lock);
	for (size_t i = 0; i < count; i++)
		fs_view_forget(&fs->view, forgets[i].ino, forgets[i].nlookup);
	pthread_rwlock_unlock(&fs->lock);
	fuse_reply_none(req);
}

void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of_req(req);
	struct fs_node *n;
	struct stat st;
	double timeout = 0;

	pthread_rwlock_rdlock(&fs->lock);
	n = fs_view_get(&fs->view, ino);
	if (n) {
		fs_node_attr(n, &st);
		timeout = fs->cache_timeout;
	}
	pthread_rwlock_unlock(&fs->lock);
	if (n)
		fuse_reply_attr(req, &st, timeout);
	else
		fs_reply_err(req, ENOENT);
}

void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct plugfs_fs *fs = fs_of_req(req);
	char target[PATH_MAX + 1];
	struct fs_node *n;
	int err = 0;

	pthread_rwlock_rdlock(&fs->lock);
	n = fs_view_get(&fs->view, ino);
	if (!n) {
		err = ENOENT;
	} else if (n->kind != FS_LINK) {
		err = EINVAL;
	} else {
		/* Targets are validated to at most PATH_MAX; never copy more than
		 * the buffer holds. */
		size_t len = n->size < PATH_MAX ? n->size : PATH_MAX;

		if (len)
			memcpy(target, n->data, len);
		target[len] = '\0';
	}
	pthread_rwlock_unlock(&fs->lock);
	if (err)
		fs_reply_err(req, err);
	else
		fuse_reply_readlink(req, target);
}
