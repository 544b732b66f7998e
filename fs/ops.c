/* SPDX-License-Identifier: MIT */
/*
 * The FUSE low-level handlers.  Each answers from the in-memory view under
 * the read lock (the write lock for forget), copies what it needs, unlocks,
 * then replies exactly once.  They never touch the registry or SQLite and
 * never call fuse_lowlevel_notify_*.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fs_internal.h"

static struct plugfs_fs *fs_of(fuse_req_t req)
{
	struct plugfs_fs *fs = fuse_req_userdata(req);

	__atomic_fetch_add(&fs->requests, 1, __ATOMIC_RELAXED);
	return fs;
}

static const int fs_counted_errnos[FS_N_COUNTED_ERRNOS] = {ENOENT, EROFS, ENODATA, ENOMEM};
static const char *const counted_names[FS_N_COUNTED_ERRNOS + 1] = {"ENOENT", "EROFS", "ENODATA",
								   "ENOMEM", "other"};

/* fuse_reply_err, counting errors (0 is a success: release, forget). */
static void reply_err(fuse_req_t req, int err)
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

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct plugfs_fs *fs = userdata;

	/* The kernel keeps symlink targets in its page cache; a change
	 * invalidates them (notify_inval_inode). */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* Lookups in one directory need not wait for each other. */
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
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

static void fill_entry(struct plugfs_fs *fs, const struct fs_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = n->ino;
	e->attr_timeout = fs->cache_timeout;
	e->entry_timeout = fs->cache_timeout;
	fs_node_attr(n, &e->attr);
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct plugfs_fs *fs = fs_of(req);
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
	} else if ((n = fs_view_child(dir, name)) != NULL) {
		__atomic_fetch_add(&n->nlookup, 1, __ATOMIC_RELAXED);
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
		reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
}

static void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct plugfs_fs *fs = fs_of(req);

	pthread_rwlock_wrlock(&fs->lock);
	fs_view_forget(&fs->view, ino, nlookup);
	pthread_rwlock_unlock(&fs->lock);
	fuse_reply_none(req);
}

static void fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct plugfs_fs *fs = fs_of(req);

	pthread_rwlock_wrlock(&fs->lock);
	for (size_t i = 0; i < count; i++)
		fs_view_forget(&fs->view, forgets[i].ino, forgets[i].nlookup);
	pthread_rwlock_unlock(&fs->lock);
	fuse_reply_none(req);
}

static void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of(req);
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
		reply_err(req, ENOENT);
}

static void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct plugfs_fs *fs = fs_of(req);
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

		memcpy(target, n->data, len);
		target[len] = '\0';
	}
	pthread_rwlock_unlock(&fs->lock);
	if (err)
		reply_err(req, err);
	else
		fuse_reply_readlink(req, target);
}

/* An open file or directory: a copy taken at open, so reads see one state. */
struct fs_handle {
	struct fs_open o;
	size_t len;
	char data[];
};

struct fs_dirent {
	char *name;
	uint64_t ino;
	mode_t mode;
};
struct fs_dirhandle {
	struct fs_open o;
	size_t n;
	struct fs_dirent ents[];
};

static void open_track(struct plugfs_fs *fs, struct fs_open *o, bool is_dir)
{
	o->is_dir = is_dir;
	pthread_mutex_lock(&fs->open_mu);
	o->id = fs->open_id_base + ++fs->open_count;
	o->next = fs->open_list.next;
	o->prev = &fs->open_list;
	o->next->prev = o;
	fs->open_list.next = o;
	pthread_mutex_unlock(&fs->open_mu);
}

static void open_untrack(struct plugfs_fs *fs, struct fs_open *o)
{
	pthread_mutex_lock(&fs->open_mu);
	o->prev->next = o->next;
	o->next->prev = o->prev;
	pthread_mutex_unlock(&fs->open_mu);
}

/* Tracks o (fi->fh becomes its id) and replies to the open; false, with o
 * untracked again, when the reply failed: the caller then frees its handle
 * (no release will come for it). */
