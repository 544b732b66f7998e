/* SPDX-License-Identifier: MIT */
/*
 * Mounting and the life cycle: load the view and subscribe (atomically,
 * load.c), prepare the mountpoint (mountpoint.c) or resume a handed-over connection
 * (resume.c), mount, serve (the signals that stop it: signal.c), unmount.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_internal.h"
#include "err.h"
#include "fsutil.h"
#include "log.h"
#include "registry.h"

/* Fails every outstanding request of our connection (fusectl). */
static void abort_conn(void *arg)
{
	struct plugfs_fs *fs = arg;

	if (fs->conn_minor == 0)
		return;
	if (!fs_abort_conn_minor(fs->conn_minor))
		log_warn("fs: cannot abort FUSE connection %u (/sys/fs/fuse/connections): %s",
			 fs->conn_minor, strerror(errno));
}

/* ---- life cycle --------------------------------------------------------- */

int fs_mount(struct registry *reg, const struct fs_options *opts, struct plugfs_fs **out, char *err,
	     size_t errlen)
{
	struct plugfs_fs *fs = NULL;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char canon[PATH_MAX];
	char mopts[256];
	struct stat st;
	char fstype[256];
	dev_t dev;
	const struct fs_handover *resume = opts->resume;
	int rc;

	*out = NULL;
	if (!opts->mountpoint || !opts->mountpoint[0] || !opts->socket_name ||
	    !opts->socket_name[0]) {
		plugfs_seterr(err, errlen, "mountpoint and socket_name are required");
		return -EINVAL;
	}
	if (stat("/dev/fuse", &st) != 0 || !S_ISCHR(st.st_mode)) {
		plugfs_seterr(err, errlen, "/dev/fuse is missing (load the fuse kernel module)");
		return -ENODEV;
	}
	if (fs_signal_owner()) {
		plugfs_seterr(err, errlen, "this process already serves a plugfs mount");
		return -EBUSY;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		plugfs_seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fs->guard.wfd = -1;
	fs->init_fd = -1;
	pthread_rwlock_init(&fs->lock, NULL);
	sem_init(&fs->stop_sem, 0, 0);
	pthread_mutex_init(&fs->open_mu, NULL);
	fs->open_list.next = fs->open_list.prev = &fs->open_list;
	/* Handle ids never match those of the process before a handover. */
	if (getrandom(&fs->open_id_base, sizeof(fs->open_id_base), 0) !=
	    (ssize_t)sizeof(fs->open_id_base))
		fs->open_id_base = ((uint64_t)getpid() << 40) ^ (uint64_t)time(NULL) << 8;
	fs->open_id_base &= ~(uint64_t)0xffffffff; /* room for the count */
	fs_notifier_init(&fs->notifier);
	fs->reg = reg;
	fs->cache_timeout = opts->cache_timeout;
	fs->debug = opts->debug;
	fs->on_ready = opts->on_ready;
	fs->on_ready_arg = opts->on_ready_arg;
#ifdef PLUGFS_FAULTS
	fs->fault_hang_lookup = getenv("PLUGFS_FAULT_HANG_LOOKUP");
	if (fs->fault_hang_lookup)
		log_warn("fs: test fault: lookups of `%s' are never answered",
			 fs->fault_hang_lookup);
	if (getenv("PLUGFS_FAULT_SLOW_READDIR_MS")) {
		fs->fault_slow_readdir_ms = (unsigned)atoi(getenv("PLUGFS_FAULT_SLOW_READDIR_MS"));
		log_warn("fs: test fault: a readdir's reply waits %u ms after it is made",
			 fs->fault_slow_readdir_ms);
	}
#endif
	if ((rc = fs_view_init(&fs->view, opts->socket_name)) != 0) {
		plugfs_seterr(err, errlen, "out of memory");
		goto fail;
	}

	/* A resumed mount is ours and waits for us: no probe, no stat. */
	if (resume) {
		rc = fs_canonical(opts->mountpoint, canon, sizeof(canon), err, errlen);
		if (rc != 0)
			goto fail;
		if (fs_mount_at(canon, fstype, sizeof(fstype), NULL) != 1 ||
		    strcmp(fstype, "fuse.plugfs") != 0) {
			log_warn("fs: no plugfs mount left at %s to resume (it was detached); "
				 "mounting afresh",
				 canon);
			close(resume->fuse_fd);
			close(resume->init_fd);
			resume = NULL;
		}
	}
	if (!resume)
		rc = fs_prepare_mountpoint(opts->mountpoint, canon, sizeof(canon), err, errlen);
	if (rc != 0)
		goto fail;
	if (!(fs->mountpoint = strdup(canon))) {
		rc = -ENOMEM;
		plugfs_seterr(err, errlen, "out of memory");
		goto fail;
	}

	/* default_permissions: the kernel checks the mode bits itself, from
	 * the attributes it caches, instead of asking the daemon (access,
	 * every open): a read-only tree whose modes never change needs no
	 * more, and it costs nothing measurable (plugfs-bench prints it). */
	snprintf(mopts, sizeof(mopts), "ro,nosuid,nodev,noexec%s,fsname=plugfs,subtype=plugfs%s",
		 opts->no_default_permissions ? "" : ",default_permissions",
		 opts->allow_other ? ",allow_other" : "");
	fs->no_cache_symlinks = opts->no_cache_symlinks;
	fs->no_dir_cache = opts->no_dir_cache;
	if (fuse_opt_add_arg(&args, "plugfs") != 0 || fuse_opt_add_arg(&args, "-o") != 0 ||
	    fuse_opt_add_arg(&args, mopts) != 0 ||
	    (opts->debug && fuse_opt_add_arg(&args, "-d") != 0)) {
		rc = -ENOMEM;
		plugfs_seterr(err, errlen, "out of memory");
		goto fail;
	}
	fs->se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), fs);
	if (!fs->se) {
		rc = -EINVAL;
		plugfs_seterr(err, errlen, "cannot create the FUSE session (options %s)", mopts);
		goto fail;
	}

	/* The view and the subscription, atomically; then the notifier, so
	 * events from here on reach the kernel. */
	if ((rc = fs_load_and_subscribe(fs, reg, err, errlen)) != 0)
		goto fail;
	if ((rc = fs_notifier_start(&fs->notifier, fs->se)) != 0) {
		plugfs_seterr(err, errlen, "cannot start the notifier thread: %s", strerror(-rc));
		goto fail;
	}

	/* Before the mount, so the guard never holds /dev/fuse. */
	if ((rc = fs_guard_start(&fs->guard)) != 0) {
		plugfs_seterr(err, errlen, "cannot start the guard process: %s", strerror(-rc));
		goto fail;
	}
	if (resume) {
		char dev_fd[32];

		/* libfuse takes /dev/fd/N as an open connection: no mount. */
		snprintf(dev_fd, sizeof(dev_fd), "/dev/fd/%d", resume->fuse_fd);
		fcntl(resume->fuse_fd, F_SETFD, FD_CLOEXEC);
		fcntl(resume->init_fd, F_SETFD, FD_CLOEXEC);
		fs->init_fd = resume->init_fd;
		if (fuse_session_mount(fs->se, dev_fd) != 0) {
			rc = -EBADF;
			plugfs_seterr(err, errlen,
				      "cannot resume the FUSE connection (fd %d) of `%s'",
				      resume->fuse_fd, fs->mountpoint);
			goto fail;
		}
		fs->resumed = true;
	} else if (fuse_session_mount(fs->se, fs->mountpoint) != 0) {
		rc = -EIO;
		plugfs_seterr(err, errlen,
			      "cannot mount plugfs at `%s' (see the FUSE message above)",
			      fs->mountpoint);
		goto fail;
	}
	fs->mounted = true;
	if (fs_mount_at(fs->mountpoint, fstype, sizeof(fstype), &dev) == 1)
		fs->conn_minor = (unsigned)((major(dev) << 20) | minor(dev));
	fs_guard_set_conn(&fs->guard, fs->conn_minor);
	fs_install_signals(fs);
	log_info("fs: %s plugfs at %s (allow_other=%s, cache_timeout=%gs)",
		 fs->resumed ? "resuming" : "mounted", fs->mountpoint,
		 opts->allow_other ? "true" : "false", opts->cache_timeout);
	fuse_opt_free_args(&args);
	*out = fs;
	return 0;
