/* SPDX-License-Identifier: MIT */
#ifndef PBP_PROC_PROCFS_H
#define PBP_PROC_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Kernel scheduler state letter of a thread (R, S, D, Z, ...), '?' if gone. */
char proc_thread_state(pid_t pid, pid_t tid);
char proc_state(pid_t pid);
/* Its parent's id, 0 if it is gone (or its parent is not in our PID namespace). */
pid_t proc_ppid(pid_t pid);
/* When it started (clock ticks after boot): tells a reused pid apart; 0 if it is gone. */
uint64_t proc_start_time(pid_t pid);
/* Gone, a zombie, or exiting (its memory may already be unmapped). */
bool proc_exited(pid_t pid);
void proc_thread_comm(pid_t pid, pid_t tid, char *out, size_t len);
/*
 * The descendants of the processes a caller knows, found by /proc's parent
 * links: add() is told each one whose parent is known and which is not
 * (known() answers both), once each, parents before their children, until
 * a pass makes none known or add() says there is no room (false).
 */
struct proc_descent {
	bool (*known)(void *ctx, pid_t pid);
	bool (*add)(void *ctx, pid_t pid, pid_t ppid);
	void *ctx;
};
void proc_descendants(const struct proc_descent *d);
/* Whether thread tid of process pid is there still: a signal 0, no /proc read (false only if gone). */
bool proc_thread_alive(pid_t pid, pid_t tid);

#endif /* PBP_PROC_PROCFS_H */
