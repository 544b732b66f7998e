/* SPDX-License-Identifier: MIT */
/*
 * The watcher (watch.h): an epoll loop over the inotify fd, the pidfds and
 * a wake-up eventfd, and an adder thread for the inotify_add_watch calls.
 * Calls nothing of probe/ but the common utilities.
 *
 * Memory: a watched registration is one 48-byte entry from a pool (in two
 * intrusive tables: by key, and by the path it waits on, its socket's or a
 * missing directory's) and a reference to the registry's own copy of its
 * socket; a directory is one small struct whatever the sockets in it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "err.h"
#include "fsutil.h"
#include "hash.h"
#include "log.h"
#include "pool.h"
#include "rcstr.h"
#include "thread.h"
#include "watch.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* The epoll tags that are not a key (keys are positive ids). */
#define TAG_INOTIFY UINT64_MAX
#define TAG_WAKE (UINT64_MAX - 1)

#define DIR_MASK                                                                                   \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |     \
	 IN_ONLYDIR)

/* The state's high bit: a pidfd of its listener was refused (kept until
 * its socket changes, so that no round asks again). */
#define W_REFUSED 0x80
/* Another: its pidfd is the socket's listener (watch_sure_pid), until the
 * pidfd is closed. */
#define W_SURE 0x40
#define ST(e) ((e)->state & ~(W_REFUSED | W_SURE))

enum went_state {
	W_QUEUED,   /* for the adder */
	W_ATTACHED, /* by_name linked: waits on socket[0, off + len) */
	W_POLL,	    /* no watch could be had: the rounds alone */
};

/* A watched registration: 48 bytes. */
struct went {
	struct htab_node by_key;  /* the registration's id */
	struct htab_node by_name; /* path_key(socket, off + len) when attached */
	char *socket;		  /* an rcstr reference */
	int pidfd;		  /* -1: none */
	uint16_t off;		  /* the component waited on: socket[off, off + len) */
	uint8_t len;
	uint8_t state; /* enum went_state */
};

/* A watched directory: socket[0, len) of path, one of the sockets below. */
struct wdir {
	struct htab_node by_path; /* path_key(path, len) */
	struct htab_node by_wd;	  /* its watch descriptor */
	char *path;		  /* an rcstr reference */
	uint16_t len;
	int wd;
	size_t n; /* entries attached to it */
};

struct watch {
	struct watch_options o;
	char *exclude; /* o.exclude's copy, without a trailing slash */
	size_t exclude_len;
	struct plugfs_own_mount *own; /* o.own's reference */
	int ep, ifd, wake;
	pthread_t loop, adder;
	bool loop_started, adder_started;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* the adder's queue; the settles */
	bool stop;
	struct pool ents;
	struct htab by_key, by_name, by_path, by_wd;
	int64_t *queue; /* the adder's keys, a ring */
	size_t q_head, q_n, q_cap;
	bool adder_busy;
	bool in_callback; /* the adder calls back (watch_stop waits for it) */
	bool orphaned;	  /* watch_stop left the adder in a system call: it frees w */
	uint64_t passes, pass_asked; /* loop passes made, asked for (settle) */
	size_t n_pidfd, n_inotify, n_poll, n_dirs;
	uint64_t events, no_pidfd, watch_limit, fds_short;
	bool logged_no_pidfd, logged_limit, logged_fds, logged_other;
};

static void watch_free(struct watch *w);

/* FNV-1a over n bytes, from h (start: path_key). */
static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t path_key(const char *s, size_t n)
{
	return fnv(0xcbf29ce484222325ULL, s, n);
}

/* The length of the directory that holds the component at off. */
static size_t dir_len(size_t off)
{
	return off > 1 ? off - 1 : 1;
}

/* ---- counts and entries (w->mu held) ------------------------------------ */

static size_t *count_of(struct watch *w, const struct went *e)
{
	if (e->pidfd >= 0)
		return &w->n_pidfd;
	return ST(e) == W_ATTACHED ? &w->n_inotify : &w->n_poll;
}

static struct went *went_find(struct watch *w, int64_t key)
{
	struct htab_node *n = htab_find(&w->by_key, (uint64_t)key, NULL);

	return n ? htab_entry(n, struct went, by_key) : NULL;
}

static struct wdir *dir_find(struct watch *w, const char *path, size_t len)
{
	for (struct htab_node *n = htab_find(&w->by_path, path_key(path, len), NULL); n;
	     n = htab_find(&w->by_path, n->key, n)) {
		struct wdir *d = htab_entry(n, struct wdir, by_path);

		if (d->len == len && memcmp(d->path, path, len) == 0)
			return d;
	}
	return NULL;
}

