/* SPDX-License-Identifier: MIT */
/*
 * Open files and directories: the handles (fi->fh, an id on fs->open_list,
 * never a pointer), open, read and release of an info file (a copy taken at
 * open), and opendir, readdir and releasedir (no copy: each readdir lists
 * the directory as it is then).  ops.c says how every handler locks and
 * replies.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_internal.h"
#include "fs_ops_internal.h"

/* An open file or directory: a copy taken at open, so reads see one state. */
struct fs_handle {
	struct fs_open o;
	size_t len;
	char data[];
};

/* An open directory: no copy.  Each readdir lists the directory as it is
 * then, from the offset the kernel asks for (offsets are stable, dir.c);
 * hint is the slot where the last readdir of this handle stopped. */
struct fs_dirhandle {
	struct fs_open o;
	size_t hint; /* atomic */
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
	char *text = NULL;

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
	else if (!(text = fs_node_contents(&fs->view, n)) ||
		 !(h = malloc(sizeof(*h) + strlen(text) + 1)))
		*err = ENOMEM;
	else {
		h->len = strlen(text);
		memcpy(h->data, text, h->len + 1);
	}
	pthread_rwlock_unlock(&fs->lock);
	free(text);
	return h;
}

void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of_req(req);
	int err;
	struct fs_handle *h = handle_new(fs, ino, fi->flags, &err);

	if (!h) {
		fs_reply_err(req, err);
		return;
	}
	/* Small and changing: no page cache, reads come here. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (!reply_open(req, fs, fi, &h->o, false))
		free(h);
}

void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of_req(req);
	const struct fs_handle *h = (const struct fs_handle *)open_find(fs, fi->fh, false);
	struct fs_handle *tmp = NULL;
	char *buf = NULL;
	int err;

	/* A handle of the previous process: read the node as it is now. */
	if (!h) {
		if (!(tmp = handle_new(fs, ino, O_RDONLY, &err))) {
			fs_reply_err(req, err);
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
		fs_reply_err(req, ENOMEM);
		free(tmp);
		return;
	}
	memcpy(buf, h->data + off, size);
	free(tmp);
	fuse_reply_buf(req, buf, size);
	free(buf);
}

void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of_req(req);
	struct fs_handle *h = (struct fs_handle *)open_find(fs, fi->fh, false);

	/* One of the previous process's is nothing of ours to free. */
	if (h) {
		open_untrack(fs, &h->o);
		free(h);
	}
	fs_reply_err(req, 0);
}

static void dirhandle_free(struct fs_dirhandle *d)
{
	free(d);
}

/* 0 when ino is a directory of the view, else the errno to answer. */
static int dir_check(struct plugfs_fs *fs, fuse_ino_t ino)
{
	const struct fs_node *n;
	int err = 0;

	pthread_rwlock_rdlock(&fs->lock);
	n = fs_view_get(&fs->view, ino);
	if (!n)
		err = ENOENT;
	else if (n->kind != FS_DIR)
		err = ENOTDIR;
	pthread_rwlock_unlock(&fs->lock);
	return err;
}

static mode_t dirent_mode(const struct fs_node *c)
{
	return c->kind == FS_DIR ? S_IFDIR : c->kind == FS_LINK ? S_IFLNK : S_IFREG;
}

/* Adds one entry to buf; false when it does not fit. */
static bool dirent_add(fuse_req_t req, char *buf, size_t size, size_t *pos, const char *name,
		       uint64_t ino, mode_t mode, uint64_t off)
{
	struct stat st = {.st_ino = ino, .st_mode = mode};
	size_t need = fuse_add_direntry(req, buf + *pos, size - *pos, name, &st, (off_t)off);

	if (need > size - *pos)
		return false;
	*pos += need;
	return true;
}

/* The entries of directory ino after offset off that fit in size bytes
 * into buf; *hint: where to look for off (in), where this stopped (out).
 * The byte count, or -errno. */
static ssize_t dir_list(struct plugfs_fs *fs, fuse_ino_t ino, fuse_req_t req, char *buf,
			size_t size, uint64_t off, size_t *hint)
{
	const struct fs_node *n, *c;
	size_t pos = 0, i;
	uint64_t coff;
	ssize_t rc;

	pthread_rwlock_rdlock(&fs->lock);
	n = fs_view_get(&fs->view, ino);
	if (!n || n->kind != FS_DIR) {
		rc = n ? -ENOTDIR : -ENOENT;
		goto out;
	}
	if (off < 1 && !dirent_add(req, buf, size, &pos, ".", fs_ino(n), S_IFDIR, 1))
		goto done;
	if (off < 2 && !dirent_add(req, buf, size, &pos, "..", fs_node_parent(n), S_IFDIR, 2))
		goto done;
	i = fs_dir_seek(n, off, *hint);
	for (size_t at = i; (c = fs_dir_next(n, &i, &coff)); at = i) {
		if (!dirent_add(req, buf, size, &pos, c->name, fs_ino(c), dirent_mode(c), coff)) {
			i = at;
			break;
		}
	}
	*hint = i;
done:
	rc = (ssize_t)pos;
out:
	pthread_rwlock_unlock(&fs->lock);
	return rc;
}

void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of_req(req);
	int err = dir_check(fs, ino);
	struct fs_dirhandle *d = NULL;

	/* ENOSYS: the kernel sends no opendir or releasedir from now on (this
	 * open succeeds) and caches every listing, revalidated by the mtime
	 * (fs_init says why that is safe); readdir lists without a handle. */
	if (!err && fs->dir_no_open)
		err = ENOSYS;
	if (!err && !(d = calloc(1, sizeof(*d))))
		err = ENOMEM;
	if (err) {
		fs_reply_err(req, err);
		return;
	}
	/* Without no_opendir support: cached listings, with this round trip. */
	fi->cache_readdir = fs->dir_cache;
	fi->keep_cache = fs->dir_cache;
	if (!reply_open(req, fs, fi, &d->o, true))
		dirhandle_free(d);
}

void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of_req(req);
	struct fs_dirhandle *d = (struct fs_dirhandle *)open_find(fs, fi->fh, true);
	size_t hint = d ? __atomic_load_n(&d->hint, __ATOMIC_RELAXED) : 0;
	char *buf = malloc(size);
	ssize_t n;

	/* A handle of the previous process lists the same way: offsets are
	 * the directory's, not the handle's. */
	if (!buf) {
		fs_reply_err(req, ENOMEM);
		return;
	}
	n = dir_list(fs, ino, req, buf, size, off < 0 ? 0 : (uint64_t)off, &hint);
	if (d)
		__atomic_store_n(&d->hint, hint, __ATOMIC_RELAXED);
#ifdef PLUGFS_FAULTS
	/* Test-only: the reply, made, waits, so that a change and its
	 * invalidation can come between the two (test_fs_dircache). */
	if (fs->fault_slow_readdir_ms)
		usleep(fs->fault_slow_readdir_ms * 1000u);
#endif
	if (n < 0)
		fs_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct plugfs_fs *fs = fs_of_req(req);
	struct fs_dirhandle *d = (struct fs_dirhandle *)open_find(fs, fi->fh, true);

	if (d) {
		open_untrack(fs, &d->o);
		dirhandle_free(d);
	}
	fs_reply_err(req, 0);
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
