/* SPDX-License-Identifier: MIT */
#ifndef PBP_SESSION_REPORT_H
#define PBP_SESSION_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct pyproc;

/* The documented exit code (enum pbp_exit) for an internal error (-PBP_E_* or PBP_E_*). */
int exit_code_for(int err);
/* One line on stderr, "pybpfprof: [what: ]error", naming the limit a resource error hit; the exit code. */
int report_error(const char *what, int err);
/*
 * Why a target's build is refused, naming its version (out of range,
 * free-threaded, gil mode without a GIL, memory its version does not
 * explain), into why; false when err is no such refusal or the version is
 * not known. Shared by -p's and a launched command's one line.
 */
bool report_refusal(int err, const char *version, const char *mismatch, char *why, size_t len);
/* One line on stderr naming the target pid and why attaching failed (p: what was learnt, or NULL); the exit code. */
int report_attach_error(pid_t pid, int err, const struct pyproc *p);
/*
 * The error to report for a target that failed while it was read: once it
 * is gone (a zombie or exiting), that it exited, whatever its teardown showed.
 */
int exited_error(pid_t pid, int err);

#endif /* PBP_SESSION_REPORT_H */
