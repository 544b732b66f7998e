/* SPDX-License-Identifier: MIT */
#include "fsutil.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
