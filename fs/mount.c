/* SPDX-License-Identifier: MIT */
/*
 * Mounting and the life cycle: load the view and subscribe (atomically),
 * prepare the mountpoint (create it, detach a stale mount, refuse a live
 * one), mount, serve, unmount.
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
#include "log.h"
#include "registry.h"

#define STALE_DETACH_MAX 8
/* How long a mount at the mountpoint may take to answer statfs. */
#define MOUNT_PROBE_MS 2000

/* The mount the signal handlers stop; one per process. */
static struct plugfs_fs *volatile signal_fs;
static struct sigaction old_term, old_int, old_pipe;

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- registry events ---------------------------------------------------- */

static void on_event(const struct reg_event *ev, void *arg)
{
	struct plugfs_fs *fs = arg;
	struct fs_inval_batch batch = {0};
	struct timespec now;
	int rc;

	clock_gettime(CLOCK_REALTIME, &now);
	pthread_rwlock_wrlock(&fs->lock);
	rc = fs_view_sync_plugin(&fs->view, ev->plugin_type, ev->plugin_name, ev->plugin_id,
				 ev->plugin, &now, &batch);
	pthread_rwlock_unlock(&fs->lock);
	if (rc != 0)
		log_error("fs: cannot update %s/%s in the tree: %s", ev->plugin_type,
			  ev->plugin_name, strerror(-rc));
	/* Outside the view lock: wait until the kernel dropped what it cached. */
	fs_notifier_deliver(&fs->notifier, &batch);
	fs_inval_batch_free(&batch);
}

struct load_ctx {
	struct plugfs_fs *fs;
	int rc;
	char *err;
	size_t errlen;
};

/* With the registry mutex held: no event is missed or seen twice. */
static void load_locked(struct registry *r, void *arg)
{
	struct load_ctx *c = arg;
	struct plugfs_fs *fs = c->fs;
	struct reg_snapshot snap = {0};
	const char *const *names = NULL;
	const int64_t *ids = NULL;
	struct timespec now;
	size_t n_types;
	int rc;

	clock_gettime(CLOCK_REALTIME, &now);
	rc = registry_snapshot(r, NULL, &snap);
	if (rc != 0) {
		seterr(c->err, c->errlen, "cannot read the registry: %s", strerror(-rc));
		goto out;
	}
	n_types = registry_types(r, &names, &ids);
	for (size_t i = 0; i < n_types && rc == 0; i++)
		rc = fs_view_add_type(&fs->view, ids[i], names[i], &now);
	for (size_t i = 0; i < snap.n_plugins && rc == 0; i++) {
		const struct reg_plugin *p = &snap.plugins[i];

		rc = fs_view_sync_plugin(&fs->view, p->type, p->name, p->id, p, &now, NULL);
	}
	if (rc != 0) {
		seterr(c->err, c->errlen, "cannot build the tree: %s", strerror(-rc));
		goto out;
	}
	rc = registry_subscribe(r, on_event, fs);
	if (rc < 0) {
		seterr(c->err, c->errlen, "cannot subscribe to registry events: %s", strerror(-rc));
		goto out;
	}
	fs->sub_id = rc;
	rc = 0;
out:
	reg_snapshot_free(&snap);
	c->rc = rc;
}

/* ---- the mountpoint ----------------------------------------------------- */

/* Undoes the octal escapes (\040 ...) of /proc/self/mountinfo. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/*
 * The topmost mount at path in /proc/self/mountinfo: its filesystem type
 * (e.g. "fuse.plugfs") into fstype and its device into *dev.  1 when found,
 * 0 when path is no mount point, -errno.
 */
static int mount_at(const char *path, char *fstype, size_t fslen, dev_t *dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int found = 0;

	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned maj, min;
		char mp[PATH_MAX + 1], type[256];
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*u %*u %u:%u %*s %4096s", &maj, &min, mp) != 3 ||
		    sscanf(sep + 3, "%255s", type) != 1)
			continue;
		unescape(mp);
		if (strcmp(mp, path) != 0)
			continue;
		found = 1;
		snprintf(fstype, fslen, "%s", type);
		if (dev)
			*dev = makedev(maj, min);
	}
	free(line);
	fclose(f);
	return found;
}