static struct wdir *dir_by_wd(struct watch *w, int wd)
{
	struct htab_node *n = htab_find(&w->by_wd, (uint64_t)(unsigned)wd, NULL);

	return n ? htab_entry(n, struct wdir, by_wd) : NULL;
}

static void dir_free(struct watch *w, struct wdir *d, bool rm)
{
	htab_remove(&w->by_path, &d->by_path);
	htab_remove(&w->by_wd, &d->by_wd);
	if (rm)
		(void)inotify_rm_watch(w->ifd, d->wd);
	rcstr_unref(d->path);
	free(d);
	w->n_dirs--;
}

/* Unlinks e from the directory it waits in (state stays for the caller). */
static void went_detach(struct watch *w, struct went *e)
{
	struct wdir *d;

	if (ST(e) != W_ATTACHED)
		return;
	htab_remove(&w->by_name, &e->by_name);
	d = dir_find(w, e->socket, dir_len(e->off));
	if (d && --d->n == 0)
		dir_free(w, d, true);
}

static void pidfd_close(struct watch *w, struct went *e)
{
	if (e->pidfd < 0)
		return;
	(void)epoll_ctl(w->ep, EPOLL_CTL_DEL, e->pidfd, NULL);
	close(e->pidfd);
	e->pidfd = -1;
	e->state &= (uint8_t)~W_SURE;
}

static void queue_push(struct watch *w, int64_t key)
{
	if (w->q_n == w->q_cap) {
		size_t cap = w->q_cap ? w->q_cap * 2 : 64;
		int64_t *q = malloc(cap * sizeof(*q));

		if (!q)
			return; /* the entry stays queued: counted as poll */
		for (size_t i = 0; i < w->q_n; i++)
			q[i] = w->queue[(w->q_head + i) % w->q_cap];
		free(w->queue);
		w->queue = q;
		w->q_cap = cap;
		w->q_head = 0;
	}
	w->queue[(w->q_head + w->q_n) % w->q_cap] = key;
	w->q_n++;
	pthread_cond_broadcast(&w->cond);
}

/* e (attached or not) goes back to the adder. */
static void went_requeue(struct watch *w, struct went *e)
{
	size_t *c = count_of(w, e);

	(*c)--;
	went_detach(w, e);
	e->state = (uint8_t)((e->state & (W_REFUSED | W_SURE)) | W_QUEUED);
	(*count_of(w, e))++;
	queue_push(w, (int64_t)e->by_key.key);
}

/* Attaches e to d, waiting on socket[off, off + len). */
static int went_attach(struct watch *w, struct went *e, struct wdir *d, size_t off, size_t len)
{
	size_t *c = count_of(w, e);
	int rc;

	went_detach(w, e);
	e->state = (uint8_t)((e->state & (W_REFUSED | W_SURE)) | W_QUEUED);
	e->off = (uint16_t)off;
	e->len = (uint8_t)len;
	rc = len > UINT8_MAX ? -ENAMETOOLONG
			     : htab_insert(&w->by_name, &e->by_name, path_key(e->socket, off + len));
	if (rc == 0) {
		e->state = (uint8_t)((e->state & (W_REFUSED | W_SURE)) | W_ATTACHED);
		d->n++;
	} else {
		e->state = (uint8_t)((e->state & (W_REFUSED | W_SURE)) | W_POLL);
	}
	(*c)--;
	(*count_of(w, e))++;
	return rc;
}

/* ---- the adder ---------------------------------------------------------- */

/* inotify_add_watch with the test knob: -errno or the wd. */
static int add_watch(struct watch *w, const char *path)
{
	int wd;

	if (w->o.max_watches) {
		pthread_mutex_lock(&w->mu);
		bool full = w->n_dirs >= w->o.max_watches;
		pthread_mutex_unlock(&w->mu);
		if (full)
			return -ENOSPC;
	}
	wd = inotify_add_watch(w->ifd, path, DIR_MASK);
	return wd < 0 ? -errno : wd;
}

/* The wdir of path[0, len) with watch wd, made when new (mu held); NULL when
 * out of memory, or when wd watches that directory under another path
 * (a symlink, a bind mount: its events would not find the sockets). */
static struct wdir *dir_take(struct watch *w, char *socket, size_t len, int wd)
{
	struct wdir *d = dir_find(w, socket, len);