static bool reply_open(fuse_req_t req, struct plugfs_fs *fs, struct fuse_file_info *fi,
		       struct fs_open *o, bool is_dir)
{
	open_track(fs, o, is_dir);
	fi->fh = o->id;
	if (fuse_reply_open(req, fi) == 0)
		return true;
	open_untrack(fs, o);
	return false;
}

/*
 * The handle of ours that fh names, or NULL.  After a handover the kernel
 * still holds the handles of the previous process: fh is an id (a random
 * per-process base plus a count, never a pointer), so those are never
 * mistaken for one of ours.  The kernel sends no release while a read on the
 * same file is in flight, so the handle stays valid for the request.
 */
static struct fs_open *open_find(struct plugfs_fs *fs, uint64_t fh, bool is_dir)
{
	struct fs_open *found = NULL;

	pthread_mutex_lock(&fs->open_mu);
	for (struct fs_open *o = fs->open_list.next; o != &fs->open_list; o = o->next)
		if (o->id == fh) {
			found = o->is_dir == is_dir ? o : NULL;
			break;
		}
	pthread_mutex_unlock(&fs->open_mu);
	return found;
}

static void dirhandle_free(struct fs_dirhandle *d);

/* A file handle with a copy of ino's contents; NULL with *err set. */
static struct fs_handle *handle_new(struct plugfs_fs *fs, fuse_ino_t ino, int flags, int *err)
{
	struct fs_handle *h = NULL;
	struct fs_node *n;

	*err = 0;
	pthread_rwlock_rdlock(&fs->lock);
	n = fs_view_get(&fs->view, ino);
	if (!n)
		*err = ENOENT;
	else if (n->kind == FS_DIR)
		*err = EISDIR;
	else if (n->kind != FS_FILE)
		*err = ELOOP;
	else if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_APPEND)))
		*err = EROFS;
	else if (!(h = malloc(sizeof(*h) + n->size + 1)))
		*err = ENOMEM;
	else {
		h->len = n->size;
		memcpy(h->data, n->data, n->size + 1);
	}
	pthread_rwlock_unlock(&fs->lock);
	return h;
}

static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of(req);
	int err;
	struct fs_handle *h = handle_new(fs, ino, fi->flags, &err);

	if (!h) {
		reply_err(req, err);
		return;
	}
	/* Small and changing: no page cache, reads come here. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (!reply_open(req, fs, fi, &h->o, false))
		free(h);
}

static void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of(req);
	const struct fs_handle *h = (const struct fs_handle *)open_find(fs, fi->fh, false);
	struct fs_handle *tmp = NULL;
	char *buf = NULL;
	int err;

	/* A handle of the previous process: read the node as it is now. */
	if (!h) {
		if (!(tmp = handle_new(fs, ino, O_RDONLY, &err))) {
			reply_err(req, err);
			return;
		}
		h = tmp;
	}
	if (off < 0 || (size_t)off >= h->len) {
		fuse_reply_buf(req, NULL, 0);
		free(tmp);
		return;
	}
	if (size > h->len - (size_t)off)
		size = h->len - (size_t)off;
	/* Reply from a copy of our own: once the reply is written the reader
	 * may close the file, and release frees h in another thread. */
	buf = malloc(size);
	if (!buf) {
		reply_err(req, ENOMEM);
		free(tmp);
		return;
	}
	memcpy(buf, h->data + off, size);
	free(tmp);
	fuse_reply_buf(req, buf, size);
	free(buf);
}

static void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of(req);
	struct fs_handle *h = (struct fs_handle *)open_find(fs, fi->fh, false);

	/* One of the previous process's is nothing of ours to free. */
	if (h) {
		open_untrack(fs, &h->o);
		free(h);
	}
	reply_err(req, 0);
}

static void dirhandle_free(struct fs_dirhandle *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->ents[i].name);
	free(d);
}

static int dirhandle_add(struct fs_dirhandle *d, const char *name, uint64_t ino, mode_t mode)
{
	struct fs_dirent *e = &d->ents[d->n];

	if (!(e->name = strdup(name)))
		return ENOMEM;
	e->ino = ino;
	e->mode = mode;
	d->n++;
	return 0;
}

