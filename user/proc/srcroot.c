/* SPDX-License-Identifier: MIT */
/*
 * The profiled processes' roots and working directories, held open so that
 * their source files can be read at the end of a run (the html page's line
 * heat), inside the process's own view of the file system: openat2 with
 * RESOLVE_IN_ROOT keeps every path, symlinks and ".." included, under the
 * directory it starts from, as the process would see it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/srcroot.h"
#include "core/errors.h"
#include "core/file.h"
#include "core/search.h"

void srcroots_init(struct srcroots *s)
{
	memset(s, 0, sizeof(*s));
}

/* Its fsuid and groups (fsgid first), from /proc/PID/status: who may read what. */
static int read_creds(pid_t pid, struct srcroot *r)
{
	char path[64], line[1024];
	unsigned long u[4];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -PBP_E_GONE;
	r->ngid = 0;
	r->uid = (uid_t)-1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) == 4)
			r->uid = (uid_t)u[3];
		else if (sscanf(line, "Gid: %lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) == 4 && !r->ngid)
			r->gid[r->ngid++] = (gid_t)u[3];
		else if (!strncmp(line, "Groups:", 7)) {
			char *p = line + 7, *e;

			for (unsigned long g; r->ngid < SRCROOT_GROUPS && (g = strtoul(p, &e, 10), e != p); p = e)
				r->gid[r->ngid++] = (gid_t)g;
		}
	}
	fclose(f);
	return r->uid == (uid_t)-1 ? -PBP_E_GONE : 0;
}

static int open_dir(pid_t pid, const char *what, int *fd, dev_t *dev, ino_t *ino)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	*fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return pbp_err_from_errno(errno, -PBP_E_GONE);
	if (fstat(*fd, &st) != 0) {
		close(*fd);
		*fd = -1;
		return -PBP_E_GONE;
	}
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

static int find_root(const struct srcroots *s, const struct srcroot *r, bool with_cwd)
{
	for (uint32_t i = 0; i < s->n; i++) {
		const struct srcroot *e = &s->r[i];

		if (e->root_dev != r->root_dev || e->root_ino != r->root_ino || e->uid != r->uid)
			continue;
		if (with_cwd ? e->cwd_fd >= 0 && e->cwd_dev == r->cwd_dev && e->cwd_ino == r->cwd_ino
			     : e->cwd_fd < 0)
			return (int)i;
	}
	return -1;
}

/*
 * pid's entry: one held for the same root, cwd and user; a new one while
 * there is room for cwds; then one for the root and user alone, without a
 * cwd (not another's: its relative paths would name other files).
 */
static int pick_root(struct srcroots *s, struct srcroot *r, uint32_t *idx)
{
	int k = find_root(s, r, true);

	if (k < 0 && s->n >= SRCROOT_MAX_CWD) {
		close(r->cwd_fd);
		r->cwd_fd = -1;
		k = find_root(s, r, false);
	}
	if (k >= 0) {
		*idx = (uint32_t)k;
		return 1;       /* r is not kept */
	}
	if (s->n >= SRCROOT_MAX)
		return -PBP_E_LIMIT;
	*idx = s->n;
	s->r[s->n++] = *r;
	return 0;
}

static int open_root(struct srcroots *s, pid_t pid, uint32_t *idx)
{
	struct srcroot r = { .root_fd = -1, .cwd_fd = -1 };
	int err = read_creds(pid, &r);

	if (!err)
		err = open_dir(pid, "root", &r.root_fd, &r.root_dev, &r.root_ino);
	if (!err)
		err = open_dir(pid, "cwd", &r.cwd_fd, &r.cwd_dev, &r.cwd_ino);
	if (!err && (err = pick_root(s, &r, idx)) == 0)
		return 0;
	if (r.root_fd >= 0)
		close(r.root_fd);
	if (r.cwd_fd >= 0)
		close(r.cwd_fd);
	return err > 0 ? 0 : err;
}

/* The first pid slot at or above pid (pids are kept sorted). */
static bool pid_below(const void *elem, const void *pid)
{
	return ((const struct srcroot_pid *)elem)->pid < *(const uint32_t *)pid;
}

static uint32_t pid_slot(const struct srcroots *s, uint32_t pid)
{
	return (uint32_t)search_first(s->pids, s->npids, sizeof(*s->pids), &pid, pid_below);
}

uint32_t srcroots_of(const struct srcroots *s, uint32_t pid)
{
	uint32_t k = pid_slot(s, pid);

	return k < s->npids && s->pids[k].pid == pid ? s->pids[k].root : SRCROOT_NONE;
}

