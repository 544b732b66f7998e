/* SPDX-License-Identifier: MIT */
/*
 * The discovery (discover.h): the [discover.NAME] roots watched, their
 * sockets identified and registered, what goes deregistered.
 *
 * One thread (the loop) owns every section, entry and watch: it reads the
 * inotify events, rescans the names they name (discover_scan.c), decides,
 * and makes every registry mutation of the discovery, so that a
 * registration and the deregistration of the same socket never race.  The
 * identifications run on worker threads: the loop hands them a batch (the
 * sockets one rescan found, oldest first) and takes the results back, in
 * that order, through D->mu and the eventfd.  The registry's events reach
 * the loop the same way (an explicit deregistration, a health change).
 */
#include "discover.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "discover_scan.h"
#include "err.h"
#include "fsutil.h"
#include "hash.h"
#include "log.h"
#include "probe.h"
#include "thread.h"

#define ROOT_MASK                                                                                  \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF |        \
	 IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
#define DIR_MASK ROOT_MASK
/* A directory above a root: renamed, removed, its owner or mode changed. */
#define ANC_MASK (IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR)
/* The directories above a root watched, at most (a deeper root's highest
 * ones are left to the 2 s rescan). */
#define ANC_MAX 64
#define MAX_TYPES 2

/* Whether the registry call under way is the discovery's own (its events
 * are then not news to it). */
static __thread bool tl_ours;

enum est {
	EST_IDLE,    /* nothing to do: no socket, or registered as it is */
	EST_PENDING, /* in a batch being identified */
	EST_RETRY,   /* did not answer: asked again at retry_at */
	EST_REFUSED, /* its name or type refused: until its socket changes */
	EST_HELD,    /* deregistered by someone else, or forgotten: until its socket changes */
};

struct dsec;

struct entry {
	struct dsec *sec;
	char *alloc;
	char *socket; /* the socket's path while one is there */
	bool have_sock;
	dev_t dev;
	ino_t ino;
	struct timespec ctime;
	int wd; /* the directory's watch, -1 */
	bool unwatched;
	enum est st;
	uint64_t gen; /* moves on with every socket change: a batch's result for an older one is
			 dropped */
	int64_t retry_at;
	unsigned backoff_ms;
	bool hold_stored; /* its hold (EST_HELD) is in the state: a restart keeps it */
	/* What it is registered as: name under types[0..n_types) (indexes
	 * into D->types), each dead since dead_since[i] (unix s; 0 not). */
	char *name;
	int types[MAX_TYPES];
	size_t n_types;
	int64_t dead_since[MAX_TYPES];
};

struct wref {
	struct htab_node node;
	struct dsec *sec;
	struct entry *ent; /* NULL: the root */
};

struct dsec {
	struct plugfs_discover cfg;
	char source[REG_NAME_MAX + 16];
	uint64_t id;
	/* The root held (discover_open_root's fd, -1: none): every scan and
	 * watch below it goes through it, and every rescan first checks that
	 * cfg.root still leads to it (dev, ino). */
	int root_fd;
	dev_t root_dev;
	ino_t root_ino;
	/* The directories above it watched (D->afd: renamed, removed, chmod,
	 * chown), from its parent up to `/'; anc_unwatched: not all could be. */
	int anc_wd[ANC_MAX];
	size_t n_anc;
	bool anc_unwatched;
	bool verify; /* check the root's path at the next rescan */
	int root_wd;
	struct hash ents;   /* alloc -> struct entry */
	struct hash warned; /* name -> the skip message logged for it */
	struct hash dirty;  /* names to rescan (value: the section) */
	bool dirty_all;
	bool root_logged; /* the root's failure was logged */
};

struct jitem {
	uint64_t sec_id;
	char *alloc;
	uint64_t gen;
	char *path;
	struct probe_identity id;
};

struct job {
	struct job *next;
	bool retry;
	size_t n;
	struct jitem *it;
	int rc;
};

enum note_kind { NOTE_HELD, NOTE_HEALTH };

struct note {
	struct note *next;
	enum note_kind kind;
	char *source, *alloc, *type;
	bool dead;
	int64_t since;
};

struct discover {
	struct registry *reg;
	char **types;
	size_t n_types;
	unsigned timeout_ms;
	unsigned max_watches;
	struct dsec **secs;
	size_t n_secs, cap_secs;
	uint64_t next_sec_id;
	/* The last gen handed out: an entry's gen comes from here, so a
	 * directory removed and made again (a new entry) never reuses the gen
	 * of a result still in flight for the old one.  Loop thread only. */
	uint64_t last_gen;
	struct plugfs_own_mount *own; /* a reference, NULL: none */
	int ifd, efd, epfd;
	int afd; /* the directories above the roots (inotify; any event: check every root) */
	/* /proc/self/mountinfo (EPOLLPRI: the mount table changed), -1: none.
	 * A mount onto, or an unmount of, a directory below a root sends no
	 * inotify event: every root is read again, so a directory mounted on
	 * goes and one unmounted is scanned and watched. */
	int mfd;
	struct htab wds;
	size_t watches_used;
	bool limit_logged;
	int sub;
	pthread_t thread;
	bool thread_started;
	pthread_t workers[DISCOVER_WORKERS];
	size_t n_workers;
	bool retry_inflight;
	int64_t next_unwatched_ms; /* mono; 0 none due */
	int64_t next_forget;	   /* unix s; 0 none */
	/* Under mu: the workers' queue and results, the registry's notes,
	 * a reload's sections, the stop. */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct job *jobs, *jobs_tail, *done, *done_tail;
	struct note *notes, *notes_tail;
	struct plugfs_discover *pending;
	size_t n_pending;
	bool have_pending;
	bool stop; /* atomic */
	/* metrics (atomics) */
	uint64_t st_rescans, st_registered, st_deregistered, st_failed, st_unwatched;
	uint64_t st_mount_changes;
};

static int64_t wall_s(void)
{
	return (int64_t)time(NULL);
}

static void wake(struct discover *D)
{
	uint64_t one = 1;
	ssize_t n = write(D->efd, &one, sizeof(one));

	(void)n;
}

/* ---- sections -------------------------------------------------------- */

static void sec_cfg_free(struct plugfs_discover *c)
{
	free(c->name);
	free(c->root);
	free(c->socket);
	free(c->type);
	free(c->plugin);
	memset(c, 0, sizeof(*c));
}

static int sec_cfg_copy(struct plugfs_discover *dst, const struct plugfs_discover *src)
{
	*dst = *src;
	dst->name = strdup(src->name);
	dst->root = strdup(src->root);
	dst->socket = strdup(src->socket);
	dst->type = src->type ? strdup(src->type) : NULL;
	dst->plugin = src->plugin ? strdup(src->plugin) : NULL;
	if (!dst->name || !dst->root || !dst->socket || (src->type && !dst->type) ||
	    (src->plugin && !dst->plugin)) {
		sec_cfg_free(dst);
		return -ENOMEM;
	}
	return 0;
}

static struct dsec *sec_by_name(struct discover *D, const char *name)
{
	for (size_t i = 0; i < D->n_secs; i++)
		if (strcmp(D->secs[i]->cfg.name, name) == 0)
			return D->secs[i];
	return NULL;
}

static struct dsec *sec_by_id(struct discover *D, uint64_t id)
{
	for (size_t i = 0; i < D->n_secs; i++)
		if (D->secs[i]->id == id)
			return D->secs[i];
	return NULL;
}

static int type_index(struct discover *D, const char *type)
{
	for (size_t i = 0; i < D->n_types; i++)
		if (strcmp(D->types[i], type) == 0)
			return (int)i;
	return -1;
}

/* ---- watches ---------------------------------------------------------- */

static struct wref *wref_of(struct discover *D, int wd)
{
	struct htab_node *n = htab_find(&D->wds, (uint64_t)(unsigned)wd, NULL);

	return n ? htab_entry(n, struct wref, node) : NULL;
}

static void unwatch(struct discover *D, int wd, bool rm)
{
	struct wref *w = wref_of(D, wd);

	if (rm)
		inotify_rm_watch(D->ifd, wd);
	if (!w)
		return;
	htab_remove(&D->wds, &w->node);
	free(w);
	__atomic_sub_fetch(&D->watches_used, 1, __ATOMIC_RELAXED);
}

/* A watch on path for sec (ent NULL: its root): the wd, or -1 when none
 * could be had (the limit: logged once, the caller rescans instead). */
