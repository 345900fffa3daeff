/* SPDX-License-Identifier: MIT */
/*
 * PID namespaces. A process in a container knows its threads by their ids
 * in its own PID namespace: CPython's native_thread_id and glibc's tid in
 * struct pthread are gettid() there. The kernel, BPF and our /proc speak
 * the ids of our namespace. The "NSpid:" line of /proc/PID/task/TID/status
 * lists a task's id in every namespace from /proc's own down to the task's,
 * innermost last: that line alone translates one way into the other, for
 * any depth of nesting, with no guess about the target's libc.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/pidns.h"
#include "core/errors.h"

/* Ids past this depth are not kept: the kernel nests at most 32 levels. */
#define NS_LEVELS 33

int nspid_parse(const char *text, size_t len, pid_t *ids, int max)
{
	static const char key[] = "NSpid:";
	const char *end = text + len, *p = text;
	int n = 0;

	/* The key at the start of a line; status has no NUL, but bound every step by len. */
	while (p < end && !((size_t)(end - p) >= sizeof(key) - 1 && memcmp(p, key, sizeof(key) - 1) == 0)) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		p = nl ? nl + 1 : end;
	}
	if (p >= end)
		return -PBP_E_CORRUPT;
	p += sizeof(key) - 1;
	while (p < end && *p != '\n') {
		long v = 0;
		bool digits = false;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		while (p < end && *p >= '0' && *p <= '9' && v <= PBP_PID_MAX) {
			v = v * 10 + (*p++ - '0');
			digits = true;
		}
		if (!digits)
			break;
		if (v <= 0 || v > PBP_PID_MAX || n >= max)
			return -PBP_E_CORRUPT;
		ids[n++] = (pid_t)v;
	}
	return p < end && *p != '\n' ? -PBP_E_CORRUPT : (n ? n : -PBP_E_CORRUPT);
}

/* The NSpid ids of a task: their count, or -PBP_E_GONE when it cannot be read. */
static int task_nspids(pid_t pid, pid_t tid, pid_t *ids, int max)
{
	char path[64], buf[4096];
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -PBP_E_CORRUPT;
	len = read(fd, buf, sizeof(buf));
	close(fd);
	return len > 0 ? nspid_parse(buf, (size_t)len, ids, max) : -PBP_E_GONE;
}

pid_t pidns_inner_id(pid_t pid, pid_t tid, bool *other_ns)
{
	pid_t ids[NS_LEVELS];
	int n = task_nspids(pid, tid, ids, NS_LEVELS);

	if (other_ns)
		*other_ns = n > 1;
	return n > 0 ? ids[n - 1] : 0;
}

/* The initial PID namespace's inode number: fixed by the kernel (PROC_PID_INIT_INO). */
#define PID_INIT_INO 0xEFFFFFFCu

uint32_t pidns_self_inum(void)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) != 0 || st.st_ino == PID_INIT_INO)
		return 0;
	return (uint32_t)st.st_ino;
}

/*
 * Every pid we take or print is /proc's, and every syscall and the kernel
 * side use our namespace's: the two must be the same namespace. A profiler
 * in a PID namespace of its own that sees the host's /proc (bind-mounted
 * without hostPID) would otherwise profile nothing, silently.
 */
int pidns_check_proc(void)
{
	char link[32];
	ssize_t n = readlink("/proc/self", link, sizeof(link) - 1);

	if (n <= 0)
		return 0;       /* no /proc at all: opening a process will say so */
	link[n] = '\0';
	if (atoi(link) == getpid())
		return 0;
	fprintf(stderr, "pybpfprof: /proc belongs to another PID namespace than pybpfprof's (it is pid %d "
		"here, %s there): mount this namespace's own /proc, or run in the host's PID namespace "
		"(hostPID)\n", (int)getpid(), link);
	return EXIT_PERM;
}

struct tidmap {
	size_t n, cap;
	struct tidpair { pid_t inner, ours; } *v;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct tidpair *x = a, *y = b;

	return (x->inner > y->inner) - (x->inner < y->inner);
}

static int tidmap_add(struct tidmap *m, pid_t inner, pid_t ours)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct tidpair *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return -PBP_E_NOMEM;
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = (struct tidpair){ inner, ours };
	return 0;
}

struct tidmap *tidmap_new(void)
{
	return calloc(1, sizeof(struct tidmap));
}

void tidmap_free(struct tidmap *m)
{
	if (m)
		free(m->v);
	free(m);
}

/*
 * Read every thread of pid anew. Threads come and go while it runs: one
 * that exits is left out, one that starts after the directory was read is
 * missed until the next rebuild, which the caller makes on the next walk of
 * the thread states. 0, -PBP_E_GONE when the process is gone, -PBP_E_NOMEM.
 */
int tidmap_rebuild(struct tidmap *m, pid_t pid)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int err = 0;

	m->n = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return pbp_err_from_errno(errno, -PBP_E_GONE);
	while (!err && (d = readdir(dir))) {
		pid_t ids[NS_LEVELS], ours = (pid_t)atoi(d->d_name);
		int n;

		if (ours <= 0)
			continue;
		n = task_nspids(pid, ours, ids, NS_LEVELS);
		if (n > 0)
			err = tidmap_add(m, ids[n - 1], ours);
	}
	closedir(dir);
	qsort(m->v, m->n, sizeof(*m->v), pair_cmp);
	return err;
}

pid_t tidmap_ours(const struct tidmap *m, pid_t inner)
{
	struct tidpair key = { inner, 0 }, *hit;

	if (!m->n)
		return 0;
	hit = bsearch(&key, m->v, m->n, sizeof(*m->v), pair_cmp);
	return hit ? hit->ours : 0;
}