	if (d)
		return d->wd == wd ? d : NULL;
	if (dir_by_wd(w, wd))
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->path = rcstr_ref(socket);
	d->len = (uint16_t)len;
	d->wd = wd;
	if (htab_insert(&w->by_path, &d->by_path, path_key(socket, len)) < 0) {
		rcstr_unref(d->path);
		free(d);
		return NULL;
	}
	if (htab_insert(&w->by_wd, &d->by_wd, (uint64_t)(unsigned)wd) < 0) {
		htab_remove(&w->by_path, &d->by_path);
		rcstr_unref(d->path);
		free(d);
		return NULL;
	}
	w->n_dirs++;
	return d;
}

/* A watch that could not be had: the limit, or anything else; logged once. */
static void add_failed(struct watch *w, const char *path, int e)
{
	if (e == -ENOSPC) {
		w->watch_limit++;
		if (!w->logged_limit) {
			w->logged_limit = true;
			log_warn("watch: the inotify watch limit is reached (%s): sockets in "
				 "directories not watched yet are probed every round "
				 "(fs.inotify.max_user_watches)",
				 path);
		}
	} else if (!w->logged_other) {
		w->logged_other = true;
		log_warn("watch: cannot watch %s: %s: its sockets are probed every round", path,
			 strerror(-e));
	}
}

/* Whether s is under the excluded directory. */
static bool excluded(const struct watch *w, const char *s)
{
	return w->exclude &&
	       strncmp(s, w->exclude, w->exclude_len) == 0 &&
	       (s[w->exclude_len] == '/' || s[w->exclude_len] == '\0' || w->exclude_len == 1);
}

/* The start of the last component of s[0, end) (end > 1, s absolute). */
static size_t comp_start(const char *s, size_t end)
{
	size_t i = end;

	while (i > 0 && s[i - 1] != '/')
		i--;
	return i;
}

/* The length of the component of s (of length n) that starts at off. */
static size_t comp_len(const char *s, size_t off, size_t n)
{
	const char *slash = memchr(s + off, '/', n - off);

	return slash ? (size_t)(slash - (s + off)) : n - off;
}

/* Sets e to poll (mu held). */
static void went_poll(struct watch *w, struct went *e)
{
	size_t *c = count_of(w, e);

	went_detach(w, e);
	e->state = (uint8_t)((e->state & (W_REFUSED | W_SURE)) | W_POLL);
	(*c)--;
	(*count_of(w, e))++;
}

/*
 * Attaches key's entry to the deepest directory of its socket's path that
 * exists and moves it down while the next one exists.  Attach first, then
 * look: a directory or socket that appears after the look is seen by the
 * watch already in place.  Returns whether an event is due (the socket
 * exists now that its directory is watched).
 */
