/* SPDX-License-Identifier: MIT */
/* Internal errors in words: what failed is said by the caller, this says why. */
#include "core/errors.h"

#include <errno.h>

bool pbp_is_err(int err)
{
	int e = err < 0 ? -err : err;

	return e == PBP_OK || (e > PBP_E_BASE && e < PBP_E_END);
}

int pbp_err_from_errno(int e, int fallback)
{
	switch (e) {
	case EPERM:
	case EACCES: return -PBP_E_PERM;
	case ENOMEM: return -PBP_E_NOMEM;
	case EMFILE:
	case ENFILE: return -PBP_E_MFILE;
	default: return fallback;
	}
}

const char *pbp_strerror(int err)
{
	if (!pbp_is_err(err))
		return "unknown error";
	switch (err < 0 ? -err : err) {
	case PBP_OK: return "ok";
	case PBP_E_GONE: return "process exited";
	case PBP_E_FAULT: return "address not mapped in the target";
	case PBP_E_PERM: return "permission denied (needs root or CAP_SYS_PTRACE)";
	case PBP_E_CORRUPT: return "target memory is inconsistent";
	case PBP_E_NOMEM: return "out of memory";
	case PBP_E_NOTPY: return "not a Python process (no _PyRuntime found)";
	case PBP_E_VERSION: return "unsupported Python version (supported: 3.6 to 3.14)";
	case PBP_E_FREETHREADED: return "free-threaded build not supported (free-threaded: 3.14t whose _Py_DebugOffsets is complete; with the GIL: 3.6 to 3.14)";
	case PBP_E_NOGIL: return "gil mode does not apply to a free-threaded build: it runs without a GIL (use cpu or wall mode)";
	case PBP_E_NOENT: return "no such process";
	case PBP_E_BPF: return "the kernel refused to load or attach the BPF sampler";
	case PBP_E_NOBTF: return "the kernel has no BTF (/sys/kernel/btf/vmlinux is missing)";
	case PBP_E_CHILD: return "the command could not be started";
	case PBP_E_LIMIT: return "--max-processes reached";
	case PBP_E_OLDKERNEL: return "this kernel is older than 5.17 (the sampler needs bpf_loop)";
	case PBP_E_MFILE: return "too many open files";
	case PBP_E_ADDRINUSE: return "address already in use";
	case PBP_E_NET: return "cannot listen on that address";
	case PBP_E_IO: return "input/output error";
	case PBP_E_INVAL: return "invalid value";
	default: return "unknown error";
	}
}