fail:
	fuse_opt_free_args(&args);
	fs_destroy(fs);
	return rc;
}

/*
 * The first request of a new connection, the kernel's FUSE_INIT: received
 * here rather than by the loop so that its bytes are kept for a handover,
 * then handled.  0, or -errno when the connection failed (a stop signal
 * meanwhile is a 0: the loop then returns at once).
 */
static int first_request(struct plugfs_fs *fs)
{
	struct fuse_buf buf = {0};
	int rc;

	do {
		rc = fuse_session_receive_buf(fs->se, &buf);
	} while (rc == -EINTR && !fuse_session_exited(fs->se));
	if (rc <= 0) {
		free(buf.mem);
		return rc == -EINTR || rc == 0 ? 0 : rc;
	}
	rc = fs_save_init(fs, &buf);
	if (rc != 0)
		log_warn("fs: cannot keep the FUSE_INIT request (%s): the mount cannot be "
			 "handed over",
			 strerror(-rc));
	fuse_session_process_buf(fs->se, &buf);
	free(buf.mem);
	return 0;
}

int fs_run(struct plugfs_fs *fs)
{
	struct fuse_loop_config *cfg = NULL;
	int rc;

	fs->loop_thread = pthread_self();
	__atomic_store_n(&fs->loop_running, true, __ATOMIC_SEQ_CST);
	if ((rc = fs_stopper_start(fs)) != 0)
		log_warn("fs: cannot start the stopper thread (%s): a stop signal may have to be "
			 "sent twice",
			 strerror(-rc));
	/* Both set can_handover before the init callback runs. */
	rc = fs->resumed ? fs_resume_session(fs) : first_request(fs);
	if (rc != 0)
		goto out;
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		rc = -ENOMEM;
		goto out;
	}
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_idle_threads(cfg, 10);
	rc = fuse_session_loop_mt(fs->se, cfg);
	/* A positive value is the signal that stopped the loop: a clean stop. */
	if (rc > 0)
		rc = 0;
	if (rc == 0 && __atomic_load_n(&fs->handover_asked, __ATOMIC_SEQ_CST))
		rc = FS_RUN_HANDOVER;
