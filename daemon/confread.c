/* SPDX-License-Identifier: MIT */
/*
 * The daemon's reading of its config file, bounded in time (confread.h).
 *
 * config_load opens the file O_NONBLOCK and takes only a regular file, so a
 * FIFO or a device put in its place is refused at once.  What it cannot
 * bound is the filesystem: a config on a network filesystem whose server
 * went away (or on a FUSE mount that stopped answering) blocks open() in the
 * path lookup, or read(), in the kernel, and no flag makes them return.  So
 * the daemon never reads its config on a thread that others wait on: the
 * read and the parse run on a short-lived reader thread, and the caller
 * waits for it at most a deadline.  A reader that misses it is abandoned
 * (it frees what it read when it returns, whenever that is); while one is
 * still out, a new read is refused at once rather than adding another stuck
 * thread.
 */
#include "confread.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "err.h"
#include "thread.h"

#define READER_STACK (256 * 1024)

struct read_job {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* on CLOCK_MONOTONIC */
	unsigned refs;	   /* the reader's and the caller's */
	bool done, abandoned;
	char *path; /* NULL: the search (config_resolve) */
	struct plugfs_config cfg;
	int rc;
	char err[CONFIG_ERR_MAX];
};

/* Readers abandoned and not returned yet, and since when the oldest is out;
 * process-wide, as the threads are. */
static pthread_mutex_t stuck_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned n_stuck;
static int64_t stuck_since_ms;

static void job_put(struct read_job *j)
{
	bool last;

	pthread_mutex_lock(&j->mu);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->mu);
	if (!last)
		return;
	if (j->abandoned) {
		config_free(&j->cfg);
		pthread_mutex_lock(&stuck_mu);
		n_stuck--;
		pthread_mutex_unlock(&stuck_mu);
	}
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	free(j->path);
	free(j);
}

static void *reader_main(void *arg)
{
	struct read_job *j = arg;
	struct plugfs_config cfg;
	char err[CONFIG_ERR_MAX] = "";
	int rc = config_resolve(j->path, &cfg, err, sizeof(err));

	pthread_mutex_lock(&j->mu);
	j->cfg = cfg;
	j->rc = rc;
	memcpy(j->err, err, sizeof(err));
	j->done = true;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	job_put(j);
	return NULL;
}

static const char *shown(const char *path)
{
	return path ? path : "the config file";
}

int daemon_config_read(const char *path, unsigned timeout_ms, struct plugfs_config *cfg,
		       char *err, size_t errlen)
{
	struct read_job *j = NULL;
	pthread_attr_t attr;
	pthread_t th;
	int64_t now = plugfs_mono_ms(), deadline;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	pthread_mutex_lock(&stuck_mu);
	if (n_stuck > 0) {
		long long s = (long long)(now - stuck_since_ms) / 1000;

		pthread_mutex_unlock(&stuck_mu);
		return plugfs_errf(err, errlen, -EBUSY,
				   "%s: an earlier read of it has not returned for %lld s (a hung "
				   "filesystem?); not read again until it does",
				   shown(path), s);
	}
	pthread_mutex_unlock(&stuck_mu);

	j = calloc(1, sizeof(*j));
	if (!j || (path && !(j->path = strdup(path)))) {
		free(j);
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	}
	j->refs = 2;
	pthread_mutex_init(&j->mu, NULL);
	plugfs_cond_init_mono(&j->cv);

	/* The reader takes no signal: they are the daemon's other threads'. */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, READER_STACK);
	rc = plugfs_thread_start(&th, &attr, reader_main, j);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		j->refs = 1;
		job_put(j);
		return plugfs_errf(err, errlen, rc, "%s: cannot start a thread to read it: %s",
				   shown(path), strerror(-rc));
	}

	deadline = plugfs_deadline_ms(timeout_ms);
	pthread_mutex_lock(&j->mu);
	while (!j->done && plugfs_cond_wait_until(&j->cv, &j->mu, deadline) != ETIMEDOUT)
		;
	if (j->done) {
		*cfg = j->cfg;
		memset(&j->cfg, 0, sizeof(j->cfg));
		rc = j->rc;
		if (rc != 0)
			plugfs_seterr(err, errlen, "%s", j->err);
	} else {
		j->abandoned = true;
		pthread_mutex_lock(&stuck_mu);
		if (n_stuck++ == 0)
			stuck_since_ms = now;
		pthread_mutex_unlock(&stuck_mu);
		rc = plugfs_errf(err, errlen, -ETIMEDOUT,
				 "%s: not read within %u ms (its filesystem does not answer?)",
				 shown(path), timeout_ms);
	}
	pthread_mutex_unlock(&j->mu);
	job_put(j);
	return rc;
}
