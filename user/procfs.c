/* SPDX-License-Identifier: MIT */
/* What the kernel says of a process and its threads, from /proc. */
#include <stdio.h>
#include <string.h>

#include "pyprof.h"

/* Kernel scheduler state of a thread, '?' if it is gone. */
char proc_thread_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');     /* comm may hold spaces and parentheses */
	return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

char proc_state(pid_t pid)
{
	return proc_thread_state(pid, pid);
}

void proc_thread_comm(pid_t pid, pid_t tid, char *out, size_t len)
{
	char path[64];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}
