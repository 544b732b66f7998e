/* SPDX-License-Identifier: MIT */
/*
 * The reserve for deregistrations (registry_start_upkeep in registry.h):
 * a file of reserve_bytes beside the state file, released when a
 * deregistration cannot commit for want of space, allocated again by the
 * checkpointer thread (store_space.c).  Everything here runs under the
 * commits' lock (space_commits_trylock): no commit runs meanwhile, so the
 * space released for a deregistration is not taken back under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "store.h"
#include "log.h"
#include "space.h"

bool space_commits_trylock(struct store_space *sp)
{
	return pthread_mutex_trylock(sp->commit_lock) == 0;
}

void space_commits_unlock(struct store_space *sp)
{
	pthread_mutex_unlock(sp->commit_lock);
}

/* sp->reserve changes under the commits' lock; space_stats reads it
 * without. */
static void set_reserve(struct store_space *sp, enum reserve_state st)
{
	__atomic_store_n(&sp->reserve, st, __ATOMIC_RELAXED);
}

static const char *state_path(const struct store_space *sp)
{
	return sp->st->path;
}

int reserve_open(struct store_space *sp)
{
	struct stat st;
	int fd = open(sp->reserve_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return errno == ELOOP || errno == EISDIR || errno == ENXIO ? EEXIST : errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return EEXIST;
	}
	sp->reserve_fd = fd;
	return 0;
}

void reserve_fill(struct store_space *sp)
{
	enum reserve_state was = sp->reserve;
	int e = sp->reserve_fd < 0 ? reserve_open(sp) : 0;

	if (e == 0)
		e = posix_fallocate(sp->reserve_fd, 0, (off_t)sp->reserve_bytes);
	if (e == 0) {
		set_reserve(sp, RESERVE_HELD);
		if (was == RESERVE_RELEASED || was == RESERVE_SHORT)
			log_warn(
			    "state file `%s': the reserve `%s' (%zu bytes) is allocated again: "
			    "registrations are accepted",
			    state_path(sp), sp->reserve_path, sp->reserve_bytes);
		return;
	}
	if (sp->reserve_fd >= 0 && ftruncate(sp->reserve_fd, 0) < 0)
		e = errno;
	if (e == ENOSPC || e == EDQUOT) {
		if (was != RESERVE_RELEASED && was != RESERVE_SHORT)
			log_warn(
			    "state file `%s': cannot allocate the reserve `%s' (%zu bytes): %s "
			    "(%s): registrations are refused until that much space is free",
			    state_path(sp), sp->reserve_path, sp->reserve_bytes, strerrorname_np(e),
			    strerror(e));
		if (was != RESERVE_RELEASED)
			set_reserve(sp, RESERVE_SHORT);
		return;
	}
	log_warn("state file `%s': cannot allocate the reserve `%s': %s (%s): a full disk will "
		 "refuse deregistrations too",
		 state_path(sp), sp->reserve_path,
		 strerrorname_np(e) ? strerrorname_np(e) : "errno", strerror(e));
	set_reserve(sp, RESERVE_NONE);
}

bool space_release_reserve(struct store_space *sp)
{
	if (!sp || sp->reserve != RESERVE_HELD)
		return false;
	if (ftruncate(sp->reserve_fd, 0) < 0)
		return false;
	set_reserve(sp, RESERVE_RELEASED);
	sp->reserve_released++;
	log_warn("state file `%s': the disk is full: released the reserve `%s' (%zu bytes) for a "
		 "deregistration; registrations are refused until it can be allocated again",
		 state_path(sp), sp->reserve_path, sp->reserve_bytes);
	pthread_mutex_lock(&sp->mu);
	sp->reserve_wanted = true;
	pthread_cond_signal(&sp->cond);
	pthread_mutex_unlock(&sp->mu);
	return true;
}

int space_check_room(struct store_space *sp, const char *what, char *err, size_t errlen)
{
	if (!sp || (sp->reserve != RESERVE_RELEASED && sp->reserve != RESERVE_SHORT))
		return 0;
	return plugfs_errf(err, errlen, -ENOSPC,
			   "state file `%s': %s: the disk is full: the reserve `%s' (%zu bytes) "
			   "that keeps deregistrations possible %s (ENOSPC: %s); registrations "
			   "resume once that much space is free",
			   state_path(sp), what, sp->reserve_path, sp->reserve_bytes,
			   sp->reserve == RESERVE_RELEASED ? "was released for a deregistration"
							   : "cannot be allocated",
			   strerror(ENOSPC));
}