static int watch(struct discover *D, struct dsec *sec, struct entry *ent, const char *path)
{
	struct wref *w;
	int wd;

	if (D->max_watches && D->watches_used >= D->max_watches && ent && ent->wd >= 0) {
		return ent->wd; /* the test knob: one it has already */
	} else if (D->max_watches && D->watches_used >= D->max_watches) {
		errno = ENOSPC;
		wd = -1;
	} else {
		wd = inotify_add_watch(D->ifd, path, ent ? DIR_MASK : ROOT_MASK);
	}
	if (wd < 0) {
		if (errno == ENOSPC && !D->limit_logged) {
			D->limit_logged = true;
			log_warn("discover: the inotify watch limit is reached "
				 "(fs.inotify.max_user_watches) at %zu watch(es): the directories "
				 "without a watch are rescanned every %u ms instead",
				 D->watches_used, DISCOVER_UNWATCHED_RESCAN_MS);
		} else if (errno != ENOSPC && errno != ENOENT && errno != ENOTDIR) {
			log_warn("discover.%s: cannot watch %s%s%s: %s", sec->cfg.name,
				 sec->cfg.root, ent ? "/" : "", ent ? ent->alloc : "",
				 strerror(errno));
		}
		return -1;
	}
	if ((w = wref_of(D, wd))) {
		w->sec = sec;
		w->ent = ent;
		return wd;
	}
	w = calloc(1, sizeof(*w));
	if (!w || htab_insert(&D->wds, &w->node, (uint64_t)(unsigned)wd) < 0) {
		free(w);
		inotify_rm_watch(D->ifd, wd);
		return -1;
	}
	w->sec = sec;
	w->ent = ent;
	__atomic_add_fetch(&D->watches_used, 1, __ATOMIC_RELAXED);
	return wd;
}

static void set_unwatched(struct discover *D, struct entry *e, bool un)
{
	if (e->unwatched == un)
		return;
	e->unwatched = un;
	if (un)
		__atomic_add_fetch(&D->st_unwatched, 1, __ATOMIC_RELAXED);
	else
		__atomic_sub_fetch(&D->st_unwatched, 1, __ATOMIC_RELAXED);
	if (un && !D->next_unwatched_ms)
		D->next_unwatched_ms = plugfs_mono_ms() + DISCOVER_UNWATCHED_RESCAN_MS;
}

/* The root held, watched through its descriptor (not cfg.root: a path
 * someone may have changed since). */
