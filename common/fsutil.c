/* SPDX-License-Identifier: MIT */
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "err.h"
#include "log.h"
#include "pathtrust.h"
#include "thread.h"

int plugfs_mkdir_p(const char *path, mode_t mode, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return plugfs_errf(err, errlen, -EINVAL, "`%s': not a usable path", path);
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) == 0) {
			if (chmod(buf, mode) != 0)
				log_warn("chmod %04o %s: %s", (unsigned)mode, buf, strerror(errno));
		} else if (errno != EEXIST) {
			int e = errno;

			return plugfs_errf(err, errlen, -e, "%s: %s", buf, strerror(e));
		}
		*p = c;
		if (c == '\0')
			break;
	}
	return 0;
}

const char *plugfs_mode_noun(mode_t mode)
{
	return S_ISDIR(mode)	? "a directory"
	       : S_ISFIFO(mode) ? "a FIFO"
	       : S_ISSOCK(mode) ? "a socket"
	       : S_ISLNK(mode)	? "a symlink"
				: "a device";
}

int plugfs_prepare_file(const char *field, const char *path, char *err, size_t errlen)
{
	char *dir = NULL, *slash;
	char why[PATH_MAX + 64];
	struct stat st;
	int rc;

	rc = plugfs_path_trust(field, path, 0, err, errlen);
	if (rc < 0)
		return rc;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return plugfs_errf(err, errlen, -EINVAL, "%s `%s': is %s, not a regular file", field,
				   path, plugfs_mode_noun(st.st_mode));
	dir = strdup(path);
	if (!dir)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	rc = 0;
	if (slash && slash != dir) {
		*slash = '\0';
		rc = plugfs_mkdir_p(dir, 0755, why, sizeof(why));
		if (rc != 0)
			plugfs_seterr(err, errlen, "cannot create the directory of %s `%s': %s", field,
				      path, why);
	}
	free(dir);
	return rc;
}

bool plugfs_file_empty(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

/* The first buffer of plugfs_read_fd, unless max says less. */
#define READ_FIRST (64 * 1024)

int plugfs_read_fd(int fd, size_t max, char **out, size_t *len_out)
{
	size_t len = 0, cap = 0, first = max < READ_FIRST - 2 ? max + 2 : READ_FIRST;
	char *buf = NULL;
	ssize_t n;
	int rc = 0;

	*out = NULL;
	*len_out = 0;
	for (;;) {
		/* Room for one byte past max (a file that is too long) and the NUL. */
		if (PLUGFS_RESERVE(buf, cap, len + 2, first) != 0) {
			rc = -ENOMEM;
			goto out;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			rc = -EFBIG;
			goto out;
		}
	}
	buf[len] = '\0';
	*out = buf;
	*len_out = len;
	buf = NULL;
out:
	free(buf);
	return rc;
}

/* ---- the daemon's own mount --------------------------------------------- */

/* The symlinks a path may go through (the kernel's MAXSYMLINKS). */
#define LEADS_MAX_LINKS 40

/* Whether p[0, plen) is root or under it. */
static bool at_or_under(const char *p, size_t plen, const char *root)
{
	size_t rl = strlen(root);

	if (rl == 1 && root[0] == '/')
		return true;
	return plen >= rl && memcmp(p, root, rl) == 0 && (plen == rl || p[rl] == '/');
}

/* via = cur (or "/") followed by the names of rest not resolved. */
static void set_via(char *via, size_t vialen, const char *cur, size_t clen, const char *rest)
{
	if (!via || vialen == 0)
		return;
	while (*rest == '/')
		rest++;
	snprintf(via, vialen, "%.*s%s%s", (int)clen, clen ? cur : "/", *rest && clen ? "/" : "",
		 rest);
}

int plugfs_path_leads_under(const char *path, const char *const *roots, size_t n_roots, char *via,
			    size_t vialen)
{
	char cur[PATH_MAX];	 /* resolved so far, without the leading "/" when "" */
	char todo[2 * PATH_MAX]; /* what is left to resolve */
	char tmp[2 * PATH_MAX], target[PATH_MAX];
	size_t clen = 0;
	unsigned links = 0;
	const char *p;

	if (via && vialen)
		via[0] = '\0';
	if (!path || path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= sizeof(todo))
		return -ENAMETOOLONG;
	strcpy(todo, path);
	p = todo;
	cur[0] = '\0';
	for (;;) {
		const char *comp;
		size_t len, nlen;
		struct stat st;
		bool last;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - comp);
		last = true;
		for (const char *q = p; *q; q++)
			if (*q != '/') {
				last = false;
				break;
			}
		if (len == 1 && comp[0] == '.')
			continue;
		if (len == 2 && comp[0] == '.' && comp[1] == '.') {
			while (clen > 0 && cur[clen - 1] != '/')
				clen--;
			if (clen > 0)
				clen--; /* the slash */
			cur[clen] = '\0';
			continue;
		}
		if (clen + 1 + len >= sizeof(cur))
			return -ENAMETOOLONG;
		cur[clen] = '/';
		memcpy(cur + clen + 1, comp, len);
		nlen = clen + 1 + len;
		cur[nlen] = '\0';
		/* Compared before it is looked up: an lstat of the mount
		 * point would be a request to that mount. */
		for (size_t i = 0; i < n_roots; i++) {
			if (roots[i] && at_or_under(cur, nlen, roots[i])) {
				set_via(via, vialen, cur, nlen, p);
				return 1;
			}
		}
		if (lstat(cur, &st) != 0) {
			set_via(via, vialen, cur, nlen, p);
			return 0; /* the kernel's walk ends here too */
		}
		if (S_ISLNK(st.st_mode)) {
			ssize_t tl;

			if (++links > LEADS_MAX_LINKS)
				return -ELOOP;
			tl = readlink(cur, target, sizeof(target) - 1);
			if (tl <= 0) {
				set_via(via, vialen, cur, nlen, p);
				return 0;
			}
			target[tl] = '\0';
			if ((size_t)snprintf(tmp, sizeof(tmp), "%s%s%s", target, *p ? "/" : "",
					     p) >= sizeof(tmp))
				return -ENAMETOOLONG;
			strcpy(todo, tmp);
			p = todo;
			if (target[0] == '/')
				clen = 0;
			cur[clen] = '\0'; /* a relative target: from the link's directory */
			continue;
		}
		clen = nlen;
		if (!S_ISDIR(st.st_mode) && !last) {
			set_via(via, vialen, cur, clen, p);
			return 0; /* ENOTDIR */
		}
	}
	set_via(via, vialen, cur, clen, "");
	return 0;
}