static bool adder_place(struct watch *w, int64_t key)
{
	char path[PATH_MAX];
	char *sock = NULL;
	struct went *e;
	size_t n, base, off;
	bool due = false, found = false;
	struct stat st;
	int wd;

	int lead = 0;

	pthread_mutex_lock(&w->mu);
	e = went_find(w, key);
	if (!e || ST(e) != W_QUEUED) {
		pthread_mutex_unlock(&w->mu);
		return false;
	}
	sock = rcstr_ref(e->socket);
	pthread_mutex_unlock(&w->mu);
	/* A path that leads into the daemon's own mount through a symlink
	 * (or a bind mount of it) is not watched either: resolved one name
	 * at a time, never looked up there (no lock held: it may block as
	 * the watch would). */
	if (w->own)
		lead = plugfs_own_mount_check(w->own, sock, NULL, 0);
	pthread_mutex_lock(&w->mu);
	e = went_find(w, key);
	if (!e || e->socket != sock || ST(e) != W_QUEUED) {
		pthread_mutex_unlock(&w->mu);
		rcstr_unref(sock);
		return false;
	}
	n = strlen(sock);
	base = comp_start(sock, n);
	if (sock[0] != '/' || base == n || n >= sizeof(path) || n - base > UINT8_MAX ||
	    excluded(w, sock) || lead == 1) {
		went_poll(w, e);
		pthread_mutex_unlock(&w->mu);
		rcstr_unref(sock);
		return false;
	}
	/* The deepest directory watched already, by the tables alone. */
	for (off = base; off >= 1; off = comp_start(sock, dir_len(off))) {
		struct wdir *d = dir_find(w, sock, dir_len(off));

		if (d) {
			if (went_attach(w, e, d, off, comp_len(sock, off, n)) == 0)
				found = true;
			break;
		}
		if (off == 1)
			break;
	}
	pthread_mutex_unlock(&w->mu);
	memcpy(path, sock, n + 1);

	/* None: the deepest that exists, by system calls (none held). */
	if (!found) {
		for (off = base;; off = comp_start(sock, dir_len(off))) {
			size_t dl = dir_len(off);
			char c = path[dl];

			path[dl] = '\0';
			wd = add_watch(w, path);
			path[dl] = c;
			if (wd >= 0) {
				struct wdir *d;

				pthread_mutex_lock(&w->mu);
				d = dir_take(w, sock, dl, wd);
				if (!d && !dir_by_wd(w, wd))
					(void)inotify_rm_watch(w->ifd, wd);
				e = went_find(w, key);
				if (e && e->socket == sock && ST(e) == W_QUEUED) {
					if (d && went_attach(w, e, d, off, comp_len(sock, off, n)) == 0)
						found = true;
					else
						went_poll(w, e);
				}
				if (d && d->n == 0)
					dir_free(w, d, true);
				pthread_mutex_unlock(&w->mu);
				break;
			}
			if ((wd != -ENOENT && wd != -ENOTDIR) || off == 1) {
				pthread_mutex_lock(&w->mu);
				add_failed(w, sock, wd);
				e = went_find(w, key);
				if (e && e->socket == sock && ST(e) == W_QUEUED)
					went_poll(w, e);
				pthread_mutex_unlock(&w->mu);
				break;
			}
		}
		if (!found)
			goto out;
	}

	/* Down while the next directory exists. */
	for (;;) {
		size_t next, dl;

		pthread_mutex_lock(&w->mu);
		e = went_find(w, key);
		if (!e || e->socket != sock || ST(e) != W_ATTACHED) {
			pthread_mutex_unlock(&w->mu);
			goto out;
		}
		off = e->off;
		pthread_mutex_unlock(&w->mu);
		if (off == base)
			break;
		dl = off + comp_len(sock, off, n);
		next = dl + 1;
		path[dl] = '\0';
		wd = add_watch(w, path);
		path[dl] = sock[dl];
		if (wd == -ENOENT || wd == -ENOTDIR)
			goto out; /* its creation will be seen */
		pthread_mutex_lock(&w->mu);
		e = went_find(w, key);
		if (e && e->socket == sock && ST(e) == W_ATTACHED && e->off == off) {
			struct wdir *d = wd >= 0 ? dir_take(w, sock, dl, wd) : NULL;

			if (wd < 0)
				add_failed(w, sock, wd);
			else if (!d && !dir_by_wd(w, wd))
				(void)inotify_rm_watch(w->ifd, wd);
			if (!d || went_attach(w, e, d, next, comp_len(sock, next, n)) < 0) {
				went_poll(w, e);
				if (d && d->n == 0)
					dir_free(w, d, true);
				pthread_mutex_unlock(&w->mu);
				goto out;
			}
		} else if (wd >= 0 && !dir_by_wd(w, wd)) {
			(void)inotify_rm_watch(w->ifd, wd);
		}
		pthread_mutex_unlock(&w->mu);
	}
	/* In its own directory: the socket may be there already. */
	due = lstat(sock, &st) == 0;
out:
	rcstr_unref(sock);
	return due;
}