static void watch_root(struct discover *D, struct dsec *s)
{
	char path[64];

	if (s->root_wd >= 0 || s->root_fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d/.", s->root_fd);
	s->root_wd = watch(D, s, NULL, path);
	if (s->root_wd < 0 && !D->next_unwatched_ms)
		D->next_unwatched_ms = plugfs_mono_ms() + DISCOVER_UNWATCHED_RESCAN_MS;
}

static void watch_dir(struct discover *D, struct entry *e)
{
	char path[PATH_MAX];
	int wd;

	if (e->sec->root_fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", e->sec->root_fd, e->alloc);
	wd = watch(D, e->sec, e, path);
	if (wd >= 0 && e->wd >= 0 && wd != e->wd)
		unwatch(D, e->wd, true); /* the directory was replaced */
	if (wd >= 0)
		e->wd = wd;
	set_unwatched(D, e, wd < 0);
}

/* ---- the root held ---------------------------------------------------- */

/* Whether a section other than s watches the directory of ancestor wd
 * (one inode, one wd: roots share the directories above them). */
static bool anc_shared(struct discover *D, const struct dsec *s, int wd)
{
	for (size_t i = 0; i < D->n_secs; i++) {
		const struct dsec *o = D->secs[i];

		for (size_t k = 0; o != s && k < o->n_anc; k++)
			if (o->anc_wd[k] == wd)
				return true;
	}
	return false;
}

static void unwatch_ancestors(struct discover *D, struct dsec *s)
{
	for (size_t k = 0; k < s->n_anc; k++)
		if (!anc_shared(D, s, s->anc_wd[k]))
			inotify_rm_watch(D->afd, s->anc_wd[k]);
	s->n_anc = 0;
	s->anc_unwatched = false;
}

/* The directories above the held root, from its parent up to `/', each
 * watched through a descriptor of its own (`..' of the one below: the
 * root's real parents, whatever its path names meanwhile). */
static void watch_ancestors(struct discover *D, struct dsec *s)
{
	struct stat st, up;
	int cur = openat(s->root_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);

	s->anc_unwatched = cur < 0 || fstat(cur, &st) < 0;
	while (!s->anc_unwatched && s->n_anc < ANC_MAX) {
		char path[64];
		int wd, next;

		snprintf(path, sizeof(path), "/proc/self/fd/%d/.", cur);
		wd = inotify_add_watch(D->afd, path, ANC_MASK);
		if (wd < 0) {
			s->anc_unwatched = true;
			break;
		}
		s->anc_wd[s->n_anc++] = wd;
		next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (next < 0 || fstat(next, &up) < 0) {
			s->anc_unwatched = true;
			if (next >= 0)
				close(next);
			break;
		}
		close(cur);
		cur = next;
		if (up.st_dev == st.st_dev && up.st_ino == st.st_ino)
			break; /* `/': its own parent */
		st = up;
	}
	if (s->n_anc == ANC_MAX)
		s->anc_unwatched = true;
	if (cur >= 0)
		close(cur);
	if (s->anc_unwatched && !D->next_unwatched_ms)
		D->next_unwatched_ms = plugfs_mono_ms() + DISCOVER_UNWATCHED_RESCAN_MS;
}

/* The held root let go: its watch, those above it, its descriptor. */
static void root_release(struct discover *D, struct dsec *s)
{
	if (s->root_wd >= 0)
		unwatch(D, s->root_wd, true);
	s->root_wd = -1;
	unwatch_ancestors(D, s);
	if (s->root_fd >= 0)
		close(s->root_fd);
	s->root_fd = -1;
}

/* A scan's or a root check's error that says the root went or is not to
 * be trusted (its registrations go), not that the scan could not be made
 * (no file descriptor left, an I/O error: tried again). */
static bool root_refused(int rc)
{
	return rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP || rc == -EPERM || rc == -EACCES ||
	       rc == -EXDEV;
}

/* Every registration found below s's root goes (why: the log's reason). */
static void entries_gone(struct discover *D, struct dsec *s, const char *why);

/*
 * Whether cfg.root still leads, by the trust rule, to the root s holds
 * (its dev and ino): it is held (opened, watched, with the directories
 * above it) the first time, and again when the path names another
 * directory now (a directory on the way renamed or replaced): the
 * registrations found in the old one go first, with a line that names the
 * root.  0 (s->root_fd is the one to scan), or -errno with err (the root
 * refused or gone: let go; else kept, tried again).
 */
static int root_check(struct discover *D, struct dsec *s, char *err, size_t errlen)
{
	struct stat st;
	int fd = discover_open_root(&s->cfg, D->own, &st, err, errlen);

	s->verify = false;
	if (fd < 0) {
		if (root_refused(fd))
			root_release(D, s);
		return fd;
	}
	if (s->root_fd >= 0 && (st.st_dev != s->root_dev || st.st_ino != s->root_ino)) {
		log_warn("%s: root %s is another directory now (a directory on its path was "
			 "renamed or replaced): the registrations found in the one held go, the "
			 "new one is scanned",
			 s->source, s->cfg.root);
		entries_gone(D, s, "its root was replaced");
		root_release(D, s);
	}
	if (s->root_fd >= 0) {
		close(fd);
		watch_root(D, s); /* moved away and back: watched again */
		return 0;
	}
	s->root_fd = fd;
	s->root_dev = st.st_dev;
	s->root_ino = st.st_ino;
	watch_root(D, s);
	watch_ancestors(D, s);
	s->dirty_all = true;
	/* Once more at the next pass: a rename between the open and the
	 * watches above sent no event. */
	s->verify = true;
	return 0;
}

/* ---- registry --------------------------------------------------------- */

/* e held (EST_HELD) with its socket there: the hold stored, so that a
 * restart keeps it (registry_hold).  A failure to store it is logged; the
 * hold still holds until plugfs stops. */
static void hold_store(struct discover *D, struct entry *e)
{
	char err[REG_ERR_MAX];
	struct timespec ct = e->ctime;
	struct stat st;

	if (!e->have_sock || !e->socket)
		return;
	/* The change time now (a chmod since it was found moved it on): the
	 * start keeps the hold only for that socket, and an inode number a
	 * file system handed on to a new socket made while plugfs was down
	 * has another.  Only read, and only when it is still that socket. */
	if (e->sec->root_fd >= 0 &&
	    discover_stat_socket(&e->sec->cfg, e->sec->root_fd, e->alloc, &st) == 0 &&
	    st.st_dev == e->dev && st.st_ino == e->ino)
		ct = st.st_ctim;
	if (registry_hold(D->reg, e->sec->source, e->alloc, (uint64_t)e->dev, (uint64_t)e->ino,
			  (int64_t)ct.tv_sec * 1000000000 + ct.tv_nsec, err, sizeof(err)) < 0) {
		log_warn("%s: alloc %s: cannot store its hold, which lasts until plugfs stops: %s",
			 e->sec->source, e->alloc, err);
		return;
	}
	e->hold_stored = true;
}

/* e's stored hold, deleted: its socket changed or went, or its section. */
static void hold_drop(struct discover *D, struct entry *e)
{
	char err[REG_ERR_MAX];

	if (!e->hold_stored)
		return;
	if (registry_unhold(D->reg, e->sec->source, e->alloc, err, sizeof(err)) < 0) {
		/* Kept for the next change; a start drops a stale one (its
		 * inode is not the socket's). */
		log_warn("%s: alloc %s: cannot delete its stored hold: %s", e->sec->source,
			 e->alloc, err);
		return;
	}
	e->hold_stored = false;
}

/* Deregisters e's registration of D->types[ti] when it is still the
 * discovery's (its source e's section's).  One call compares the source
 * and removes it, under the registry's locks: a look first and a
 * deregister after it removed a register of the control socket that
 * came in between (the client had its answer, the registration went). */
static void dereg_one(struct discover *D, struct entry *e, int ti, const char *why)
{
	char err[REG_ERR_MAX];
	bool removed = false;
	int rc;

	tl_ours = true;
	rc = registry_deregister_if_source(D->reg, D->types[ti], e->name, e->alloc, e->sec->source,
					   &removed, err, sizeof(err));
	tl_ours = false;
	if (rc < 0) {
		log_error("%s: cannot deregister %s/%s alloc %s: %s", e->sec->source, D->types[ti],
			  e->name, e->alloc, err);
		return;
	}
	if (removed) {
		__atomic_add_fetch(&D->st_deregistered, 1, __ATOMIC_RELAXED);
		log_info("%s: deregistered %s/%s alloc %s: %s", e->sec->source, D->types[ti],
			 e->name, e->alloc, why);
	}
}

static void drop_type(struct entry *e, size_t k)
{
	for (size_t i = k + 1; i < e->n_types; i++) {
		e->types[i - 1] = e->types[i];
		e->dead_since[i - 1] = e->dead_since[i];
	}
	e->n_types--;
	if (!e->n_types) {
		free(e->name);
		e->name = NULL;
	}
}

static void dereg_all(struct discover *D, struct entry *e, const char *why)
{
	while (e->n_types) {
		dereg_one(D, e, e->types[0], why);
		drop_type(e, 0);
	}
}

/* Refuses e (logged once: the state says it was) until its socket changes. */
static void refuse(struct discover *D, struct entry *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(struct discover *D, struct entry *e, const char *fmt, ...)
{
	char why[REG_ERR_MAX + 128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	log_warn("%s: %s: %s; not registered", e->sec->source, e->socket, why);
	dereg_all(D, e, "its plugin is refused now");
	e->st = EST_REFUSED;
}

static void retry_later(struct discover *D, struct entry *e)
{
	e->backoff_ms = e->backoff_ms ? e->backoff_ms * 2 : DISCOVER_RETRY_MIN_MS;
	if (e->backoff_ms > DISCOVER_RETRY_MAX_MS)
		e->backoff_ms = DISCOVER_RETRY_MAX_MS;
	e->retry_at = plugfs_mono_ms() + e->backoff_ms;
	e->st = EST_RETRY;
	(void)D;
}

/* e's socket answered as id (NULL: not asked, the section fixes both
 * type and name): registered by the section's rules, or refused. */
static void register_entry(struct discover *D, struct entry *e, const struct probe_identity *id)
{
	const struct plugfs_discover *c = &e->sec->cfg;
	const char *tn[MAX_TYPES];
	int ti[MAX_TYPES];
	size_t nt = 0;
	enum reg_kind kind = REG_KIND_UNSET;
	const char *name = c->plugin ? c->plugin : id->name, *version = NULL;
	struct reg_runtime rt = {0};
	struct reg_spec spec;
	struct timespec now;
	char err[REG_ERR_MAX];
	int rc;

	if (c->type) {
		if ((ti[0] = type_index(D, c->type)) < 0) {
			refuse(D, e, "its type %s is not one of [registry] types", c->type);
			return;
		}
		nt = 1;
	} else {
		const char *want[MAX_TYPES];
		size_t nw = 0;

		if (id->controller)
			want[nw++] = "csi-controller";
		if (id->node)
			want[nw++] = "csi-node";
		kind = id->controller && id->node ? REG_KIND_MONOLITH
		       : id->controller		  ? REG_KIND_CONTROLLER
						  : REG_KIND_NODE;
		if (!nw) {
			refuse(D, e,
			       "the plugin lists no CONTROLLER_SERVICE and does not answer "
			       "NodeGetInfo: its type is unknown (set type in [%s])",
			       e->sec->source);
			return;
		}
		for (size_t i = 0; i < nw; i++)
			if (type_index(D, want[i]) >= 0)
				ti[nt++] = type_index(D, want[i]);
		if (!nt) {
			refuse(D, e, "its type %s is not one of [registry] types", want[0]);
			return;
		}
	}
	for (size_t i = 0; i < nt; i++)
		tn[i] = D->types[ti[i]];
	if (id && id->version[0] && reg_validate_printable("version", id->version, NULL, 0) == 0 &&
	    strlen(id->version) <= REG_VALUE_MAX)
		version = id->version;
	clock_gettime(CLOCK_REALTIME, &now);
	rt.health = REG_HEALTH_ALIVE;
	rt.since = rt.probed_at = now.tv_sec;
	spec = (struct reg_spec){
	    .name = name,
	    .alloc = e->alloc,
	    .socket = e->socket,
	    .version = version,
	    .kind = kind,
	    .source = e->sec->source,
	    .runtime = id ? &rt : NULL,
	};
	if (registry_check_register(D->reg, tn, nt, &spec, err, sizeof(err)) < 0) {
		refuse(D, e, "%s", err);
		return;
	}
	/* What it was registered as and is no more (another name, a type it
	 * lost) goes first. */
	for (size_t k = 0; k < e->n_types;) {
		bool keep = e->name && strcmp(e->name, name) == 0;
		bool in = false;

		for (size_t i = 0; i < nt; i++)
			in |= ti[i] == e->types[k];
		if (keep && in) {
			k++;
			continue;
		}
		dereg_one(D, e, e->types[k], "its plugin says another name or type now");
		drop_type(e, k);
	}
	tl_ours = true;
	rc = registry_register(D->reg, tn, nt, &spec, err, sizeof(err));
	tl_ours = false;
	if (rc < 0) {
		log_error("%s: %s: cannot register it: %s", e->sec->source, e->socket, err);
		retry_later(D, e);
		return;
	}
	if (!e->name && !(e->name = strdup(name))) {
		retry_later(D, e);
		return;
	}
	for (size_t i = 0; i < nt; i++) {
		bool have = false;

		for (size_t k = 0; k < e->n_types; k++)
			have |= e->types[k] == ti[i];
		if (!have) {
			e->types[e->n_types] = ti[i];
			e->dead_since[e->n_types++] = 0;
		}
	}
	/* It answered: not dead, whatever the registry still says until the
	 * prober's next verdict (forget_after counts from a death after this). */
	if (id)
		for (size_t k = 0; k < e->n_types; k++)
			e->dead_since[k] = 0;
	e->st = EST_IDLE;
	e->backoff_ms = 0;
	__atomic_add_fetch(&D->st_registered, 1, __ATOMIC_RELAXED);
	log_info("%s: registered %s%s%s/%s alloc %s, socket %s (%.0f ms after the socket was "
		 "created)",
		 e->sec->source, tn[0], nt > 1 ? "+" : "", nt > 1 ? tn[1] : "", name, e->alloc,
		 e->socket,
		 (double)(now.tv_sec - e->ctime.tv_sec) * 1e3 +
		     (double)(now.tv_nsec - e->ctime.tv_nsec) / 1e6);
}

/* The registry's events (under the registry mutex: copy and queue only). */
static void on_event(const struct reg_event *ev, void *arg)
{
	struct discover *D = arg;
	const struct registration *g = ev->reg;
	struct note *n;

	if (!g || !g->source ||
	    strncmp(g->source, REG_SOURCE_DISCOVER, strlen(REG_SOURCE_DISCOVER)) != 0)
		return;
	if (ev->type == REG_EV_DEREGISTERED && !tl_ours) {
		n = calloc(1, sizeof(*n));
		if (!n)
			return;
		n->kind = NOTE_HELD;
	} else if (ev->type == REG_EV_RUNTIME ||
		   (ev->type == REG_EV_REGISTERED && g->runtime.health == REG_HEALTH_DEAD)) {
		n = calloc(1, sizeof(*n));
		if (!n)
			return;
		n->kind = NOTE_HEALTH;
		n->dead = g->runtime.health == REG_HEALTH_DEAD;
		n->since = g->runtime.since;
	} else {
		return;
	}
	n->source = strdup(g->source + strlen(REG_SOURCE_DISCOVER));
	n->alloc = strdup(g->alloc);
	n->type = strdup(g->type);
	if (!n->source || !n->alloc || !n->type) {
		free(n->source);
		free(n->alloc);
		free(n->type);
		free(n);
		return;
	}
	pthread_mutex_lock(&D->mu);
	if (D->notes_tail)
		D->notes_tail->next = n;
	else
		D->notes = n;
	D->notes_tail = n;
	pthread_mutex_unlock(&D->mu);
	wake(D);
}

static void note_forget_deadline(struct discover *D, struct entry *e, int64_t since)
{
	int64_t at;

	if (!since || e->sec->cfg.forget_after <= 0)
		return;
	at = since + e->sec->cfg.forget_after;
	if (!D->next_forget || at < D->next_forget)
		D->next_forget = at;
}

static void take_notes(struct discover *D)
{
	struct note *n;

	pthread_mutex_lock(&D->mu);
	n = D->notes;
	D->notes = D->notes_tail = NULL;
	pthread_mutex_unlock(&D->mu);
	while (n) {
		struct note *next = n->next;
		struct dsec *s = sec_by_name(D, n->source);
		struct entry *e = s ? hash_get(&s->ents, n->alloc) : NULL;
		int ti = type_index(D, n->type);

		for (size_t k = 0; e && k < e->n_types; k++) {
			if (e->types[k] != ti)
				continue;
			if (n->kind == NOTE_HELD) {
				log_info("%s: %s/%s alloc %s deregistered by hand: not registered "
					 "again until its socket is created again",
					 s->source, n->type, e->name, e->alloc);
				drop_type(e, k);
				e->st = EST_HELD;
				e->gen = ++D->last_gen;
				hold_store(D, e);
			} else {
				e->dead_since[k] = n->dead ? (n->since ? n->since : wall_s()) : 0;
				note_forget_deadline(D, e, e->dead_since[k]);
			}
			break;
		}
		free(n->source);
		free(n->alloc);
		free(n->type);
		free(n);
		n = next;
	}
}

/* Whether (type, name, alloc) is dead in the registry since at most
 * before. */
static bool still_dead(struct discover *D, struct entry *e, int ti, int64_t before)
{
	struct registration g;
	bool dead;

	if (registry_get_registration(D->reg, D->types[ti], e->name, e->alloc, &g) != 0)
		return false;
	dead = g.runtime.health == REG_HEALTH_DEAD && g.runtime.since && g.runtime.since <= before;
	registration_free_contents(&g);
	return dead;
}

/* forget_after: the registrations dead that long go. */
static void forget_due(struct discover *D)
{
	int64_t now = wall_s();

	if (!D->next_forget || now < D->next_forget)
		return;
	D->next_forget = 0;
	for (size_t i = 0; i < D->n_secs; i++) {
		struct dsec *s = D->secs[i];
		struct hash_entry *he = NULL;
		size_t pos = 0;

		if (s->cfg.forget_after <= 0)
			continue;
		while ((he = hash_next(&s->ents, &pos, he))) {
			struct entry *e = he->value;

			for (size_t k = 0; k < e->n_types;) {
				int64_t since = e->dead_since[k];

				if (!since) {
					k++;
					continue;
				}
				if (now - since < s->cfg.forget_after) {
					note_forget_deadline(D, e, since);
					k++;
					continue;
				}
				if (!still_dead(D, e, e->types[k], now - s->cfg.forget_after)) {
					e->dead_since[k] = 0;
					k++;
					continue;
				}
				char why[96];

				snprintf(why, sizeof(why), "dead for %lld s (forget_after %lld)",
					 (long long)(now - since), (long long)s->cfg.forget_after);
				dereg_one(D, e, e->types[k], why);
				drop_type(e, k);
				if (!e->n_types) {
					e->st = EST_HELD;
					e->gen = ++D->last_gen;
					hold_store(D, e);
				}
			}
		}
	}
}

/* ---- the identification workers ------------------------------------- */

static void job_free(struct job *j)
{
	for (size_t i = 0; j && i < j->n; i++) {
		free(j->it[i].alloc);
		free(j->it[i].path);
	}
	if (j)
		free(j->it);
	free(j);
}

static void run_job(struct discover *D, struct job *j)
{
	const char **paths = calloc(j->n ? j->n : 1, sizeof(*paths));
	struct probe_identity *out = calloc(j->n ? j->n : 1, sizeof(*out));

	if (!paths || !out) {
		j->rc = -ENOMEM;
	} else {
		for (size_t i = 0; i < j->n; i++)
			paths[i] = j->it[i].path;
		j->rc = probe_csi_identify(paths, j->n, D->timeout_ms, out, &D->stop);
		for (size_t i = 0; j->rc == 0 && i < j->n; i++)
			j->it[i].id = out[i];
	}
	free(paths);
	free(out);
}

static void *worker_main(void *arg)
{
	struct discover *D = arg;

	pthread_mutex_lock(&D->mu);
	for (;;) {
		struct job *j;

		while (!D->jobs && !__atomic_load_n(&D->stop, __ATOMIC_SEQ_CST))
			pthread_cond_wait(&D->cond, &D->mu);
		if (__atomic_load_n(&D->stop, __ATOMIC_SEQ_CST))
			break;
		j = D->jobs;
		D->jobs = j->next;
		if (!D->jobs)
			D->jobs_tail = NULL;
		j->next = NULL;
		pthread_mutex_unlock(&D->mu);
		run_job(D, j);
		pthread_mutex_lock(&D->mu);
		if (D->done_tail)
			D->done_tail->next = j;
		else
			D->done = j;
		D->done_tail = j;
		wake(D);
	}
	pthread_mutex_unlock(&D->mu);
	return NULL;
}

/* A batch of the entries es[0..n), in that order. */
static struct job *make_job(struct entry **es, size_t n, bool retry)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j || !(j->it = calloc(n, sizeof(*j->it)))) {
		free(j);
		return NULL;
	}
	j->retry = retry;
	for (size_t i = 0; i < n; i++) {
		j->it[i].sec_id = es[i]->sec->id;
		j->it[i].gen = es[i]->gen;
		j->it[i].alloc = strdup(es[i]->alloc);
		j->it[i].path = strdup(es[i]->socket);
		j->n++;
		if (!j->it[i].alloc || !j->it[i].path) {
			job_free(j);
			return NULL;
		}
	}
	return j;
}

/* A batch's results, in its order (the sockets' creation order). */
static void apply_job(struct discover *D, struct job *j)
{
	if (j->retry)
		D->retry_inflight = false;
	for (size_t i = 0; i < j->n; i++) {
		struct jitem *it = &j->it[i];
		struct dsec *s = sec_by_id(D, it->sec_id);
		struct entry *e = s ? hash_get(&s->ents, it->alloc) : NULL;

		if (!e || e->gen != it->gen || e->st != EST_PENDING)
			continue; /* gone or changed meanwhile */
		if (j->rc == 0 && it->id.res.ok) {
			register_entry(D, e, &it->id);
			continue;
		}
		/* An answer plugfs does not take (its name has a NUL byte, say)
		 * is the plugin's answer: refused, as a name the registry's
		 * rules refuse, not asked for again every 10 s. */
		if (j->rc == 0 && it->id.invalid) {
			refuse(D, e, "its identity is refused: %s", it->id.res.error);
			continue;
		}
		__atomic_add_fetch(&D->st_failed, 1, __ATOMIC_RELAXED);
		if (!e->backoff_ms)
			log_info(
			    "%s: %s does not answer yet (%s): asked again, after %u ms doubling "
			    "up to %u ms",
			    s->source, e->socket, j->rc ? strerror(-j->rc) : it->id.res.error,
			    DISCOVER_RETRY_MIN_MS, DISCOVER_RETRY_MAX_MS);
		retry_later(D, e);
	}
}

static void push_job(struct discover *D, struct job *j)
{
	pthread_mutex_lock(&D->mu);
	if (D->jobs_tail)
		D->jobs_tail->next = j;
	else
		D->jobs = j;
	D->jobs_tail = j;
	pthread_cond_signal(&D->cond);
	pthread_mutex_unlock(&D->mu);
}

static void take_done(struct discover *D)
{
	struct job *j;

	pthread_mutex_lock(&D->mu);
	j = D->done;
	D->done = D->done_tail = NULL;
	pthread_mutex_unlock(&D->mu);
	while (j) {
		struct job *next = j->next;

		apply_job(D, j);
		job_free(j);
		j = next;
	}
}

/* ---- scanning --------------------------------------------------------- */

static struct entry *entry_get(struct dsec *s, const char *alloc)
{
	struct entry *e = hash_get(&s->ents, alloc);

	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->alloc = strdup(alloc)) || hash_put(&s->ents, alloc, e) < 0) {
		if (e)
			free(e->alloc);
		free(e);
		return NULL;
	}
	e->sec = s;
	e->wd = -1;
	return e;
}

