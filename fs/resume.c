/* SPDX-License-Identifier: MIT */
/*
 * The FUSE connection outlives the process: what one daemon hands to the
 * next (a re-exec on SIGUSR2, or systemd's file descriptor store) and how the
 * next one resumes serving the same connection instead of mounting.
 *
 * Handed over: the /dev/fuse fd of the mount and a memfd holding the raw
 * FUSE_INIT request of the first start (libfuse has to see an INIT before it
 * serves anything else, and the kernel sends only one per connection).
 *
 * Resuming: fuse_session_mount(se, "/dev/fd/N") adopts the fd without
 * mounting; the saved INIT goes through fuse_session_process_buf (its reply
 * names a request the kernel answered long ago: the write fails with ENOENT,
 * which libfuse ignores); FUSE_NOTIFY_RESEND puts back every request the old
 * process had read and not answered, so they are answered, not failed; then
 * FUSE_NOTIFY_INC_EPOCH makes the kernel look up again every name it cached
 * (the registry may have changed while no daemon ran), or, on a kernel that
 * lacks it, the notifier invalidates every name we know; either way the
 * notifier invalidates every inode we know, in the tree or kept out of it
 * (listings, symlink targets and contents the kernel cached under the
 * previous process).  Nothing touches
 * the mountpoint before the request loop runs: it would wait on itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_internal.h"
#include "array.h"
#include "log.h"

/* Kernel protocol 7.40 and 7.44; Debian 12's <linux/fuse.h> lacks both. */
#define PLUGFS_NOTIFY_RESEND 7
#define PLUGFS_NOTIFY_INC_EPOCH 8

/* The largest FUSE_INIT request we keep (the kernel's is about 100 bytes). */
#define INIT_MAX 4096

/* Mirrors struct fuse_out_header of <linux/fuse.h>. */
struct notify_hdr {
	uint32_t len;
	int32_t error; /* the notify code when unique is 0 */
	uint64_t unique;
};

int fs_handover_from_env(struct fs_handover *h)
{
	const char *env = getenv(FS_RESUME_ENV);
	char *copy, *tok, *save = NULL;
	int rc = 0;

	h->fuse_fd = h->init_fd = h->control_fd = -1;
	if (!env || !env[0])
		return 0;
	if (!(copy = strdup(env)))
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		long v;

		if (!eq)
			goto bad;
		*eq = '\0';
		errno = 0;
		v = strtol(eq + 1, &end, 10);
		if (errno || *end || end == eq + 1 || v < 0 || v > 65535 ||
		    fcntl((int)v, F_GETFD) < 0)
			goto bad;
		if (strcmp(tok, "fuse") == 0)
			h->fuse_fd = (int)v;
		else if (strcmp(tok, "init") == 0)
			h->init_fd = (int)v;
		else if (strcmp(tok, "control") == 0)
			h->control_fd = (int)v;
		else
			goto bad;
	}
	if (h->fuse_fd < 0 || h->init_fd < 0)
		goto bad;
	rc = 1;
	goto out;
bad:
	h->fuse_fd = h->init_fd = h->control_fd = -1;
	rc = -EINVAL;
out:
	free(copy);
	/* Not passed on to anything this process starts. */
	unsetenv(FS_RESUME_ENV);
	return rc;
}

int fs_handover_to_env(const struct fs_handover *h)
{
	char buf[96];
	int fds[] = {h->fuse_fd, h->init_fd, h->control_fd};

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0 && fcntl(fds[i], F_SETFD, 0) != 0)
			return -errno;
	if (h->control_fd >= 0)
		snprintf(buf, sizeof(buf), "fuse=%d,init=%d,control=%d", h->fuse_fd, h->init_fd,
			 h->control_fd);
	else
		snprintf(buf, sizeof(buf), "fuse=%d,init=%d", h->fuse_fd, h->init_fd);
	return setenv(FS_RESUME_ENV, buf, 1) == 0 ? 0 : -errno;
}

int fs_save_init(struct plugfs_fs *fs, const struct fuse_buf *buf)
{
	int fd;

	if (buf->size > INIT_MAX || (buf->flags & FUSE_BUF_IS_FD))
		return -EINVAL;
	fd = memfd_create("plugfs-init", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, buf->mem, buf->size) != (ssize_t)buf->size) {
		int e = errno ? errno : EIO;

		close(fd);
		return -e;
	}
	fs->init_fd = fd;
	__atomic_store_n(&fs->can_handover, true, __ATOMIC_SEQ_CST);
	return 0;
}

/* Every node we know to the notifier (an inode invalidation each: the
 * attributes, symlink targets, contents and listings the kernel cached),
 * and with entries every name in every directory too. */
