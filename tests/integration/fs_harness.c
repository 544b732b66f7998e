/* SPDX-License-Identifier: MIT */
/*
 * fs-harness: helper of the filesystem integration tests.
 *
 *   fs-harness register   -s DB -t TYPE... TYPE NAME ALLOC SOCKET [VERSION]
 *   fs-harness deregister -s DB -t TYPE... TYPE NAME ALLOC
 *   fs-harness script     -s DB -t TYPE... < FILE
 *       each line of FILE a `register TYPE NAME ALLOC SOCKET [VERSION]' or
 *       a `deregister TYPE NAME ALLOC', in one open of the state file (one
 *       process for hundreds of changes, not one each)
 *       change a state file offline through the registry API.
 *   fs-harness switch -s DB -t TYPE... -m MNT [-n SWITCHES] [-r READERS] [-w SECONDS]
 *       mounts in-process and switches the active allocation of csi-node/sw
 *       SWITCHES times through the registry API while READERS threads loop
 *       on readlink of its csi.sock and one more lists allocs/.  After each
 *       registry_register returns, every readlink started later must return
 *       the new target; added and removed names must show at once.  A
 *       watchdog fails the run after SECONDS (a deadlock).
 *   fs-harness notify-recv PATH SECONDS
 *       binds a datagram socket at PATH ('@' = abstract), prints the first
 *       datagram received within SECONDS.
 *
 * Exit: 0 pass, 1 failure (with a message), 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "registry.h"

#define MAX_TYPES 8
#define MAX_READERS 16

struct args {
	const char *state;
	const char *types[MAX_TYPES];
	size_t n_types;
	const char *mnt;
	long switches;
	int readers;
	int watchdog_s;
};

static void usage(void)
{
	fprintf(stderr, "usage: fs-harness register|deregister|script|switch|notify-recv ... "
			"(see the comment at the top of fs_harness.c)\n");
	exit(2);
}

static int open_registry(const struct args *a, struct registry **reg)
{
	struct registry_options o = {
	    .types = a->types,
	    .n_types = a->n_types,
	    .tombstone_ttl = 86400,
	    .synchronous = "off",
	};
	char err[REG_ERR_MAX];

	if (!a->state || a->n_types == 0) {
		fprintf(stderr, "fs-harness: -s DB and at least one -t TYPE are required\n");
		return -EINVAL;
	}
	int rc = registry_open(a->state, &o, reg, err, sizeof(err));

	if (rc != 0)
		fprintf(stderr, "fs-harness: registry_open %s: %s\n", a->state, err);
	return rc;
}

static int do_register(struct registry *reg, const char *type, const char *name, const char *alloc,
		       const char *sock, const char *version)
{
	struct reg_spec spec = {.name = name, .alloc = alloc, .socket = sock, .version = version};
	char err[REG_ERR_MAX];
	int rc = registry_register(reg, &type, 1, &spec, err, sizeof(err));

	if (rc != 0)
		fprintf(stderr, "fs-harness: register %s/%s %s: %s\n", type, name, alloc, err);
	return rc;
}

static int do_deregister(struct registry *reg, const char *type, const char *name,
			 const char *alloc)
{
	char err[REG_ERR_MAX];
	int rc = registry_deregister(reg, type, name, alloc, NULL, err, sizeof(err));

	if (rc != 0)
		fprintf(stderr, "fs-harness: deregister %s/%s %s: %s\n", type, name, alloc, err);
	return rc;
}

/* ---- script ------------------------------------------------------------- */

/* The lines of stdin, each a register or a deregister (see the top); stops
 * at the first that fails, naming its line. */
