/* SPDX-License-Identifier: MIT */
/*
 * Output files, opened before sampling starts (a bad path is said at once,
 * not after the whole run) and written as a Unix tool writes them:
 *   - a new or existing regular file: a temporary file beside it, renamed
 *     into place at the end, so a crash never leaves half a profile. The
 *     temporary has no name until then (O_TMPFILE, where the file system
 *     has it), so a run killed by SIGKILL leaves nothing behind. A new
 *     file gets 0666 less the umask; an existing one keeps its mode, owner
 *     and group. Under sudo a new file belongs to the invoking user;
 *   - a regular file with several hard links, or one whose owner the
 *     temporary cannot be given: written in place (truncated at the end to
 *     what was written), so the links and the owner stay;
 *   - a character device, FIFO or socket: opened (a socket connected) and
 *     written through, never replaced; a block device is refused, and so
 *     is a file of procfs, sysfs and the kernel's other file systems;
 *   - a symlink: followed, unless the kernel's fs.protected_symlinks rule
 *     would refuse it (whether or not that sysctl is on): a link in a sticky
 *     world-writable directory owned by neither the directory's owner nor
 *     the invoking user (SUDO_UID under sudo, else the real uid).
 * The bytes go through a stdio stream over our own write function, which
 * keeps the first errno a write met (ENOSPC, EPIPE: stdio keeps only "an
 * error"), and gzips them on the way for a .gz file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/random.h>
#include <sys/un.h>
#include <unistd.h>
#include <zlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "output/output.h"
#include "core/errors.h"

#define MAX_LINKS 40    /* as the kernel: ELOOP after this many */

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

/* ------------------------------------------------------------- the bytes */

/* All of buf to the file, counting what it holds (for OUT_INPLACE's truncation). */
static int write_all(struct output *out, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(out->fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
		out->written += (size_t)n;
	}
	return 0;
}

/* Compress len bytes (flush: Z_NO_FLUSH, or Z_FINISH at the end) and write what comes out. */
static int gzip_chunk(struct output *out, const char *buf, size_t len, int flush)
{
	z_stream *z = out->z;
	char chunk[16384];
	int ret, err;

	z->next_in = (Bytef *)(uintptr_t)buf;
	z->avail_in = (uInt)len;
	do {
		z->next_out = (Bytef *)chunk;
		z->avail_out = sizeof(chunk);
		ret = deflate(z, flush);
		if (ret == Z_STREAM_ERROR)
			return -EIO;
		if ((err = write_all(out, chunk, sizeof(chunk) - z->avail_out)) != 0)
			return err;
	} while (z->avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
	return 0;
}

/* The stream's write function: the first error's errno is kept for the caller. */
static ssize_t stream_write(void *cookie, const char *buf, size_t len)
{
	struct output *out = cookie;
	int err;

	if (out->discard)
		return (ssize_t)len;
	if (out->err) {
		errno = out->err;
		return -1;
	}
	err = out->z ? gzip_chunk(out, buf, len, Z_NO_FLUSH) : write_all(out, buf, len);
	if (err) {
		out->err = -err;
		errno = -err;
		return -1;
	}
	return (ssize_t)len;
}

static int stream_open(struct output *out, bool gzip)
{
	cookie_io_functions_t io = { .write = stream_write };

	if (gzip) {
		out->z = calloc(1, sizeof(z_stream));
		/* 15 + 16: a gzip header and trailer, what gunzip and zcat read. */
		if (!out->z || deflateInit2(out->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
					    Z_DEFAULT_STRATEGY) != Z_OK) {
			free(out->z);
			out->z = NULL;
			return -ENOMEM;
		}
	}
	out->f = fopencookie(out, "w", io);
	return out->f ? 0 : -errno;
}

/* ------------------------------------------------------------- the path */

void path_dir(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, size, ".");
	else if (slash == path)
		snprintf(dir, size, "/");
	else
		snprintf(dir, size, "%.*s", (int)(slash - path), path);
}

/* fs.protected_symlinks: may a link (lst) in a directory (dst) be followed for the invoking user? */
static bool link_followable(const struct stat *lst, const struct stat *dst)
{
	uid_t uid;
	gid_t gid;

	if (!(dst->st_mode & S_ISVTX) || !(dst->st_mode & S_IWOTH))
		return true;
	if (lst->st_uid == dst->st_uid)
		return true;
	sudo_ids(&uid, &gid);
	return lst->st_uid == (uid == (uid_t)-1 ? getuid() : uid);
}