out:
	fs_stopper_stop(fs);
	__atomic_store_n(&fs->loop_running, false, __ATOMIC_SEQ_CST);
	/* Nobody answers requests any more: a registry event waiting for its
	 * invalidations (the notifier may block on an outstanding lookup) must
	 * not hold up the control server's shutdown.  Stop the notifier now. */
	fs_notifier_stop(&fs->notifier, abort_conn, fs);
	fuse_loop_cfg_destroy(cfg);
	return rc;
}

/*
 * libfuse does not unmount a connection it adopted from /dev/fd/N: do what
 * fuse_session_unmount does.  The fd is closed first (a synchronous unmount
 * would otherwise wait on ourselves), unless the connection is already gone
 * (POLLERR: unmounted or aborted), then the mount is detached.
 */
static void unmount_resumed(struct plugfs_fs *fs)
{
	struct pollfd pfd = {.fd = fuse_session_fd(fs->se), .events = 0};
	bool gone = poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLERR);
	int fd = fuse_session_fd(fs->se), nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

	/* Released now; fuse_session_destroy then closes /dev/null in its place. */
	if (nul < 0 || dup3(nul, fd, O_CLOEXEC) < 0)
		close(fd);
	if (nul >= 0)
		close(nul);
	if (gone)
		return;
	if (umount2(fs->mountpoint, MNT_DETACH) != 0)
		log_warn("fs: cannot unmount %s: %s", fs->mountpoint, strerror(errno));
}