static int cmd_script(const struct args *a)
{
	struct registry *reg = NULL;
	char line[4 * PATH_MAX];
	long n = 0;
	int rc = 0;

	if (open_registry(a, &reg) != 0)
		return 1;
	while (rc == 0 && fgets(line, sizeof(line), stdin)) {
		char *w[7] = {NULL};
		char *save = NULL;
		int k = 0;

		n++;
		for (char *t = strtok_r(line, " \t\n", &save); t && k < 7;
		     t = strtok_r(NULL, " \t\n", &save))
			w[k++] = t;
		if (k == 0)
			continue;
		if (strcmp(w[0], "register") == 0 && (k == 5 || k == 6)) {
			rc = do_register(reg, w[1], w[2], w[3], w[4], k == 6 ? w[5] : NULL);
		} else if (strcmp(w[0], "deregister") == 0 && k == 4) {
			rc = do_deregister(reg, w[1], w[2], w[3]);
		} else {
			fprintf(stderr, "fs-harness: script line %ld: expected `register TYPE NAME ALLOC "
					"SOCKET [VERSION]' or `deregister TYPE NAME ALLOC'\n",
				n);
			rc = -EINVAL;
		}
		if (rc != 0)
			fprintf(stderr, "fs-harness: script line %ld failed\n", n);
	}
	registry_close(reg);
	return rc ? 1 : 0;
}

/* ---- switch ------------------------------------------------------------- */

struct sw {
	const struct args *a;
	char link[PATH_MAX];   /* <mnt>/plugins/csi-node/sw/csi.sock */
	char allocs[PATH_MAX]; /* <mnt>/plugins/csi-node/sw/allocs */
	long acked;	       /* atomic: last acknowledged switch */
	bool done;	       /* atomic */
	unsigned long long reads, stale, errors, lists;
	long progress; /* atomic: switches done, for the watchdog */
	struct plugfs_fs *fs;
};

#define SOCK_PATH_FMT "/run/plugfs-harness/a%ld/csi.sock"

static long target_index(const char *t)
{
	long k;

	if (sscanf(t, "/run/plugfs-harness/a%ld/csi.sock", &k) != 1)
		return -1;
	return k;
}

static void *reader_main(void *arg)
{
	struct sw *s = arg;
	char buf[PATH_MAX];
	unsigned long long reads = 0, stale = 0, errors = 0;

	while (!__atomic_load_n(&s->done, __ATOMIC_SEQ_CST)) {
		long g = __atomic_load_n(&s->acked, __ATOMIC_SEQ_CST);
		ssize_t n = readlink(s->link, buf, sizeof(buf) - 1);
		long k;

		if (n < 0) {
			errors++;
			continue;
		}
		buf[n] = '\0';
		k = target_index(buf);
		if (k < g) {
			if (stale < 5)
				fprintf(stderr, "stale read: acked a%ld, readlink gave %s\n", g,
					buf);
			stale++;
		}
		reads++;
	}
	__atomic_fetch_add(&s->reads, reads, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&s->stale, stale, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&s->errors, errors, __ATOMIC_SEQ_CST);
	return NULL;
}

/* Lists allocs/ and looks up what it finds: lookups in the very directory
 * whose entries are invalidated (the deadlock hazard of notify_inval_entry). */
static void *lister_main(void *arg)
{
	struct sw *s = arg;
	unsigned long long lists = 0;

	while (!__atomic_load_n(&s->done, __ATOMIC_SEQ_CST)) {
		DIR *d = opendir(s->allocs);
		struct dirent *e;

		if (!d)
			continue;
		while ((e = readdir(d)) != NULL) {
			struct stat st;

			fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW);
		}
		closedir(d);
		lists++;
	}
	__atomic_fetch_add(&s->lists, lists, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *watchdog_main(void *arg)
{
	struct sw *s = arg;
	long last = -1;

	for (int idle = 0; !__atomic_load_n(&s->done, __ATOMIC_SEQ_CST);) {
		long p = __atomic_load_n(&s->progress, __ATOMIC_SEQ_CST);

		sleep(1);
		if (p == last) {
			if (++idle >= s->a->watchdog_s) {
				fprintf(stderr,
					"FAIL: no progress for %d s after switch %ld: "
					"deadlock\n",
					idle, p);
				_exit(1);
			}
		} else {
			idle = 0;
			last = p;
		}
	}
	return NULL;
}

static void *loop_main(void *arg)
{
	struct sw *s = arg;
	int rc = fs_run(s->fs);

	if (rc != 0)
		fprintf(stderr, "fs-harness: fs_run: %d\n", rc);
	return NULL;
}

static int expect_exists(const char *dir, const char *name, bool want)
{
	char p[PATH_MAX * 2];
	struct stat st;
	int rc;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	rc = lstat(p, &st);
	if (want && rc != 0) {
		fprintf(stderr, "FAIL: %s missing after the registration was acknowledged: %s\n", p,
			strerror(errno));
		return -1;
	}
	if (!want && !(rc != 0 && errno == ENOENT)) {
		fprintf(stderr,
			"FAIL: %s still there after the deregistration was "
			"acknowledged\n",
			p);
		return -1;
	}
	return 0;
}

/* Whether a listing (readdir, which the kernel may cache) of dir has name. */
static bool listed(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, name) == 0)
			found = true;
	closedir(d);
	return found;
}

