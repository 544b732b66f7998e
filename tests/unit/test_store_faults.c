/* SPDX-License-Identifier: MIT */
/*
 * I/O faults under every write point (faultvfs.h): for each mutation of
 * the registry (register, deregister, deregister by alloc, legacy import,
 * the version-1 migration, tombstone expiry, on open too) and for every N,
 * the Nth read, write, sync, truncate or size call of the operation fails
 * (SQLITE_IOERR or SQLITE_FULL, once or from then on).  After each:
 *
 * - the caller got 0 or -EIO/-ENOSPC with a message naming the state file;
 * - memory is the state before (on an error) or after (on success);
 * - a read-only open of the file, while the registry is still open, loads
 *   what memory holds, and so does a fresh open after closing it, of a file
 *   that passes quick_check;
 * - the same operation, tried again with the disk healthy, succeeds.
 *
 * test_catches_memory_ahead_of_disk runs the register scenario against a
 * registry broken on purpose (store_commit's failure swallowed, so that
 * memory changes although the file does not: what "apply, then persist"
 * would do) and requires the checks to find it.  The figure printed is the
 * number of fault points injected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "faultvfs.h"
#include "registry.h"
#include "test_registry_util.h"

/* The broken registry of test_catches_memory_ahead_of_disk: this program
 * links with -Wl,--wrap=store_commit (tests/unit/CMakeLists.txt). */
struct store;
int __real_store_commit(struct store *s, char *err, size_t errlen);
int __wrap_store_commit(struct store *s, char *err, size_t errlen);
static bool swallow_commit_failure;

int __wrap_store_commit(struct store *s, char *err, size_t errlen)
{
	int rc = __real_store_commit(s, err, errlen);

	return swallow_commit_failure ? 0 : rc;
}

static long fault_points; /* over the whole program, printed at the end */
static long hot_journals; /* failures that left a hot journal */
/* Failed calls whose change is in the file all the same (only tombstone
 * expiry can show it: memory holds no tombstones); see crash_check. */
static long failed_yet_durable;
static long expiry_skipped; /* opens that went on without their expiry */

static const char *hot_journal(struct fixture *f)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s-journal", f->path);
	return p;
}

/* The registry as text: types and ids, every plugin and registration but
 * the runtime state (never persisted).  Owned by the caller. */
static char *dump(struct registry *r)
{
	struct reg_snapshot s = {0};
	const char *const *names;
	const int64_t *ids;
	size_t n = registry_types(r, &names, &ids), len = 0;
	char *buf = NULL;
	FILE *fp = open_memstream(&buf, &len);

	assert_non_null(fp);
	for (size_t i = 0; i < n; i++)
		fprintf(fp, "type %s %lld\n", names[i], (long long)ids[i]);
	assert_int_equal(registry_snapshot(r, NULL, &s), 0);
	for (size_t i = 0; i < s.n_plugins; i++) {
		const struct reg_plugin *p = &s.plugins[i];

		fprintf(fp, "plugin %s/%s %lld\n", p->type, p->name, (long long)p->id);
		for (size_t j = 0; j < p->n_regs; j++) {
			const struct registration *g = &p->regs[j];

			fprintf(fp, " %lld %s %s %s %d %d %s seq %lld at %lld %lld",
				(long long)g->id, g->alloc, g->socket, g->version, g->kind,
				g->probe, g->csi_name, (long long)g->seq,
				(long long)g->registered_at, (long long)g->updated_at);
			for (size_t k = 0; k < g->n_options; k++)
				fprintf(fp, " %s=%s", g->options[k].key, g->options[k].value);
			fputc('\n', fp);
		}
	}
	reg_snapshot_free(&s);
	fclose(fp);
	return buf;
}

