/* SPDX-License-Identifier: MIT */
/*
 * The connector threads (connector.h).  One process-wide mutex guards the
 * queue, the batches' returned lists and the stuck list; a connector holds
 * it only to take a job and to hand back its outcome, never across
 * socket() or connect().
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "connector.h"
#include "clock.h"
#include "fsutil.h"

#define CONNECTOR_STACK (256 * 1024)

struct job {
	struct connector_batch *batch; /* NULL once abandoned */
	unsigned slot;
	enum { QUEUED, RUNNING, RETURNED, TAKEN } state;
	int fd, err;
	int64_t started;   /* monotonic ms, while RUNNING */
	struct job *next;  /* in the queue or a batch's returned list */
	struct job *rnext; /* in the running list, while RUNNING */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
};

struct connector_batch {
	int efd;
	struct job *slots[CONNECTOR_BATCH_SLOTS]; /* out, by slot */
	struct job *returned;			  /* returned, not taken yet */
	struct job *taken; /* taken from returned, not given out yet (the caller's) */
	unsigned queued;   /* its jobs in the queue */
	unsigned n_returned; /* in returned */
	bool signalled;	   /* the eventfd written since returned was last taken */
};

/* A batch's caller is woken when this many jobs returned, or when none of
 * its jobs is left in the queue: one wake-up for many connects (it also
 * wakes every CONNECTOR_STUCK_MS on its own, which bounds the delay). */
#define CONNECTOR_WAKE_AT 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work; /* on CLOCK_MONOTONIC: init_once */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct job *queue_head, *queue_tail;
/* Jobs in socket()/connect(), abandoned ones (batch NULL) included. */
static struct job *running;
static unsigned n_threads, n_idle, n_busy, n_queued;
static unsigned n_cpus = 1; /* online, at the first batch: init_once */
/* The daemon's own mount (connector_set_own_mount; a reference), NULL: none. */
static struct plugfs_own_mount *own_mount;

static void init_once(void)
{
	long n;

	plugfs_cond_init_mono(&work);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	n_cpus = n > 1 ? (unsigned)(n < CONNECTOR_MAX_THREADS ? n : CONNECTOR_MAX_THREADS) : 1;
}

static void unlink_job(struct job **list, struct job *j)
{
	for (struct job **p = list; *p; p = &(*p)->next) {
		if (*p == j) {
			*p = j->next;
			j->next = NULL;
			return;
		}
	}
}

static void unlink_running(struct job *j)
{
	for (struct job **p = &running; *p; p = &(*p)->rnext) {
		if (*p == j) {
			*p = j->rnext;
			j->rnext = NULL;
			return;
		}
	}
}

/*
 * One connect.  A connect() to a Unix socket that fails because nothing
 * listens there (ENOENT: no such file; ECONNREFUSED: no listener) leaves
 * the socket as socket() made it, unconnected and unbound, so the thread
 * keeps it in *spare for its next connect: a round of dead sockets costs
 * one connect() each, not a socket(), a connect() and a close().  Any
 * other outcome hands the socket on (made, in progress) or closes it.
 */
static void run(struct job *j, int *spare, struct plugfs_own_mount *own)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = *spare;

	*spare = -1;
	memcpy(sa.sun_path, j->path, sizeof(j->path));
	j->err = 0;
	/* Never a lookup in the daemon's own mount (docs/design.md,
	 * Hazards): a path that leads there, through a symlink on the way
	 * or at its end, is not connected to.  The walk resolves what
	 * connect() would, one name at a time, and stops before the mount. */
	if (own && plugfs_own_mount_check(own, j->path, NULL, 0) == 1) {
		j->err = EXDEV;
		j->fd = -1;
		*spare = fd;
		return;
	}
	if (fd < 0)
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		j->err = errno;
	} else if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		j->err = errno;
		if (j->err == ENOENT || j->err == ECONNREFUSED) {
			*spare = fd;
			fd = -1;
		} else if (j->err != EINPROGRESS) {
			close(fd);
			fd = -1;
		}
	}
	j->fd = fd;
}

/* Called with mu held: the thread's wait for a job, or false when it has
 * been idle long enough to end. */
static bool wait_for_job(void)
{
	int64_t at = plugfs_mono_ms() + CONNECTOR_IDLE_MS;

	n_idle++;
	while (!queue_head) {
		if (plugfs_cond_wait_until(&work, &mu, at) == ETIMEDOUT && !queue_head) {
			n_idle--;
			return false;
		}
	}
	n_idle--;
	return true;
}

