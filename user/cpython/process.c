/* SPDX-License-Identifier: MIT */
/*
 * A target process: which file holds its interpreter, where _PyRuntime is,
 * which CPython version it runs. Files are opened through /proc/PID/root so
 * a process in a chroot or container is read with its own binaries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "pybpfprof.h"
#include "cpython/process.h"
#include "core/errors.h"
#include "cpython/codeobj.h"
#include "cpython/debugoffsets.h"
#include "cpython/pyver.h"
#include "cpython/stack.h"
#include "cpython/thread.h"
#include "proc/elf.h"
#include "proc/elfcache.h"
#include "proc/maps.h"
#include "proc/pidns.h"
#include "proc/remote.h"


/* A file is worth opening as an ELF if its name says python, or always on a second pass. */
static bool looks_like_python(const char *path)
{
	const char *base = strrchr(path, '/');

	return strstr(base ? base : path, "python") != NULL;
}

static int open_maps(pid_t pid, FILE **f)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	*f = fopen(path, "re");
	if (*f)
		return 0;
	if (errno == ENOENT || errno == ESRCH)
		return -PBP_E_NOENT;
	if (errno == EMFILE || errno == ENFILE)
		return -PBP_E_MFILE;
	if (errno == ENOMEM)
		return -PBP_E_NOMEM;
	return pbp_err_from_errno(errno, -PBP_E_GONE);
}

/*
 * Ways to open a mapped file, best first. maps names a file as seen from our
 * root when we can reach it (a plain chroot: the path works as it is), else
 * relative to the target's own root (a container: under /proc/PID/root).
 * map_files names the exact file in every case but needs CAP_SYS_ADMIN,
 * which is dropped after set-up. A path is used only if it leads to the
 * very inode mapped, never to a different file of the same name.
 */
static int file_path(pid_t pid, const struct map_entry *e, int i, char *out, size_t n)
{
	switch (i) {
	case 0:
		snprintf(out, n, "/proc/%d/root%s", (int)pid, e->path);
		return 0;
	case 1:
		snprintf(out, n, "%s", e->path);
		return 0;
	case 2:
		snprintf(out, n, "/proc/%d/map_files/%llx-%llx", (int)pid,
			 (unsigned long long)e->start, (unsigned long long)e->end);
		return 0;
	default:
		return -PBP_E_NOENT;    /* no way left */
	}
}

/* path leads to the very file mapped (its inode): st is what it is. */
static bool same_file(const char *path, const struct map_entry *e, struct stat *st)
{
	return stat(path, st) == 0 && (uint64_t)st->st_ino == e->inode;
}

/* Try one mapped file; on success set p->runtime, p->binary and the ELF facts. */
static int try_file(struct pyproc *p, const struct map_entry *e, struct elf_info *ei, uint64_t *bias)
{
	char path[700];
	struct stat st;
	int i;

	for (i = 0; file_path(p->pid, e, i, path, sizeof(path)) == 0; i++) {
		memset(ei, 0, sizeof(*ei));
		if (same_file(path, e, &st) && elfcache_find_python(path, &st, ei) == 0)
			break;
	}
	if (file_path(p->pid, e, i, path, sizeof(path)) != 0)
		return -PBP_E_NOTPY;
	*bias = ei->is_shared ? e->start - (ei->first_load_vaddr & ~0xfffull) : 0;
	p->runtime = *bias + ei->runtime_vaddr;
	p->gil_static = ei->gil_statics[ELF_GIL_LOCKED] ? *bias + ei->gil_statics[ELF_GIL_LOCKED] : 0;
	snprintf(p->binary, sizeof(p->binary), "%s", e->path);
	snprintf(p->binary_open, sizeof(p->binary_open), "%s", path);
	return 0;
}

/* True when not one more file can be opened: then no mapped file could be looked at. */
static bool no_fd_left(FILE *f)
{
	int fd = fcntl(fileno(f), F_DUPFD_CLOEXEC, 0);

	if (fd >= 0)
		close(fd);
	return fd < 0 && (errno == EMFILE || errno == ENFILE);
}

/* The files the maps show from offset 0, each once: every place a runtime may be. */
static int mapped_files(FILE *f, struct map_entry **out, size_t *n)
{
	struct map_entry e, *files = NULL;
	char last[512] = "";
	size_t cap = 0;

	*n = 0;
	while (maps_next(f, &e) == 0) {
		if (e.path[0] != '/' || e.offset != 0 || strcmp(e.path, last) == 0)
			continue;
		snprintf(last, sizeof(last), "%s", e.path);
		if (*n == cap) {
			struct map_entry *more = realloc(files, (cap = cap ? 2 * cap : 32) * sizeof(*files));

			if (!more) {
				free(files);
				return -PBP_E_NOMEM;
			}
			files = more;
		}
		files[(*n)++] = e;
	}
	*out = files;
	return 0;
}

