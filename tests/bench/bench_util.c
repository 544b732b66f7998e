/* SPDX-License-Identifier: MIT */
/* What the sections of plugfs-bench share (bench_util.h). */
#include "bench_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int bench_ctl_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int bench_run_quiet(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0)
			dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

const char *bench_verdict(bool judged, bool met)
{
	return !judged ? "-" : met ? "met" : "MISSED";
}

int bench_call(int fd, const char *line, char *ans, size_t anslen)
{
	size_t len = strlen(line), got = 0;

	while (got < len) {
		ssize_t w = write(fd, line + got, len - got);

		if (w <= 0)
			return -1;
		got += (size_t)w;
	}
	got = 0;
	while (got + 1 < anslen) {
		ssize_t r = read(fd, ans + got, anslen - 1 - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
		if (memchr(ans + got - (size_t)r, '\n', (size_t)r))
			break;
	}
	ans[got] = '\0';
	return 0;
}