/* What a fresh open of path loads (read_only: without writing). */
static char *dump_file(struct fixture *f, const char *path, bool read_only, char *err,
		       size_t errlen)
{
	struct registry_options o = fixture_options(f);
	struct registry *r = NULL;
	char *text;

	o.read_only = read_only;
	if (registry_open(path, &o, &r, err, errlen) < 0)
		return NULL;
	text = dump(r);
	registry_close(r);
	return text;
}

static bool quick_check_ok(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	bool ok = false;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		ok = strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
	sqlite3_finalize(st);
	sqlite3_close(db);
	return ok;
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	char buf[8192];
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

static void remove_state(const char *path)
{
	static const char *const suffixes[] = {"", "-wal", "-shm", "-journal", ".v1.bak"};
	char p[256];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", path, suffixes[i]);
		unlink(p);
	}
}

struct scenario {
	const char *name;
	/* Builds the state file at f->path (the registry open or closed). */
	void (*prepare)(struct fixture *f);
	/* The operation, on the open f->r; NULL: the operation is the open. */
	int (*op)(struct fixture *f, char *err, size_t errlen);
	int64_t clock; /* f->now for the operation: 0 = as prepare left it */
};

static void prepare_regs(struct fixture *f)
{
	assert_int_equal(reg(f, "csi-node", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "p", "a1"), 0);
	assert_int_equal(reg(f, "csi-controller", "p", "a0"), 0);
	assert_int_equal(reg(f, "csi-node", "q", "b0"), 0);
}

static int op_register(struct fixture *f, char *err, size_t errlen)
{
	static const char *const types[] = {"csi-controller", "csi-node"};
	const struct reg_option opts[] = {{"zone", "b"}, {"arch", "x86"}};
	struct reg_spec spec = {.name = "p",
				.alloc = "a9",
				.socket = "/run/csi/a9/csi.sock",
				.version = "1.0",
				.options = opts,
				.n_options = 2};

	return registry_register(f->r, types, 2, &spec, err, errlen);
}

static int op_update(struct fixture *f, char *err, size_t errlen)
{
	const char *type = "csi-node";
	struct reg_spec spec = {.name = "p", .alloc = "a0", .socket = "/run/csi/a0/new.sock"};

	return registry_register(f->r, &type, 1, &spec, err, errlen);
}

static int op_deregister(struct fixture *f, char *err, size_t errlen)
{
	bool removed = false;
	int rc = registry_deregister(f->r, "csi-node", "p", "a1", &removed, err, errlen);

	assert_true(rc < 0 ? !removed : removed);
	return rc;
}

static int op_deregister_alloc(struct fixture *f, char *err, size_t errlen)
{
	size_t n = 0;
	int rc = registry_deregister_alloc(f->r, "a0", &n, err, errlen);

	assert_int_equal(n, rc < 0 ? 0 : 2);
	return rc;
}

static int op_import(struct fixture *f, char *err, size_t errlen)
{
	static const char json[] =
	    "{\"Plugins\": {\"csi-node\": {"
	    " \"p\": {\"AllocID\": \"a7\", \"ConnectionInfo\": {\"SocketPath\": \"/run/a7.sock\"}},"
	    " \"n\": {\"AllocID\": \"c1\", \"Version\": \"2\", \"Options\": {\"k\": \"v\"},"
	    "  \"ConnectionInfo\": {\"SocketPath\": \"/run/c1.sock\"}}}}}";

	return registry_import_legacy_json(f->r, json, NULL, err, errlen);
}

static void prepare_v1(struct fixture *f)
{
	registry_close(f->r);
	f->r = NULL;
	remove_state(f->path);
	write_v1(f->path, 1,
		 "{\"Plugins\": {\"csi-node\": {"
		 " \"p\": {\"AllocID\": \"m0\", \"Type\": \"node\", \"Version\": \"1.2\","
		 "  \"ConnectionInfo\": {\"SocketPath\": \"/run/m0.sock\"}, \"Options\": {\"a\": "
		 "\"1\"}},"
		 " \"q\": {\"AllocID\": \"m1\", \"ConnectionInfo\": {\"SocketPath\": "
		 "\"/run/m1.sock\"}}},"
		 " \"csi-controller\": {"
		 " \"p\": {\"AllocID\": \"m0\", \"ConnectionInfo\": {\"SocketPath\": "
		 "\"/run/m2.sock\"}}}}}");
}

