/* SPDX-License-Identifier: MIT */
#include "fsutil.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "err.h"
#include "log.h"
#include "pathtrust.h"

int plugfs_mkdir_p(const char *path, mode_t mode, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return plugfs_errf(err, errlen, -EINVAL, "`%s': not a usable path", path);
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) == 0) {
			if (chmod(buf, mode) != 0)
				log_warn("chmod %04o %s: %s", (unsigned)mode, buf, strerror(errno));
		} else if (errno != EEXIST) {
			int e = errno;

			return plugfs_errf(err, errlen, -e, "%s: %s", buf, strerror(e));
		}
		*p = c;
		if (c == '\0')
			break;
	}
	return 0;
}

const char *plugfs_mode_noun(mode_t mode)
{
	return S_ISDIR(mode)	? "a directory"
	       : S_ISFIFO(mode) ? "a FIFO"
	       : S_ISSOCK(mode) ? "a socket"
	       : S_ISLNK(mode)	? "a symlink"
				: "a device";
}

int plugfs_prepare_file(const char *field, const char *path, char *err, size_t errlen)
{
	char *dir = NULL, *slash;
	char why[PATH_MAX + 64];
	struct stat st;
	int rc;

	rc = plugfs_path_trust(field, path, 0, err, errlen);
	if (rc < 0)
		return rc;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return plugfs_errf(err, errlen, -EINVAL, "%s `%s': is %s, not a regular file", field,
				   path, plugfs_mode_noun(st.st_mode));
	dir = strdup(path);
	if (!dir)
		return plugfs_errf(err, errlen, -ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	rc = 0;
	if (slash && slash != dir) {
		*slash = '\0';
		rc = plugfs_mkdir_p(dir, 0755, why, sizeof(why));
		if (rc != 0)
			plugfs_seterr(err, errlen, "cannot create the directory of %s `%s': %s", field,
				      path, why);
	}
	free(dir);
	return rc;
}

bool plugfs_file_empty(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0;
}

/* The first buffer of plugfs_read_fd, unless max says less. */
#define READ_FIRST (64 * 1024)

int plugfs_read_fd(int fd, size_t max, char **out, size_t *len_out)
{
	size_t len = 0, cap = 0, first = max < READ_FIRST - 2 ? max + 2 : READ_FIRST;
	char *buf = NULL;
	ssize_t n;
	int rc = 0;

	*out = NULL;
	*len_out = 0;
	for (;;) {
		/* Room for one byte past max (a file that is too long) and the NUL. */
		if (PLUGFS_RESERVE(buf, cap, len + 2, first) != 0) {
			rc = -ENOMEM;
			goto out;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			rc = -EFBIG;
			goto out;
		}
	}
	buf[len] = '\0';
	*out = buf;
	*len_out = len;
	buf = NULL;
out:
	free(buf);
	return rc;
}