static void *connector_main(void *arg)
{
	int spare = -1; /* an unconnected socket, from a connect that failed */

	(void)arg;
	pthread_mutex_lock(&mu);
	while (wait_for_job()) {
		struct job *j = queue_head;
		struct connector_batch *b;
		struct plugfs_own_mount *own;

		queue_head = j->next;
		if (!queue_head)
			queue_tail = NULL;
		j->next = NULL;
		n_queued--;
		if (!j->batch) { /* abandoned before it ran */
			free(j);
			continue;
		}
		j->batch->queued--;
		j->state = RUNNING;
		j->started = plugfs_mono_ms();
		j->rnext = running;
		running = j;
		n_busy++;
		own = plugfs_own_mount_ref(own_mount);
		pthread_mutex_unlock(&mu);
		run(j, &spare, own);
		plugfs_own_mount_unref(own);
		pthread_mutex_lock(&mu);
		n_busy--;
		j->state = RETURNED;
		unlink_running(j);
		if (!j->batch) {
			if (j->fd >= 0)
				close(j->fd);
			free(j);
			continue;
		}
		b = j->batch;
		j->next = b->returned;
		b->returned = j;
		b->n_returned++;
		if (!b->signalled && (b->queued == 0 || b->n_returned >= CONNECTOR_WAKE_AT)) {
			/* The caller may be asleep.  Once written, the eventfd
			 * stays readable until the caller finds the list empty. */
			uint64_t one = 1;
			ssize_t w = write(b->efd, &one, sizeof(one));

			(void)w; /* an eventfd at its maximum is readable anyway */
			b->signalled = true;
		}
	}
	n_threads--;
	pthread_mutex_unlock(&mu);
	if (spare >= 0)
		close(spare);
	return NULL;
}

/*
 * With mu held: makes sure a queued job will run.  An idle thread is woken;
 * else a new thread starts when no thread is making progress: none yet, or
 * every one has been in its connect() for CONNECTOR_STUCK_MS or more (a
 * hung path).  One thread that keeps up runs a whole round's connects one
 * after the other, which costs far less than a thread per connect.  A
 * failure to start one only matters when none is left to run the queue.
 */
static int ensure_runner(void)
{
	int64_t t = plugfs_mono_ms();
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	if (n_queued == 0)
		return 0;
	if (n_idle > 0) {
		pthread_cond_signal(&work);
		return 0;
	}
	if (n_threads - n_busy > 0 || n_threads >= CONNECTOR_MAX_THREADS)
		return 0; /* one is between jobs, or none may start */
	/* A long queue is shared by as many threads as there are CPUs. */
	if (n_queued < CONNECTOR_WAKE_AT || n_threads >= n_cpus) {
		for (struct job *j = running; j; j = j->rnext)
			if (j->batch && t - j->started < CONNECTOR_STUCK_MS)
				return 0; /* it takes the next job when done */
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, CONNECTOR_STACK);
	rc = pthread_create(&th, &attr, connector_main, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return n_threads > 0 ? 0 : -rc;
	n_threads++;
	return 0;
}

struct connector_batch *connector_batch_new(void)
{
	struct connector_batch *b = calloc(1, sizeof(*b));

	if (!b) {
		errno = ENOMEM;
		return NULL;
	}
	b->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (b->efd < 0) {
		int e = errno;

		free(b);
		errno = e;
		return NULL;
	}
	return b;
}

int connector_batch_fd(const struct connector_batch *b)
{
	return b->efd;
}

/* With mu held: queues job `slot' of b, or -errno (connector_start). */
static int queue_locked(struct connector_batch *b, unsigned slot, const char *path)
{
	size_t len = strlen(path);
	struct job *j;

	if (slot >= CONNECTOR_BATCH_SLOTS || b->slots[slot])
		return -EINVAL;
	if (len >= sizeof(j->path))
		return -ENAMETOOLONG;
	for (struct job *s = running; s; s = s->rnext)
		if (!s->batch && strcmp(s->path, path) == 0)
			return -ETIMEDOUT;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->batch = b;
	j->slot = slot;
	j->fd = -1;
	memcpy(j->path, path, len + 1);
	if (queue_tail)
		queue_tail->next = j;
	else
		queue_head = j;
	queue_tail = j;
	n_queued++;
	b->queued++;
	b->slots[slot] = j;
	return 0;
}

/* With mu held: takes back the queued jobs of b (no thread could start). */
static void unqueue_locked(struct connector_batch *b)
{
	struct job **p = &queue_head;

	queue_tail = NULL;
	while (*p) {
		struct job *j = *p;

		if (j->batch == b) {
			*p = j->next;
			b->slots[j->slot] = NULL;
			n_queued--;
			b->queued--;
			free(j);
			continue;
		}
		queue_tail = j;
		p = &j->next;
	}
}

int connector_start(struct connector_batch *b, unsigned slot, const char *path)
{
	int rc;

	connector_start_many(b, &slot, &path, 1, &rc);
	return rc;
}

void connector_start_many(struct connector_batch *b, const unsigned *slot,
			  const char *const *path, size_t n, int *rc)
{
	bool queued = false;
	int e;

	pthread_once(&once, init_once);
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n; i++) {
		rc[i] = queue_locked(b, slot[i], path[i]);
		queued |= rc[i] == 0;
	}
	if (queued && (e = ensure_runner()) < 0) {
		/* No thread at all: take them back. */
		unqueue_locked(b);
		for (size_t i = 0; i < n; i++)
			if (rc[i] == 0)
				rc[i] = e;
	}
	pthread_mutex_unlock(&mu);
}

