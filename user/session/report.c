/* SPDX-License-Identifier: MIT */
/*
 * Errors as the user sees them: one line on stderr and the documented exit
 * code for each internal error.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <stddef.h>
#include <sys/types.h>

#include "session/privs.h"
#include "session/report.h"
#include "core/errors.h"
#include "cpython/process.h"
#include "proc/procfs.h"

int exit_code_for(int err)
{
	switch (err < 0 ? -err : err) {
	case PBP_OK: return EXIT_OK;
	case PBP_E_NOENT: return EXIT_NO_PROCESS;
	case PBP_E_NOTPY: return EXIT_NOT_PYTHON;
	case PBP_E_VERSION: return EXIT_UNSUPPORTED;
	case PBP_E_FREETHREADED:
	case PBP_E_NOGIL: return EXIT_FREE_THREADED;
	case PBP_E_PERM: return EXIT_PERM;
	case PBP_E_GONE: return EXIT_TARGET_GONE;
	case PBP_E_FAULT:
	case PBP_E_CORRUPT: return EXIT_CORRUPT;
	case PBP_E_BPF:
	case PBP_E_OLDKERNEL:
	case PBP_E_NOBTF: return EXIT_NO_BPF;
	case PBP_E_MFILE:
	case PBP_E_NOMEM: return EXIT_RESOURCES;
	case PBP_E_ADDRINUSE:
	case PBP_E_NET: return EXIT_LISTEN;
	case PBP_E_IO: return EXIT_IO;
	case PBP_E_INVAL: return EXIT_USAGE;
	default: return EXIT_INTERNAL;
	}
}

/* The limit a resource error most likely hit, as " (...)", or "" when none is set. */
static const char *limit_note(int err, char *buf, size_t len)
{
	struct rlimit rl;

	buf[0] = '\0';
	if (-err == PBP_E_MFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
		snprintf(buf, len, " (the limit is %llu per process: ulimit -n)",
			 (unsigned long long)rl.rlim_cur);
	else if (-err == PBP_E_NOMEM && getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		snprintf(buf, len, " (the address space limit is %llu KiB: ulimit -v)",
			 (unsigned long long)rl.rlim_cur / 1024);
	else if (-err == PBP_E_NOMEM && getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		snprintf(buf, len, " (the data size limit is %llu KiB: ulimit -d)",
			 (unsigned long long)rl.rlim_cur / 1024);
	return buf;
}

int report_error(const char *what, int err)
{
	char note[96];

	fprintf(stderr, "pybpfprof: %s%s%s%s\n", what ? what : "", what ? ": " : "",
		pbp_strerror(err), limit_note(err, note, sizeof(note)));
	return exit_code_for(err);
}

/* One line on stderr naming the target and what went wrong; returns the exit code. */
/*
 * A target that exited while it was read fails in whatever way its teardown
 * showed (an exiting process has no maps: "not a Python process"; memory
 * unmapped under a read: a fault). Once it is gone, a zombie or exiting,
 * that is the error.
 */
int exited_error(pid_t pid, int err)
{
	if (!err || -err == PBP_E_NOENT || -err == PBP_E_PERM || -err == PBP_E_VERSION || -err == PBP_E_FREETHREADED ||
	    -err == PBP_E_NOGIL ||
	    -err == PBP_E_NOMEM || -err == PBP_E_MFILE)
		return err;
	return proc_exited(pid) ? -PBP_E_GONE : err;
}

bool report_refusal(int err, const char *version, const char *mismatch, char *why, size_t len)
{
	if (!version || !version[0])
		return false;
	if (-err == PBP_E_VERSION)
		snprintf(why, len, "unsupported Python version %s (supported: 3.6 to 3.14)", version);
	/* "3.14.10t": its number is in range, its build is not. */
	else if (-err == PBP_E_FREETHREADED)
		snprintf(why, len, "free-threaded build %s is not supported (free-threaded: 3.14t whose "
			 "_Py_DebugOffsets is complete; with the GIL: 3.6 to 3.14)", version);
	else if (-err == PBP_E_NOGIL)
		snprintf(why, len, "gil mode does not apply to free-threaded build %st: it runs without a "
			 "GIL (use cpu or wall mode)", version);
	else if (-err == PBP_E_CORRUPT && mismatch)
		snprintf(why, len, "Python %s %s: target memory is inconsistent", version, mismatch);
	else
		return false;
	return true;
}

int report_attach_error(pid_t pid, int err, const struct pyproc *p)
{
	char what[32], why[256];

	err = exited_error(pid, err);
	if (p && report_refusal(err, p->version, p->mismatch, why, sizeof(why))) {
		fprintf(stderr, "pybpfprof: pid %d: %s\n", (int)pid, why);
		return exit_code_for(err);
	}
	if (-err == PBP_E_PERM && privs_can_ptrace()) {
		fprintf(stderr, "pybpfprof: pid %d: permission denied even with CAP_SYS_PTRACE (a process "
			"of a parent user namespace, or refused by a security module)\n", (int)pid);
		return exit_code_for(err);
	}
	snprintf(what, sizeof(what), "pid %d", (int)pid);
	return report_error(what, err);
}
