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
struct pidpair {
	pid_t pid, ppid;
};
/* Every process's parent, from /proc: *out (malloc'd) and how many (0 and NULL: none read). */
size_t proc_parents(struct pidpair **out);
/* Whether thread tid of process pid is there still: a signal 0, no /proc read (false only if gone). */
bool proc_thread_alive(pid_t pid, pid_t tid);

#endif /* PBP_PROC_PROCFS_H */
