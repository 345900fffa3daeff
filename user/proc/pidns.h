/* SPDX-License-Identifier: MIT */
#ifndef PBP_PROC_PIDNS_H
#define PBP_PROC_PIDNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PBP_PID_MAX 4194304     /* the kernel's PID_MAX_LIMIT on 64-bit */

/*
 * The ids of the "NSpid:" line of a status file's text (len bytes): one per
 * PID namespace from /proc's down to the task's own, innermost last. Their
 * count (>= 1), or -PBP_E_CORRUPT when there is no such line or it is malformed.
 */
int nspid_parse(const char *text, size_t len, pid_t *ids, int max);
/*
 * A task's id in its own PID namespace, 0 if it cannot be read. *other_ns
 * (may be NULL) tells whether that namespace is not /proc's, ours.
 */
pid_t pidns_inner_id(pid_t pid, pid_t tid, bool *other_ns);

/* Inode number of our own PID namespace; 0 when it is the initial one (or unknown). */
uint32_t pidns_self_inum(void);

/* 0 when /proc is our PID namespace's; else one line on stderr and EXIT_PERM. */
int pidns_check_proc(void);

/* One process's threads: id in its own PID namespace -> id in ours. */
struct tidmap;
struct tidmap *tidmap_new(void);
void tidmap_free(struct tidmap *m);
/* Read all threads of pid again: 0, -PBP_E_GONE, -PBP_E_PERM or -PBP_E_NOMEM. */
int tidmap_rebuild(struct tidmap *m, pid_t pid);
/* Our id for the thread the process calls inner; 0 when there is none. */
pid_t tidmap_ours(const struct tidmap *m, pid_t inner);

#endif /* PBP_PROC_PIDNS_H */
