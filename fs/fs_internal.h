/* SPDX-License-Identifier: MIT */
/*
 * Private to fs/: the in-memory view (tree.c, dir.c, sync.c, info.c), the
 * notifier (notify.c), the FUSE handlers (ops.c, ops_inode.c, ops_open.c)
 * and mounting (mount.c, with the view's load and events in load.c and the
 * signals in signal.c).
 *
 * Locking: fs->lock (a rwlock) guards the view.  Handlers take it for reading
 * and only for the time of a copy; lookup counts change under the read lock
 * with atomics, and freeing a node needs the write lock.  Registry events take
 * it for writing, collect the invalidations into a batch, release it, and only
 * then hand the batch to the notifier thread and wait for delivery.  The
 * notifier never takes fs->lock or the registry mutex.
 */
#ifndef PLUGFS_FS_INTERNAL_H
#define PLUGFS_FS_INTERNAL_H

#define FUSE_USE_VERSION 314

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fs.h"
#include "hash.h"
#include "pool.h"

struct registry;
struct reg_plugin;
struct registration;
struct fs_view;

/*
 * Inode numbers: persisted ids times 8 plus a tag, so they are the same after
 * a restart on the same state and never reused while the state file lives.
 */
#define FS_INO_ROOT 1
#define FS_INO_PLUGINS 2
enum fs_ino_tag {
	FS_TAG_TYPE = 0,   /* types.id */
	FS_TAG_PLUGIN = 1, /* plugins.id: <type>/<name>/ */
	FS_TAG_ACTIVE = 2, /* plugins.id: <type>/<name>/<socket_name> */
	FS_TAG_ALLOCS = 3, /* plugins.id: <type>/<name>/allocs/ */
	FS_TAG_INFO = 4,   /* plugins.id: <type>/<name>/info */
	FS_TAG_ALLOC = 5,  /* registrations.id: <type>/<name>/allocs/<alloc> */
};
#define FS_INO(id, tag) ((uint64_t)(id)*8 + (uint64_t)(tag))

enum fs_node_kind { FS_DIR, FS_LINK, FS_FILE };

/*
 * The children of a directory (dir.c), in readdir order: slot i holds a
 * child and its readdir offset; offsets only grow, so a readdir that goes on
 * from an offset neither skips nor repeats a child that stays while others
 * come and go.  A removed child leaves a hole (NULL), so removal is O(1);
 * holes are squeezed out when they outnumber the children, before an append.
 * Names are found through the view's (parent, name) index, not here.
 */
struct fs_dirslot {
	struct fs_node *node; /* NULL: a hole */
	uint64_t off;	      /* the child's readdir offset */
};
struct fs_dir {
	uint64_t next_off; /* the offset the next child gets, minus one */
	uint32_t n_slots;  /* slots in use, holes included */
	uint32_t cap;	   /* slots allocated (in this allocation) */
	uint32_t n_live;   /* children */
	struct fs_dirslot slots[];
};
/* Readdir offsets: 1 and 2 are "." and "..", children start above. */
#define FS_DIR_OFF_DOTDOT 2

/*
 * One inode: 56 bytes (a 64-byte malloc chunk) for the three children of a
 * plugin directory, 88 with the name index's link, its parent and its slot
 * (struct fs_named), 104 for an allocs/ link (struct fs_link): there are
 * five per plugin of one registration.  Its inode number is the key of
 * hnode (fs_ino); its parent is fs_node_parent's.  The fields are in an
 * order without holes (the sizes are checked in dir.c); keep it so.
 */
struct fs_node {
	struct htab_node hnode; /* in fs_view.nodes, keyed by the inode number */
	char *name;		/* how it is held: name_own */
	int64_t mtime_ns;	/* when this node last changed, ns since the epoch */
	union {
		/* FS_LINK, FS_FILE: the symlink target or file contents, a
		 * reference to a text of rcstr.h, shared by the nodes with
		 * the same text and with the registry: an allocs/ link holds
		 * its registration's strings (its socket first, reg_model.h "Sharing"),
		 * and a plugin's csi.sock the same as the link of its active
		 * registration.  NULL for an info file in the tree (info.c). */
		char *data;
		struct fs_dir *dir; /* FS_DIR: its children; NULL until it has one */
		/* FS_DIR of a plugin: its three children's slots (dir.c) */
		struct fs_node **kids;
	};
	union {
		uint32_t size;	    /* FS_LINK, FS_FILE: the length of its text */
		uint32_t n_subdirs; /* FS_DIR: for st_nlink */
	};
	/* Kernel references; atomic, saturating (fs_node_ref): a node looked
	 * up UINT32_MAX times without a forget stays so and is never freed
	 * (one node kept) rather than wrap and be freed while referenced. */
	uint32_t nlookup;
	unsigned char kind; /* enum fs_node_kind */
	bool in_tree;	    /* false: removed, kept until forgotten */
	unsigned char name_own; /* enum fs_name_own */
	/* An allocs/ link: its registration's kind and health, for the info
	 * text (info.c), in what would be padding. */
	unsigned char reg_kind, reg_health;
	/* An allocs/ link: seen in the plugin's list by the sync under way
	 * (sync.c), false between syncs. */
	bool seen;
};