/*
 * The runtime is in a writable mapping once the loader has mapped the file
 * as its program headers say. Before that (a command just exec'd, its
 * libpython being loaded: ld.so first maps the whole file read-only, then
 * each segment over it) its address holds other bytes of the file, which
 * would read as another version or none: it is not Python yet.
 */
static int runtime_mapped(FILE *f, uint64_t runtime)
{
	struct map_entry e;

	rewind(f);
	while (maps_next(f, &e) == 0)
		if (runtime >= e.start && runtime < e.end)
			return e.perms[1] == 'w' ? 0 : -PBP_E_NOTPY;
	return -PBP_E_NOTPY;
}

/*
 * The file holding the runtime: those named python first, then any (an
 * embedding program whose library is not named so). The maps are read
 * once, and again for the runtime's own mapping.
 */
static int find_runtime(struct pyproc *p, struct elf_info *ei, uint64_t *bias)
{
	struct map_entry *files = NULL;
	size_t n = 0;
	FILE *f;
	int err = open_maps(p->pid, &f);

	if (err)
		return err;
	err = mapped_files(f, &files, &n);
	if (!err)
		err = -PBP_E_NOTPY;
	for (int named = 1; err == -PBP_E_NOTPY && named >= 0; named--)
		for (size_t i = 0; err == -PBP_E_NOTPY && i < n; i++)
			if (looks_like_python(files[i].path) == named &&
			    (named || !elfcache_not_python(files[i].dev, files[i].inode)) &&
			    try_file(p, &files[i], ei, bias) == 0)
				err = 0;
	if (err == -PBP_E_NOTPY && no_fd_left(f))
		err = -PBP_E_MFILE;
	if (!err)
		err = runtime_mapped(f, p->runtime);
	free(files);
	fclose(f);
	return err;
}

static void set_version_string(struct pyproc *p)
{
	snprintf(p->version, sizeof(p->version), "%u.%u.%u", p->v.major, p->v.minor, p->v.micro);
}

/*
 * 3.6's GIL is statics, not a struct: its offsets are those of the other
 * statics from gil_locked (in .data; the rest are in .bss, after it). A
 * build where they are not all found, or not after it, has no GIL reading.
 */
#define GIL36_SPAN (16u << 20)
#define MUTEX_SIZE 40u          /* sizeof(pthread_mutex_t), x86-64 glibc */
#define COND_SIZE 48u           /* sizeof(pthread_cond_t) */

static bool gil_statics_ok(const uint64_t *s)
{
	for (int i = 0; i < ELF_GIL_STATICS; i++)
		if (!s[i] || s[i] < s[ELF_GIL_LOCKED] || s[i] - s[ELF_GIL_LOCKED] > GIL36_SPAN)
			return false;
	return true;
}

static void gil_statics_36(struct pyproc *p, const struct elf_info *ei)
{
	const uint64_t *s = ei->gil_statics, base = s[ELF_GIL_LOCKED];
	uint64_t lo = UINT64_MAX, hi = 0;
	struct pyver *v = &p->v;

	if (!gil_statics_ok(s)) {
		p->gil_static = 0;      /* no GIL reading, the rest works */
		return;
	}
	/* GIL waits sleep on the futexes of the mutexes and condition variables. */
	for (int i = ELF_GIL_MUTEX; i <= ELF_SWITCH_COND; i++) {
		uint64_t size = i == ELF_GIL_COND || i == ELF_SWITCH_COND ? COND_SIZE : MUTEX_SIZE;

		lo = s[i] < lo ? s[i] : lo;
		hi = s[i] + size > hi ? s[i] + size : hi;
	}
	v->gil_locked = 0;
	v->gil_last_holder = (uint32_t)(s[ELF_GIL_HOLDER] - base);
	v->gil_mutex = (uint32_t)(s[ELF_GIL_MUTEX] - base);
	v->gil_cond = (uint32_t)(s[ELF_GIL_COND] - base);
	v->gil_wait_lo = (uint32_t)(lo - base);
	v->gil_size = (uint32_t)(hi - base);
}

/*
 * The version string of the interpreter's file (<= 3.10). A file that can no
 * longer be opened went with its process (/proc/PID/root of one that is
 * exiting leads nowhere): that is no version problem.
 */
static int version_string(struct pyproc *p, unsigned *maj, unsigned *min, unsigned *mic)
{
	char ver[32];

	if (elfcache_version_string(p->binary_open, ver, sizeof(ver)) == 0)
		return sscanf(ver, "%u.%u.%u", maj, min, mic) == 3 ? 0 : -PBP_E_VERSION;
	return access(p->binary_open, R_OK) == 0 ? -PBP_E_VERSION : -PBP_E_GONE;
}

