/* SPDX-License-Identifier: MIT */
#include "sdnotify.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

int sd_notify_send(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t salen;
	size_t len;
	int fd = -1, rc = 0;

	if (!path || !path[0])
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return -EINVAL;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace, no trailing NUL */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int sd_notify_send_fds(const char *state, const int *fds, size_t n_fds)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	struct iovec iov;
	struct msghdr mh;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * SD_NOTIFY_FDS_MAX)];
	} ctl;
	size_t len;
	int fd, rc = 0;

	if (!path || !path[0])
		return 0;
	if (n_fds == 0)
		return sd_notify_send(state);
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path) ||
	    n_fds > SD_NOTIFY_FDS_MAX)
		return -EINVAL;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	memset(&mh, 0, sizeof(mh));
	memset(&ctl, 0, sizeof(ctl));
	iov.iov_base = (void *)state;
	iov.iov_len = strlen(state);
	mh.msg_name = &sa;
	mh.msg_namelen =
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int sd_listen_fds_with_names(char ***names_out)
{
	const char *pid_s = getenv("LISTEN_PID"), *n_s = getenv("LISTEN_FDS");
	const char *names_s = getenv("LISTEN_FDNAMES");
	char **names = NULL, *str, *end;
	long pid, n;
	int rc = 0;

	*names_out = NULL;
	if (!pid_s || !n_s)
		goto out;
	errno = 0;
	pid = strtol(pid_s, &end, 10);
	if (errno || *end || pid != (long)getpid())
		goto out; /* meant for another process */
	n = strtol(n_s, &end, 10);
	if (errno || *end || n < 0 || n > 64) {
		rc = -EINVAL;
		goto out;
	}
	if (n == 0)
		goto out;
	size_t slen = names_s ? strlen(names_s) : 0;

	names = calloc(1, (size_t)(n + 1) * sizeof(*names) + slen + 1);
	if (!names) {
		rc = -ENOMEM;
		goto out;
	}
	str = (char *)(names + n + 1);
	memcpy(str, names_s ? names_s : "", slen + 1);
	for (long i = 0; i < n; i++) {
		char *colon = str ? strchr(str, ':') : NULL;

		if (colon)
			*colon = '\0';
		names[i] = str && *str ? str : "unknown";
		str = colon ? colon + 1 : NULL;
		fcntl(SD_LISTEN_FDS_START + (int)i, F_SETFD, FD_CLOEXEC);
	}
	*names_out = names;
	rc = (int)n;
out:
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return rc;
}
