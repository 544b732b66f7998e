/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "test_registry_util.h"

static int64_t fixture_now(void *arg)
{
	return ((struct fixture *)arg)->now;
}

static void record(const struct reg_event *ev, void *arg)
{
	struct fixture *f = arg;
	size_t len = strlen(f->events), np = 0;
	const char *alloc = ev->reg ? ev->reg->alloc : "-";
	struct reg_plugin p;

	/* Getters work from a callback (recursive mutex) and see the new state. */
	registry_counts(f->r, &np, NULL);
	if (ev->plugin) {
		assert_int_equal(registry_get_plugin(f->r, ev->plugin_type, ev->plugin_name, &p),
				 0);
		assert_int_equal(p.n_regs, ev->plugin->n_regs);
		assert_int_equal(p.id, ev->plugin_id);
		reg_plugin_free_contents(&p);
	} else {
		assert_int_equal(registry_get_plugin(f->r, ev->plugin_type, ev->plugin_name, &p),
				 -ENOENT);
	}
	if (ev->type == REG_EV_ACTIVE) {
		if (ev->plugin)
			assert_string_equal(reg_plugin_active(ev->plugin)->alloc, ev->new_alloc);
		snprintf(f->events + len, sizeof(f->events) - len, "%s %s/%s %s->%s%s;",
			 reg_event_name(ev->type), ev->plugin_type, ev->plugin_name,
			 ev->old_alloc ? ev->old_alloc : "(null)",
			 ev->new_alloc ? ev->new_alloc : "(null)", ev->plugin ? "" : " (gone)");
	} else {
		snprintf(f->events + len, sizeof(f->events) - len, "%s %s/%s %s%s;",
			 reg_event_name(ev->type), ev->plugin_type, ev->plugin_name, alloc,
			 ev->plugin ? "" : " (gone)");
	}
}

int fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/plugfs-unit-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/state.db", f->dir);
	f->now = 1700000000;
	f->types[0] = "csi-controller";
	f->types[1] = "csi-node";
	f->n_types = 2;
	reopen(f);
	*state = f;
	return 0;
}

int fixture_teardown(void **state)
{
	struct fixture *f = *state;
	DIR *d;

	registry_close(f->r);
	/* Everything a test left in its directory (the state file, its -wal,
	 * -shm and -reserve, a migration's .vN.bak and theirs), then it. */
	if ((d = opendir(f->dir))) {
		struct dirent *de;

		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	if (rmdir(f->dir) != 0)
		print_message("# teardown: cannot remove %s: %s\n", f->dir, strerror(errno));
	free(f);
	return 0;
}

struct registry_options fixture_options(struct fixture *f)
{
	return (struct registry_options){
	    .types = f->types,
	    .n_types = f->n_types,
	    .socket_roots = f->roots,
	    .n_socket_roots = f->n_roots,
	    .tombstone_ttl = TTL,
	    .synchronous = "full",
	    .now = fixture_now,
	    .now_arg = f,
	};
}

int try_open(struct fixture *f, char *err, size_t errlen)
{
	struct registry_options o = fixture_options(f);
	int rc;

	assert_null(f->r);
	rc = registry_open(f->path, &o, &f->r, err, errlen);
	if (rc == 0)
		assert_true(registry_subscribe(f->r, record, f) > 0);
	else
		assert_null(f->r);
	return rc;
}

void reopen(struct fixture *f)
{
	char err[REG_ERR_MAX] = "";
	int rc = try_open(f, err, sizeof(err));

	if (rc != 0)
		fail_msg("registry_open: %d %s", rc, err);
}

void restart(struct fixture *f)
{
	registry_close(f->r);
	f->r = NULL;
	reopen(f);
}

int reg(struct fixture *f, const char *type, const char *name, const char *alloc)
{
	char socket[256], err[REG_ERR_MAX];
	struct reg_spec spec = {.name = name, .alloc = alloc, .socket = socket};
	int rc;

	snprintf(socket, sizeof(socket), "/run/csi/%s/csi.sock", alloc);
	rc = registry_register(f->r, &type, 1, &spec, err, sizeof(err));
	if (rc < 0)
		print_message("register: %s\n", err);
	return rc;
}

int dereg(struct fixture *f, const char *type, const char *name, const char *alloc)
{
	char err[REG_ERR_MAX];
	int rc = registry_deregister(f->r, type, name, alloc, NULL, err, sizeof(err));

	if (rc < 0)
		print_message("deregister: %s\n", err);
	return rc;
}

const char *active(struct fixture *f, const char *type, const char *name)
{
	static char buf[REG_NAME_MAX + 1];
	struct reg_plugin p;

	if (registry_get_plugin(f->r, type, name, &p) < 0)
		return NULL;
	assert_non_null(reg_plugin_active(&p));
	snprintf(buf, sizeof(buf), "%s", reg_plugin_active(&p)->alloc);
	reg_plugin_free_contents(&p);
	return buf;
}

const char *order(struct fixture *f, const char *type, const char *name)
{
	static char buf[4096];
	struct reg_plugin p;
	size_t o = 0;

	buf[0] = '\0';
	if (registry_get_plugin(f->r, type, name, &p) < 0)
		return buf;
	for (size_t i = 0; i < p.n_regs; i++) {
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", i ? " " : "",
				      p.regs[i].alloc);
		if (i > 0)
			assert_true(p.regs[i - 1].seq > p.regs[i].seq);
	}
	reg_plugin_free_contents(&p);
	return buf;
}

void events_clear(struct fixture *f)
{
	f->events[0] = '\0';
}

int64_t count_rows(struct fixture *f, const char *table)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	return query_int(f->path, sql);
}

int64_t query_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int64_t v;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

void write_v1(const char *path, int user_version, const char *json)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char sql[64];

	unlink(path);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
	    sqlite3_exec(db, "CREATE TABLE kv(key TEXT PRIMARY KEY, value TEXT)", NULL, NULL, NULL),
	    SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO kv VALUES(?1, ?2)", -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(st, 1, "dynamic_plugin_registry", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, json, -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", user_version);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

void exec_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg);
	sqlite3_close(db);
}