/*
 * 3.6 (no _PyRuntime: its interp_head) from its version string; a file with
 * an interp_head that is not a 3.6 (3.5, or no version at all) is not one we
 * can read.
 */
static int find_version_36(struct pyproc *p, const struct elf_info *ei)
{
	unsigned maj = 0, min = 0, mic = 0;
	int err = version_string(p, &maj, &min, &mic);

	/* no version string found: the file's name may still say which (libpython2.7.so) */
	if (err == -PBP_E_VERSION && ei->soname_version[0])
		snprintf(p->version, sizeof(p->version), "%s", ei->soname_version);
	if (err)
		return err;
	snprintf(p->version, sizeof(p->version), "%u.%u.%u", maj, min, mic);
	if (maj != 3 || min != 6)
		return -PBP_E_VERSION;
	err = pyver_from_table(maj, min, mic, &p->v);
	if (err)
		return err;
	set_version_string(p);
	gil_statics_36(p, ei);
	return 0;
}

/* Version and offsets: the target's own debug table (3.13+), else our tables. */
static int find_version(struct pyproc *p, const struct elf_info *ei, uint64_t bias)
{
	size_t max = pyver_debug_offsets_max();
	uint8_t *blob;
	unsigned maj = 0, min = 0, mic = 0;
	int err;

	if (ei->runtime_is_interp_head)
		return find_version_36(p, ei);
	blob = malloc(max);
	if (!blob)
		return -PBP_E_NOMEM;
	err = remote_read(p->r, p->runtime, blob, max);
	if (err == 0 && memcmp(blob, "xdebugpy", 8) == 0) {
		uint64_t hex, ft;

		/* The version it claims, for the message if it is not one we can read. */
		memcpy(&hex, blob + 8, sizeof(hex));
		memcpy(&ft, blob + 16, sizeof(ft));
		if (hex >> 24 == 3)
			snprintf(p->version, sizeof(p->version), "3.%u.%u%s",
				 (unsigned)(hex >> 16 & 0xff), (unsigned)(hex >> 8 & 0xff),
				 ft == 1 ? "t" : "");
		err = pyver_from_debug_offsets(blob, max, &p->v);
		free(blob);
		if (err == 0)
			set_version_string(p);
		return err;
	}
	free(blob);
	if (err)
		return err;
	if (ei->version_vaddr) {
		uint32_t hex;

		err = remote_read(p->r, bias + ei->version_vaddr, &hex, sizeof(hex));
		if (err)
			return err;
		maj = hex >> 24, min = hex >> 16 & 0xff, mic = hex >> 8 & 0xff;
	} else if ((err = version_string(p, &maj, &min, &mic)) != 0) {
		return err;
	}
	snprintf(p->version, sizeof(p->version), "%u.%u.%u", maj, min, mic);
	/*
	 * Every 3.13 and later begins _PyRuntime with its _Py_DebugOffsets
	 * (static data, there once the writable segment is mapped): one whose
	 * Py_Version says so but whose runtime holds other bytes is no version
	 * problem, its memory is not what its file says.
	 */
	if (maj == 3 && min >= 13 && min <= pyver_newest_minor()) {
		p->mismatch = "without the _Py_DebugOffsets that begins every 3.13+ runtime";
		return -PBP_E_CORRUPT;
	}
	/* 3.6 is known by its interp_head: a _PyRuntime that says 3.6 is not one. */
	if (maj == 3 && min == 6) {
		p->mismatch = "with a _PyRuntime, which 3.6 does not have";
		return -PBP_E_CORRUPT;
	}
	err = pyver_from_table(maj, min, mic, &p->v);
	if (err == 0)
		set_version_string(p);
	return err;
}

/*
 * Its id in its own PID namespace, and when that is not ours, a map for its
 * threads' ids (CPython keeps the ids of its own namespace). A process whose
 * status cannot be read is treated as sharing ours: reads fail later anyway.
 */
static int pyproc_pidns(struct pyproc *p)
{
	bool other = false;

	p->ns_pid = pidns_inner_id(p->pid, p->pid, &other);
	if (!p->ns_pid || !other) {
		p->ns_pid = p->pid;
		return 0;
	}
	p->tids = tidmap_new();
	return p->tids ? 0 : -PBP_E_NOMEM;
}

/*
 * A version newer than any known is read with the newest known layout only
 * if, with it, every frame of every thread decodes: a code object (of type
 * PyCode_Type), its name and file, a line. At least one frame must; a walk
 * that fails (the target moved under it) is tried again.
 */
#define VERIFY_THREADS 256
#define VERIFY_TRIES 5