static void entry_free(struct discover *D, struct entry *e)
{
	if (e->wd >= 0)
		unwatch(D, e->wd, true);
	set_unwatched(D, e, false);
	free(e->alloc);
	free(e->socket);
	free(e->name);
	free(e);
}

/* e's directory (or its socket) went: its registrations go. */
static void entry_gone(struct discover *D, struct entry *e, bool dir_gone)
{
	hold_drop(D, e);
	dereg_all(D, e, dir_gone ? "its directory is gone" : "its socket is gone");
	e->have_sock = false;
	e->gen = ++D->last_gen;
	e->st = EST_IDLE;
	e->backoff_ms = 0;
	if (dir_gone) {
		hash_del(&e->sec->ents, e->alloc);
		entry_free(D, e);
	}
}

static void entries_gone(struct discover *D, struct dsec *s, const char *why)
{
	struct hash_entry *he = NULL;
	size_t pos = 0;
	struct entry **gone = NULL;
	size_t n = 0, cap = 0;

	while ((he = hash_next(&s->ents, &pos, he)))
		if (PLUGFS_GROW(gone, cap, n, 8) == 0)
			gone[n++] = he->value;
	for (size_t i = 0; i < n; i++) {
		hold_drop(D, gone[i]);
		dereg_all(D, gone[i], why);
		hash_del(&s->ents, gone[i]->alloc);
		entry_free(D, gone[i]);
	}
	free(gone);
}