static void *adder_main(void *arg)
{
	struct watch *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		int64_t key;

		while (!w->stop && w->q_n == 0) {
			w->adder_busy = false;
			pthread_cond_broadcast(&w->cond);
			pthread_cond_wait(&w->cond, &w->mu);
		}
		if (w->stop)
			break;
		w->adder_busy = true;
		key = w->queue[w->q_head];
		w->q_head = (w->q_head + 1) % w->q_cap;
		w->q_n--;
		if (w->q_n == 0 && w->q_cap > 4096) { /* a start's queue: give it back */
			free(w->queue);
			w->queue = NULL;
			w->q_cap = w->q_head = 0;
		}
		pthread_mutex_unlock(&w->mu);
		bool due = adder_place(w, key);
		pthread_mutex_lock(&w->mu);
		if (due && !w->stop) {
			w->in_callback = true;
			pthread_mutex_unlock(&w->mu);
			__atomic_fetch_add(&w->events, 1, __ATOMIC_RELAXED);
			w->o.event(w->o.arg, key, WATCH_EV_SOCKET);
			pthread_mutex_lock(&w->mu);
			w->in_callback = false;
			pthread_cond_broadcast(&w->cond);
		}
	}
	w->adder_busy = false;
	if (w->orphaned) {
		pthread_mutex_unlock(&w->mu);
		watch_free(w); /* watch_stop returned long ago */
		return NULL;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* ---- the loop ----------------------------------------------------------- */

struct due {
	int64_t *keys;
	unsigned *what;
	size_t n, cap;
};

static void due_add(struct due *d, int64_t key, unsigned what)
{
	/* Two arrays of one capacity: it counts once both grew. */
	size_t cap_k = d->cap, cap_w = d->cap;

	if (PLUGFS_GROW(d->keys, cap_k, d->n, 16) != 0 ||
	    PLUGFS_GROW(d->what, cap_w, d->n, 16) != 0)
		return;
	d->cap = cap_k;
	d->keys[d->n] = key;
	d->what[d->n++] = what;
}

/* A directory went (deleted, moved, its filesystem unmounted): its sockets
 * look again from above, and those in it are probed. */
static void dir_gone(struct watch *w, struct wdir *d, bool rm, struct due *due)
{
	size_t pos = 0;
	struct htab_node *n = NULL;

	while ((n = htab_next(&w->by_key, &pos, n))) {
		struct went *e = htab_entry(n, struct went, by_key);

		if (ST(e) != W_ATTACHED || dir_len(e->off) != d->len ||
		    memcmp(e->socket, d->path, d->len) != 0)
			continue;
		if (e->socket[e->off + e->len] == '\0')
			due_add(due, (int64_t)e->by_key.key, WATCH_EV_SOCKET);
		/* Detach by hand: d goes below, whatever its count. */
		htab_remove(&w->by_name, &e->by_name);
		d->n--;
		w->n_inotify -= e->pidfd < 0;
		e->state = (uint8_t)((e->state & (W_REFUSED | W_SURE)) | W_QUEUED);
		w->n_poll += e->pidfd < 0;
		queue_push(w, (int64_t)e->by_key.key);
	}
	dir_free(w, d, rm);
}

/* The entries waiting on d's child `name'. */
static void name_event(struct watch *w, struct wdir *d, const char *name, uint32_t mask,
		       struct due *due)
{
	char path[PATH_MAX];
	size_t nl = strlen(name), pl = d->len == 1 ? 1 : d->len + 1, off = pl;
	struct htab_node *n, *next;

	if (pl + nl >= sizeof(path))
		return;
	memcpy(path, d->path, d->len);
	path[pl - 1] = '/';
	memcpy(path + pl, name, nl);
	for (n = htab_find(&w->by_name, path_key(path, pl + nl), NULL); n; n = next) {
		struct went *e = htab_entry(n, struct went, by_name);

		next = htab_find(&w->by_name, n->key, n);
		if (e->off != off || e->len != nl || memcmp(e->socket, path, pl + nl) != 0)
			continue;
		if (e->socket[off + nl] == '\0') {
			/* Perhaps another listener: asked again, and its
			 * pidfd no longer sure until a probe says so. */
			e->state &= (uint8_t)~(W_REFUSED | W_SURE);
			due_add(due, (int64_t)e->by_key.key, WATCH_EV_SOCKET);
		} else if (mask & (IN_CREATE | IN_MOVED_TO))
			went_requeue(w, e); /* a directory on its way appeared */
	}
}

static void read_inotify(struct watch *w, struct due *due)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;

	while ((len = read(w->ifd, buf, sizeof(buf))) > 0) {
		pthread_mutex_lock(&w->mu);
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			struct wdir *d;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				/* Events lost: every socket is looked at again. */
				size_t pos = 0;
				struct htab_node *n = NULL;

				while ((n = htab_next(&w->by_key, &pos, n))) {
					struct went *e = htab_entry(n, struct went, by_key);

					if (ST(e) == W_ATTACHED &&
					    e->socket[e->off + e->len] != '\0')
						went_requeue(w, e);
					else
						due_add(due, (int64_t)e->by_key.key,
							WATCH_EV_SOCKET);
				}
				continue;
			}
			d = dir_by_wd(w, ev->wd);
			if (!d)
				continue; /* removed meanwhile */
			if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED))
				dir_gone(w, d, (ev->mask & IN_MOVE_SELF) != 0, due);
			else if (ev->len > 0)
				name_event(w, d, ev->name, ev->mask, due);
		}
		pthread_mutex_unlock(&w->mu);
	}
}