static int mkdir_p(const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf)) {
		seterr(err, errlen, "mountpoint `%s': not a usable path", path);
		return -EINVAL;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;

			*p = '\0';
			if (mkdir(buf, 0755) == 0) {
				/* 0755 whatever the umask. */
				if (chmod(buf, 0755) != 0)
					log_warn("fs: chmod 0755 %s: %s", buf, strerror(errno));
			} else if (errno != EEXIST) {
				int e = errno;

				seterr(err, errlen, "cannot create mountpoint `%s': %s: %s", path,
				       buf, strerror(e));
				return -e;
			}
			*p = c;
			if (c == '\0')
				break;
		}
	}
	return 0;
}

/* An absolute, canonical spelling of path that works while path itself
 * cannot be stat'ed (a dead mount): realpath of the parent + the last name. */
static int canonical(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	char tmp[PATH_MAX], parent[PATH_MAX];
	char *slash;
	const char *base;

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp) || tmp[0] == '\0') {
		seterr(err, errlen, "mountpoint `%s': not a usable path", path);
		return -EINVAL;
	}
	while (strlen(tmp) > 1 && tmp[strlen(tmp) - 1] == '/')
		tmp[strlen(tmp) - 1] = '\0';
	slash = strrchr(tmp, '/');
	if (!slash) {
		base = tmp;
		snprintf(parent, sizeof(parent), ".");
	} else if (slash == tmp) {
		base = tmp + 1;
		snprintf(parent, sizeof(parent), "/");
	} else {
		*slash = '\0';
		base = slash + 1;
		snprintf(parent, sizeof(parent), "%s", tmp);
	}
	if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || base[0] == '\0') {
		if (!realpath(path, out)) {
			seterr(err, errlen, "mountpoint `%s': %s", path, strerror(errno));
			return -errno;
		}
		return 0;
	}
	char *rp = realpath(parent, NULL);

	if (!rp) {
		int e = errno;

		seterr(err, errlen, "mountpoint `%s': parent directory: %s", path, strerror(e));
		return -e;
	}
	if (snprintf(out, outlen, "%s/%s", strcmp(rp, "/") == 0 ? "" : rp, base) >= (int)outlen) {
		free(rp);
		seterr(err, errlen, "mountpoint `%s': path too long", path);
		return -ENAMETOOLONG;
	}
	free(rp);
	return 0;
}

/*
 * statfs(path) in a child process, bounded by timeout_ms: a mount whose
 * daemon hangs (or cannot finish dying) never answers, and a wait on it in
 * this process would be a wait this process cannot always be killed out of
 * cleanly.  0 when it answers, -ETIMEDOUT when it does not, -errno of
 * statfs otherwise.
 */