static int by_ctime(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;

	if (x->ctime.tv_sec != y->ctime.tv_sec)
		return x->ctime.tv_sec < y->ctime.tv_sec ? -1 : 1;
	if (x->ctime.tv_nsec != y->ctime.tv_nsec)
		return x->ctime.tv_nsec < y->ctime.tv_nsec ? -1 : 1;
	return strcmp(x->alloc, y->alloc);
}

/* The fresh sockets of one pass: identified together, registered oldest
 * first. */
struct fresh {
	struct entry **e;
	size_t n, cap;
};

static void fresh_add(struct fresh *f, struct entry *e)
{
	if (PLUGFS_GROW(f->e, f->cap, f->n, 16) == 0)
		f->e[f->n++] = e;
}

/* The skip messages of a scan, each logged once per entry while it lasts. */
static void warn_skipped(struct dsec *s, const struct discover_scan *sc, const char *const *scope,
			 size_t n_scope)
{
	struct hash seen = {0};

	for (size_t i = 0; i < sc->n_skipped; i++) {
		const char *old = hash_get(&s->warned, sc->skipped_name[i]);
		char *msg;

		hash_put(&seen, sc->skipped_name[i], s);
		if (old && strcmp(old, sc->skipped[i]) == 0)
			continue;
		log_warn("%s: %s", s->source, sc->skipped[i]);
		if ((msg = strdup(sc->skipped[i]))) {
			free(hash_del(&s->warned, sc->skipped_name[i]));
			if (hash_put(&s->warned, sc->skipped_name[i], msg) < 0)
				free(msg);
		}
	}
	if (scope) {
		for (size_t i = 0; i < n_scope; i++)
			if (!hash_get(&seen, scope[i]))
				free(hash_del(&s->warned, scope[i]));
	} else {
		struct hash_entry *he = NULL;
		size_t pos = 0;
		char **drop = NULL;
		size_t n = 0, cap = 0;

		while ((he = hash_next(&s->warned, &pos, he)))
			if (!hash_get(&seen, he->key) && PLUGFS_GROW(drop, cap, n, 8) == 0)
				drop[n++] = he->key;
		for (size_t i = 0; i < n; i++)
			free(hash_del(&s->warned, drop[i]));
		free(drop);
	}
	hash_free(&seen);
}

/* Rescans what is dirty in s and reconciles: new sockets into f, what went
 * deregistered. */
static void rescan(struct discover *D, struct dsec *s, struct fresh *f)
{
	struct discover_scan sc = {0};
	char err[CONFIG_ERR_MAX];
	const char **scope = NULL;
	size_t n_scope = 0;
	struct hash dirs = {0};
	struct entry **rewatch = NULL;
	size_t n_rewatch = 0;
	int rc;

	if (!s->dirty_all && !hash_count(&s->dirty) && !s->verify)
		return;
	/* The root first: cfg.root still leads to the directory held. */
	rc = root_check(D, s, err, sizeof(err));
	if (rc == 0 && !s->dirty_all && !hash_count(&s->dirty))
		return; /* a look at the path only: nothing to read again */
	if (rc == 0 && !s->dirty_all) {
		struct hash_entry *he = NULL;
		size_t pos = 0;

		scope = calloc(hash_count(&s->dirty), sizeof(*scope));
		if (!scope)
			return;
		while ((he = hash_next(&s->dirty, &pos, he)))
			scope[n_scope++] = he->key;
		rc =
		    discover_scan_names(&s->cfg, s->root_fd, scope, n_scope, &sc, err, sizeof(err));
	} else if (rc == 0) {
		rc = discover_scan_root(&s->cfg, s->root_fd, &sc, err, sizeof(err));
	}
	__atomic_add_fetch(&D->st_rescans, 1, __ATOMIC_RELAXED);
	if (rc < 0) {
		if (!root_refused(rc)) {
			/* Out of memory or of file descriptors, an I/O error:
			 * nothing is known to have gone.  dirty stays, and the
			 * root is read again at the next rescan. */
			log_warn("%s: %s; tried again in %u ms", s->source, err,
				 DISCOVER_UNWATCHED_RESCAN_MS);
			if (!D->next_unwatched_ms)
				D->next_unwatched_ms =
				    plugfs_mono_ms() + DISCOVER_UNWATCHED_RESCAN_MS;
			free(scope);
			return;
		}
		/* The root went, or is not to be trusted any more (itself or a
		 * directory above it): nothing under it is. */
		if (!s->root_logged)
			log_warn("%s: %s: its registrations go, rescanned every %u ms until it is "
				 "good again",
				 s->source, err, DISCOVER_UNWATCHED_RESCAN_MS);
		s->root_logged = true;
		if (!D->next_unwatched_ms)
			D->next_unwatched_ms = plugfs_mono_ms() + DISCOVER_UNWATCHED_RESCAN_MS;
		free(scope);
		scope = NULL;
		n_scope = 0;
		discover_scan_free(&sc);
		s->dirty_all = true; /* everything below it goes */
	} else if (s->root_logged) {
		log_info("%s: root %s is good again", s->source, s->cfg.root);
		s->root_logged = false;
	}
	warn_skipped(s, &sc, scope, n_scope);
	for (size_t i = 0; i < sc.n_dirs; i++)
		hash_put(&dirs, sc.dirs[i], s);
	/* What went. */
	if (s->dirty_all) {
		struct hash_entry *he = NULL;
		size_t pos = 0;
		struct entry **gone = NULL;
		size_t n = 0, cap = 0;

		while ((he = hash_next(&s->ents, &pos, he)))
			if (!hash_get(&dirs, he->key) && PLUGFS_GROW(gone, cap, n, 8) == 0)
				gone[n++] = he->value;
		for (size_t i = 0; i < n; i++)
			entry_gone(D, gone[i], true);
		free(gone);
	} else {
		for (size_t i = 0; i < n_scope; i++) {
			struct entry *e = hash_get(&s->ents, scope[i]);

			if (e && !hash_get(&dirs, scope[i]))
				entry_gone(D, e, true);
		}
	}
	/* The directories there: watched; a socket gone from one goes. */
	rewatch = sc.n_dirs ? calloc(sc.n_dirs, sizeof(*rewatch)) : NULL;
	for (size_t i = 0; i < sc.n_dirs; i++) {
		struct entry *e = entry_get(s, sc.dirs[i]);
		bool found = false;

		int wd_before;

		if (!e)
			continue;
		wd_before = e->wd;
		watch_dir(D, e);
		/* Scanned before its watch was added: a socket made in between
		 * sent no event.  Scanned once more (rescan_all's next pass). */
		if (e->wd >= 0 && e->wd != wd_before && n_rewatch < sc.n_dirs && rewatch)
			rewatch[n_rewatch++] = e;
		for (size_t k = 0; k < sc.n_found && !found; k++)
			found = strcmp(sc.found[k].alloc, sc.dirs[i]) == 0;
		if (!found && (e->have_sock || e->n_types))
			entry_gone(D, e, false);
	}
	/* The sockets there, oldest first: new or replaced ones to identify. */
	for (size_t k = 0; k < sc.n_found; k++) {
		const struct discover_found *x = &sc.found[k];
		struct entry *e = hash_get(&s->ents, x->alloc);
		char *p;

		if (!e)
			continue;
		/* The same socket: the same inode (a touch or a chmod of it is
		 * not a new socket).  A hold the start read from the state has
		 * no path yet, and holds only the socket of its inode and change
		 * time: across a stop, an inode number can have gone to a new
		 * socket. */
		if (e->have_sock && e->dev == x->dev && e->ino == x->ino &&
		    (e->socket ? strcmp(e->socket, x->socket) == 0
			       : e->ctime.tv_sec == x->ctime.tv_sec &&
				     e->ctime.tv_nsec == x->ctime.tv_nsec)) {
			if (!e->socket)
				e->socket = strdup(x->socket);
			continue;
		}
		if (!(p = strdup(x->socket)))
			continue;
		hold_drop(D, e); /* another socket: no longer held */
		free(e->socket);
		e->socket = p;
		e->have_sock = true;
		e->dev = x->dev;
		e->ino = x->ino;
		e->ctime = x->ctime;
		e->gen = ++D->last_gen;
		e->backoff_ms = 0;
		e->st = EST_PENDING;
		fresh_add(f, e);
	}
	hash_free(&dirs);
	discover_scan_free(&sc);
	free(scope);
	hash_free(&s->dirty);
	hash_init(&s->dirty);
	s->dirty_all = false;
	for (size_t i = 0; i < n_rewatch; i++)
		hash_put(&s->dirty, rewatch[i]->alloc, s);
	free(rewatch);
}