/* key's pidfd is readable: its process exited. */
static void pidfd_event(struct watch *w, int64_t key, struct due *due)
{
	struct went *e;

	pthread_mutex_lock(&w->mu);
	e = went_find(w, key);
	if (e && e->pidfd >= 0) {
		struct pollfd p = {.fd = e->pidfd, .events = POLLIN};

		/* The event may be of a pidfd closed meanwhile: look at this one. */
		if (poll(&p, 1, 0) == 1) {
			w->n_pidfd--;
			pidfd_close(w, e);
			(*count_of(w, e))++;
			e->state &= (uint8_t)~W_REFUSED;
			due_add(due, key, WATCH_EV_EXIT);
		}
	}
	pthread_mutex_unlock(&w->mu);
}

static void *loop_main(void *arg)
{
	struct watch *w = arg;
	struct epoll_event evs[64];
	struct due due = {0};

	for (;;) {
		int n = epoll_wait(w->ep, evs, 64, -1);
		uint64_t asked;

		if (n < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&w->mu);
		asked = w->pass_asked;
		if (w->stop) {
			pthread_mutex_unlock(&w->mu);
			break;
		}
		pthread_mutex_unlock(&w->mu);
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;

			if (tag == TAG_WAKE) {
				uint64_t v;

				(void)!read(w->wake, &v, sizeof(v));
			} else if (tag == TAG_INOTIFY) {
				read_inotify(w, &due);
			} else {
				pidfd_event(w, (int64_t)tag, &due);
			}
		}
		for (size_t i = 0; i < due.n; i++) {
			__atomic_fetch_add(&w->events, 1, __ATOMIC_RELAXED);
			w->o.event(w->o.arg, due.keys[i], due.what[i]);
		}
		due.n = 0;
		if (due.cap > 1024) {
			free(due.keys);
			free(due.what);
			due = (struct due){0};
		}
		pthread_mutex_lock(&w->mu);
		if (asked > w->passes) {
			w->passes = asked;
			pthread_cond_broadcast(&w->cond);
		}
		pthread_mutex_unlock(&w->mu);
	}
	free(due.keys);
	free(due.what);
	return NULL;
}

static void wake(struct watch *w)
{
	uint64_t one = 1;

	(void)!write(w->wake, &one, sizeof(one));
}

/* ---- the API ------------------------------------------------------------ */

int watch_start(const struct watch_options *o, struct watch **out, char *err, size_t errlen)
{
	struct watch *w = calloc(1, sizeof(*w));
	struct epoll_event ev = {.events = EPOLLIN};
	int rc;

	*out = NULL;
	if (!w)
		return plugfs_errf(err, errlen, -ENOMEM, "watch: out of memory");
	w->o = *o;
	w->ep = w->ifd = w->wake = -1;
	pthread_mutex_init(&w->mu, NULL);
	plugfs_cond_init_mono(&w->cond);
	pool_init(&w->ents, sizeof(struct went));
	if (o->exclude && *o->exclude) {
		w->exclude = strdup(o->exclude);
		if (!w->exclude) {
			rc = plugfs_errf(err, errlen, -ENOMEM, "watch: out of memory");
			goto fail;
		}
		w->exclude_len = strlen(w->exclude);
		while (w->exclude_len > 1 && w->exclude[w->exclude_len - 1] == '/')
			w->exclude[--w->exclude_len] = '\0';
	}
	w->own = plugfs_own_mount_ref(o->own);
	w->ep = epoll_create1(EPOLL_CLOEXEC);
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	w->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->ep < 0 || w->ifd < 0 || w->wake < 0) {
		rc = plugfs_errf(err, errlen, -errno, "watch: %s: %s",
				 w->ep < 0 ? "epoll_create1" : w->ifd < 0 ? "inotify_init1" : "eventfd",
				 strerror(errno));
		goto fail;
	}
	ev.data.u64 = TAG_INOTIFY;
	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->ifd, &ev) < 0) {
		rc = plugfs_errf(err, errlen, -errno, "watch: epoll_ctl: %s", strerror(errno));
		goto fail;
	}
	ev.data.u64 = TAG_WAKE;
	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, w->wake, &ev) < 0) {
		rc = plugfs_errf(err, errlen, -errno, "watch: epoll_ctl: %s", strerror(errno));
		goto fail;
	}
	if ((rc = plugfs_thread_start(&w->loop, NULL, loop_main, w)) < 0) {
		plugfs_seterr(err, errlen, "watch: cannot start a thread: %s", strerror(-rc));
		goto fail;
	}
	w->loop_started = true;
	if ((rc = plugfs_thread_start(&w->adder, NULL, adder_main, w)) < 0) {
		plugfs_seterr(err, errlen, "watch: cannot start a thread: %s", strerror(-rc));
		goto fail;
	}
	w->adder_started = true;
	*out = w;
	return 0;