static int probe_statfs(const char *path, int timeout_ms)
{
	struct pollfd pfd;
	int status = 0, pidfd, rc;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct statfs sfs;

		_exit(statfs(path, &sfs) == 0 ? 0 : (errno & 0xff));
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd >= 0) {
		pfd.fd = pidfd;
		pfd.events = POLLIN;
		while ((rc = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		close(pidfd);
		if (rc == 0)
			kill(pid, SIGKILL); /* a FUSE wait is killable */
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		return -ETIMEDOUT;
	return WIFEXITED(status) ? -WEXITSTATUS(status) : -EIO;
}

static int prepare_mountpoint(const char *path, char *canon, size_t canonlen, char *err,
			      size_t errlen)
{
	struct stat st;
	char fstype[256];
	dev_t dev = 0;
	int found = 0, rc;

	/* Nothing here touches a FUSE mount at the mountpoint directly: a
	 * stat of a hung one would wait for good.  mountinfo first. */
	rc = canonical(path, canon, canonlen, NULL, 0);
	if (rc == -ENOENT) {
		/* The parent is missing: no mount can be there. */
		rc = mkdir_p(path, err, errlen);
		if (rc != 0)
			return rc;
		log_info("fs: created mountpoint %s", path);
	}
	rc = canonical(path, canon, canonlen, err, errlen);
	if (rc != 0)
		return rc;
	for (int i = 0; i <= STALE_DETACH_MAX; i++) {
		found = mount_at(canon, fstype, sizeof(fstype), &dev);
		if (found != 1 || strncmp(fstype, "fuse", 4) != 0)
			break;
		/* A FUSE mount whose daemon died answers ENOTCONN to statfs
		 * (stat may still be answered from the attribute cache); one
		 * whose daemon hangs does not answer at all. */
		rc = probe_statfs(canon, MOUNT_PROBE_MS);
		if (rc == 0)
			break;
		if (rc == -ETIMEDOUT) {
			unsigned minor = (unsigned)((major(dev) << 20) | minor(dev));

			if (strcmp(fstype, "fuse.plugfs") != 0) {
				seterr(err, errlen,
				       "mountpoint `%s': the %s mount there does not answer "
				       "(within %d ms); not touching another filesystem's mount",
				       canon, fstype, MOUNT_PROBE_MS);
				return -EBUSY;
			}
			log_warn("fs: the plugfs mount at %s does not answer within %d ms (its "
				 "daemon hangs); aborting its FUSE connection %u",
				 canon, MOUNT_PROBE_MS, minor);
			if (!fs_abort_conn_minor(minor)) {
				rc = -errno;
				seterr(err, errlen,
				       "the plugfs mount at `%s' hangs and its FUSE connection %u "
				       "cannot be aborted: %s",
				       canon, minor, strerror(errno));
				return rc;
			}
		} else if (rc != -ENOTCONN && rc != -ECONNABORTED) {
			seterr(err, errlen, "mountpoint `%s' (a %s mount): %s", canon, fstype,
			       strerror(-rc));
			return rc;
		}
		if (umount2(canon, MNT_DETACH) != 0) {
			rc = -errno;
			seterr(err, errlen, "cannot detach the stale %s mount at `%s': %s", fstype,
			       canon, strerror(errno));
			return rc;
		}
		log_warn("fs: detached a stale %s mount at %s (its daemon is gone)", fstype, canon);
	}
	if (found == 1 && strcmp(fstype, "fuse.plugfs") == 0) {
		seterr(
		    err, errlen,
		    "a live plugfs mount is already at `%s' (is another `plugfs mount' running?); "
		    "not stacking a second one",
		    canon);
		return -EBUSY;
	}
	if (stat(canon, &st) != 0 && errno == ENOENT) {
		rc = mkdir_p(canon, err, errlen);
		if (rc != 0)
			return rc;
		log_info("fs: created mountpoint %s", canon);
	}
	if (stat(canon, &st) != 0) {
		rc = -errno;
		seterr(err, errlen, "mountpoint `%s': %s", canon, strerror(errno));
		return rc;
	}
	if (!S_ISDIR(st.st_mode)) {
		seterr(err, errlen, "mountpoint `%s' is not a directory", canon);
		return -ENOTDIR;
	}
	return 0;
}

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

/* ---- signals ------------------------------------------------------------ */

static void on_stop_signal(int sig)
{
	struct plugfs_fs *fs = signal_fs;

	if (fs)
		fs_exit(fs);
}

int fs_request_handover(struct plugfs_fs *fs)
{
	/* Without the saved FUSE_INIT the next process cannot resume. */
	if (!__atomic_load_n(&fs->can_handover, __ATOMIC_SEQ_CST))
		return -EAGAIN;
	__atomic_store_n(&fs->handover_asked, true, __ATOMIC_SEQ_CST);
	fs_exit(fs);
	return 0;
}

void fs_exit(struct plugfs_fs *fs)
{
	int saved = errno;

	fuse_session_exit(fs->se);
	/* The loop waits in sem_wait in its own thread: a signal wakes it.
	 * fs_run stores loop_thread before it sets loop_running: an atomic
	 * read of the flag makes the thread id visible here (fs_exit may run
	 * in another thread, or in a signal handler). */
	if (__atomic_load_n(&fs->loop_running, __ATOMIC_SEQ_CST) &&
	    !pthread_equal(pthread_self(), fs->loop_thread))
		pthread_kill(fs->loop_thread, SIGTERM);
	errno = saved;
}

static void install_signals(struct plugfs_fs *fs)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: a blocked wait returns EINTR */
	sa.sa_handler = on_stop_signal;
	signal_fs = fs;
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGINT, &sa, &old_int);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old_pipe);
}

static void restore_signals(void)
{
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	signal_fs = NULL;
}

/* ---- life cycle --------------------------------------------------------- */