/* The fresh sockets: those that need no answer registered now, the others
 * handed to a worker (or identified here: sync, at start). */
static void dispatch(struct discover *D, struct fresh *f, bool sync)
{
	struct entry **ask = NULL;
	size_t n_ask = 0;
	struct job *j;

	if (!f->n)
		return;
	qsort(f->e, f->n, sizeof(*f->e), by_ctime);
	ask = calloc(f->n, sizeof(*ask));
	for (size_t i = 0; i < f->n; i++) {
		struct entry *e = f->e[i];

		if (e->sec->cfg.type && e->sec->cfg.plugin)
			register_entry(D, e, NULL);
		else if (ask)
			ask[n_ask++] = e;
		else
			retry_later(D, e);
	}
	if (n_ask) {
		j = make_job(ask, n_ask, false);
		if (!j) {
			for (size_t i = 0; i < n_ask; i++)
				retry_later(D, ask[i]);
		} else if (sync) {
			run_job(D, j);
			apply_job(D, j);
			job_free(j);
		} else {
			push_job(D, j);
		}
	}
	free(ask);
	free(f->e);
	memset(f, 0, sizeof(*f));
}

static void rescan_all(struct discover *D, bool sync)
{
	struct fresh f = {0};

	/* A second pass for the directories whose watch the first added. */
	for (int pass = 0; pass < 2; pass++) {
		bool again = false;

		for (size_t i = 0; i < D->n_secs; i++)
			rescan(D, D->secs[i], &f);
		for (size_t i = 0; i < D->n_secs; i++)
			again |= D->secs[i]->dirty_all || hash_count(&D->secs[i]->dirty) > 0 ||
				 D->secs[i]->verify;
		if (!again)
			break;
	}
	dispatch(D, &f, sync);
}

/* Due retries: one batch at a time (a stuck plugin holds back only the
 * others that do not answer). */
static int64_t retries_due(struct discover *D)
{
	int64_t now = plugfs_mono_ms(), next = -1;
	struct entry **due = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < D->n_secs; i++) {
		struct hash_entry *he = NULL;
		size_t pos = 0;

		while ((he = hash_next(&D->secs[i]->ents, &pos, he))) {
			struct entry *e = he->value;

			if (e->st != EST_RETRY)
				continue;
			/* A section that fixes type and name never asks the
			 * plugin: its retry (a registry refusal for lack of
			 * room, memory) registers again, here. */
			if (e->retry_at <= now && e->sec->cfg.type && e->sec->cfg.plugin) {
				register_entry(D, e, NULL);
				if (e->st == EST_RETRY && (next < 0 || e->retry_at < next))
					next = e->retry_at;
				continue;
			}
			if (e->retry_at <= now && !D->retry_inflight) {
				if (PLUGFS_GROW(due, cap, n, 16) == 0)
					due[n++] = e;
			} else if (next < 0 || e->retry_at < next) {
				next = e->retry_at;
			}
		}
	}
	if (n) {
		struct job *j;

		qsort(due, n, sizeof(*due), by_ctime);
		for (size_t i = 0; i < n; i++)
			due[i]->st = EST_PENDING;
		j = make_job(due, n, true);
		if (j) {
			D->retry_inflight = true;
			push_job(D, j);
		} else {
			for (size_t i = 0; i < n; i++)
				retry_later(D, due[i]);
		}
	}
	free(due);
	return next;
}

/* The 2 s rescan of what has no watch. */
static void unwatched_due(struct discover *D)
{
	bool any = false;

	if (!D->next_unwatched_ms || plugfs_mono_ms() < D->next_unwatched_ms)
		return;
	for (size_t i = 0; i < D->n_secs; i++) {
		struct dsec *s = D->secs[i];
		struct hash_entry *he = NULL;
		size_t pos = 0;

		if (s->root_wd < 0 || s->root_logged) {
			watch_root(D, s);
			s->dirty_all = true;
			any = true;
			continue;
		}
		/* Not every directory above the root has a watch: those it has
		 * again, and the root's path looked at. */
		if (s->anc_unwatched && s->root_fd >= 0) {
			unwatch_ancestors(D, s);
			watch_ancestors(D, s);
			s->verify = true;
			any = true;
		}
		/* Left dirty by a scan that failed (no file descriptor left,
		 * an I/O error): read again at this pass, and again later. */
		if (s->dirty_all || hash_count(&s->dirty))
			any = true;
		while ((he = hash_next(&s->ents, &pos, he))) {
			struct entry *e = he->value;

			if (e->unwatched) {
				hash_put(&s->dirty, e->alloc, s);
				any = true;
			}
		}
	}
	D->next_unwatched_ms = any ? plugfs_mono_ms() + DISCOVER_UNWATCHED_RESCAN_MS : 0;
}

/* ---- inotify ---------------------------------------------------------- */

static void all_dirty(struct discover *D)
{
	for (size_t i = 0; i < D->n_secs; i++)
		D->secs[i]->dirty_all = true;
}

static void read_inotify(struct discover *D)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t len = read(D->ifd, buf, sizeof(buf));

		if (len <= 0)
			return;
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			struct wref *w;

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				all_dirty(D);
				continue;
			}
			if (!(w = wref_of(D, ev->wd)))
				continue;
			if (!w->ent) { /* the root */
				struct dsec *s = w->sec;

				if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
					unwatch(D, ev->wd, !(ev->mask & IN_IGNORED));
					s->root_wd = -1;
					s->dirty_all = true;
					if (!D->next_unwatched_ms)
						D->next_unwatched_ms =
						    plugfs_mono_ms() + DISCOVER_UNWATCHED_RESCAN_MS;
				} else if (ev->len && ev->name[0]) {
					hash_put(&s->dirty, ev->name, s);
				} else {
					s->dirty_all = true; /* the root's own mode or owner */
				}
				continue;
			}
			/* An allocation's directory. */
			if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
				struct entry *e = w->ent;

				hash_put(&e->sec->dirty, e->alloc, e->sec);
				unwatch(D, ev->wd, !(ev->mask & IN_IGNORED));
				if (e->wd == ev->wd)
					e->wd = -1;
			} else if (!ev->len || strcmp(ev->name, w->ent->sec->cfg.socket) == 0) {
				hash_put(&w->ent->sec->dirty, w->ent->alloc, w->ent->sec);
			}
		}
	}
}

/* The directories above the roots: any event (a rename, a removal, a
 * chmod or chown of one, a lost event) has every root's path looked at
 * again.  A watch gone (IN_IGNORED: removed, its file system unmounted)
 * leaves the lists; the look at the path then holds the root again or
 * lets it go. */
static void read_ancestors(struct discover *D)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool any = false;

	for (;;) {
		ssize_t len = read(D->afd, buf, sizeof(buf));

		if (len <= 0)
			break;
		any = true;
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			p += sizeof(*ev) + ev->len;
			if (!(ev->mask & IN_IGNORED))
				continue;
			for (size_t i = 0; i < D->n_secs; i++) {
				struct dsec *s = D->secs[i];

				for (size_t k = 0; k < s->n_anc; k++) {
					if (s->anc_wd[k] != ev->wd)
						continue;
					s->anc_wd[k--] = s->anc_wd[--s->n_anc];
					s->anc_unwatched = true;
				}
			}
		}
	}
	for (size_t i = 0; any && i < D->n_secs; i++)
		D->secs[i]->verify = true;
}

/* The mount table changed (a mount or an unmount anywhere in the daemon's
 * mount namespace; mountinfo's poll reports each change once): every root
 * is read again, its path looked at, what a mount now hides goes and what
 * an unmount uncovered is found. */
static void mounts_changed(struct discover *D)
{
	__atomic_add_fetch(&D->st_mount_changes, 1, __ATOMIC_RELAXED);
	for (size_t i = 0; i < D->n_secs; i++) {
		D->secs[i]->dirty_all = true;
		D->secs[i]->verify = true;
	}
}

/* ---- sections added and removed ------------------------------------- */

static void sec_free(struct discover *D, struct dsec *s)
{
	struct hash_entry *he = NULL;
	size_t pos = 0;

	while ((he = hash_next(&s->ents, &pos, he)))
		entry_free(D, he->value);
	hash_free(&s->ents);
	pos = 0;
	he = NULL;
	while ((he = hash_next(&s->warned, &pos, he)))
		free(he->value);
	hash_free(&s->warned);
	hash_free(&s->dirty);
	root_release(D, s);
	sec_cfg_free(&s->cfg);
	free(s);
}