int srcroots_add(struct srcroots *s, pid_t pid)
{
	uint32_t idx = SRCROOT_NONE, k;
	int err;

	if (srcroots_of(s, (uint32_t)pid) != SRCROOT_NONE)
		return 0;       /* its first root kept: an exec'd process is the same process */
	if (s->npids >= SRCROOT_MAX_PIDS)
		return -PBP_E_LIMIT;
	if (!s->pids && !(s->pids = calloc(SRCROOT_MAX_PIDS, sizeof(*s->pids))))
		return -PBP_E_NOMEM;
	err = open_root(s, pid, &idx);
	if (err == -PBP_E_LIMIT || err == -PBP_E_PERM || err == -PBP_E_MFILE)
		idx = err == -PBP_E_PERM ? SRCROOT_DENIED : SRCROOT_FULL;  /* said in the page */
	else if (err)
		return err;
	k = pid_slot(s, (uint32_t)pid);
	memmove(&s->pids[k + 1], &s->pids[k], (s->npids - k) * sizeof(*s->pids));
	s->pids[k].pid = (uint32_t)pid;
	s->pids[k].root = idx;
	s->npids++;
	return err;
}

/* What the process could read itself: the file's owner, group or other bits. */
static bool may_read(const struct srcroot *r, const struct stat *st)
{
	if (r->uid == 0 || st->st_mode & S_IROTH)
		return true;
	if (st->st_uid == r->uid)
		return st->st_mode & S_IRUSR;
	for (int i = 0; i < r->ngid; i++)
		if (st->st_gid == r->gid[i])
			return st->st_mode & S_IRGRP;
	return false;
}

static bool ends_with(const char *s, const char *end)
{
	size_t n = strlen(s), k = strlen(end);

	return n > k && !strcmp(s + n - k, end);
}

/* A Python source by its name, or a script with no extension (checked by its first line). */
static bool is_py_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return ends_with(path, ".py") || ends_with(path, ".pyw") || !strchr(base ? base + 1 : path, '.');
}

/* A script named without .py: its first line is a #! naming python (pytest-3, gunicorn). */
static bool is_py_script(const char *path, const char *text)
{
	const char *nl = strchr(text, '\n');
	size_t n = nl ? (size_t)(nl - text) : strlen(text);

	return ends_with(path, ".py") || ends_with(path, ".pyw") ||
	       (!strncmp(text, "#!", 2) && memmem(text, n, "python", 6));
}

static int say(char *why, size_t len, int err, const char *fmt, const char *arg)
{
	snprintf(why, len, fmt, arg);
	return err;
}

/* The whole of fd, source text of at most max bytes, into *text. */
static int read_all(int fd, size_t max, char **text, size_t *len, char *why, size_t wl)
{
	int err = file_read_fd(fd, max, text, len);

	if (err == -PBP_E_IO)
		return say(why, wl, err, "%s", strerror(errno));
	if (!err && memchr(*text, '\0', *len)) {
		free(*text);
		*text = NULL;
		return say(why, wl, -PBP_E_INVAL, "%s", "it holds NUL bytes: not source text");
	}
	return err;
}

int srcroots_read(const struct srcroots *s, uint32_t root, const char *path, size_t max, char **text,
		  size_t *len, size_t *size, char *why, size_t whylen)
{
	struct open_how how = { .flags = O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	const struct srcroot *r;
	struct stat st;
	int fd, err;

	*text = NULL;
	*size = 0;
	if (root >= s->n)
		return say(why, whylen, -PBP_E_GONE, "%s", "the process's root was not opened");
	if (!is_py_name(path))
		return say(why, whylen, -PBP_E_INVAL, "%s", "not a .py file");
	r = &s->r[root];
	if (path[0] != '/' && r->cwd_fd < 0)
		return say(why, whylen, -PBP_E_INVAL, "%s", "a relative path, and the process's working "
			   "directory was not kept (too many processes' were)");
	fd = (int)syscall(SYS_openat2, path[0] == '/' ? r->root_fd : r->cwd_fd, path, &how, sizeof(how));
	if (fd < 0)
		return say(why, whylen, errno == ENOENT ? -PBP_E_NOENT : -PBP_E_IO, "%s", strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		err = say(why, whylen, -PBP_E_INVAL, "%s", "not a regular file");
	else if (!may_read(r, &st))
		err = say(why, whylen, -PBP_E_PERM, "%s", "the process itself may not read it");
	else {
		*size = (size_t)st.st_size;
		err = (size_t)st.st_size > max ? -PBP_E_LIMIT : read_all(fd, max, text, len, why, whylen);
	}
	if (!err && !is_py_script(path, *text)) {
		free(*text);
		*text = NULL;
		err = say(why, whylen, -PBP_E_INVAL, "%s", "not a .py file, nor a script whose #! line names python");
	}
	close(fd);
	return err;
}

void srcroots_close(struct srcroots *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		close(s->r[i].root_fd);
		if (s->r[i].cwd_fd >= 0)
			close(s->r[i].cwd_fd);
	}
	free(s->pids);
	srcroots_init(s);
}