static int first_info_line(const char *plugin_dir, char *line, size_t len)
{
	char p[PATH_MAX + 16];
	FILE *f;

	snprintf(p, sizeof(p), "%s/info", plugin_dir);
	f = fopen(p, "re");
	if (!f)
		return -1;
	if (!fgets(line, (int)len, f))
		line[0] = '\0';
	fclose(f);
	return 0;
}

static int cmd_switch(const struct args *a)
{
	struct registry *reg = NULL;
	struct sw s = {.a = a};
	pthread_t readers[MAX_READERS], lister, loop, dog;
	char plugin_dir[2048], sock[PATH_MAX], alloc[32], prev[32], buf[PATH_MAX], line[512];
	struct fs_options fo = {.mountpoint = a->mnt,
				.socket_name = "csi.sock",
				.allow_other = false,
				.cache_timeout = 60};
	char err[REG_ERR_MAX];
	int failures = 0, rc;
	ssize_t n;

	if (!a->mnt)
		usage();
	if (open_registry(a, &reg) != 0)
		return 1;
	snprintf(sock, sizeof(sock), SOCK_PATH_FMT, 0L);
	if (do_register(reg, "csi-node", "sw", "a0", sock, NULL) != 0)
		return 1;
	rc = fs_mount(reg, &fo, &s.fs, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "fs-harness: fs_mount: %s\n", err);
		registry_close(reg);
		return 1;
	}
	pthread_create(&loop, NULL, loop_main, &s);
	snprintf(plugin_dir, sizeof(plugin_dir), "%s/plugins/csi-node/sw", a->mnt);
	snprintf(s.link, sizeof(s.link), "%s/csi.sock", plugin_dir);
	snprintf(s.allocs, sizeof(s.allocs), "%s/allocs", plugin_dir);
	for (int i = 0; i < 100; i++) {
		if (readlink(s.link, buf, sizeof(buf)) > 0)
			break;
		usleep(50 * 1000);
	}
	pthread_create(&dog, NULL, watchdog_main, &s);
	for (int i = 0; i < a->readers; i++)
		pthread_create(&readers[i], NULL, reader_main, &s);
	pthread_create(&lister, NULL, lister_main, &s);

	snprintf(prev, sizeof(prev), "a0");
	for (long i = 1; i <= a->switches && failures == 0; i++) {
		snprintf(alloc, sizeof(alloc), "a%ld", i);
		snprintf(sock, sizeof(sock), SOCK_PATH_FMT, i);
		/* Make the kernel cache a negative entry for the name to come. */
		if (expect_exists(s.allocs, alloc, false) != 0)
			failures++;
		if (do_register(reg, "csi-node", "sw", alloc, sock, "1.0") != 0) {
			failures++;
			break;
		}
		__atomic_store_n(&s.acked, i, __ATOMIC_SEQ_CST);
		n = readlink(s.link, buf, sizeof(buf) - 1);
		buf[n < 0 ? 0 : n] = '\0';
		if (strcmp(buf, sock) != 0) {
			fprintf(stderr,
				"FAIL: switch %ld acknowledged, readlink gave [%s], want "
				"[%s]\n",
				i, buf, sock);
			failures++;
		}
		if (expect_exists(s.allocs, alloc, true) != 0)
			failures++;
		if (!listed(s.allocs, alloc) || !listed(s.allocs, prev)) {
			fprintf(stderr, "FAIL: listing allocs/ after switch %ld misses %s or %s\n",
				i, alloc, prev);
			failures++;
		}
		if (first_info_line(plugin_dir, line, sizeof(line)) != 0 ||
		    strncmp(line, alloc, strlen(alloc)) != 0 || line[strlen(alloc)] != ' ') {
			fprintf(stderr, "FAIL: info does not start with %s: [%s]\n", alloc, line);
			failures++;
		}
		/* The previous one goes: its name must vanish at once. */
		if (do_deregister(reg, "csi-node", "sw", prev) != 0) {
			failures++;
			break;
		}
		if (expect_exists(s.allocs, prev, false) != 0)
			failures++;
		if (listed(s.allocs, prev)) {
			fprintf(stderr,
				"FAIL: listing allocs/ still shows %s after its "
				"deregistration was acknowledged\n",
				prev);
			failures++;
		}
		snprintf(prev, sizeof(prev), "%s", alloc);
		__atomic_store_n(&s.progress, i, __ATOMIC_SEQ_CST);
	}

	/* The plugin disappears with its last registration and comes back.  A
	 * file held open across the removal stays answerable (getattr with no
	 * attribute caching goes to the daemon) until the kernel forgets it. */
	if (failures == 0) {
		char info[PATH_MAX + 16];
		struct stat before, after;
		int fd;

		fs_set_cache_timeout(s.fs, 0);
		snprintf(info, sizeof(info), "%s/info", plugin_dir);
		fd = open(info, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &before) != 0) {
			fprintf(stderr, "FAIL: open %s: %s\n", info, strerror(errno));
			failures++;
		}
		if (do_deregister(reg, "csi-node", "sw", prev) != 0 ||
		    expect_exists(plugin_dir, "", false) != 0)
			failures++;
		snprintf(buf, sizeof(buf), "%s/plugins/csi-node", a->mnt);
		if (listed(buf, "sw")) {
			fprintf(stderr, "FAIL: listing csi-node/ still shows the removed plugin\n");
			failures++;
		}
		if (fd >= 0) {
			if (fstat(fd, &after) != 0 || after.st_ino != before.st_ino ||
			    after.st_size != before.st_size) {
				fprintf(stderr,
					"FAIL: a removed, still open info does not answer "
					"getattr: %s\n",
					strerror(errno));
				failures++;
			}
			if (read(fd, line, sizeof(line)) <= 0) {
				fprintf(stderr,
					"FAIL: a removed, still open info cannot be read\n");
				failures++;
			}
			close(fd);
		}
		fs_set_cache_timeout(s.fs, 60);
		snprintf(sock, sizeof(sock), SOCK_PATH_FMT, a->switches + 1);
		snprintf(alloc, sizeof(alloc), "a%ld", a->switches + 1);
		if (do_register(reg, "csi-node", "sw", alloc, sock, NULL) != 0)
			failures++;
		__atomic_store_n(&s.acked, a->switches + 1, __ATOMIC_SEQ_CST);
		snprintf(buf, sizeof(buf), "%s/plugins/csi-node", a->mnt);
		if (!listed(buf, "sw")) {
			fprintf(stderr, "FAIL: listing csi-node/ misses the re-created plugin\n");
			failures++;
		}
		n = readlink(s.link, buf, sizeof(buf) - 1);
		buf[n < 0 ? 0 : n] = '\0';
		if (strcmp(buf, sock) != 0) {
			fprintf(stderr, "FAIL: re-created plugin: readlink gave [%s], want [%s]\n",
				buf, sock);
			failures++;
		}
	}

	__atomic_store_n(&s.done, true, __ATOMIC_SEQ_CST);
	for (int i = 0; i < a->readers; i++)
		pthread_join(readers[i], NULL);
	pthread_join(lister, NULL);
	pthread_join(dog, NULL);
	fs_exit(s.fs);
	pthread_join(loop, NULL);
	fs_destroy(s.fs);
	registry_close(reg);

	printf("switches=%ld reads=%llu stale=%llu read_errors=%llu listings=%llu\n", a->switches,
	       s.reads, s.stale, s.errors, s.lists);
	if (s.stale > 0) {
		fprintf(stderr, "FAIL: %llu stale reads after acknowledgement\n", s.stale);
		failures++;
	}
	if (s.reads == 0) {
		fprintf(stderr, "FAIL: the readers read nothing\n");
		failures++;
	}
	return failures ? 1 : 0;
}