static void collect(struct fs_view *v, struct fs_node *n, struct fs_inval_batch *b, bool entries,
		    int depth)
{
	struct fs_node *c;
	size_t need = b->n + 1 + fs_dir_count(n);

	if (depth > 8)
		return;
	if (PLUGFS_RESERVE(b->items, b->cap, need, 16) != 0) {
		b->oom = true;
		return;
	}
	b->items[b->n++] = (struct fs_inval){.kind = FS_INVAL_INODE, .ino = fs_ino(n)};
	for (size_t i = 0; (c = fs_dir_next(n, &i, NULL));) {
		char *name;

		if (!entries) {
			/* A directory is counted when collect reaches it. */
			if (c->kind != FS_DIR)
				b->items[b->n++] =
				    (struct fs_inval){.kind = FS_INVAL_INODE, .ino = fs_ino(c)};
			continue;
		}
		if (!(name = strdup(c->name))) {
			b->oom = true;
			continue;
		}
		b->items[b->n++] =
		    (struct fs_inval){.kind = FS_INVAL_ENTRY, .ino = fs_ino(n), .name = name};
	}
	for (size_t i = 0; (c = fs_dir_next(n, &i, NULL));)
		if (c->kind == FS_DIR)
			collect(v, c, b, entries, depth + 1);
}

/* The nodes out of the tree (a plugin directory whose list is empty, kept
 * for a kernel that holds it: a bind mount's root), which collect does not
 * reach: an inode invalidation each. */
static void collect_kept(struct fs_view *v, struct fs_inval_batch *b)
{
	const struct htab_node *e = NULL;
	size_t pos = 0;

	while ((e = htab_next(&v->nodes, &pos, e)) != NULL) {
		const struct fs_node *n = htab_entry(e, struct fs_node, hnode);

		if (!n->in_tree)
			fs_inval_push(b, FS_INVAL_INODE, fs_ino(n), NULL);
	}
}

static int notify(int fd, int code)
{
	struct notify_hdr h = {.len = sizeof(h), .error = code, .unique = 0};

	if (write(fd, &h, sizeof(h)) == (ssize_t)sizeof(h))
		return 0;
	return -errno;
}

int fs_resume_session(struct plugfs_fs *fs)
{
	struct fuse_buf buf = {0};
	char init[INIT_MAX];
	int fd = fuse_session_fd(fs->se), rc;
	ssize_t n;

	n = pread(fs->init_fd, init, sizeof(init), 0);
	if (n <= 0) {
		rc = n < 0 ? -errno : -EINVAL;
		log_error("fs: cannot read the saved FUSE_INIT: %s", strerror(-rc));
		return rc;
	}
	buf.mem = init;
	buf.size = (size_t)n;
	__atomic_store_n(&fs->can_handover, true, __ATOMIC_SEQ_CST);
	/* Its reply goes to a request the kernel no longer has. */
	fuse_session_process_buf(fs->se, &buf);
	if (fuse_session_exited(fs->se)) {
		log_error("fs: libfuse refused the saved FUSE_INIT");
		return -EPROTO;
	}
	rc = notify(fd, PLUGFS_NOTIFY_RESEND);
	if (rc != 0)
		log_warn("fs: the kernel cannot resend the requests the previous process had read "
			 "(FUSE_NOTIFY_RESEND, Linux 6.9): %s; they may fail",
			 strerror(-rc));
	rc = notify(fd, PLUGFS_NOTIFY_INC_EPOCH);
	if (rc != 0)
		log_info("fs: no FUSE_NOTIFY_INC_EPOCH (%s); invalidating every name instead",
			 strerror(-rc));
	{
		struct fs_inval_batch b = {0};
		struct fs_node *root;

		/* The epoch makes the kernel look names up again, not drop what
		 * it cached of an inode it holds: a listing, a symlink target
		 * or contents the previous process let it cache, which may
		 * differ from this view (a commit whose invalidations it did
		 * not deliver, a liveness it did not share).  So every inode
		 * too, and every name where there is no epoch. */
		pthread_rwlock_rdlock(&fs->lock);
		if ((root = fs_view_get(&fs->view, FS_INO_ROOT)) != NULL)
			collect(&fs->view, root, &b, rc != 0, 0);
		collect_kept(&fs->view, &b);
		pthread_rwlock_unlock(&fs->lock);
		/* The notifier sends them once the loop answers what they wait on. */
		fs_notifier_post(&fs->notifier, &b);
		fs_inval_batch_free(&b);
	}
	log_info("fs: resumed the FUSE connection of %s (fd %d)", fs->mountpoint, fd);
	return 0;
}

int fs_handover(struct plugfs_fs *fs, struct fs_handover *h)
{
	h->fuse_fd = h->init_fd = -1;
	if (!fs->mounted || fs->init_fd < 0)
		return -ENOTCONN;
	/* A copy of the session's fd: fs_destroy closes the session's own and,
	 * with mounted cleared, does not unmount. */
	h->fuse_fd = fcntl(fuse_session_fd(fs->se), F_DUPFD_CLOEXEC, 3);
	if (h->fuse_fd < 0)
		return -errno;
	h->init_fd = fs->init_fd;
	fs->init_fd = -1;
	fs->mounted = false;
	return 0;
}

void fs_connection_fds(struct plugfs_fs *fs, int *fuse_fd, int *init_fd)
{
	*fuse_fd = fs->mounted ? fuse_session_fd(fs->se) : -1;
	*init_fd = fs->init_fd;
}
