/* SPDX-License-Identifier: MIT */
/* What the benches that mount plugfs in-process share (bench_mount.h). */
#include "bench_mount.h"

#include <errno.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"

static void die(const char *prog, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

void bench_tmpdir(const char *prog, const char *prefix, char *buf, size_t len)
{
	static const char *const dirs[] = {"/dev/shm", "/run", "/tmp"};
	struct statfs sf;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (statfs(dirs[i], &sf) != 0 || sf.f_type != TMPFS_MAGIC ||
		    access(dirs[i], W_OK) != 0)
			continue;
		if (snprintf(buf, len, "%s/%s.XXXXXX", dirs[i], prefix) >= (int)len) {
			fprintf(stderr, "%s: the temporary directory's name is too long\n", prog);
			exit(1);
		}
		if (!mkdtemp(buf))
			die(prog, "mkdtemp");
		return;
	}
	fprintf(stderr, "%s: no writable tmpfs (/dev/shm, /run, /tmp)\n", prog);
	exit(1);
}

void bench_tmpdir_remove(const char *prog, const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "%s: could not remove %s\n", prog, dir);
}

bool bench_fuse_usable(const char *prog, int *exit_code)
{
	const char *ci = getenv("CI");
	bool in_ci = ci && strcmp(ci, "true") == 0;

	if (geteuid() == 0 && access("/dev/fuse", R_OK | W_OK) == 0)
		return true;
	fprintf(stderr, "%s: %s: needs root and /dev/fuse\n", prog,
		in_ci ? "FAIL (CI=true: not skipping)" : "SKIP");
	*exit_code = in_ci ? 1 : 77;
	return false;
}

int bench_listen(const char *prog, const char *path, int flags)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "%s: socket path too long: %s\n", prog, path);
		exit(1);
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 4096) != 0)
		die(prog, "listen");
	return fd;
}

struct registry *bench_open_registry(const char *prog, const char *dir, const char *synchronous)
{
	static const char *const types[] = {"csi-controller", "csi-node"};
	struct registry_options ro = {
	    .types = types, .n_types = 2, .tombstone_ttl = 86400, .synchronous = synchronous};
	char path[PATH_MAX + 16], err[REG_ERR_MAX];
	struct registry *r = NULL;

	snprintf(path, sizeof(path), "%s/state.db", dir);
	if (registry_open(path, &ro, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: registry_open: %s\n", prog, err);
		exit(1);
	}
	return r;
}

int bench_register(const char *prog, struct registry *r, const char *type, const char *name,
		   const char *alloc, const char *sock)
{
	struct reg_spec spec = {.name = name, .alloc = alloc, .socket = sock};
	char err[REG_ERR_MAX];

	if (registry_register(r, &type, 1, &spec, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: register %s/%s %s: %s\n", prog, type, name, alloc, err);
		return -1;
	}
	return 0;
}

static void *loop_main(void *arg)
{
	fs_run(arg);
	return NULL;
}

void bench_mount_start(const char *prog, struct registry *r, const struct fs_options *fo,
		       const char *link, struct bench_mount *m)
{
	char err[REG_ERR_MAX], t[PATH_MAX];
	int64_t deadline;

	if (fs_mount(r, fo, &m->fs, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: fs_mount: %s\n", prog, err);
		exit(1);
	}
	if (pthread_create(&m->loop, NULL, loop_main, m->fs) != 0) {
		fprintf(stderr, "%s: cannot start the loop thread\n", prog);
		exit(1);
	}
	deadline = plugfs_mono_ms() + 30000;
	while (readlink(link, t, sizeof(t)) <= 0) {
		if (plugfs_mono_ms() > deadline) {
			fprintf(stderr, "%s: the mount does not answer (readlink %s)\n", prog,
				link);
			exit(1);
		}
		usleep(10000);
	}
}

void bench_mount_stop(struct bench_mount *m)
{
	fs_exit(m->fs);
	pthread_join(m->loop, NULL);
	fs_destroy(m->fs);
	m->fs = NULL;
}