/* The mount points of the own mount, as read at one time (a reference each
 * for the mount and every check walking with them). */
struct own_roots {
	unsigned refs;
	size_t n;
	char *p[]; /* p[0]: the mountpoint */
};

struct plugfs_own_mount {
	unsigned refs; /* atomic */
	pthread_mutex_t mu;
	char *mountpoint; /* as configured */
	char canon[PATH_MAX];
	int mi_fd; /* /proc/self/mountinfo, -1 when it cannot be opened */
	struct own_roots *roots;
};

static void roots_unref(struct own_roots *r)
{
	if (!r || __atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->p[i]);
	free(r);
}

/* Undoes mountinfo's octal escapes (\040 ...) in place. */
static void mi_unescape(char *s)
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

/* The widths below are literals (a format built at run time is refused by
 * -Wformat-nonliteral): MI_MP_LEN is PATH_MAX, MI_TYPE_LEN the type's
 * buffer. */
#define MI_MP_LEN 4096
#define MI_TYPE_LEN 64
_Static_assert(MI_MP_LEN == PATH_MAX, "mountinfo's mount point width is PATH_MAX - 1");

/* One line of mountinfo: its device and mount point (unescaped, in mp of
 * MI_MP_LEN), its filesystem type (in type of MI_TYPE_LEN).  false when
 * malformed. */
static bool mi_line(char *line, unsigned *maj, unsigned *min, char mp[static MI_MP_LEN],
		    char type[static MI_TYPE_LEN])
{
	char *sep = strstr(line, " - ");

	if (!sep)
		return false;
	if (sscanf(line, "%*u %*u %u:%u %*s %4095s", maj, min, mp) != 3)
		return false;
	if (sscanf(sep + 3, "%63s", type) != 1)
		return false;
	mi_unescape(mp);
	return true;
}

/* m's roots read again (m->mu held): the canonical mountpoint, then every
 * mount point with the device of the FUSE mount at it.  Keeps the old
 * ones when out of memory. */