static bool is_procfs(const char *dir)
{
	struct statfs sf;

	return statfs(dir, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

/* Not in <linux/magic.h>: the kernel's fs/configfs/mount.c and fs/fuse/control.c. */
#define KERNEL_CONFIGFS_MAGIC 0x62656570ul
#define KERNEL_FUSECTL_MAGIC 0x65735543ul

/*
 * A regular file of the kernel's own file systems: what is written to one
 * is a setting (a sysctl, a process's name, a cgroup's limit, a tracing
 * switch, a binfmt_misc rule), never a place a profile can be kept.
 */
static int refuse_kernel_file(struct output *out, int fd)
{
	static const unsigned long kinds[] = {
		PROC_SUPER_MAGIC, SYSFS_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC, SECURITYFS_MAGIC,
		CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, BPF_FS_MAGIC, EFIVARFS_MAGIC, PSTOREFS_MAGIC,
		BINFMTFS_MAGIC, SELINUX_MAGIC, SMACK_MAGIC, RDTGROUP_SUPER_MAGIC,
		KERNEL_CONFIGFS_MAGIC, KERNEL_FUSECTL_MAGIC,
	};
	struct statfs sf;
	struct stat st;
	int err = fd >= 0 ? fstatfs(fd, &sf) : statfs(out->path, &sf);

	if (err != 0 || (fd >= 0 ? fstat(fd, &st) : stat(out->path, &st)) != 0 || !S_ISREG(st.st_mode))
		return 0;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((unsigned long)sf.f_type == kinds[i]) {
			out->why = "a kernel file in /proc or /sys (writing it would change a setting; "
				   "a profile is never written into one)";
			return -EINVAL;
		}
	return 0;
}

/*
 * Follow the symlinks at the end of out->path as open() would, checking
 * each; out->path becomes the file they lead to (which may not exist yet).
 * 1: out->path is a link in /proc, for open_proc_link().
 */
static int resolve(struct output *out, struct stat *st)
{
	char dir[sizeof(out->path)], link[sizeof(out->path)];
	struct stat dst;
	ssize_t n;
	int len;

	for (int hops = 0;; hops++) {
		if (lstat(out->path, st) != 0)
			return -errno;
		if (!S_ISLNK(st->st_mode))
			return 0;
		if (hops == MAX_LINKS)
			return -ELOOP;
		path_dir(out->path, dir, sizeof(dir));
		if (stat(dir, &dst) != 0)
			return -errno;
		/* /dev/stdout, /dev/fd/N: a link to an open file, not to a name. */
		if (is_procfs(dir))
			return 1;
		if (!link_followable(st, &dst)) {
			out->why = "Permission denied (a symlink in a sticky world-writable directory, "
				   "owned by neither you nor the directory's owner: fs.protected_symlinks)";
			return -EACCES;
		}
		n = readlink(out->path, link, sizeof(link));
		if (n < 0)
			return -errno;
		if ((size_t)n == sizeof(link))
			return -ENAMETOOLONG;
		link[n] = '\0';
		if (link[0] == '/')
			len = snprintf(out->path, sizeof(out->path), "%s", link);
		else
			len = snprintf(out->path, sizeof(out->path), "%s/%s", dir, link);
		if (len >= (int)sizeof(out->path))
			return -ENAMETOOLONG;
	}
}

/* Writing through it would put a profile over a disk's blocks; replacing it, lose the device. */
static int refuse_block_device(struct output *out)
{
	out->why = "a block device (a profile is never written onto one)";
	return -EINVAL;
}

/*
 * A procfs link: "/proc/self/fd/N" (what /dev/stdout and /dev/fd/N lead
 * to) of ours is that descriptor, whatever it is (a pipe, a socket, a file
 * at some offset); any other is opened by the kernel, never replaced.
 */
static int open_proc_link(struct output *out)
{
	char dir[sizeof(out->path)], self[64], *real, *end;
	const char *name = strrchr(out->path, '/') + 1;
	long fd = strtol(name, &end, 10);
	struct stat st;
	int err;
	bool ours;

	path_dir(out->path, dir, sizeof(dir));
	snprintf(self, sizeof(self), "/proc/%d/fd", (int)getpid());
	real = realpath(dir, NULL);
	ours = real && strcmp(real, self) == 0 && *name && !*end && fd >= 0 && fd <= INT_MAX;
	free(real);
	out->how = OUT_SPECIAL;
	if (ours) {
		out->fd = fcntl((int)fd, F_DUPFD_CLOEXEC, 3);
		return out->fd < 0 ? -errno : refuse_kernel_file(out, out->fd);
	}
	/* Opened, not written: what the link leads to is known by its descriptor. */
	out->fd = open(out->path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (out->fd < 0)
		return errno == ENXIO ? -EPIPE : -errno;    /* a pipe without a reader */
	if ((err = refuse_kernel_file(out, out->fd)) != 0)
		return err;
	if (fstat(out->fd, &st) != 0 || fcntl(out->fd, F_SETFL, 0) != 0)
		return -errno;
	if (S_ISREG(st.st_mode))
		out->how = OUT_INPLACE;
	if (S_ISBLK(st.st_mode))
		return refuse_block_device(out);
	return S_ISDIR(st.st_mode) ? -EISDIR : 0;
}

/* The temporary to rename over out->path at the end, beside it: unnamed until then where it can be. */
static int open_temporary(struct output *out)
{
	char dir[sizeof(out->path)];

	if (snprintf(out->tmp, sizeof(out->tmp), "%s.XXXXXX", out->path) >= (int)sizeof(out->tmp))
		return -ENAMETOOLONG;
	path_dir(out->path, dir, sizeof(dir));
	out->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	out->unnamed = out->fd >= 0;
	if (out->fd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	if (out->fd < 0)
		out->fd = mkostemp(out->tmp, O_CLOEXEC);
	if (out->fd < 0)
		return -errno;
	out->how = OUT_RENAME;
	return 0;
}

/* The unnamed temporary gets the name out->tmp (random letters for its XXXXXX), to be renamed. */
static int name_temporary(struct output *out)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char proc[32], *x = out->tmp + strlen(out->tmp) - 6;
	unsigned char rnd[6];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", out->fd);
	for (int tries = 0; tries < 100; tries++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -errno;
		for (int i = 0; i < 6; i++)
			x[i] = letters[rnd[i] % (sizeof(letters) - 1)];
		if (linkat(AT_FDCWD, proc, AT_FDCWD, out->tmp, AT_SYMLINK_FOLLOW) == 0) {
			out->unnamed = false;
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/*
 * A temporary given to another owner is named now: once privileges are
 * dropped, the kernel lets no one link a file that is not theirs
 * (protected_hardlinks). Such a run leaves it behind if SIGKILLed.
 */
static int give_temporary(struct output *out, uid_t uid, gid_t gid)
{
	if (fchown(out->fd, uid, gid) != 0)
		return -errno;
	return out->unnamed ? name_temporary(out) : 0;
}

/* Close the temporary and take its name away, if it has one. */
static void drop_temporary(struct output *out)
{
	close(out->fd);
	out->fd = -1;
	if (!out->unnamed)
		unlink(out->tmp);
}

static int open_new(struct output *out)
{
	mode_t mask = umask(0);
	uid_t uid;
	gid_t gid;
	int err;

	umask(mask);
	sudo_ids(&uid, &gid);
	if ((err = open_temporary(out)) != 0)
		return err;
	if (uid != (uid_t)-1 && (err = give_temporary(out, uid, gid)) != 0)
		return err;
	return fchmod(out->fd, 0666 & ~mask) != 0 ? -errno : 0;
}

/* Open what lstat saw as st, and make sure it is still that (no swap between the two). */
static int open_same(struct output *out, const struct stat *st, int flags)
{
	struct stat now;

	out->fd = open(out->path, flags | O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (out->fd < 0)
		return -errno;
	if (fstat(out->fd, &now) != 0)
		return -errno;
	return now.st_dev == st->st_dev && now.st_ino == st->st_ino ? 0 : -EAGAIN;
}

static int open_in_place(struct output *out, const struct stat *st)
{
	out->how = OUT_INPLACE;
	/* O_NONBLOCK: should a FIFO be swapped in, fail rather than wait (open_same sees it). */
	return open_same(out, st, O_NONBLOCK);
}

/* A FIFO with no reader yet: wait for one, as a shell's "> fifo" does, but say so. */
static int open_fifo(struct output *out, const struct stat *st)
{
	int err = open_same(out, st, O_NONBLOCK);

	if (err == -ENXIO) {
		fprintf(stderr, "pybpfprof: %s: waiting for a reader of the FIFO\n", out->path);
		err = open_same(out, st, 0);
	}
	if (!err && fcntl(out->fd, F_SETFL, 0) != 0)
		err = -errno;
	return err;
}

static int open_socket(struct output *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(out->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, out->path, strlen(out->path) + 1);
	out->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (out->fd < 0 || connect(out->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -errno;
	return 0;
}

static int open_regular(struct output *out, const struct stat *st)
{
	struct stat tst;
	int err;

	/* Renaming over one of several links would split it off from the others. */
	if (st->st_nlink > 1)
		return open_in_place(out, st);
	/* A file we may write in a directory we may not: write it in place, as "> FILE" would. */
	if ((err = open_temporary(out)) == -EACCES || err == -EPERM)
		return open_in_place(out, st);
	if (err)
		return err;
	if (fstat(out->fd, &tst) != 0)
		return -errno;
	if ((tst.st_uid != st->st_uid || tst.st_gid != st->st_gid) &&
	    give_temporary(out, st->st_uid, st->st_gid) != 0) {
		/* Not ours to give away (no CAP_CHOWN): keep the owner by writing in place. */
		drop_temporary(out);
		return open_in_place(out, st);
	}
	/* The mode after the owner: fchown clears set-id bits (not copied: kernel writes clear them too). */
	return fchmod(out->fd, st->st_mode & 0777) != 0 ? -errno : 0;
}

static int open_path(struct output *out, const char *path)
{
	struct stat st;
	int err;

	if (snprintf(out->path, sizeof(out->path), "%s", path) >= (int)sizeof(out->path))
		return -ENAMETOOLONG;
	err = resolve(out, &st);
	if (err == -ENOENT && !out->why)
		return open_new(out);
	if (err == 1)
		return open_proc_link(out);
	if (err)
		return err;
	out->how = OUT_SPECIAL;
	if ((err = refuse_kernel_file(out, -1)) != 0)
		return err;
	switch (st.st_mode & S_IFMT) {
	case S_IFREG: return open_regular(out, &st);
	case S_IFCHR: return open_same(out, &st, 0);
	case S_IFIFO: return open_fifo(out, &st);
	case S_IFSOCK: return open_socket(out);
	case S_IFDIR: return -EISDIR;
	case S_IFBLK: return refuse_block_device(out);
	default: return -EINVAL;
	}
}

/* Standard output, checked now: closed, or a pipe whose reader has gone. */
static int open_stdout(struct output *out)
{
	struct pollfd p = { .fd = STDOUT_FILENO, .events = POLLOUT };
	struct stat st;

	out->fd = STDOUT_FILENO;
	out->how = OUT_STDOUT;
	if (fstat(STDOUT_FILENO, &st) != 0)
		return -errno;
	if (S_ISFIFO(st.st_mode) && poll(&p, 1, 0) == 1 && (p.revents & POLLERR))
		return -EPIPE;
	return 0;
}

/*
 * The statics above speak errno, because what to do next turns on which
 * (create on ENOENT, write in place on EACCES, wait on ENXIO); the module's
 * answer is PBP_E_IO, the errno kept in out->err for output_error().
 */
static int io_failed(struct output *out, int neg_errno)
{
	if (!out->err)
		out->err = -neg_errno;
	return -PBP_E_IO;
}

int output_open(struct output *out, const char *path, bool gzip)
{
	int err;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (!path || strcmp(path, "-") == 0)
		err = open_stdout(out);
	else
		err = open_path(out, path);
	if (!err)
		err = stream_open(out, gzip);
	if (err) {
		err = io_failed(out, err);
		output_abort(out);
	}
	return err;
}

const char *output_rename_target(const struct output *out)
{
	return out->how == OUT_RENAME ? out->path : NULL;
}

void output_error(const struct output *out, const char *path, int err)
{
	fprintf(stderr, "pybpfprof: cannot write %s: %s\n", path && strcmp(path, "-") ? path : "stdout",
		out->why ? out->why : out->err ? strerror(out->err) : pbp_strerror(err));
}

/* ------------------------------------------------------------- the end */

int output_commit(struct output *out)
{
	int err = fflush(out->f) != 0 || ferror(out->f) ? -(out->err ? out->err : EIO) : 0;

	if (!err && out->z)
		err = gzip_chunk(out, NULL, 0, Z_FINISH);
	/* In place: what is left of the old content past the new goes. */
	if (!err && out->how == OUT_INPLACE && ftruncate(out->fd, (off_t)out->written) != 0)
		err = -errno;
	if (!err && (out->how == OUT_RENAME || out->how == OUT_INPLACE) && fsync(out->fd) != 0)
		err = -errno;
	if (!err && out->how == OUT_RENAME && out->unnamed)
		err = name_temporary(out);
	if (out->how != OUT_STDOUT) {
		/* close() can be the first to report a write error (NFS, quotas). */
		if (close(out->fd) != 0 && !err)
			err = -errno;
		out->fd = -1;
	}
	if (!err && out->how == OUT_RENAME && rename(out->tmp, out->path) != 0)
		err = -errno;
	if (!err)
		out->how = OUT_NONE;     /* nothing left to undo */
	output_abort(out);
	return err ? io_failed(out, err) : 0;
}

void output_abort(struct output *out)
{
	if (out->f) {
		out->discard = true;    /* what is buffered is not to be written */
		fclose(out->f);
		out->f = NULL;
	}
	if (out->z) {
		deflateEnd(out->z);
		free(out->z);
		out->z = NULL;
	}
	/* A zeroed struct output (never opened) has fd 0 and OUT_NONE: not ours to close. */
	if (out->fd >= 0 && out->how != OUT_STDOUT && out->how != OUT_NONE)
		close(out->fd);
	out->fd = -1;
	if (out->how == OUT_RENAME && !out->unnamed)
		unlink(out->tmp);
	out->how = OUT_NONE;
}