/* ---- notify-recv -------------------------------------------------------- */

static int cmd_notify_recv(const char *path, int seconds)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(path);
	socklen_t salen;
	struct pollfd pfd;
	char buf[4096];
	ssize_t n;
	int fd;

	if (len == 0 || len >= sizeof(sa.sun_path))
		usage();
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] != '@'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, salen) != 0) {
		fprintf(stderr, "fs-harness: bind %s: %s\n", path, strerror(errno));
		return 1;
	}
	/* Tell the caller we listen (a line on stdout), then wait. */
	printf("listening\n");
	fflush(stdout);
	pfd.fd = fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, seconds * 1000) != 1) {
		fprintf(stderr, "fs-harness: nothing received on %s within %d s\n", path, seconds);
		return 1;
	}
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0) {
		fprintf(stderr, "fs-harness: recv: %s\n", strerror(errno));
		return 1;
	}
	buf[n] = '\0';
	printf("%s\n", buf);
	close(fd);
	return 0;
}

int main(int argc, char *argv[])
{
	struct args a = {.switches = 200, .readers = 4, .watchdog_s = 20};
	const char *cmd;
	struct registry *reg = NULL;
	int c, rc;

	if (argc < 2)
		usage();
	cmd = argv[1];
	if (strcmp(cmd, "notify-recv") == 0) {
		if (argc != 4)
			usage();
		return cmd_notify_recv(argv[2], atoi(argv[3]));
	}
	optind = 2;
	while ((c = getopt(argc, argv, "s:t:m:n:r:w:")) != -1) {
		switch (c) {
		case 's':
			a.state = optarg;
			break;
		case 't':
			if (a.n_types == MAX_TYPES)
				usage();
			a.types[a.n_types++] = optarg;
			break;
		case 'm':
			a.mnt = optarg;
			break;
		case 'n':
			a.switches = atol(optarg);
			break;
		case 'r':
			a.readers = atoi(optarg);
			if (a.readers < 1 || a.readers > MAX_READERS)
				usage();
			break;
		case 'w':
			a.watchdog_s = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (strcmp(cmd, "switch") == 0)
		return cmd_switch(&a);
	if (strcmp(cmd, "script") == 0) {
		if (argc != optind)
			usage();
		return cmd_script(&a);
	}
	if (strcmp(cmd, "register") == 0) {
		if (argc - optind < 4 || argc - optind > 5)
			usage();
		if (open_registry(&a, &reg) != 0)
			return 1;
		rc = do_register(reg, argv[optind], argv[optind + 1], argv[optind + 2],
				 argv[optind + 3], argc - optind == 5 ? argv[optind + 4] : NULL);
		registry_close(reg);
		return rc ? 1 : 0;
	}
	if (strcmp(cmd, "deregister") == 0) {
		if (argc - optind != 3)
			usage();
		if (open_registry(&a, &reg) != 0)
			return 1;
		rc = do_deregister(reg, argv[optind], argv[optind + 1], argv[optind + 2]);
		registry_close(reg);
		return rc ? 1 : 0;
	}
	usage();
	return 2;
}