/* A listing of directory ino; NULL with *err set. */
static struct fs_dirhandle *dirhandle_new(struct plugfs_fs *fs, fuse_ino_t ino, int *err)
{
	struct fs_dirhandle *d = NULL;
	struct fs_node *n;

	*err = 0;
	pthread_rwlock_rdlock(&fs->lock);
	n = fs_view_get(&fs->view, ino);
	if (!n) {
		*err = ENOENT;
		goto unlock;
	}
	if (n->kind != FS_DIR) {
		*err = ENOTDIR;
		goto unlock;
	}
	d = calloc(1, sizeof(*d) + (n->n_children + 2) * sizeof(d->ents[0]));
	if (!d) {
		*err = ENOMEM;
		goto unlock;
	}
	*err = dirhandle_add(d, ".", n->ino, S_IFDIR);
	if (!*err)
		*err = dirhandle_add(d, "..", n->parent, S_IFDIR);
	for (size_t i = 0; !*err && i < n->n_children; i++) {
		const struct fs_node *c = n->children[i];

		*err = dirhandle_add(d, c->name, c->ino,
				     c->kind == FS_DIR	  ? S_IFDIR
				     : c->kind == FS_LINK ? S_IFLNK
							  : S_IFREG);
	}
unlock:
	pthread_rwlock_unlock(&fs->lock);
	if (*err) {
		dirhandle_free(d);
		d = NULL;
	}
	return d;
}

static void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of(req);
	int err;
	struct fs_dirhandle *d = dirhandle_new(fs, ino, &err);

	if (!d) {
		reply_err(req, err);
		return;
	}
	/* No kernel readdir cache (cache_readdir): a READDIR answered just
	 * before a change can land in that cache after the change's
	 * invalidation, and a listing after the acknowledgement would miss it.
	 * Measured: it would save 2 of the 4 requests of a listing. */
	if (!reply_open(req, fs, fi, &d->o, true))
		dirhandle_free(d);
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of(req);
	const struct fs_dirhandle *d = (const struct fs_dirhandle *)open_find(fs, fi->fh, true);
	struct fs_dirhandle *tmp = NULL;
	char *buf = NULL;
	size_t pos = 0;
	int err;

	/* A handle of the previous process: list the directory as it is now
	 * (offsets are positions in the listing). */
	if (!d) {
		if (!(tmp = dirhandle_new(fs, ino, &err))) {
			reply_err(req, err);
			return;
		}
		d = tmp;
	}
	buf = malloc(size);
	if (!buf) {
		reply_err(req, ENOMEM);
		dirhandle_free(tmp);
		return;
	}
	for (size_t i = off < 0 ? 0 : (size_t)off; i < d->n; i++) {
		struct stat st = {.st_ino = d->ents[i].ino, .st_mode = d->ents[i].mode};
		size_t need = fuse_add_direntry(req, buf + pos, size - pos, d->ents[i].name, &st,
						(off_t)(i + 1));

		if (need > size - pos)
			break;
		pos += need;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
	dirhandle_free(tmp);
}

static void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of(req);
	struct fs_dirhandle *d = (struct fs_dirhandle *)open_find(fs, fi->fh, true);

	if (d) {
		open_untrack(fs, &d->o);
		dirhandle_free(d);
	}
	reply_err(req, 0);
}

void fs_free_open_handles(struct plugfs_fs *fs)
{
	struct fs_open *o, *next;

	pthread_mutex_lock(&fs->open_mu);
	for (o = fs->open_list.next; o != &fs->open_list; o = next) {
		next = o->next;
		if (o->is_dir)
			dirhandle_free((struct fs_dirhandle *)o);
		else
			free(o);
	}
	fs->open_list.next = fs->open_list.prev = &fs->open_list;
	pthread_mutex_unlock(&fs->open_mu);
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct plugfs_fs *fs = fs_of(req);
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	pthread_rwlock_rdlock(&fs->lock);
	sv.f_files = fs->view.nodes.n;
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
	reply_err(req, node_exists(fs_of(req), ino) ? ENODATA : ENOENT);
}

static void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (!node_exists(fs_of(req), ino))
		reply_err(req, ENOENT);
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
	fs_of(req);
	reply_err(req, EROFS);
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
