/* SPDX-License-Identifier: MIT */
#include "fsutil.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "log.h"

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