void connector_kick(void)
{
	pthread_mutex_lock(&mu);
	(void)ensure_runner(); /* with threads running, it cannot fail */
	pthread_mutex_unlock(&mu);
}

bool connector_next(struct connector_batch *b, unsigned *slot, int *fd, int *err)
{
	struct job *j = b->taken;

	if (!j) {
		/* The whole returned list at once: one lock for all of them. */
		pthread_mutex_lock(&mu);
		j = b->returned;
		b->returned = NULL;
		b->n_returned = 0;
		b->signalled = false;
		if (!j) {
			uint64_t v;
			ssize_t r = read(b->efd, &v, sizeof(v));

			(void)r; /* EAGAIN: nothing was signalled */
			pthread_mutex_unlock(&mu);
			return false;
		}
		for (struct job *t = j; t; t = t->next)
			t->state = TAKEN;
		pthread_mutex_unlock(&mu);
	}
	b->taken = j->next;
	b->slots[j->slot] = NULL;
	*slot = j->slot;
	*fd = j->fd;
	*err = j->err;
	free(j);
	return true;
}

void connector_abandon(struct connector_batch *b, unsigned slot)
{
	struct job *j;

	if (slot >= CONNECTOR_BATCH_SLOTS)
		return;
	pthread_mutex_lock(&mu);
	j = b->slots[slot];
	b->slots[slot] = NULL;
	if (!j) {
		pthread_mutex_unlock(&mu);
		return;
	}
	if (j->state == RUNNING) {
		/* Still in connect(): its thread frees it when it returns. */
		j->batch = NULL;
	} else if (j->state == RETURNED || j->state == TAKEN) {
		/* Returned, not given out: in returned, or in taken (which only
		 * the caller, this thread, touches). */
		unlink_job(j->state == RETURNED ? &b->returned : &b->taken, j);
		if (j->state == RETURNED)
			b->n_returned--;
		if (j->fd >= 0)
			close(j->fd);
		free(j);
	} else {
		/* Still queued: the thread that takes it frees it. */
		j->batch = NULL;
		b->queued--;
	}
	pthread_mutex_unlock(&mu);
}

void connector_batch_free(struct connector_batch *b)
{
	if (!b)
		return;
	for (unsigned s = 0; s < CONNECTOR_BATCH_SLOTS; s++)
		connector_abandon(b, s);
	close(b->efd);
	free(b);
}

void connector_counts(unsigned *threads, unsigned *busy)
{
	pthread_mutex_lock(&mu);
	*threads = n_threads;
	*busy = n_busy;
	pthread_mutex_unlock(&mu);
}

void connector_set_own_mount(struct plugfs_own_mount *m)
{
	struct plugfs_own_mount *old;

	m = plugfs_own_mount_ref(m);
	pthread_mutex_lock(&mu);
	old = own_mount;
	own_mount = m;
	pthread_mutex_unlock(&mu);
	plugfs_own_mount_unref(old);
}

struct plugfs_own_mount *connector_own_mount(void)
{
	struct plugfs_own_mount *m;

	pthread_mutex_lock(&mu);
	m = plugfs_own_mount_ref(own_mount);
	pthread_mutex_unlock(&mu);
	return m;
}