fail:
	watch_stop(w);
	return rc;
}

void watch_stop(struct watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	if (w->loop_started) {
		wake(w);
		pthread_join(w->loop, NULL);
	}
	if (w->adder_started) {
		pthread_mutex_lock(&w->mu);
		while (w->in_callback)
			pthread_cond_wait(&w->cond, &w->mu);
		if (w->adder_busy) {
			/* In a path lookup, perhaps on a hung filesystem for good:
			 * it calls back no more and frees w when it returns. */
			w->orphaned = true;
			pthread_mutex_unlock(&w->mu);
			pthread_detach(w->adder);
			return;
		}
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->adder, NULL);
	}
	watch_free(w);
}

static void watch_free(struct watch *w)
{
	size_t pos = 0;
	struct htab_node *n = NULL;

	while ((n = htab_next(&w->by_key, &pos, n))) {
		struct went *e = htab_entry(n, struct went, by_key);

		if (e->pidfd >= 0)
			close(e->pidfd);
		rcstr_unref(e->socket);
	}
	pos = 0;
	n = htab_next(&w->by_path, &pos, NULL);
	while (n) {
		struct wdir *d = htab_entry(n, struct wdir, by_path);

		n = htab_next(&w->by_path, &pos, n); /* before d is freed */
		rcstr_unref(d->path);
		free(d);
	}
	htab_free(&w->by_key);
	htab_free(&w->by_name);
	htab_free(&w->by_path);
	htab_free(&w->by_wd);
	pool_destroy(&w->ents);
	if (w->ep >= 0)
		close(w->ep);
	if (w->ifd >= 0)
		close(w->ifd);
	if (w->wake >= 0)
		close(w->wake);
	free(w->queue);
	free(w->exclude);
	plugfs_own_mount_unref(w->own);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

/* Frees e (mu held): unlinked from everything. */
static void went_free(struct watch *w, struct went *e)
{
	(*count_of(w, e))--;
	went_detach(w, e);
	pidfd_close(w, e);
	htab_remove(&w->by_key, &e->by_key);
	rcstr_unref(e->socket);
	pool_free(&w->ents, e);
}

int watch_add(struct watch *w, int64_t key, char *socket)
{
	struct went *e;
	int rc = 0;

	pthread_mutex_lock(&w->mu);
	e = went_find(w, key);
	if (e && strcmp(e->socket, socket) == 0)
		goto out; /* the same socket: kept as it is watched */
	if (e)
		went_free(w, e);
	e = pool_alloc(&w->ents);
	if (!e) {
		rc = -ENOMEM;
		goto out;
	}
	e->pidfd = -1;
	e->state = (uint8_t)((e->state & (W_REFUSED | W_SURE)) | W_QUEUED);
	if ((rc = htab_insert(&w->by_key, &e->by_key, (uint64_t)key)) < 0) {
		pool_free(&w->ents, e);
		goto out;
	}
	e->socket = rcstr_ref(socket);
	w->n_poll++;
	queue_push(w, key);
out:
	pthread_mutex_unlock(&w->mu);
	return rc;
}

void watch_remove(struct watch *w, int64_t key)
{
	struct went *e;

	pthread_mutex_lock(&w->mu);
	e = went_find(w, key);
	if (e)
		went_free(w, e);
	pthread_mutex_unlock(&w->mu);
}

/* pidfd_open, or the test knob's refusal: a fd or -errno. */
static int open_pidfd(struct watch *w, pid_t pid)
{
	long fd;

	if (w->o.no_pidfd)
		return -EPERM;
	fd = syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -errno : (int)fd;
}

/* Whether a pidfd more keeps the reserve (mu held). */
static bool fds_left(const struct watch *w)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return true;
	return w->n_pidfd + w->o.fd_reserve < rl.rlim_cur;
}

/* The pid a pidfd has (its fdinfo's Pid line): -1 once exited, 0 unknown. */
static pid_t pidfd_pid(int fd)
{
	char p[64], line[128];
	pid_t had = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	if ((f = fopen(p, "re"))) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Pid: %d", &had) == 1)
				break;
		fclose(f);
	}
	return had;
}

