/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_ERRORS_H
#define PBP_CORE_ERRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes: documented in docs/troubleshooting.md and pybpfprof.1; tested. */
enum pbp_exit {
	EXIT_OK = 0,
	EXIT_USAGE = 2,         /* bad command line */
	EXIT_NO_PROCESS = 3,    /* no such pid */
	EXIT_NOT_PYTHON = 4,    /* no CPython runtime found in the process */
	EXIT_UNSUPPORTED = 5,   /* CPython version not supported */
	EXIT_PERM = 6,          /* missing privileges / capabilities */
	EXIT_NO_BPF = 7,        /* no BTF, BPF or perf events in this kernel */
	EXIT_TARGET_GONE = 8,   /* target exited before anything could be read */
	EXIT_CORRUPT = 9,       /* target memory makes no sense */
	EXIT_IO = 10,           /* could not write the output, or read a profile back (damaged gzip too) */
	EXIT_INTERNAL = 11,
	EXIT_RESOURCES = 12,    /* a resource limit (open files, memory, locked memory) stopped it */
	EXIT_LISTEN = 13,       /* the agent could not listen on its --listen address */
	EXIT_FREE_THREADED = 14, /* a free-threaded CPython build (3.13t, 3.14t), not read yet */
};

/*
 * Internal error codes: every function that can fail returns 0 or one of
 * these, negated. They start at PBP_E_BASE, above every errno, so that an
 * errno that strayed into a return value can never read as one of ours:
 * pbp_strerror() calls it an unknown error and exit_code_for() an
 * internal one. An errno becomes a code through pbp_err_from_errno() only.
 * Lookups that answer "none" (a line number, an index by name) return -1
 * for it; that is a value, not a failure.
 */
#define PBP_E_BASE 1000

enum pbp_err {
	PBP_OK = 0,
	PBP_E_GONE = PBP_E_BASE + 1, /* process exited (ESRCH) */
	PBP_E_FAULT,        /* address not mapped in the target */
	PBP_E_PERM,         /* EPERM: not allowed to read */
	PBP_E_CORRUPT,      /* data read is inconsistent */
	PBP_E_NOMEM,
	PBP_E_NOTPY,
	PBP_E_VERSION,
	PBP_E_NOENT,        /* pid does not exist */
	PBP_E_BPF,          /* the kernel refused the BPF side */
	PBP_E_NOBTF,        /* no /sys/kernel/btf/vmlinux */
	PBP_E_CHILD,        /* a launched command could not start (it said why) */
	PBP_E_LIMIT,        /* --max-processes reached */
	PBP_E_OLDKERNEL,    /* Linux older than 5.17 */
	PBP_E_MFILE,        /* EMFILE, ENFILE: no file descriptor left */
	PBP_E_ADDRINUSE,    /* the agent's listen address is taken */
	PBP_E_NET,          /* the agent could not listen there */
	PBP_E_IO,           /* a system call on a file failed: its errno is kept where the message is made */
	PBP_E_INVAL,        /* a value given (an option, a line of a file read back) does not parse */
	PBP_E_FREETHREADED, /* a free-threaded build: its version may be in range, its build is not */
	PBP_E_NOGIL,        /* gil mode asked of a free-threaded build, which has no GIL to count */
	PBP_E_END           /* one past the last code */
};

/* Whether err (of either sign) is 0 or one of the codes above. */
bool pbp_is_err(int err);

/*
 * The code for errno e, negated: the errnos that mean the same whatever
 * failed (permission, memory, file descriptors) get their own code; any
 * other is `fallback` (a -PBP_E_* code), which says what the failing call
 * was for. (ESRCH is not among them: a process gone to /proc, "no BTF" to
 * libbpf.)
 */
int pbp_err_from_errno(int e, int fallback);

/* A code of either sign in words; anything else is "unknown error". */
const char *pbp_strerror(int err);

#endif /* PBP_CORE_ERRORS_H */
