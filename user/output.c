/* SPDX-License-Identifier: MIT */
/*
 * Output files: written to a temporary file beside the target and renamed
 * into place, so a crash never leaves half a profile and a symlink planted
 * at the path is replaced, never followed. Under sudo the file belongs to
 * the invoking user.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pyprof.h"

/* SUDO_UID/SUDO_GID of the invoking user, or -1 when not under sudo. */
void sudo_ids(uid_t *uid, gid_t *gid)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	char *end;
	long v;

	*uid = (uid_t)-1;
	*gid = (gid_t)-1;
	if (getuid() != 0 || !u || !g)
		return;
	v = strtol(u, &end, 10);
	if (*u && !*end && v > 0)
		*uid = (uid_t)v;
	v = strtol(g, &end, 10);
	if (*g && !*end && v >= 0)
		*gid = (gid_t)v;
}

int output_open(struct output *out, const char *path)
{
	uid_t uid;
	gid_t gid;
	int fd;

	memset(out, 0, sizeof(*out));
	if (!path || strcmp(path, "-") == 0) {
		out->f = stdout;
		return 0;
	}
	if (snprintf(out->path, sizeof(out->path), "%s", path) >= (int)sizeof(out->path) ||
	    snprintf(out->tmp, sizeof(out->tmp), "%s.XXXXXX", path) >= (int)sizeof(out->tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(out->tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	sudo_ids(&uid, &gid);
	if (uid != (uid_t)-1 && fchown(fd, uid, gid) != 0) {
		int e = errno;

		close(fd);
		unlink(out->tmp);
		return -e;
	}
	fchmod(fd, 0644);
	out->f = fdopen(fd, "w");
	if (!out->f) {
		close(fd);
		unlink(out->tmp);
		return -errno;
	}
	return 0;
}

int output_commit(struct output *out)
{
	int err = 0;

	if (out->f == stdout)
		return fflush(stdout) ? -errno : 0;
	if (fflush(out->f) != 0 || fsync(fileno(out->f)) != 0)
		err = -errno;
	if (fclose(out->f) != 0 && !err)
		err = -errno;
	out->f = NULL;
	/* rename() replaces a symlink at path rather than writing through it. */
	if (!err && rename(out->tmp, out->path) != 0)
		err = -errno;
	if (err)
		unlink(out->tmp);
	return err;
}

void output_abort(struct output *out)
{
	if (!out->f || out->f == stdout)
		return;
	fclose(out->f);
	out->f = NULL;
	unlink(out->tmp);
}