static int decode_stack(struct pyproc *p, uint64_t frame, size_t *decoded)
{
	struct pbp_frame f[PBP_MAX_FRAMES];
	size_t n = 0, elided = 0;
	int err = stack_walk(p, frame, f, PBP_MAX_FRAMES, &n, &elided, NULL);

	for (size_t i = 0; !err && i < n; i++) {
		const struct codeinfo *ci = codecache_get(p->codes, p, f[i].code, &f[i], &err);

		if (!ci || !ci->name || !ci->file || frame_line(p, ci, f[i].instr) < 0)
			err = err ? err : -PBP_E_CORRUPT;
		else
			(*decoded)++;
	}
	return err;
}

static int verify_once(struct pyproc *p, struct pythread *t, size_t *decoded)
{
	size_t n = 0;
	int err = pythreads_read(p, t, VERIFY_THREADS, &n);

	*decoded = 0;
	for (size_t i = 0; !err && i < n; i++)
		if (t[i].frame)
			err = decode_stack(p, t[i].frame, decoded);
	return err ? err : *decoded ? 0 : -PBP_E_CORRUPT;
}

static int verify_newer(struct pyproc *p)
{
	struct pythread *t = calloc(VERIFY_THREADS, sizeof(*t));
	size_t decoded = 0;
	int err = -PBP_E_NOMEM;

	if (!p->pycode_type)
		err = -PBP_E_VERSION;   /* nothing to tell a code object by */
	for (int i = 0; t && p->pycode_type && i < VERIFY_TRIES; i++) {
		err = verify_once(p, t, &decoded);
		if (!err || err == -PBP_E_GONE)
			break;
		usleep(20000);
	}
	free(t);
	if (err && err != -PBP_E_GONE && err != -PBP_E_NOMEM)
		return -PBP_E_VERSION;
	if (!err)
		fprintf(stderr, "pybpfprof: warning: pid %d: Python %s is newer than any this "
			"pybpfprof knows (3.6 to 3.%u): read with 3.%u's layout, which its "
			"_Py_DebugOffsets and all %zu frames agree with (Python thread names not read)\n",
			(int)p->pid, p->version, pyver_newest_minor(), pyver_newest_minor(), decoded);
	return err;
}

int pyproc_open(pid_t pid, const struct pyproc_limits *lim, struct pyproc **out)
{
	struct pyproc *p = calloc(1, sizeof(*p));
	struct elf_info ei;
	uint64_t bias = 0;
	int err;

	*out = NULL;
	if (!p)
		return -PBP_E_NOMEM;
	p->pid = pid;
	err = pyproc_pidns(p);
	if (err) {
		pyproc_close(p);
		return err;
	}
	p->r = remote_open(pid, lim->cache_pages);
	p->codes = codecache_new(lim->code_entries, lim->code_bytes);
	if (!p->r || !p->codes) {
		pyproc_close(p);
		return -PBP_E_NOMEM;
	}
	err = find_runtime(p, &ei, &bias);
	if (!err)
		err = find_version(p, &ei, bias);
	if (!err && !pyver_supported(&p->v))
		err = -PBP_E_VERSION;
	p->pycode_type = ei.pycode_type_vaddr ? bias + ei.pycode_type_vaddr : 0;
	p->code_count = !err && ei.code_count_vaddr && p->v.minor == 12 ? bias + ei.code_count_vaddr : 0;
	if (!err && p->v.newer)
		err = verify_newer(p);
	*out = p;   /* on error the caller may report p->version; it must close p */
	return err;
}

int pyproc_fork(struct pyproc *parent, pid_t pid, const struct pyproc_limits *lim,
		struct pyproc **out)
{
	struct pyproc *p = calloc(1, sizeof(*p));
	int err;

	*out = NULL;
	if (!p)
		return -PBP_E_NOMEM;
	p->pid = pid;
	err = pyproc_pidns(p);
	p->r = err ? NULL : remote_open(pid, lim->cache_pages);
	p->codes = err ? NULL : codecache_share(parent->codes);
	p->origin = err ? NULL : remote_open(parent->pid, 0);
	if (err || !p->r || !p->codes || !p->origin) {
		pyproc_close(p);
		return err ? err : -PBP_E_NOMEM;
	}
	p->v = parent->v;
	p->runtime = parent->runtime;
	p->gil_static = parent->gil_static;
	p->pycode_type = parent->pycode_type;
	p->code_count = parent->code_count;
	memcpy(p->binary, parent->binary, sizeof(p->binary));
	memcpy(p->binary_open, parent->binary_open, sizeof(p->binary_open));
	memcpy(p->version, parent->version, sizeof(p->version));
	*out = p;
	return 0;
}

void pyproc_close(struct pyproc *p)
{
	if (!p)
		return;
	codecache_free(p->codes);
	remote_close(p->r);
	remote_close(p->origin);
	tidmap_free(p->tids);
	free(p);
}