/* A node that can be in the (parent, name) index: every one but the three
 * children of a plugin directory (dir.c finds those in its slots, and
 * their parent and slot follow from their inode number). */
struct fs_named {
	struct fs_node n;
	struct htab_node name_hnode; /* in fs_view.names while in the tree */
	uint64_t parent;	     /* ino of the parent (itself for the root) */
	uint32_t slot;		     /* its slot in the parent's dir while in the tree */
};

/* An allocs/ link (FS_TAG_ALLOC): with what the info text shows of its
 * registration beside what the link holds (its data, the registration's
 * strings: socket, alloc, version), so that info is rendered from the view
 * when it is read instead of kept as a text per plugin. */
struct fs_link {
	struct fs_named nm;
	int64_t seq;	       /* its place: the info text lists by seq, highest first */
	int64_t registered_at; /* unix seconds */
};

static inline uint64_t fs_ino(const struct fs_node *n)
{
	return n->hnode.key;
}
/* Whether the node of inode ino is a struct fs_named (by its tag). */
static inline bool fs_ino_named(uint64_t ino)
{
	unsigned tag = (unsigned)(ino % 8);

	return ino <= FS_INO_PLUGINS ||
	       (tag != FS_TAG_ACTIVE && tag != FS_TAG_ALLOCS && tag != FS_TAG_INFO);
}
/* The inode of n's parent: stored in a named node, else its plugin
 * directory's (the same id, tagged FS_TAG_PLUGIN). */
