/* SPDX-License-Identifier: MIT */
#ifndef PBP_CORE_ERRORS_H
#define PBP_CORE_ERRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Exit codes: documented in README.md and pybpfprof.1; tested. */
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
	EXIT_IO = 10,           /* could not write the output */
	EXIT_INTERNAL = 11,
	EXIT_RESOURCES = 12,    /* a resource limit (open files, memory, locked memory) stopped it */
	EXIT_LISTEN = 13,       /* the agent could not listen on its --listen address */
};

/*
 * Internal error codes: every function that can fail returns 0 or one of
 * these, negated. Lookups that answer "none" (a line number, an index by
 * name) return -1 for it; that is a value, not a failure.
 */
enum pbp_err {
	PBP_OK = 0,
	PBP_E_GONE = 1,     /* process exited (ESRCH) */
	PBP_E_FAULT = 2,    /* address not mapped in the target */
	PBP_E_PERM = 3,     /* EPERM: not allowed to read */
	PBP_E_CORRUPT = 4,  /* data read is inconsistent */
	PBP_E_NOMEM = 5,
	PBP_E_NOTPY = 6,
	PBP_E_VERSION = 7,
	PBP_E_NOENT = 8,    /* pid does not exist */
	PBP_E_BPF = 9,      /* the kernel refused the BPF side */
	PBP_E_NOBTF = 10,   /* no /sys/kernel/btf/vmlinux */
	PBP_E_CHILD = 11,   /* a launched command could not start (it said why) */
	PBP_E_LIMIT = 12,   /* --max-processes reached */
	PBP_E_OLDKERNEL = 13, /* Linux older than 5.17 */
	PBP_E_MFILE = 14,   /* EMFILE, ENFILE: no file descriptor left */
	PBP_E_ADDRINUSE = 15, /* the agent's listen address is taken */
	PBP_E_NET = 16,     /* the agent could not listen there */
	PBP_E_IO = 17,      /* a system call on a file failed: its errno is kept where the message is made */
	PBP_E_INVAL = 18,   /* a value given (an option, a line of a file read back) does not parse */
};

const char *pbp_strerror(int err);

#endif /* PBP_CORE_ERRORS_H */