/* Whether the topmost mount at the mountpoint is still this connection's. */
static bool still_mounted(struct plugfs_fs *fs)
{
	char fstype[256];
	dev_t dev;

	return fs->conn_minor != 0 &&
	       fs_mount_at(fs->mountpoint, fstype, sizeof(fstype), &dev) == 1 &&
	       (unsigned)((major(dev) << 20) | minor(dev)) == fs->conn_minor;
}

/*
 * An aborted connection (the notifier's abort, or an admin's) reads as gone
 * (POLLERR) to fuse_session_unmount and to unmount_resumed, which then leave
 * the mount in place: a dead mount answering ENOTCONN to every consumer.
 * Detach it when the topmost mount at the mountpoint is still this
 * connection's; another mount placed there since is left alone.
 */
static void unmount_left(struct plugfs_fs *fs)
{
	if (still_mounted(fs) && umount2(fs->mountpoint, MNT_DETACH) != 0)
		log_warn("fs: cannot unmount %s: %s", fs->mountpoint, strerror(errno));
	else if (!still_mounted(fs))
		log_info("fs: unmounted %s", fs->mountpoint);
}

void fs_destroy(struct plugfs_fs *fs)
{
	if (!fs)
		return;
	/* Release a mutation waiting on the kernel (load.c's on_event_wait),
	 * stop the notifier, then unsubscribe (it waits until no thread is in
	 * on_event_wait, which returns once the notifier stopped). */
	fs_notifier_stop(&fs->notifier, abort_conn, fs);
	if (fs->sub_id > 0)
		registry_unsubscribe(fs->reg, fs->sub_id);
	if (fs_signal_owner() == fs)
		fs_restore_signals();
	if (fs->se) {
		if (fs->mounted) {
			if (fs->resumed)
				unmount_resumed(fs);
			else
				fuse_session_unmount(fs->se);
			unmount_left(fs);
		}
		fuse_session_destroy(fs->se);
	}
	if (fs->init_fd >= 0)
		close(fs->init_fd);
	/* Unmounted and closed: nothing left for the guard to free. */
	fs_guard_stop(&fs->guard);
	fs_free_open_handles(fs);
	pthread_mutex_destroy(&fs->open_mu);
	fs_view_free(&fs->view);
	fs_notifier_destroy(&fs->notifier);
	pthread_rwlock_destroy(&fs->lock);
	sem_destroy(&fs->stop_sem);
	free(fs->mountpoint);
	free(fs);
}

void fs_set_cache_timeout(struct plugfs_fs *fs, double seconds)
{
	pthread_rwlock_wrlock(&fs->lock);
	fs->cache_timeout = seconds;
	pthread_rwlock_unlock(&fs->lock);
}

bool fs_resumed(const struct plugfs_fs *fs)
{
	return fs->resumed;
}

bool fs_loop_progress(struct plugfs_fs *fs)
{
	unsigned long long served = fs_requests_served(fs);
	char path[80], buf[32];
	ssize_t n;
	int fd;

	if (served != fs->progress_served) {
		fs->progress_served = served;
		return true;
	}
	if (!__atomic_load_n(&fs->loop_running, __ATOMIC_SEQ_CST) || fs->conn_minor == 0)
		return true; /* nothing to judge by */
	/* fusectl's count of requests the kernel holds for us: read from
	 * /sys, never through the mount. */
	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/waiting", fs->conn_minor);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	return strtoul(buf, NULL, 10) == 0;
}

unsigned long long fs_requests_served(struct plugfs_fs *fs)
{
	return __atomic_load_n(&fs->requests, __ATOMIC_RELAXED);
}
