/* SPDX-License-Identifier: MIT */
/*
 * Host-wide discovery (-a): which processes might be CPython, and which of
 * them the user asked for. Only /proc is read here; attaching (process.c)
 * decides whether a candidate really is a supported interpreter, so this
 * errs on the side of listing too many, cheaply.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/discover.h"
#include "core/errors.h"
#include "proc/cgroup.h"

/*
 * Does this maps line map an executable file named like an interpreter
 * ("python3.11", "libpython3.12.so.1.0")? Executable only: an editor or a
 * log shipper mapping "python.log" is not running Python. The path is the
 * line from its first '/': no field before it holds one, pseudo-files
 * ("[heap]") have none.
 */
static bool maps_line_python(const char *line)
{
	const char *perms = strchr(line, ' ');
	const char *path = strchr(line, '/');
	const char *base;

	if (!perms || !path || perms > path || strlen(perms) < 4 || perms[3] != 'x')
		return false;
	base = strrchr(path, '/') + 1;
	return strstr(base, "python") != NULL;
}

/* 1 when pid maps a Python-named file, 0 when not or when maps is unreadable. */
static int pid_maps_python(pid_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;       /* gone, or not ours to read: not a candidate */
	/* getline: a path may be longer than any fixed buffer */
	while (!found && getline(&line, &cap, f) > 0)
		found = maps_line_python(line);
	free(line);
	fclose(f);
	return found;
}

/* A /proc entry that is a process: all digits. */
static bool proc_entry_pid(const char *name, pid_t *pid)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)name[0]))
		return false;
	errno = 0;
	v = strtol(name, &end, 10);
	if (*end || errno || v <= 0 || v > INT32_MAX)
		return false;
	*pid = (pid_t)v;
	return true;
}

int discover_pythons(pid_t *out, size_t max, size_t *n, discover_look_fn look, void *ctx)
{
	pid_t self = getpid(), pid;
	struct dirent *de;
	int ret = 0;
	DIR *d;

	*n = 0;
	d = opendir("/proc");
	if (!d)
		return pbp_err_from_errno(errno, -PBP_E_NOENT);
	/* kernel threads and zombies have an empty maps: they drop out by themselves */
	while ((de = readdir(d))) {
		/* asked first: a maps file is the largest read here, and a known pid's is read for nothing */
		if (!proc_entry_pid(de->d_name, &pid) || pid == self || (look && !look(ctx, pid)) ||
		    !pid_maps_python(pid))
			continue;
		if (*n == max) {
			ret = 1;        /* more than fit: the caller may grow and retry */
			break;
		}
		out[(*n)++] = pid;
	}
	closedir(d);
	return ret;
}

static bool pid_in(pid_t pid, const pid_t *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == pid)
			return true;
	return false;
}

static bool has_prefix(const char *s, const char *pre)
{
	return strncmp(s, pre, strlen(pre)) == 0;
}

/* Each criterion set must hold; a criterion whose input is missing does not. */
bool proc_filter_match(const struct proc_filter *f, pid_t pid, const char *comm,
		       const struct cgroup_info *cg)
{
	if (!f)
		return true;
	if (f->nonly && !pid_in(pid, f->only, f->nonly))
		return false;
	if (f->nexclude && pid_in(pid, f->exclude, f->nexclude))
		return false;
	if (f->comm_re && (!comm || regexec(f->comm_re, comm, 0, NULL, 0) != 0))
		return false;
	if (f->cgroup_prefix && (!cg || !has_prefix(cg->path, f->cgroup_prefix)))
		return false;
	/* a container filter never matches a process outside any container */
	if (f->container_prefix &&
	    (!cg || !cg->container_id[0] || !has_prefix(cg->container_id, f->container_prefix)))
		return false;
	return true;
}

int proc_argv(pid_t pid, char *out, size_t len)
{
	char path[64];
	size_t n = 0;
	ssize_t r = 1;
	int fd;

	if (!len)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pbp_err_from_errno(errno, -PBP_E_NOENT);
	while (n < len - 1 && r != 0) {
		r = read(fd, out + n, len - 1 - n);
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0)
			n += (size_t)r;
	}
	close(fd);
	out[n] = '\0';
	return (int)n;
}

/* Length of the result (or -PBP_E_*); the arguments' NULs become spaces for one-line labels. */
int proc_cmdline(pid_t pid, char *out, size_t len)
{
	int got = proc_argv(pid, out, len);
	size_t n, lead;

	if (got <= 0) {
		if (len)
			out[0] = '\0';
		return got;
	}
	n = (size_t)got;
	/* control characters too: an argument's newline would break a label's line */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = ' ';
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
	/* leading spaces: a process may rewrite its own argv */
	lead = strspn(out, " ");
	memmove(out, out + lead, n - lead + 1);
	return (int)(n - lead);
}
