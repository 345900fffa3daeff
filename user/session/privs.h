/* SPDX-License-Identifier: MIT */
#ifndef PBP_SESSION_PRIVS_H
#define PBP_SESSION_PRIVS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * First thing: a non-root user needs CAP_BPF, CAP_PERFMON (CAP_SYS_ADMIN
 * stands for either) and CAP_SYS_PTRACE; granted but not effective ones are
 * raised. 0, or one line on stderr naming the missing ones and EXIT_PERM.
 */
int privs_check(void);
/*
 * Whether CAP_SYS_PTRACE is effective: a target refused then is not ours to
 * read at all (another user namespace's, a security module's refusal), and
 * "needs root" would be no advice.
 */
bool privs_can_ptrace(void);
/* What the run does after set-up, for privs_drop_after_setup() to keep room for. */
void privs_note_output(const char *path);   /* the profile is written there at the end */
void privs_note_child(void);                /* a launched command is signalled at the end */
void privs_note_attach(void);               /* -a: processes found later are attached too */
void privs_note_sources(void);              /* the targets' source files are read at the end */
/*
 * Once the sampler is attached and the targets registered: drop every
 * capability but CAP_SYS_PTRACE (and the few the notes above and the kernel
 * make necessary: see privs.c) from every set, and where allowed from the
 * bounding set. Of the calling thread: call it while it is the only one.
 */
void privs_drop_after_setup(void);
/* In a launched command's child before exec: none of our capabilities passed on (ambient, inheritable). */
void privs_for_command(void);

#endif /* PBP_SESSION_PRIVS_H */
