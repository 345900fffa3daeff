/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_PROCESS_H
#define PBP_CPYTHON_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpython/pyver.h"

struct codecache;
struct remote;
struct tidmap;

/* threadname.c's per-interpreter memo: where the threading module is. */
struct pyname_cache {
	uint64_t interp;        /* 0: an empty slot */
	uint64_t modules;       /* interp's sys.modules dict then */
	uint64_t module;        /* sys.modules["threading"] when it was looked up */
	uint64_t dict;          /* that module's md_dict */
	uint64_t dict_type;     /* type(sys.modules): what a real dict's ob_type is */
	uint64_t module_type;   /* type(module) then */
	/*
	 * The registries, md_dict["_active"] and ["_limbo"] (0: look up): threading
	 * mutates them, never rebinds them, and finding a key scans the module's
	 * dict. Looked up again after any failed read, and every 30 s.
	 */
	uint64_t registry[2];
	uint64_t registry_ns;
};

#define PBP_NAME_CACHE 4

/* Memory one process may take: page cache and code-object cache. */
struct pyproc_limits {
	unsigned cache_pages;   /* 4 KiB pages of the per-pass page cache */
	unsigned code_entries;  /* code objects cached */
	size_t code_bytes;      /* their names and line tables, at most */
};

struct pyproc {
	pid_t pid;
	pid_t ns_pid;           /* its id in its own PID namespace; pid when that is ours */
	struct tidmap *tids;    /* its threads' ids translated, NULL when it shares our namespace */
	struct pyver v;
	struct remote *r;
	/*
	 * Forked without exec: its parent's memory, where the code objects made
	 * before the fork are too, for a child gone before its own were read.
	 * NULL otherwise.
	 */
	struct remote *origin;
	struct codecache *codes;
	uint64_t runtime;       /* address of _PyRuntime (3.6: of interp_head) */
	uint64_t gil_static;    /* 3.6: address of the static gil_locked, 0 if unknown */
	uint64_t pycode_type;   /* address of PyCode_Type, 0 if unknown */
	uint64_t code_count;    /* 3.12: address of _Py_next_func_version (a uint32_t), 0 if unknown */
	char binary[512];       /* file holding _PyRuntime, as named in maps */
	char binary_open[700];  /* the path it was opened by */
	char version[24];       /* "3.11.7" */
	const char *mismatch;   /* how its version and its memory disagree (-PBP_E_CORRUPT), NULL: they do not */
	struct pyname_cache names[PBP_NAME_CACHE];  /* zeroed at open */
	unsigned names_next;    /* slot to reuse next */
};

/*
 * Attach to pid: find its interpreter, version and offsets. Returns -PBP_E_*.
 * On error *out may still be set (p->version tells an unsupported version);
 * the caller closes it.
 */
int pyproc_open(pid_t pid, const struct pyproc_limits *lim, struct pyproc **out);
/*
 * pid, just forked from parent without exec: the same interpreter at the
 * same addresses, so what was learned of parent (version, layout, code
 * objects) is copied, not looked for again. Returns -PBP_E_*.
 */
int pyproc_fork(struct pyproc *parent, pid_t pid, const struct pyproc_limits *lim,
		struct pyproc **out);
void pyproc_close(struct pyproc *p);

#endif /* PBP_CPYTHON_PROCESS_H */