static void own_refresh(struct plugfs_own_mount *m)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0, n = 1, cap = 1;
	unsigned dmaj = 0, dmin = 0;
	bool have_dev = false;
	struct own_roots *r;
	char *copy = NULL;

	/* The mountpoint's parent resolved (it is not in the mount), its own
	 * name as it is: never looked up. */
	{
		char parent[PATH_MAX], *slash;
		const char *base;

		snprintf(parent, sizeof(parent), "%s", m->mountpoint);
		while (strlen(parent) > 1 && parent[strlen(parent) - 1] == '/')
			parent[strlen(parent) - 1] = '\0';
		slash = strrchr(parent, '/');
		base = slash ? slash + 1 : parent;
		if (slash && slash != parent && *base && strcmp(base, ".") != 0 &&
		    strcmp(base, "..") != 0) {
			char res[PATH_MAX];
			char canon[PATH_MAX];

			*slash = '\0';
			if (plugfs_path_leads_under(parent, NULL, 0, res, sizeof(res)) >= 0 &&
			    res[0] == '/' &&
			    (size_t)snprintf(canon, sizeof(canon), "%s/%s",
					     strcmp(res, "/") == 0 ? "" : res,
					     base) < sizeof(canon))
				memcpy(m->canon, canon, sizeof(canon));
		}
	}
	if (m->mi_fd >= 0 && lseek(m->mi_fd, 0, SEEK_SET) == 0 &&
	    plugfs_read_fd(m->mi_fd, 64u << 20, &text, &len) == 0) {
		copy = strdup(text);
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char mp[MI_MP_LEN], type[MI_TYPE_LEN];
			unsigned maj, min;

			if (mi_line(line, &maj, &min, mp, type) &&
			    strcmp(mp, m->canon) == 0 && strncmp(type, "fuse", 4) == 0) {
				dmaj = maj; /* the last: the topmost */
				dmin = min;
				have_dev = true;
			}
		}
	}
	if (have_dev && copy)
		for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			cap++;
	r = calloc(1, sizeof(*r) + cap * sizeof(char *));
	if (!r)
		goto out;
	r->refs = 1;
	r->p[0] = strdup(m->canon);
	r->n = 1;
	if (!r->p[0]) {
		roots_unref(r);
		goto out;
	}
	if (have_dev && copy) {
		free(text);
		text = strdup(copy);
		for (line = text ? strtok_r(text, "\n", &save) : NULL; line && n < cap;
		     line = strtok_r(NULL, "\n", &save)) {
			char mp[MI_MP_LEN], type[MI_TYPE_LEN];
			unsigned maj, min;

			if (!mi_line(line, &maj, &min, mp, type) || maj != dmaj ||
			    min != dmin || strcmp(mp, m->canon) == 0)
				continue;
			if (!(r->p[n] = strdup(mp)))
				break;
			r->n = ++n;
		}
	}
	roots_unref(m->roots);
	m->roots = r;
out:
	free(text);
	free(copy);
}

/* Whether path (absolute, canonical) is a mount point in
 * /proc/self/mountinfo: 1, 0, or -errno when it cannot be read. */
static int is_mount_point(const char *path)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = plugfs_read_fd(fd, 64u << 20, &text, &len);
	close(fd);
	if (rc < 0)
		return rc;
	rc = 0;
	for (line = strtok_r(text, "\n", &save); line && !rc; line = strtok_r(NULL, "\n", &save)) {
		char mp[MI_MP_LEN], type[MI_TYPE_LEN];
		unsigned maj, min;

		rc = mi_line(line, &maj, &min, mp, type) && strcmp(mp, path) == 0;
	}
	free(text);
	return rc;
}

int plugfs_open_here(int dirfd, const char *dirpath, const char *name, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
	    .resolve = RESOLVE_NO_XDEV | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	char path[PATH_MAX];
	long fd;
	int rc;

	if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
	if (fd >= 0)
		return (int)fd;
	if (errno != ENOSYS)
		return -errno;
	/* No openat2: by the mount points' paths (a mount made between this
	 * read and the open is not seen; only root makes mounts). */
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dirpath, name) >= sizeof(path))
		return -ENAMETOOLONG;
	if ((rc = is_mount_point(path)) != 0)
		return rc > 0 ? -EXDEV : rc;
	fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? (int)fd : -errno;
}