#define EXPIRY (1700000000 + TTL + 1)

static void prepare_tombstones(struct fixture *f)
{
	char alloc[16];

	for (int i = 0; i < 20; i++) {
		snprintf(alloc, sizeof(alloc), "t%d", i);
		assert_int_equal(reg(f, "csi-node", "p", alloc), 0);
	}
	assert_int_equal(reg(f, "csi-node", "p", "keep"), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(alloc, sizeof(alloc), "t%d", i);
		assert_int_equal(dereg(f, "csi-node", "p", alloc), 0);
		if (i == 9)
			f->now += TTL / 2; /* at EXPIRY t0..t9 expire, t10..t19 not yet */
	}
}

static int op_expire(struct fixture *f, char *err, size_t errlen)
{
	int rc = registry_expire_tombstones(f->r, err, errlen);

	if (rc >= 0 && rc != 10) { /* the retry of one that did expire them */
		snprintf(err, errlen, "expired %d tombstones, not 10", rc);
		return -ERANGE;
	}
	return rc < 0 ? rc : 0;
}

static const struct scenario scenarios[] = {
    {"register (two types, options)", prepare_regs, op_register, 0},
    {"register (update)", prepare_regs, op_update, 0},
    {"deregister", prepare_regs, op_deregister, 0},
    {"deregister --alloc", prepare_regs, op_deregister_alloc, 0},
    {"import", prepare_regs, op_import, 0},
    {"v1 migration", prepare_v1, NULL, 0},
    {"tombstone expiry", prepare_tombstones, op_expire, EXPIRY},
    {"tombstone expiry at open", prepare_tombstones, NULL, EXPIRY},
};

