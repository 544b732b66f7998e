/* SPDX-License-Identifier: MIT */
/* faultvfs.h says what this is. */
#include "faultvfs.h"

#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

struct fault_file {
	sqlite3_file base;  /* pMethods = &fault_io */
	sqlite3_file *real; /* the wrapped VFS's file, right after this struct */
};

static sqlite3_vfs *real_vfs;
static sqlite3_vfs fault_vfs;
static sqlite3_io_methods fault_io;
static bool armed, persist, fired;
static int target, counted, fail_rc;

void faultvfs_arm(int n, int rc, bool keep_failing)
{
	armed = true;
	target = n;
	counted = 0;
	fail_rc = rc;
	persist = keep_failing;
	fired = false;
}

int faultvfs_disarm(void)
{
	armed = false;
	return counted;
}

bool faultvfs_fired(void)
{
	return fired;
}

/* 0 to go ahead, or the code the counted call fails with. */
static int fault(int ioerr)
{
	if (!armed)
		return 0;
	counted++;
	if (counted < target || (counted > target && !persist))
		return 0;
	fired = true;
	return fail_rc == SQLITE_IOERR ? ioerr : fail_rc;
}

static struct fault_file *ff(sqlite3_file *f)
{
	return (struct fault_file *)f;
}

static int f_close(sqlite3_file *f)
{
	int rc = ff(f)->real->pMethods ? ff(f)->real->pMethods->xClose(ff(f)->real) : SQLITE_OK;

	ff(f)->real->pMethods = NULL;
	return rc;
}

static int f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	int rc = fault(SQLITE_IOERR_READ);

	return rc ? rc : ff(f)->real->pMethods->xRead(ff(f)->real, buf, n, off);
}

static int f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	int rc = fault(SQLITE_IOERR_WRITE);

	return rc ? rc : ff(f)->real->pMethods->xWrite(ff(f)->real, buf, n, off);
}

static int f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	int rc = fault(SQLITE_IOERR_TRUNCATE);

	return rc ? rc : ff(f)->real->pMethods->xTruncate(ff(f)->real, size);
}

static int f_sync(sqlite3_file *f, int flags)
{
	int rc = fault(SQLITE_IOERR_FSYNC);

	return rc ? rc : ff(f)->real->pMethods->xSync(ff(f)->real, flags);
}

static int f_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	int rc = fault(SQLITE_IOERR_FSTAT);

	return rc ? rc : ff(f)->real->pMethods->xFileSize(ff(f)->real, size);
}

/* The rest pass through. */
static int f_lock(sqlite3_file *f, int l)
{
	return ff(f)->real->pMethods->xLock(ff(f)->real, l);
}
static int f_unlock(sqlite3_file *f, int l)
{
	return ff(f)->real->pMethods->xUnlock(ff(f)->real, l);
}
static int f_check_reserved(sqlite3_file *f, int *out)
{
	return ff(f)->real->pMethods->xCheckReservedLock(ff(f)->real, out);
}
static int f_file_control(sqlite3_file *f, int op, void *arg)
{
	return ff(f)->real->pMethods->xFileControl(ff(f)->real, op, arg);
}
static int f_sector_size(sqlite3_file *f)
{
	return ff(f)->real->pMethods->xSectorSize(ff(f)->real);
}
static int f_device_characteristics(sqlite3_file *f)
{
	return ff(f)->real->pMethods->xDeviceCharacteristics(ff(f)->real);
}
static int f_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **p)
{
	return ff(f)->real->pMethods->xShmMap(ff(f)->real, pg, sz, extend, p);
}
static int f_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	return ff(f)->real->pMethods->xShmLock(ff(f)->real, off, n, flags);
}
static void f_shm_barrier(sqlite3_file *f)
{
	ff(f)->real->pMethods->xShmBarrier(ff(f)->real);
}
static int f_shm_unmap(sqlite3_file *f, int del)
{
	return ff(f)->real->pMethods->xShmUnmap(ff(f)->real, del);
}
static int f_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p)
{
	/* No memory-mapped reads: every read goes through xRead. */
	(void)f;
	(void)off;
	(void)n;
	*p = NULL;
	return SQLITE_OK;
}
static int f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	(void)f;
	(void)off;
	(void)p;
	return SQLITE_OK;
}

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out_flags)
{
	struct fault_file *x = ff(f);
	int rc;

	(void)vfs;
	x->real = (sqlite3_file *)(x + 1);
	memset(x->real, 0, (size_t)real_vfs->szOsFile);
	x->base.pMethods = NULL;
	rc = real_vfs->xOpen(real_vfs, name, x->real, flags, out_flags);
	if (x->real->pMethods) {
		fault_io.iVersion =
		    x->real->pMethods->iVersion < 3 ? x->real->pMethods->iVersion : 3;
		x->base.pMethods = &fault_io;
	}
	return rc;
}