static inline uint64_t fs_node_parent(const struct fs_node *n)
{
	uint64_t ino = fs_ino(n);

	if (fs_ino_named(ino))
		return ((const struct fs_named *)(const void *)n)->parent;
	return ino - ino % 8 + FS_TAG_PLUGIN;
}
/* Sets a named node's parent (the others' follows from their inode). */
static inline void fs_node_set_parent(struct fs_node *n, uint64_t parent)
{
	if (fs_ino_named(fs_ino(n)))
		((struct fs_named *)(void *)n)->parent = parent;
}
/* One more kernel reference to n (a lookup answered), saturating. */
static inline void fs_node_ref(struct fs_node *n)
{
	uint32_t c = __atomic_load_n(&n->nlookup, __ATOMIC_RELAXED);

	while (c != UINT32_MAX && !__atomic_compare_exchange_n(&n->nlookup, &c, c + 1, true,
							       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}
/* A zeroed node of inode ino, of the size its tag needs, from v's pools;
 * NULL when out of memory.  Given back with fs_node_delete (its memory
 * only) or fs_node_free. */
struct fs_node *fs_node_new(struct fs_view *v, uint64_t ino);
void fs_node_delete(struct fs_view *v, struct fs_node *n);

/* One kernel invalidation, queued by a view change. */
enum fs_inval_kind { FS_INVAL_INODE, FS_INVAL_ENTRY };
struct fs_inval {
	enum fs_inval_kind kind;
	uint64_t ino; /* INODE: the inode; ENTRY: the parent */
	char *name;   /* ENTRY only */
};
struct fs_inval_batch {
	struct fs_inval *items;
	size_t n, cap;
	bool oom; /* an item could not be queued */
};

struct fs_view {
	struct htab nodes; /* every node, in the tree or not yet forgotten */
	struct htab names; /* the nodes in the tree, by (parent ino, name) */
	size_t n_nodes;	   /* nodes known, in the table or not (statfs) */
	char *socket_name;
	/* The nodes' memory, one pool per size (pool.h): struct fs_node,
	 * fs_named, fs_link; under the write lock like the nodes. */
	struct pool pool_node, pool_named, pool_link;
};

struct fs_notifier {
	pthread_mutex_t mu;
	pthread_cond_t cond; /* work queued, stop, or progress */
	struct fs_inval_batch queue;
	uint64_t queued_seq; /* batches handed in */
	uint64_t done_seq;   /* batches delivered */
	bool stop;	     /* drop work, release waiters, exit */
	bool busy;	     /* inside a fuse_lowlevel_notify_* call */
	bool started;
	pthread_t thread;
	struct fuse_session *se;
};

/* An open file or directory handle (fi->fh).  Each is on fs->open_list
 * until released; fs_destroy frees those the kernel never released (a stop
 * while files were open). */
struct fs_open {
	struct fs_open *prev, *next;
	uint64_t id; /* fi->fh: open_id_base + a count (ops_open.c says why) */
	bool is_dir;
};

/* guard.c: the child that aborts our connection when the process cannot
 * finish dying (guard.c says why). */
struct fs_guard {
	pid_t pid; /* 0 when none */
	int wfd;   /* the pipe that tells it our connection, -1 when none */
};

struct plugfs_fs {
	pthread_rwlock_t lock; /* guards view and cache_timeout */
	struct fs_view view;
	double cache_timeout;
	struct registry *reg;
	int sub_id; /* registry subscription, 0 when none */
	struct fs_notifier notifier;

	struct fuse_session *se;
	char *mountpoint; /* canonical */
	bool mounted;
	bool resumed;	     /* serving an inherited connection (fs/resume.c) */
	/* The kernel caches directory listings (fs_init): it revalidates a
	 * directory's mtime before a listing from its start (auto_inval_data);
	 * dir_no_open: and it may be told to send no opendir (ENOSYS). */
	bool dir_cache, dir_no_open;
	bool no_cache_symlinks, no_dir_cache; /* fs_options, for measurement */
	int init_fd;	     /* memfd with the connection's FUSE_INIT request, -1 */
	bool can_handover;   /* init_fd is set; atomic */
	bool handover_asked; /* SIGUSR2; atomic */
	bool debug;
	pthread_t loop_thread;
	bool loop_running;
	/* The stopper (signal.c): fs_exit posts stop_sem (async-signal-safe),
	 * the stopper then wakes the loop thread until its loop returned. */
	sem_t stop_sem;
	pthread_t stopper;
	bool stopper_started; /* atomic */
	bool stopper_quit;    /* atomic */
	unsigned conn_minor;		    /* /sys/fs/fuse/connections/<minor>, 0 = unknown */
	unsigned long long progress_served; /* fs_loop_progress's last count */
	void (*on_ready)(void *arg);
	void *on_ready_arg;
	struct fs_guard guard;
	const char *fault_hang_lookup; /* PLUGFS_FAULTS builds: $PLUGFS_FAULT_HANG_LOOKUP */
	unsigned fault_slow_readdir_ms; /* PLUGFS_FAULTS builds: $PLUGFS_FAULT_SLOW_READDIR_MS */

	unsigned long long requests; /* atomic */
	unsigned long long
	    errors[FS_N_COUNTED_ERRNOS + 1]; /* atomic; ops.c: by errno, then other */
	pthread_mutex_t open_mu;	     /* guards open_list and open_count */
	struct fs_open open_list;	     /* sentinel */
	uint64_t open_id_base;		     /* random, per process */
	uint64_t open_count;
};

/* dir.c: a directory's children and the (parent, name) index; O(1) on
 * average each, under fs->lock (read for the lookups, write for changes). */
/* The child of dir called name, or NULL. */
struct fs_node *fs_view_child(const struct fs_view *v, const struct fs_node *dir, const char *name);
/* Links c (its name set) under dir: in dir's slots with a new offset and in
 * the name index; sets c's parent.  0 or -ENOMEM with nothing changed. */
int fs_dir_link(struct fs_view *v, struct fs_node *dir, struct fs_node *c);
/* Unlinks c, a child of dir.  Never moves the other children: an iteration
 * with fs_dir_next may unlink the child it was just given. */
void fs_dir_unlink(struct fs_view *v, struct fs_node *dir, struct fs_node *c);
/* The next child of dir from slot *i on (start at 0 or at fs_dir_seek),
 * its offset into *off (may be NULL); *i moves past it.  NULL at the end. */
struct fs_node *fs_dir_next(const struct fs_node *dir, size_t *i, uint64_t *off);
/* The first slot whose offset is above off: hint when it is that slot
 * (O(1): a readdir that goes on where the last one stopped), else found by
 * binary search. */
size_t fs_dir_seek(const struct fs_node *dir, uint64_t off, size_t hint);
/* How many children dir has. */
size_t fs_dir_count(const struct fs_node *dir);
void fs_dir_free(struct fs_dir *d);

/* tree.c: the nodes, under the write lock but for fs_view_get. */
/* A node's mtime as a timespec. */
struct timespec fs_node_mtime(const struct fs_node *n);
/* Sets a node's mtime, clamped to what 64 bits of ns hold (years 1678 to
 * 2262). */
void fs_node_set_mtime(struct fs_node *n, const struct timespec *t);
/* Sets n's text to s, a text of rcstr.h (another node's, or the strings of
 * a registration: a reference is taken). */
void fs_node_set_str(struct fs_node *n, char *s);
/* Sets n's text to a new copy of data; 0 or -ENOMEM (n unchanged). */
int fs_node_set_data(struct fs_node *n, const char *data);
/* How a node holds its name. */
enum fs_name_own {
	FS_NAME_COPY,	 /* fs_node_add copies it; freed with the node */
	FS_NAME_STATIC,	 /* it outlives the view (the socket name, a literal) */
	FS_NAME_SHARED,	 /* a text of rcstr.h (a plugin's name, reg_model.h "Sharing"): a
			  * reference is taken, dropped with the node */
	FS_NAME_IN_DATA, /* a string inside the block of the node's own data
			  * (an allocs/ link's alloc, in its registration's
			  * strings): lives as long as data does */
};
/*
 * Returns the node with this inode number, in the tree under parent (NULL:
 * the root) with the given name (held as own says), data as its text (may
 * be NULL: copied, but for FS_NAME_IN_DATA, where data is a text of rcstr.h
 * holding the name, shared) and mtime.
 * A node still in the table (removed, not yet forgotten) is taken back,
 * keeping its lookup count, and an invalidation of it is queued in b (may
 * be NULL).  absent: the caller knows there is no such node yet (skips the
 * search).  NULL when out of memory, with nothing changed.
 */
struct fs_node *fs_node_add(struct fs_view *v, struct fs_node *parent, uint64_t ino,
			    enum fs_node_kind kind, const char *name, enum fs_name_own own,
			    const char *data, const struct timespec *mtime,
			    struct fs_inval_batch *b, bool absent);
/* Takes n (and what is below it) out of parent (may be NULL); frees what the
 * kernel does not reference. */
void fs_node_remove(struct fs_view *v, struct fs_node *parent, struct fs_node *n);
/* Frees n (not in the tree nor in the table), counting it out of v. */
void fs_node_free(struct fs_view *v, struct fs_node *n);
/* Queues an invalidation in b (may be NULL: none); -ENOMEM sets b->oom. */
int fs_inval_push(struct fs_inval_batch *b, enum fs_inval_kind kind, uint64_t ino,
		  const char *name);
int fs_view_init(struct fs_view *v, const char *socket_name);
void fs_view_free(struct fs_view *v);
struct fs_node *fs_view_get(struct fs_view *v, uint64_t ino);
/* Adds the type directories and the plugins of snapshot-like data. */
int fs_view_add_type(struct fs_view *v, int64_t type_id, const char *type,
		     const struct timespec *mtime);
/* Drops n kernel references; frees nodes out of the tree that reach 0.
 * Needs the write lock. */
void fs_view_forget(struct fs_view *v, uint64_t ino, uint64_t n);
void fs_node_attr(const struct fs_node *n, struct stat *st);
void fs_inval_batch_free(struct fs_inval_batch *b);
/* A malloc'd copy of a file's contents (its data, or its rendered info
 * text), at most its size; NULL when out of memory. */
char *fs_node_contents(struct fs_view *v, const struct fs_node *n);

/* sync.c */
/*
 * Makes <type>/<name> match p (NULL or empty: removes it; a directory the
 * kernel holds stays, empty, see fs_view_add_empty_plugin), recording the
 * kernel invalidations the change needs in b (may be NULL at start).  now is
 * the mtime of what changes.  0 or -ENOMEM (the view is then still usable).
 */
int fs_view_sync_plugin(struct fs_view *v, const char *type, const char *name, int64_t plugin_id,
			const struct reg_plugin *p, const struct timespec *now,
			struct fs_inval_batch *b);
/*
 * Enters the directory of a plugin whose list is empty (registered once,
 * none now) out of the tree: listed nowhere, but a nodeid the kernel still
 * holds from a previous process (a resumed connection) answers as an empty
 * directory, and the plugin takes it back when it registers again.  Freed
 * on forget like any node out of the tree.  0 (also when the type is not
 * configured or the node exists) or -ENOMEM.
 */
int fs_view_add_empty_plugin(struct fs_view *v, const char *type, const char *name,
			     int64_t plugin_id, const struct timespec *mtime);

/* info.c: the info text of a plugin: one line per registration, the active one
 * first, then list order: "alloc socket version kind registered_at health"
 * (health: unknown, alive or dead).  A malloc'd text or NULL (ENOMEM). */
char *fs_render_info(const struct reg_plugin *p);
/* The length of the line of r in that text, without rendering it. */
size_t fs_info_line_len(const struct registration *r);
/* The same text from the view: the links of pdir's allocs/, the one
 * csi.sock shares its text with first, then by seq.  An info file in the
 * tree has no text of its own (its data is NULL, its size the length of
 * this text, set by sync.c); one taken out of the tree while the kernel
 * holds it keeps this text as its data (fs_node_remove).  Under fs->lock
 * (read is enough).  A malloc'd text or NULL (ENOMEM). */
char *fs_view_render_info(struct fs_view *v, const struct fs_node *pdir);

/* notify.c */
int fs_notifier_start(struct fs_notifier *nt, struct fuse_session *se);
/* Hands the batch over (emptied) without waiting for its delivery. */
void fs_notifier_post(struct fs_notifier *nt, struct fs_inval_batch *b);
/* Waits until everything queued before the call was delivered to the kernel
 * or the notifier stopped.  Never call from a FUSE handler nor with a lock
 * a handler or the notifier needs. */
void fs_notifier_wait(struct fs_notifier *nt);
/* Releases waiters, drops queued work, joins the thread.  abort_conn is
 * called when the thread stays blocked in the kernel. */
void fs_notifier_stop(struct fs_notifier *nt, void (*abort_conn)(void *), void *arg);
void fs_notifier_init(struct fs_notifier *nt);
void fs_notifier_destroy(struct fs_notifier *nt);

/* ops.c: the one ops table (its handlers: ops.c, ops_inode.c, ops_open.c) */
extern const struct fuse_lowlevel_ops fs_ops;
/* ops_open.c: frees the handles still open (at destroy, with the request
 * loop stopped). */
void fs_free_open_handles(struct plugfs_fs *fs);

/* guard.c.  Start from the thread that runs the request loop and lives
 * until the process exits (before the mount: the guard must not inherit
 * /dev/fuse); 0 or -errno. */
int fs_guard_start(struct fs_guard *g);
/* Tells the guard the minor of our connection (after the mount). */
void fs_guard_set_conn(struct fs_guard *g, unsigned minor);
/* Aborts FUSE connection minor through fusectl (mounted when missing);
 * async-signal-safe.  false with errno set when it cannot. */
bool fs_abort_conn_minor(unsigned minor);
/* Kills and reaps the guard (a clean stop: nothing left to guard). */
void fs_guard_stop(struct fs_guard *g);

/* mountpoint.c */
/*
 * The topmost mount at path in /proc/self/mountinfo: its filesystem type
 * (e.g. "fuse.plugfs") into fstype and its device into *dev (may be NULL).
 * 1 when found, 0 when path is no mount point, -errno.
 */
int fs_mount_at(const char *path, char *fstype, size_t fslen, dev_t *dev);
/* An absolute, canonical spelling of path into out that works while path
 * itself cannot be stat'ed (a dead mount); 0 or -errno with err set. */
int fs_canonical(const char *path, char *out, size_t outlen, char *err, size_t errlen);
/* Readies path for a mount (mountpoint.c says how), its canonical spelling
 * into canon; 0 or -errno with err set. */
int fs_prepare_mountpoint(const char *path, char *canon, size_t canonlen, char *err, size_t errlen);

/* load.c: with the registry mutex held, the view from the registry and the
 * subscription that keeps it in step; 0 or -errno with err set. */
int fs_load_and_subscribe(struct plugfs_fs *fs, struct registry *reg, char *err, size_t errlen);

/* signal.c: SIGTERM and SIGINT stop fs's loop, FS_WAKE_SIGNAL wakes it,
 * SIGPIPE is ignored; restore puts back what was there before. */
void fs_install_signals(struct plugfs_fs *fs);
/* The stopper thread of fs_run (signal.c): started before the loop,
 * stopped (joined) once the loop returned.  Start: 0 or -errno. */
int fs_stopper_start(struct plugfs_fs *fs);
void fs_stopper_stop(struct plugfs_fs *fs);
void fs_restore_signals(void);
/* The mount whose loop the signals stop, NULL when none. */
struct plugfs_fs *fs_signal_owner(void);

/* resume.c */
/* Keeps the raw FUSE_INIT request in a new memfd (fs->init_fd); 0 or -errno. */
int fs_save_init(struct plugfs_fs *fs, const struct fuse_buf *buf);
/* On a resumed session, before the loop runs: feeds the saved INIT to
 * libfuse, has the kernel resend what the previous process had read, and
 * refreshes what the kernel caches.  0 or -errno (logged). */
int fs_resume_session(struct plugfs_fs *fs);

#endif
