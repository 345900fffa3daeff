/* SPDX-License-Identifier: MIT */
#ifndef PBP_SESSION_REPORT_H
#define PBP_SESSION_REPORT_H

#include <sys/types.h>

struct pyproc;

/* The documented exit code (enum pbp_exit) for an internal error (-PBP_E_* or PBP_E_*). */
int exit_code_for(int err);
/* One line on stderr, "pybpfprof: [what: ]error", naming the limit a resource error hit; the exit code. */
int report_error(const char *what, int err);
/* One line on stderr naming the target pid and why attaching failed (p: what was learnt, or NULL); the exit code. */
int report_attach_error(pid_t pid, int err, const struct pyproc *p);
/*
 * The error to report for a target that failed while it was read: once it
 * is gone (a zombie or exiting), that it exited, whatever its teardown showed.
 */
int exited_error(pid_t pid, int err);

#endif /* PBP_SESSION_REPORT_H */