static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	return real_vfs->xDelete(real_vfs, name, sync_dir);
}
static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	(void)vfs;
	return real_vfs->xAccess(real_vfs, name, flags, out);
}
static int v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	return real_vfs->xFullPathname(real_vfs, name, n, out);
}
static void *v_dlopen(sqlite3_vfs *vfs, const char *name)
{
	(void)vfs;
	return real_vfs->xDlOpen(real_vfs, name);
}
static void v_dlerror(sqlite3_vfs *vfs, int n, char *msg)
{
	(void)vfs;
	real_vfs->xDlError(real_vfs, n, msg);
}
static void (*v_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	(void)vfs;
	return real_vfs->xDlSym(real_vfs, h, sym);
}
static void v_dlclose(sqlite3_vfs *vfs, void *h)
{
	(void)vfs;
	real_vfs->xDlClose(real_vfs, h);
}
static int v_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xRandomness(real_vfs, n, out);
}
static int v_sleep(sqlite3_vfs *vfs, int us)
{
	(void)vfs;
	return real_vfs->xSleep(real_vfs, us);
}
static int v_current_time(sqlite3_vfs *vfs, double *out)
{
	(void)vfs;
	return real_vfs->xCurrentTime(real_vfs, out);
}
static int v_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	(void)vfs;
	return real_vfs->xGetLastError(real_vfs, n, out);
}
static int v_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	(void)vfs;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

void faultvfs_install(void)
{
	if (real_vfs)
		return;
	real_vfs = sqlite3_vfs_find(NULL);
	if (!real_vfs)
		abort();
	fault_io = (sqlite3_io_methods){
	    .iVersion = 3,
	    .xClose = f_close,
	    .xRead = f_read,
	    .xWrite = f_write,
	    .xTruncate = f_truncate,
	    .xSync = f_sync,
	    .xFileSize = f_file_size,
	    .xLock = f_lock,
	    .xUnlock = f_unlock,
	    .xCheckReservedLock = f_check_reserved,
	    .xFileControl = f_file_control,
	    .xSectorSize = f_sector_size,
	    .xDeviceCharacteristics = f_device_characteristics,
	    .xShmMap = f_shm_map,
	    .xShmLock = f_shm_lock,
	    .xShmBarrier = f_shm_barrier,
	    .xShmUnmap = f_shm_unmap,
	    .xFetch = f_fetch,
	    .xUnfetch = f_unfetch,
	};
	fault_vfs = (sqlite3_vfs){
	    .iVersion = 2,
	    .szOsFile = (int)sizeof(struct fault_file) + real_vfs->szOsFile,
	    .mxPathname = real_vfs->mxPathname,
	    .zName = "plugfs-faultvfs",
	    .xOpen = v_open,
	    .xDelete = v_delete,
	    .xAccess = v_access,
	    .xFullPathname = v_full_pathname,
	    .xDlOpen = v_dlopen,
	    .xDlError = v_dlerror,
	    .xDlSym = v_dlsym,
	    .xDlClose = v_dlclose,
	    .xRandomness = v_randomness,
	    .xSleep = v_sleep,
	    .xCurrentTime = v_current_time,
	    .xGetLastError = v_last_error,
	    .xCurrentTimeInt64 = v_current_time_int64,
	};
	if (sqlite3_vfs_register(&fault_vfs, 1) != SQLITE_OK)
		abort();
}