int fs_mount(struct registry *reg, const struct fs_options *opts, struct plugfs_fs **out, char *err,
	     size_t errlen)
{
	struct plugfs_fs *fs = NULL;
	struct load_ctx lc = {0};
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
		seterr(err, errlen, "mountpoint and socket_name are required");
		return -EINVAL;
	}
	if (stat("/dev/fuse", &st) != 0 || !S_ISCHR(st.st_mode)) {
		seterr(err, errlen, "/dev/fuse is missing (load the fuse kernel module)");
		return -ENODEV;
	}
	if (signal_fs) {
		seterr(err, errlen, "this process already serves a plugfs mount");
		return -EBUSY;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	fs->guard.wfd = -1;
	fs->init_fd = -1;
	pthread_rwlock_init(&fs->lock, NULL);
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
#endif
	if ((rc = fs_view_init(&fs->view, opts->socket_name)) != 0) {
		seterr(err, errlen, "out of memory");
		goto fail;
	}

	/* A resumed mount is ours and waits for us: no probe, no stat. */
	if (resume) {
		rc = canonical(opts->mountpoint, canon, sizeof(canon), err, errlen);
		if (rc != 0)
			goto fail;
		if (mount_at(canon, fstype, sizeof(fstype), NULL) != 1 ||
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
		rc = prepare_mountpoint(opts->mountpoint, canon, sizeof(canon), err, errlen);
	if (rc != 0)
		goto fail;
	if (!(fs->mountpoint = strdup(canon))) {
		rc = -ENOMEM;
		seterr(err, errlen, "out of memory");
		goto fail;
	}

	snprintf(mopts, sizeof(mopts),
		 "ro,nosuid,nodev,noexec,default_permissions,fsname=plugfs,subtype=plugfs%s",
		 opts->allow_other ? ",allow_other" : "");
	if (fuse_opt_add_arg(&args, "plugfs") != 0 || fuse_opt_add_arg(&args, "-o") != 0 ||
	    fuse_opt_add_arg(&args, mopts) != 0 ||
	    (opts->debug && fuse_opt_add_arg(&args, "-d") != 0)) {
		rc = -ENOMEM;
		seterr(err, errlen, "out of memory");
		goto fail;
	}
	fs->se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops), fs);
	if (!fs->se) {
		rc = -EINVAL;
		seterr(err, errlen, "cannot create the FUSE session (options %s)", mopts);
		goto fail;
	}

	/* The view and the subscription, atomically; then the notifier, so
	 * events from here on reach the kernel. */
	lc.fs = fs;
	lc.err = err;
	lc.errlen = errlen;
	registry_locked(reg, load_locked, &lc);
	if ((rc = lc.rc) != 0)
		goto fail;
	if ((rc = fs_notifier_start(&fs->notifier, fs->se)) != 0) {
		seterr(err, errlen, "cannot start the notifier thread: %s", strerror(-rc));
		goto fail;
	}

	/* Before the mount, so the guard never holds /dev/fuse. */
	if ((rc = fs_guard_start(&fs->guard)) != 0) {
		seterr(err, errlen, "cannot start the guard process: %s", strerror(-rc));
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
			seterr(err, errlen, "cannot resume the FUSE connection (fd %d) of `%s'",
			       resume->fuse_fd, fs->mountpoint);
			goto fail;
		}
		fs->resumed = true;
	} else if (fuse_session_mount(fs->se, fs->mountpoint) != 0) {
		rc = -EIO;
		seterr(err, errlen, "cannot mount plugfs at `%s' (see the FUSE message above)",
		       fs->mountpoint);
		goto fail;
	}
	fs->mounted = true;
	if (mount_at(fs->mountpoint, fstype, sizeof(fstype), &dev) == 1)
		fs->conn_minor = (unsigned)((major(dev) << 20) | minor(dev));
	fs_guard_set_conn(&fs->guard, fs->conn_minor);
	install_signals(fs);
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
	else
		log_info("fs: unmounted %s", fs->mountpoint);
}

void fs_destroy(struct plugfs_fs *fs)
{
	if (!fs)
		return;
	/* Release a registry event waiting on the kernel, stop the notifier,
	 * then unsubscribe (it takes the registry mutex such an event holds). */
	fs_notifier_stop(&fs->notifier, abort_conn, fs);
	if (fs->sub_id > 0)
		registry_unsubscribe(fs->reg, fs->sub_id);
	if (signal_fs == fs)
		restore_signals();
	if (fs->se) {
		if (fs->mounted && fs->resumed) {
			unmount_resumed(fs);
		} else if (fs->mounted) {
			fuse_session_unmount(fs->se);
			log_info("fs: unmounted %s", fs->mountpoint);
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

unsigned long long fs_requests_served(struct plugfs_fs *fs)
{
	return __atomic_load_n(&fs->requests, __ATOMIC_RELAXED);
}