int watch_sure_pid(struct watch *w, int64_t key, pid_t pid)
{
	struct went *e;
	int rc = 0;

	pthread_mutex_lock(&w->mu);
	e = went_find(w, key);
	if (!e) {
		rc = -ENOENT;
	} else if (pid > 0 && e->pidfd >= 0 && pidfd_pid(e->pidfd) == pid) {
		e->state |= W_SURE;
		rc = 1;
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int watch_set_pid(struct watch *w, int64_t key, pid_t pid)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)key};
	struct went *e;
	pid_t had = 0;
	int rc = 0, fd;

	pthread_mutex_lock(&w->mu);
	e = went_find(w, key);
	if (!e) {
		rc = -ENOENT;
		goto out;
	}
	if (e->pidfd >= 0) {
		had = pidfd_pid(e->pidfd);
		if (pid > 0 && had == pid)
			goto out;
		w->n_pidfd--;
		pidfd_close(w, e);
		(*count_of(w, e))++;
	}
	if (pid <= 0)
		goto out;
	if (!fds_left(w)) {
		rc = -EMFILE;
	} else {
		fd = open_pidfd(w, pid);
		if (fd >= 0 && epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			rc = -errno;
			close(fd);
		} else if (fd >= 0) {
			(*count_of(w, e))--;
			e->pidfd = fd;
			w->n_pidfd++;
			e->state &= (uint8_t)~W_REFUSED;
			rc = 1;
		} else {
			rc = fd;
		}
	}
	if (rc < 0)
		e->state |= W_REFUSED;
	if (rc == -EMFILE || rc == -ENFILE) {
		w->fds_short++;
		if (!w->logged_fds) {
			w->logged_fds = true;
			log_warn("watch: descriptors short for a pidfd (the reserve of %u below "
				 "RLIMIT_NOFILE): listeners without one are probed every round",
				 w->o.fd_reserve);
		}
	} else if (rc < 0) {
		w->no_pidfd++;
		if (!w->logged_no_pidfd && rc != -ESRCH) {
			w->logged_no_pidfd = true;
			log_warn("watch: no pidfd for a listener (pidfd_open: %s): registrations "
				 "without one are probed every round",
				 strerror(-rc));
		}
	}
out:
	pthread_mutex_unlock(&w->mu);
	return rc;
}

unsigned watch_of(struct watch *w, int64_t key)
{
	struct went *e;
	unsigned m = 0;

	pthread_mutex_lock(&w->mu);
	e = went_find(w, key);
	if (e) {
		m |= e->pidfd >= 0 ? WATCH_HAS_PIDFD : 0;
		m |= ST(e) == W_ATTACHED ? WATCH_HAS_DIR : 0;
		m |= e->state & W_REFUSED ? WATCH_PID_REFUSED : 0;
		m |= e->pidfd >= 0 && (e->state & W_SURE) ? WATCH_PID_SURE : 0;
	}
	pthread_mutex_unlock(&w->mu);
	return m;
}

char *watch_socket(struct watch *w, int64_t key)
{
	struct went *e;
	char *s = NULL;

	pthread_mutex_lock(&w->mu);
	e = went_find(w, key);
	if (e)
		s = rcstr_ref(e->socket);
	pthread_mutex_unlock(&w->mu);
	return s;
}

void watch_counts(struct watch *w, struct watch_counts *out)
{
	pthread_mutex_lock(&w->mu);
	*out = (struct watch_counts){
	    .pidfd = w->n_pidfd,
	    .inotify = w->n_inotify,
	    .poll = w->n_poll,
	    .dirs = w->n_dirs,
	    .events = __atomic_load_n(&w->events, __ATOMIC_RELAXED),
	    .no_pidfd = w->no_pidfd,
	    .watch_limit = w->watch_limit,
	    .fds_short = w->fds_short,
	};
	pthread_mutex_unlock(&w->mu);
}

int watch_settle(struct watch *w, unsigned timeout_ms)
{
	int64_t until = plugfs_deadline_ms(timeout_ms);
	uint64_t want;
	int rc = 0;

	pthread_mutex_lock(&w->mu);
	while (rc == 0 && (w->q_n > 0 || w->adder_busy))
		rc = plugfs_cond_wait_until(&w->cond, &w->mu, until);
	want = ++w->pass_asked;
	pthread_mutex_unlock(&w->mu);
	wake(w);
	pthread_mutex_lock(&w->mu);
	while (rc == 0 && w->passes < want)
		rc = plugfs_cond_wait_until(&w->cond, &w->mu, until);
	/* What the loop queued for the adder meanwhile (a directory seen). */
	while (rc == 0 && (w->q_n > 0 || w->adder_busy))
		rc = plugfs_cond_wait_until(&w->cond, &w->mu, until);
	pthread_mutex_unlock(&w->mu);
	return rc ? -ETIMEDOUT : 0;
}