int plugfs_own_mount_new(const char *mountpoint, struct plugfs_own_mount **out, char *err,
			 size_t errlen)
{
	struct plugfs_own_mount *m = NULL;

	char abs[PATH_MAX], cwd[PATH_MAX];

	*out = NULL;
	if (!mountpoint || !*mountpoint)
		return plugfs_errf(err, errlen, -EINVAL, "mountpoint: must not be empty");
	/* A relative one (--mountpoint) from the working directory, as the
	 * mount will take it. */
	if (mountpoint[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return plugfs_errf(err, errlen, -errno, "mountpoint `%s': getcwd: %s", mountpoint,
				   strerror(errno));
	if ((size_t)snprintf(abs, sizeof(abs), "%s%s%s", mountpoint[0] == '/' ? "" : cwd,
			     mountpoint[0] == '/' ? "" : "/", mountpoint) >= sizeof(abs))
		return plugfs_errf(err, errlen, -ENAMETOOLONG, "mountpoint `%s': path too long",
				   mountpoint);
	m = calloc(1, sizeof(*m));
	if (!m || !(m->mountpoint = strdup(abs))) {
		free(m);
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	}
	m->refs = 1;
	pthread_mutex_init(&m->mu, NULL);
	snprintf(m->canon, sizeof(m->canon), "%s", abs);
	m->mi_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	own_refresh(m);
	if (!m->roots) {
		plugfs_own_mount_unref(m);
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	}
	*out = m;
	return 0;
}

struct plugfs_own_mount *plugfs_own_mount_ref(struct plugfs_own_mount *m)
{
	if (m)
		__atomic_add_fetch(&m->refs, 1, __ATOMIC_RELAXED);
	return m;
}

void plugfs_own_mount_unref(struct plugfs_own_mount *m)
{
	if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	roots_unref(m->roots);
	if (m->mi_fd >= 0)
		close(m->mi_fd);
	pthread_mutex_destroy(&m->mu);
	free(m->mountpoint);
	free(m);
}

const char *plugfs_own_mount_path(const struct plugfs_own_mount *m)
{
	return m->canon;
}

int plugfs_own_mount_check(struct plugfs_own_mount *m, const char *path, char *via, size_t vialen)
{
	struct pollfd pfd;
	struct own_roots *r;
	int rc;

	if (via && vialen)
		via[0] = '\0';
	if (!m)
		return 0;
	pthread_mutex_lock(&m->mu);
	/* The mounts changed since the last read (a mount, a bind mount of
	 * ours, an unmount): read again.  Never blocks. */
	pfd = (struct pollfd){.fd = m->mi_fd, .events = POLLPRI};
	if (m->mi_fd >= 0 && poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLPRI | POLLERR)))
		own_refresh(m);
	r = m->roots;
	__atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&m->mu);
	rc = plugfs_path_leads_under(path, (const char *const *)r->p, r->n, via, vialen);
	roots_unref(r);
	return rc;
}

/* A check on a helper thread (plugfs_own_mount_check_within). */
struct check_job {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* on CLOCK_MONOTONIC */
	unsigned refs;	   /* the helper's and the caller's */
	bool done, abandoned;
	struct plugfs_own_mount *m;
	int rc;
	char via[PATH_MAX];
	char path[];
};

/* Helpers abandoned and not returned yet (process-wide, as the threads). */
static unsigned n_check_stuck; /* atomic */

static void check_job_put(struct check_job *j)
{
	bool last;

	pthread_mutex_lock(&j->mu);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->mu);
	if (!last)
		return;
	if (j->abandoned)
		__atomic_sub_fetch(&n_check_stuck, 1, __ATOMIC_RELAXED);
	plugfs_own_mount_unref(j->m);
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

static void *check_main(void *arg)
{
	struct check_job *j = arg;
	char via[PATH_MAX];
	int rc = plugfs_own_mount_check(j->m, j->path, via, sizeof(via));

	pthread_mutex_lock(&j->mu);
	j->rc = rc;
	memcpy(j->via, via, sizeof(via));
	j->done = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	check_job_put(j);
	return NULL;
}

#define CHECK_STACK (256 * 1024)

int plugfs_own_mount_check_within(struct plugfs_own_mount *m, const char *path, unsigned timeout_ms,
				  char *via, size_t vialen)
{
	size_t plen = strlen(path);
	struct check_job *j = NULL;
	pthread_attr_t attr;
	pthread_t t;
	int64_t until;
	int rc;

	if (via && vialen)
		via[0] = '\0';
	if (!m)
		return 0;
	if (__atomic_load_n(&n_check_stuck, __ATOMIC_RELAXED) >= PLUGFS_OWN_MOUNT_STUCK_MAX)
		return -EBUSY;
	j = calloc(1, sizeof(*j) + plen + 1);
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->mu, NULL);
	plugfs_cond_init_mono(&j->cv);
	j->refs = 2;
	j->m = plugfs_own_mount_ref(m);
	memcpy(j->path, path, plen + 1);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, CHECK_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = plugfs_thread_start(&t, &attr, check_main, j);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		j->refs = 1;
		check_job_put(j);
		return -EAGAIN;
	}
	until = plugfs_mono_ms() + timeout_ms;
	pthread_mutex_lock(&j->mu);
	while (!j->done && plugfs_cond_wait_until(&j->cv, &j->mu, until) != ETIMEDOUT)
		;
	if (j->done) {
		rc = j->rc;
		if (via && vialen)
			snprintf(via, vialen, "%s", j->via);
	} else {
		rc = -ETIMEDOUT;
		j->abandoned = true;
		__atomic_add_fetch(&n_check_stuck, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&j->mu);
	check_job_put(j);
	return rc;
}
