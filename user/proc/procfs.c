/* SPDX-License-Identifier: MIT */
/* What the kernel says of a process and its threads, from /proc. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/procfs.h"

#define PF_EXITING 0x00000004u     /* include/linux/sched.h: set first thing in do_exit() */

/*
 * The fields of /proc/PID/task/TID/stat after the command name, from the
 * state letter on; NULL if the thread is gone.
 */
static const char *thread_stat(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64], *p;
	ssize_t n;
	int fd;

	/* open and read, not stdio: an agent reads this for every process the node starts. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	p = strrchr(buf, ')');     /* comm may hold spaces and parentheses */
	return p && p[1] == ' ' && p[2] ? p + 2 : NULL;
}

/* Kernel scheduler state of a thread, '?' if it is gone. */
char proc_thread_state(pid_t pid, pid_t tid)
{
	char buf[512];
	const char *st = thread_stat(pid, tid, buf, sizeof(buf));

	return st ? st[0] : '?';
}

struct pidpair {
	pid_t pid, ppid;
};

/* Every process's parent, from /proc: *out (malloc'd) and how many (0 and NULL: none read). */
static size_t proc_parents(struct pidpair **out)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0, cap = 0;
	struct pidpair *v = NULL, *nv;

	while (d && (e = readdir(d)) != NULL) {
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid <= 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			if (!(nv = realloc(v, cap * sizeof(*v))))
				break;
			v = nv;
		}
		v[n].pid = pid;
		v[n].ppid = proc_ppid(pid);
		n++;
	}
	if (d)
		closedir(d);
	*out = v;
	return v ? n : 0;
}

void proc_descendants(const struct proc_descent *d)
{
	struct pidpair *v = NULL;
	size_t n = proc_parents(&v);
	bool more = true;

	while (more) {
		more = false;
		for (size_t i = 0; i < n; i++) {
			if (!v[i].ppid || d->known(d->ctx, v[i].pid) || !d->known(d->ctx, v[i].ppid))
				continue;
			if (!d->add(d->ctx, v[i].pid, v[i].ppid))
				goto out;
			/* Told once: one the caller could not take (a table full) is not asked again. */
			v[i].ppid = 0;
			more |= d->known(d->ctx, v[i].pid);
		}
	}
out:
	free(v);
}

/* Anything but "no such thread" leaves it there: a read of its list then finds out. */
bool proc_thread_alive(pid_t pid, pid_t tid)
{
	return syscall(SYS_tgkill, pid, tid, 0) == 0 || errno != ESRCH;
}

/*
 * A process that is exiting drops its memory map (exit_mm) before it turns
 * into a zombie: in between it still looks alive by its state letter, yet
 * has no maps and no memory to read. The kernel flags it exiting first.
 */
bool proc_exited(pid_t pid)
{
	char buf[512];
	const char *st = thread_stat(pid, pid, buf, sizeof(buf));
	unsigned flags;

	if (!st || st[0] == 'Z' || st[0] == 'X' || st[0] == 'x')
		return true;
	/* state ppid pgrp session tty_nr tpgid flags */
	if (sscanf(st, "%*c %*d %*d %*d %*d %*d %u", &flags) != 1)
		return false;
	return (flags & PF_EXITING) != 0;
}

pid_t proc_ppid(pid_t pid)
{
	char buf[512];
	const char *st = thread_stat(pid, pid, buf, sizeof(buf));
	int ppid;

	return st && sscanf(st, "%*c %d", &ppid) == 1 ? (pid_t)ppid : 0;
}

uint64_t proc_start_time(pid_t pid)
{
	char buf[512];
	const char *st = thread_stat(pid, pid, buf, sizeof(buf));
	unsigned long long start;

	/* After the name: state, then 18 fields, then starttime (proc(5) field 22). */
	return st && sscanf(st, "%*c" "%*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d"
			    " %llu", &start) == 1 ? start : 0;
}

char proc_state(pid_t pid)
{
	return proc_thread_state(pid, pid);
}

/* open and read, not stdio (no buffer to allocate, no fstat): --comm reads it for every exec on a node. */
void proc_thread_comm(pid_t pid, pid_t tid, char *out, size_t len)
{
	char path[64];
	ssize_t n = 0;
	int fd;

	if (!len)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, out, len - 1);
		close(fd);
	}
	out[n > 0 ? n : 0] = '\0';
	out[strcspn(out, "\n")] = '\0';
}