static struct dsec *sec_add(struct discover *D, const struct plugfs_discover *c)
{
	struct dsec *s = calloc(1, sizeof(*s));

	if (!s || PLUGFS_GROW(D->secs, D->cap_secs, D->n_secs, 4) < 0 ||
	    sec_cfg_copy(&s->cfg, c) < 0) {
		free(s);
		return NULL;
	}
	snprintf(s->source, sizeof(s->source), "%s%s", REG_SOURCE_DISCOVER, c->name);
	s->id = ++D->next_sec_id;
	s->root_fd = -1;
	s->root_wd = -1;
	s->dirty_all = true; /* its first rescan holds and watches the root, then reads it */
	D->secs[D->n_secs++] = s;
	return s;
}

static void sec_remove(struct discover *D, size_t i, const char *why)
{
	struct dsec *s = D->secs[i];
	struct hash_entry *he = NULL;
	size_t pos = 0;

	while ((he = hash_next(&s->ents, &pos, he))) {
		hold_drop(D, he->value);
		dereg_all(D, he->value, why);
	}
	memmove(&D->secs[i], &D->secs[i + 1], (D->n_secs - i - 1) * sizeof(*D->secs));
	D->n_secs--;
	sec_free(D, s);
}

static bool same_watch(const struct plugfs_discover *a, const struct plugfs_discover *b)
{
	struct plugfs_discover x = *a;

	x.forget_after = b->forget_after;
	memcpy(x.key_line, b->key_line, sizeof(x.key_line));
	x.line = b->line;
	return config_discover_equal(&x, b);
}

static void apply_reload(struct discover *D)
{
	struct plugfs_discover *ns;
	size_t n;

	pthread_mutex_lock(&D->mu);
	if (!D->have_pending) {
		pthread_mutex_unlock(&D->mu);
		return;
	}
	ns = D->pending;
	n = D->n_pending;
	D->pending = NULL;
	D->n_pending = 0;
	D->have_pending = false;
	pthread_mutex_unlock(&D->mu);
	for (size_t i = D->n_secs; i-- > 0;) {
		const struct plugfs_discover *c = NULL;

		for (size_t k = 0; k < n; k++)
			if (strcmp(ns[k].name, D->secs[i]->cfg.name) == 0)
				c = &ns[k];
		if (!c) {
			sec_remove(D, i, "its section is removed");
		} else if (!same_watch(&D->secs[i]->cfg, c)) {
			sec_remove(D, i, "its section changed");
		} else {
			D->secs[i]->cfg.forget_after = c->forget_after;
			D->next_forget = 1; /* look again */
		}
	}
	for (size_t k = 0; k < n; k++)
		if (!sec_by_name(D, ns[k].name) && !sec_add(D, &ns[k]))
			log_error("discover.%s: out of memory", ns[k].name);
	for (size_t k = 0; k < n; k++)
		sec_cfg_free(&ns[k]);
	free(ns);
}

/* ---- the loop --------------------------------------------------------- */

static int loop_timeout(struct discover *D, int64_t next_retry)
{
	int64_t now = plugfs_mono_ms(), until = -1;

	if (next_retry >= 0)
		until = next_retry;
	if (D->next_unwatched_ms && (until < 0 || D->next_unwatched_ms < until))
		until = D->next_unwatched_ms;
	if (D->next_forget) {
		int64_t f = now + (D->next_forget - wall_s()) * 1000 + 50;

		if (until < 0 || f < until)
			until = f;
	}
	return until < 0 ? -1 : plugfs_poll_ms(until);
}

static void *loop_main(void *arg)
{
	struct discover *D = arg;
	int64_t next_retry = -1;

	while (!__atomic_load_n(&D->stop, __ATOMIC_SEQ_CST)) {
		struct epoll_event evs[4];
		int n = epoll_wait(D->epfd, evs, 4, loop_timeout(D, next_retry));

		if (__atomic_load_n(&D->stop, __ATOMIC_SEQ_CST))
			break;
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == D->ifd) {
				read_inotify(D);
			} else if (evs[i].data.fd == D->afd) {
				read_ancestors(D);
			} else if (evs[i].data.fd == D->mfd) {
				mounts_changed(D);
			} else {
				uint64_t v;
				ssize_t r = read(D->efd, &v, sizeof(v));

				(void)r;
			}
		}
		apply_reload(D);
		take_notes(D);
		take_done(D);
		unwatched_due(D);
		rescan_all(D, false);
		next_retry = retries_due(D);
		forget_due(D);
	}
	return NULL;
}

/* ---- the start: what the registry holds already ----------------------- */

static void adopt_persisted(struct discover *D)
{
	struct reg_snapshot snap = {0};
	size_t plen = strlen(REG_SOURCE_DISCOVER);

	if (registry_snapshot(D->reg, NULL, &snap) != 0)
		return;
	for (size_t i = 0; i < snap.n_plugins; i++) {
		const struct reg_plugin *p = &snap.plugins[i];

		for (size_t j = 0; j < p->n_regs; j++) {
			const struct registration *g = &p->regs[j];
			struct dsec *s;
			struct entry *e;
			int ti;

			if (!g->source || strncmp(g->source, REG_SOURCE_DISCOVER, plen) != 0)
				continue;
			s = sec_by_name(D, g->source + plen);
			ti = type_index(D, g->type);
			if (!s || ti < 0) {
				char err[REG_ERR_MAX];
				bool removed = false;

				tl_ours = true;
				if (registry_deregister_if_source(D->reg, g->type, g->name,
								  g->alloc, g->source, &removed,
								  err, sizeof(err)) == 0 &&
				    removed) {
					__atomic_add_fetch(&D->st_deregistered, 1,
							   __ATOMIC_RELAXED);
					log_info(
					    "%s: deregistered %s/%s alloc %s: its section is gone",
					    g->source, g->type, g->name, g->alloc);
				}
				tl_ours = false;
				continue;
			}
			if (!(e = entry_get(s, g->alloc)) || e->n_types >= MAX_TYPES)
				continue;
			if (!e->name && !(e->name = strdup(g->name)))
				continue;
			if (strcmp(e->name, g->name) != 0)
				continue; /* one name per allocation: the scan settles the rest */
			e->types[e->n_types] = ti;
			e->dead_since[e->n_types++] =
			    g->runtime.health == REG_HEALTH_DEAD ? g->runtime.since : 0;
			note_forget_deadline(D, e, e->dead_since[e->n_types - 1]);
		}
	}
	reg_snapshot_free(&snap);
}

struct held {
	char *source, *alloc;
};

struct holds_read {
	struct discover *D;
	struct held *drop; /* of a section no longer configured */
	size_t n_drop, cap_drop;
};

static int adopt_hold(void *arg, const struct reg_hold *h, char *err, size_t errlen)
{
	struct holds_read *hr = arg;
	size_t plen = strlen(REG_SOURCE_DISCOVER);
	struct dsec *s = strncmp(h->source, REG_SOURCE_DISCOVER, plen) == 0
			     ? sec_by_name(hr->D, h->source + plen)
			     : NULL;
	struct entry *e;

	(void)err;
	(void)errlen;
	if (!s) {
		struct held x = {strdup(h->source), strdup(h->alloc)};

		if (x.source && x.alloc && PLUGFS_GROW(hr->drop, hr->cap_drop, hr->n_drop, 8) == 0) {
			hr->drop[hr->n_drop++] = x;
		} else {
			free(x.source);
			free(x.alloc);
		}
		return 0;
	}
	if (!(e = entry_get(s, h->alloc)))
		return 0;
	e->st = EST_HELD;
	e->have_sock = true;
	e->dev = (dev_t)h->dev;
	e->ino = (ino_t)h->ino;
	e->ctime.tv_sec = (time_t)(h->ctime_ns / 1000000000);
	e->ctime.tv_nsec = (long)(h->ctime_ns % 1000000000);
	e->hold_stored = true;
	return 0;
}

/* The holds the state keeps (registry_hold): an allocation deregistered by
 * hand or forgotten before the restart stays held while its socket is the
 * same (rescan keeps it, or drops the hold when the socket changed or
 * went); those of sections no longer configured are deleted. */
static void adopt_holds(struct discover *D)
{
	struct holds_read hr = {.D = D};
	char err[REG_ERR_MAX];

	if (registry_holds(D->reg, adopt_hold, &hr, err, sizeof(err)) < 0)
		log_warn("discover: cannot read the stored holds (deregistered allocations may "
			 "be registered again): %s",
			 err);
	for (size_t i = 0; i < hr.n_drop; i++) {
		if (registry_unhold(D->reg, hr.drop[i].source, hr.drop[i].alloc, err,
				    sizeof(err)) < 0)
			log_warn("%s: alloc %s: cannot delete its stored hold: %s",
				 hr.drop[i].source, hr.drop[i].alloc, err);
		free(hr.drop[i].source);
		free(hr.drop[i].alloc);
	}
	free(hr.drop);
}