/* The tombstones in the file at path (0 in a version-1 file). */
static int64_t tombstones(const char *path)
{
	if (query_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'tombstones'") == 0)
		return 0;
	return query_int(path, "SELECT count(*) FROM tombstones");
}

/* One problem found: printed, counted. */
static int problem(int *bad, const char *sc, const char *mode, int n, const char *what)
{
	if (*bad < 10)
		print_message("# %s, %s, fault %d: %s\n", sc, mode, n, what);
	return ++*bad;
}

/* A crash right after a failed call: a copy of the file and its -wal as
 * they are now, opened (WAL recovery) elsewhere.  Counts the failed calls
 * whose change a restart would find committed (an fsync that failed after
 * the commit frame reached the -wal: the outcome of such a call is
 * unknown, as with any failed fsync). */
static long crash_durable, crash_checked;

static bool crash_check(struct fixture *f, const char *want)
{
	char crash[256], from[256], to[300], err[REG_ERR_MAX];
	bool durable;
	char *text;

	snprintf(crash, sizeof(crash), "%s/crash.db", f->dir);
	remove_state(crash);
	copy_file(f->path, crash);
	snprintf(from, sizeof(from), "%s-wal", f->path);
	snprintf(to, sizeof(to), "%s-wal", crash);
	if (access(from, F_OK) == 0)
		copy_file(from, to);
	snprintf(from, sizeof(from), "%s-journal", f->path);
	snprintf(to, sizeof(to), "%s-journal", crash);
	if (access(from, F_OK) == 0)
		copy_file(from, to);
	text = dump_file(f, crash, false, err, sizeof(err));
	crash_checked++;
	durable = text && strcmp(text, want) != 0;
	crash_durable += durable;
	free(text);
	remove_state(crash);
	return durable;
}

struct expected {
	char *before, *after;
	int64_t tomb_before, tomb_after;
};

/* Checks the state after the operation failed (rc < 0) or succeeded with
 * fault n injected. */
static void check_after_fault(struct fixture *f, const struct scenario *sc, const char *mode, int n,
			      int rc, const char *err, const struct expected *x, int *bad)
{
	char e2[REG_ERR_MAX] = "", *mem = NULL, *disk = NULL;
	const char *want = rc < 0 ? x->before : x->after;
	int64_t t;

	if (rc < 0 && rc != -EIO && rc != -ENOSPC)
		problem(bad, sc->name, mode, n, "an error other than EIO or ENOSPC");
	if (rc < 0 && (strncmp(err, "state file `", 12) != 0 || !strstr(err, f->path)))
		problem(bad, sc->name, mode, n, "an error message that does not name the file");
	if (rc < 0 && crash_check(f, want) && crash_durable <= 3)
		print_message("# %s, %s, fault %d: failed, but a crash now would keep it\n",
			      sc->name, mode, n);
	if (f->r) {
		mem = dump(f->r);
		if (strcmp(mem, want) != 0)
			problem(bad, sc->name, mode, n,
				rc < 0 ? "memory changed by a failed call"
				       : "memory is not the result");
		disk = dump_file(f, f->path, true, e2, sizeof(e2));
		if (!disk || strcmp(disk, mem) != 0)
			problem(bad, sc->name, mode, n,
				"the file (read while open) differs from memory");
		free(disk);
		if (rc < 0 && sc->op) { /* the disk is healthy again */
			if (sc->op(f, e2, sizeof(e2)) < 0)
				problem(bad, sc->name, mode, n, "the retry failed");
			free(mem);
			mem = dump(f->r);
			want = x->after;
		}
		registry_close(f->r);
		f->r = NULL;
	} else if (sc->op || rc == 0) {
		problem(bad, sc->name, mode, n, "no registry after a call that succeeded");
	}
	/* A failed rollback (the disk still failing) leaves a hot journal,
	 * which only a connection that may write rolls back: the next open. */
	if (access(hot_journal(f), F_OK) == 0)
		hot_journals++;
	else if ((t = tombstones(f->path)) !=
		     (want == x->before ? x->tomb_before : x->tomb_after) &&
		 !(rc < 0 && t == x->tomb_after && failed_yet_durable++ >= 0) &&
		 /* An open goes on when its tombstone expiry fails (housekeeping
		  * only: the next open expires them), saying why. */
		 !(rc == 0 && !sc->op && t == x->tomb_before &&
		   strstr(err, "expiring tombstones") && expiry_skipped++ >= 0) &&
		 problem(bad, sc->name, mode, n, "the tombstones are not as memory says") <= 10)
		print_message("#   %lld tombstones after: %d %s\n", (long long)t, rc, err);
	disk = dump_file(f, f->path, false, e2, sizeof(e2));
	if (!disk && problem(bad, sc->name, mode, n, "a fresh open fails") <= 10)
		print_message("#   %s (the call said: %s)\n", e2, err);
	else if (strcmp(disk, mem ? mem : x->after) != 0)
		problem(bad, sc->name, mode, n, "a fresh open loads something else");
	if (!quick_check_ok(f->path))
		problem(bad, sc->name, mode, n, "quick_check fails");
	free(disk);
	free(mem);
}

/* Runs sc with every fault point of one mode; returns the problems. */
static int run_mode(struct fixture *f, const struct scenario *sc, const char *pristine, int code,
		    bool persist, const struct expected *x, int64_t prepared)
{
	char mode[64], err[REG_ERR_MAX];
	int bad = 0, n;

	snprintf(mode, sizeof(mode), "%s%s", code == SQLITE_FULL ? "SQLITE_FULL" : "SQLITE_IOERR",
		 persist ? " from then on" : " once");
	for (n = 1; n < 10000; n++) {
		int rc;

		remove_state(f->path);
		copy_file(pristine, f->path);
		f->now = prepared;
		if (sc->op)
			reopen(f);
		if (sc->clock)
			f->now = sc->clock;
		err[0] = '\0';
		faultvfs_arm(n, code, persist);
		rc = sc->op ? sc->op(f, err, sizeof(err)) : try_open(f, err, sizeof(err));
		faultvfs_disarm();
		if (!faultvfs_fired()) {
			if (rc != 0)
				problem(&bad, sc->name, mode, n, "failed without a fault");
			registry_close(f->r);
			f->r = NULL;
			break;
		}
		fault_points++;
		check_after_fault(f, sc, mode, n, rc, err, x, &bad);
	}
	print_message("# %s, %s: %d fault points, %d problems\n", sc->name, mode, n - 1, bad);
	return bad;
}

/* Runs sc under every mode; returns the problems found. */
static int run_scenario(struct fixture *f, const struct scenario *sc)
{
	static const int codes[] = {SQLITE_IOERR, SQLITE_FULL};
	char pristine[256], err[REG_ERR_MAX] = "";
	struct expected x = {0};
	int64_t start = f->now, prepared;
	int bad = 0;

	sc->prepare(f);
	registry_close(f->r);
	f->r = NULL;
	prepared = f->now;
	snprintf(pristine, sizeof(pristine), "%s/pristine.db", f->dir);
	copy_file(f->path, pristine);
	/* The state before and after, without faults. */
	if (sc->op) {
		reopen(f);
		x.before = dump(f->r);
		if (sc->clock)
			f->now = sc->clock;
		assert_int_equal(sc->op(f, err, sizeof(err)), 0);
		x.after = dump(f->r);
		registry_close(f->r);
		f->r = NULL;
	} else {
		if (sc->clock)
			f->now = sc->clock;
		x.after = dump_file(f, f->path, false, err, sizeof(err));
		assert_non_null(x.after);
		x.before = strdup(x.after);
	}
	x.tomb_after = tombstones(f->path);
	x.tomb_before = tombstones(pristine);
	/* The operation does something (in memory, or to the tombstones). */
	assert_true(!sc->op || strcmp(x.before, x.after) != 0 || x.tomb_before != x.tomb_after);
	for (size_t i = 0; i < 2; i++)
		for (int persist = 0; persist < 2; persist++) {
			bad += run_mode(f, sc, pristine, codes[i], persist, &x, prepared);
		}
	free(x.before);
	free(x.after);
	remove_state(pristine);
	f->now = start;
	remove_state(f->path);
	reopen(f);
	return bad;
}

static void test_every_fault_point(void **state)
{
	struct fixture *f = *state;
	long before = fault_points;
	int bad = 0;

	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		bad += run_scenario(f, &scenarios[i]);
	print_message("# fault points injected: %ld, problems: %d\n", fault_points - before, bad);
	print_message(
	    "# failed calls that left a hot journal (rolled back by the next open): %ld\n",
	    hot_journals);
	print_message("# failed calls whose change a crash right after would keep: %ld of %ld"
		      " (their fsync failed after the commit frame was written)\n",
		      crash_durable, crash_checked);
	print_message("# failed tombstone expiries found done in the file: %ld; opens that went"
		      " on without their expiry: %ld\n",
		      failed_yet_durable, expiry_skipped);
	assert_true(fault_points - before > 100);
	assert_int_equal(bad, 0);
}

static void test_catches_memory_ahead_of_disk(void **state)
{
	struct fixture *f = *state;
	int bad;

	swallow_commit_failure = true;
	bad = run_scenario(f, &scenarios[0]);
	swallow_commit_failure = false;
	print_message("# a registry that keeps memory when the commit fails: %d problems found\n",
		      bad);
	assert_true(bad > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_every_fault_point),
	    T(test_catches_memory_ahead_of_disk),
	};
	int rc;

	faultvfs_install();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	printf("# fault points injected, both tests: %ld\n", fault_points);
	return rc;
}
