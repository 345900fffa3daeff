/* SPDX-License-Identifier: MIT */
#ifndef PBP_PROC_DISCOVER_H
#define PBP_PROC_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <regex.h>
#include <sys/types.h>

struct cgroup_info;

/* Whether pid is worth a look (not known already, let through by the filters). */
typedef bool (*discover_look_fn)(void *ctx, pid_t pid);

/*
 * Candidate CPython processes: pids (other than ours) mapping an executable
 * file whose name contains "python", of those look (NULL: all) lets
 * through, asked before their maps are read. Attaching tells which really
 * are. 0, 1 when more than max were found (*n == max), or -PBP_E_PERM / _NOENT.
 */
int discover_pythons(pid_t *out, size_t max, size_t *n, discover_look_fn look, void *ctx);

/* What -a profiles; NULL / 0 members do not filter. */
struct proc_filter {
	regex_t *comm_re;               /* --comm: POSIX extended, against /proc/PID/comm */
	const char *cgroup_prefix;      /* --cgroup: a prefix of cgroup_info.path */
	const char *container_prefix;   /* --container: a prefix of the container id */
	pid_t *exclude;                 /* --exclude-pid */
	size_t nexclude;
	pid_t *only;                    /* --pid: these and no others */
	size_t nonly;
};

/* Every filter set must hold; comm or cg NULL (unknown) fails the filters that need them. */
bool proc_filter_match(const struct proc_filter *f, pid_t pid, const char *comm,
		       const struct cgroup_info *cg);
/*
 * /proc/PID/cmdline as one line: NULs and control characters become spaces,
 * ends trimmed, cut to len - 1. Its length, or -PBP_E_NOENT / _PERM.
 */
int proc_cmdline(pid_t pid, char *out, size_t len);
/* /proc/PID/cmdline as it is: the arguments NUL-separated, cut to len - 1, NUL-terminated. Its length or -PBP_E_*. */
int proc_argv(pid_t pid, char *out, size_t len);

#endif /* PBP_PROC_DISCOVER_H */