/* After the start's scan: how many holds from before it still hold. */
static void log_holds(struct discover *D)
{
	size_t n = 0;

	for (size_t i = 0; i < D->n_secs; i++) {
		struct hash_entry *he = NULL;
		size_t pos = 0;

		while ((he = hash_next(&D->secs[i]->ents, &pos, he))) {
			const struct entry *e = he->value;

			n += e->st == EST_HELD && e->hold_stored;
		}
	}
	if (n)
		log_info("discover: %zu allocation%s held from before the start (deregistered "
			 "by hand or forgotten, the same socket still there): not registered "
			 "again until %s created again",
			 n, n == 1 ? "" : "s", n == 1 ? "its socket is" : "their sockets are");
}

/* ---- the API ---------------------------------------------------------- */

static int set_sections(struct discover *D, const struct plugfs_discover *secs, size_t n,
			struct plugfs_discover **out)
{
	struct plugfs_discover *c = calloc(n ? n : 1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (sec_cfg_copy(&c[i], &secs[i]) < 0) {
			for (size_t k = 0; k < i; k++)
				sec_cfg_free(&c[k]);
			free(c);
			return -ENOMEM;
		}
	}
	*out = c;
	(void)D;
	return 0;
}

int discover_start(const struct discover_options *o, const struct plugfs_discover *secs, size_t n,
		   struct discover **out, char *err, size_t errlen)
{
	struct discover *D = calloc(1, sizeof(*D));
	struct epoll_event ev = {.events = EPOLLIN};
	int rc;

	*out = NULL;
	if (!D)
		return plugfs_errf(err, errlen, -ENOMEM, "discover: out of memory");
	D->ifd = D->efd = D->epfd = D->afd = D->mfd = -1;
	D->own = plugfs_own_mount_ref(o->own);
	pthread_mutex_init(&D->mu, NULL);
	pthread_cond_init(&D->cond, NULL);
	D->reg = o->reg;
	D->timeout_ms = o->timeout_ms ? o->timeout_ms : 1000;
	D->max_watches = o->max_watches;
#ifdef PLUGFS_FAULTS
	/* Test knob: the watch limit reached early (test_discover_limit). */
	if (getenv("PLUGFS_FAULT_DISCOVER_MAX_WATCHES"))
		D->max_watches = (unsigned)atoi(getenv("PLUGFS_FAULT_DISCOVER_MAX_WATCHES"));
#endif
	D->types = calloc(o->n_types ? o->n_types : 1, sizeof(*D->types));
	if (!D->types) {
		rc = plugfs_errf(err, errlen, -ENOMEM, "discover: out of memory");
		goto fail;
	}
	for (size_t i = 0; i < o->n_types; i++) {
		if (!(D->types[i] = strdup(o->types[i]))) {
			rc = plugfs_errf(err, errlen, -ENOMEM, "discover: out of memory");
			goto fail;
		}
		D->n_types++;
	}
	D->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	D->afd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	D->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	D->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (D->ifd < 0 || D->afd < 0 || D->efd < 0 || D->epfd < 0) {
		rc = plugfs_errf(err, errlen, -errno,
				 "discover: cannot make its inotify, eventfd "
				 "or epoll descriptor: %s",
				 strerror(errno));
		goto fail;
	}
	ev.data.fd = D->ifd;
	epoll_ctl(D->epfd, EPOLL_CTL_ADD, D->ifd, &ev);
	ev.data.fd = D->afd;
	epoll_ctl(D->epfd, EPOLL_CTL_ADD, D->afd, &ev);
	ev.data.fd = D->efd;
	epoll_ctl(D->epfd, EPOLL_CTL_ADD, D->efd, &ev);
	/* Mounts below a root: without mountinfo's events (no /proc) such a
	 * change is seen at the next event of its root, a reload or a
	 * restart, as the log says once. */
	D->mfd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (D->mfd >= 0) {
		struct epoll_event mev = {.events = EPOLLPRI, .data.fd = D->mfd};

		if (epoll_ctl(D->epfd, EPOLL_CTL_ADD, D->mfd, &mev) != 0) {
			close(D->mfd);
			D->mfd = -1;
		}
	}
	if (D->mfd < 0 && n)
		log_warn("discover: cannot follow the mount table (/proc/self/mountinfo: %s): a "
			 "mount or an unmount below a root is seen at the next change of its root, "
			 "a reload or a restart",
			 strerror(errno));
	D->sub = registry_subscribe(D->reg, on_event, D);
	if (D->sub < 0) {
		rc = plugfs_errf(err, errlen, D->sub, "discover: cannot subscribe to the registry");
		D->sub = 0;
		goto fail;
	}
	/* Each root's first rescan holds it and sets its watches, then
	 * reads it: nothing created in between is missed. */
	for (size_t i = 0; i < n; i++) {
		if (!sec_add(D, &secs[i])) {
			rc = plugfs_errf(err, errlen, -ENOMEM, "discover: out of memory");
			goto fail;
		}
	}
	adopt_persisted(D);
	adopt_holds(D);
	rescan_all(D, true);
	take_notes(D);
	log_holds(D);
	for (size_t i = 0; i < DISCOVER_WORKERS; i++) {
		if ((rc = plugfs_thread_start(&D->workers[i], NULL, worker_main, D)) != 0) {
			rc = plugfs_errf(err, errlen, rc, "discover: cannot start a worker thread");
			goto fail;
		}
		D->n_workers++;
	}
	if ((rc = plugfs_thread_start(&D->thread, NULL, loop_main, D)) != 0) {
		rc = plugfs_errf(err, errlen, rc, "discover: cannot start its thread");
		goto fail;
	}
	D->thread_started = true;
	wake(D); /* the retries the start left */
	*out = D;
	return 0;
fail:
	discover_stop(D);
	return rc < 0 ? rc : -EIO;
}

int discover_reload(struct discover *D, const struct plugfs_discover *secs, size_t n)
{
	struct plugfs_discover *c = NULL;
	int rc;

	if (!D)
		return 0;
	if ((rc = set_sections(D, secs, n, &c)) < 0)
		return rc;
	pthread_mutex_lock(&D->mu);
	if (D->have_pending) {
		for (size_t k = 0; k < D->n_pending; k++)
			sec_cfg_free(&D->pending[k]);
		free(D->pending);
	}
	D->pending = c;
	D->n_pending = n;
	D->have_pending = true;
	pthread_mutex_unlock(&D->mu);
	wake(D);
	return 0;
}

void discover_stop(struct discover *D)
{
	if (!D)
		return;
	pthread_mutex_lock(&D->mu);
	__atomic_store_n(&D->stop, true, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&D->cond);
	pthread_mutex_unlock(&D->mu);
	if (D->efd >= 0)
		wake(D);
	if (D->thread_started)
		pthread_join(D->thread, NULL);
	for (size_t i = 0; i < D->n_workers; i++)
		pthread_join(D->workers[i], NULL);
	if (D->sub > 0)
		registry_unsubscribe(D->reg, D->sub);
	take_notes(D); /* the last ones applied (a hold stored) and freed */
	while (D->jobs) {
		struct job *j = D->jobs;

		D->jobs = j->next;
		job_free(j);
	}
	while (D->done) {
		struct job *j = D->done;

		D->done = j->next;
		job_free(j);
	}
	for (size_t i = 0; i < D->n_secs; i++)
		sec_free(D, D->secs[i]);
	free(D->secs);
	if (D->have_pending) {
		for (size_t k = 0; k < D->n_pending; k++)
			sec_cfg_free(&D->pending[k]);
		free(D->pending);
	}
	htab_free(&D->wds);
	for (size_t i = 0; i < D->n_types; i++)
		free(D->types[i]);
	free(D->types);
	if (D->ifd >= 0)
		close(D->ifd);
	if (D->afd >= 0)
		close(D->afd);
	if (D->mfd >= 0)
		close(D->mfd);
	plugfs_own_mount_unref(D->own);
	if (D->efd >= 0)
		close(D->efd);
	if (D->epfd >= 0)
		close(D->epfd);
	pthread_cond_destroy(&D->cond);
	pthread_mutex_destroy(&D->mu);
	free(D);
}

void discover_stats(struct discover *D, struct discover_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!D)
		return;
	out->watches = __atomic_load_n(&D->watches_used, __ATOMIC_RELAXED);
	out->unwatched = __atomic_load_n(&D->st_unwatched, __ATOMIC_RELAXED);
	out->rescans = __atomic_load_n(&D->st_rescans, __ATOMIC_RELAXED);
	out->mount_changes = __atomic_load_n(&D->st_mount_changes, __ATOMIC_RELAXED);
	out->registered = __atomic_load_n(&D->st_registered, __ATOMIC_RELAXED);
	out->deregistered = __atomic_load_n(&D->st_deregistered, __ATOMIC_RELAXED);
	out->identify_failed = __atomic_load_n(&D->st_failed, __ATOMIC_RELAXED);
}
