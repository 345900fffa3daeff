/* SPDX-License-Identifier: MIT */
/*
 * User-space internals of pybpfprof: one header, one section per module.
 * Data flows one way: kernel -> samples -> symbols -> aggregate -> output.
 */
#ifndef PYPROF_H
#define PYPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "pybpfprof.h"

/* ---------------------------------------------------------------- errors */

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
};

/* Internal error codes returned as negative values by readers. */
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
};

const char *pbp_strerror(int err);

/* ------------------------------------------------------------- bytes.c */

/* The u64 / u32 at byte offset off of b (unaligned is fine; off is not checked). */
uint64_t load_u64(const uint8_t *b, uint32_t off);
uint32_t load_u32(const uint8_t *b, uint32_t off);

/* ------------------------------------------------------------- clock.c */

/* CLOCK_MONOTONIC in ns: every deadline and duration of a run. */
uint64_t mono_ns(void);

/* ------------------------------------------------------------- maps.c */

struct map_entry {
	uint64_t start, end, offset;
	char perms[5];
	uint64_t inode;
	char path[512];         /* as written in maps; may be empty */
	bool deleted;           /* path ends in " (deleted)" (kept in path as written) */
};

/*
 * Parse one line of /proc/PID/maps ("start-end perms offset dev inode  path"),
 * with or without its trailing newline. The path is everything after the
 * padding that follows the inode (it may contain spaces; it may be absent).
 * 0 on success; -1 on a malformed line (missing field, bad or overflowing
 * number, start > end, junk after a newline) or a path that does not fit.
 */
int maps_parse_line(const char *line, struct map_entry *e);

/* ------------------------------------------------------------- elf.c */

enum { ELF_GIL_LOCKED, ELF_GIL_HOLDER, ELF_GIL_MUTEX, ELF_GIL_COND, ELF_SWITCH_MUTEX,
       ELF_SWITCH_COND, ELF_GIL_STATICS };

struct elf_info {
	uint64_t runtime_vaddr;     /* st_value of _PyRuntime or .PyRuntime sh_addr, 0 if none */
	uint64_t runtime_size;      /* st_size of that symbol or sh_size of the section, 0 if unknown */
	uint64_t version_vaddr;     /* Py_Version (3.11+), 0 if none */
	uint32_t version_hex;       /* Py_Version's value as stored in the file, 0 if none */
	uint64_t pycode_type_vaddr; /* PyCode_Type, 0 if none */
	bool is_shared;             /* ET_DYN */
	bool runtime_from_section;  /* no _PyRuntime symbol: runtime_vaddr is .PyRuntime's address */
	bool runtime_is_interp_head;/* 3.6: runtime_vaddr is the static interp_head of pystate.c */
	/* 3.6: gil_locked, gil_last_holder, gil_mutex, gil_cond, switch_mutex, switch_cond; 0 if not found */
	uint64_t gil_statics[ELF_GIL_STATICS];
	/*
	 * p_vaddr of the PT_LOAD with p_offset 0 (if no PT_LOAD maps offset 0:
	 * p_vaddr - p_offset of the one with the lowest offset). Load bias of a
	 * shared object = start of its offset-0 mapping - (first_load_vaddr
	 * rounded down to the page size).
	 */
	uint64_t first_load_vaddr;
	/* "3.11" from the file name (python3.11, libpython3.11d.so.1.0), else from DT_SONAME; "" if none */
	char soname_version[16];
};

/*
 * Look up the CPython symbols of one ELF file (ET_EXEC or ET_DYN). 0 found
 * _PyRuntime, -1 not; out is zeroed first and filled as far as found either way.
 */
int elf_find_python(const char *path, struct elf_info *out);
/* Same, from an in-memory image (for fuzzing). */
int elf_find_python_mem(const void *buf, size_t len, struct elf_info *out);
/*
 * CPython <= 3.10 has no Py_Version: find the PY_VERSION literal ("3.8.18")
 * in the file's read-only data instead (see elf.c for how). out gets the
 * string, NUL-terminated. 0 on a single unambiguous match, -1 otherwise.
 */
int elf_find_version_string(const char *path, char *out, size_t outlen);
/* Same, from an in-memory image (no file name to take major.minor from). */
int elf_find_version_string_mem(const void *buf, size_t len, char *out, size_t outlen);

/* ------------------------------------------------------------- remote.c */

struct remote_stats {
	uint64_t hits, misses;      /* page cache */
	uint64_t reads;             /* process_vm_readv calls */
	uint64_t bytes;             /* bytes those calls returned */
	uint64_t faults;            /* reads of unmapped memory */
	uint64_t evictions;
};

struct remote;

/* pages: page-cache capacity in 4 KiB pages (0 disables the cache). */
struct remote *remote_open(pid_t pid, unsigned pages);
void remote_close(struct remote *r);
/* Read len bytes now, bypassing the cache (mutable data: frames, threads). */
int remote_read(struct remote *r, uint64_t addr, void *buf, size_t len);
/* Read through the page cache (immutable data: code objects, strings). */
int remote_read_cached(struct remote *r, uint64_t addr, void *buf, size_t len);
/* Forget cached pages that overlap [addr, addr+len). */
void remote_invalidate(struct remote *r, uint64_t addr, size_t len);
void remote_invalidate_all(struct remote *r);
const struct remote_stats *remote_stats(const struct remote *r);
pid_t remote_pid(const struct remote *r);
/* Read a pointer / u32 / int helpers, uncached. */
int remote_ptr(struct remote *r, uint64_t addr, uint64_t *out);

/* ------------------------------------------------------------- pyver.c */

/*
 * Everything this program knows about one CPython version's memory layout.
 * All per-version knowledge lives in pyver.c with the generated table it
 * includes (user/offsets_gen.h), and for 3.13+ in debugoffsets.c.
 */
struct pyver {
	unsigned major, minor, micro;
	uint32_t hexversion;        /* PY_VERSION_HEX */
	bool from_debug_offsets;    /* 3.13+: read from the target */
	bool newer;                 /* newer than any known: read with the newest layout */

	/* _PyRuntime */
	uint32_t rt_interpreters_head;
	uint32_t rt_gil;            /* <= 3.11: offset of ceval.gil in _PyRuntime */
	uint32_t rt_size;

	/* PyInterpreterState */
	uint32_t is_next, is_threads_head, is_id;
	uint32_t is_ceval_gil;      /* 3.12+: offset of the gil pointer, else NOOFF */
	uint32_t is_size;

	/* struct _gil_runtime_state (3.6: statics, relative to gil_locked's) */
	uint32_t gil_locked, gil_last_holder, gil_mutex, gil_cond, gil_size;
	uint32_t gil_wait_lo;       /* where the futexes of GIL waits start (3.6), else 0 */

	/* PyThreadState */
	uint32_t ts_next, ts_interp, ts_thread_id, ts_native_thread_id; /* native: NOOFF <= 3.10 */
	uint32_t ts_size;

	/* frame walking: the kernel's subset */
	struct pbp_offsets k;
	uint32_t fr_size;

	/* PyCodeObject */
	uint32_t code_filename, code_name, code_qualname; /* qualname NOOFF <= 3.10 */
	uint32_t code_linetable;    /* co_lnotab <= 3.9, co_linetable 3.10+ */
	uint32_t code_code;         /* co_code bytes object <= 3.10, NOOFF after */
	uint32_t code_code_adaptive;/* 3.11+: offset of the inline bytecode */
	uint32_t code_size;

	/* objects */
	uint32_t ob_type;           /* offsetof(PyObject, ob_type) */
	uint32_t bytes_size, bytes_sval;
	uint32_t unicode_state, unicode_length, ascii_size, compact_size;

	enum { LT_LNOTAB, LT_LINETABLE310, LT_LOCATIONS } lt_kind;

	/* thread names (threadname.c): sys.modules -> threading._active -> Thread._name */
	uint32_t is_modules;        /* interp->modules (<= 3.11), interp->imports.modules */
	uint32_t mod_dict;          /* PyModuleObject.md_dict */
	uint32_t dict_keys, dict_values;        /* PyDictObject.ma_keys, ma_values */
	uint32_t dk_size;           /* <= 3.10: Py_ssize_t dk_size; NOOFF after */
	uint32_t dk_log2_size, dk_log2_index_bytes, dk_kind;   /* 3.11+: uint8_t; NOOFF before */
	uint32_t dk_nentries, dk_indices;
	uint32_t de_size, de_key, de_value;     /* PyDictKeyEntry {hash, key, value} */
	uint32_t due_size, due_key, due_value;  /* 3.11+: PyDictUnicodeEntry; NOOFF before */
	uint32_t dv_values;         /* values[] in PyDictValues (<= 3.10 ma_values is the array: 0) */
	uint32_t dv_capacity, dv_valid;         /* 3.13+: uint8_t; NOOFF before */
	uint32_t tp_basicsize, tp_flags, tp_dictoffset, ht_cached_keys;
	uint32_t tpf_managed_dict, tpf_inline_values;   /* tp_flags bits, 0 if none */
	uint32_t tpf_long_subclass, tpf_unicode_subclass, tpf_dict_subclass;
	uint32_t managed_dict_before;   /* 3.11+: bytes before an object of its dict pointer */
	uint32_t managed_values_before; /* 3.11: of its values pointer; NOOFF otherwise */
	enum {
		INST_DICTOFFSET,        /* <= 3.10: the dict at tp_dictoffset */
		INST_VALUES_PTR,        /* 3.11: values or dict pointer before the object */
		INST_TAGGED,            /* 3.12: one word before it, odd: values pointer - 1 */
		INST_INLINE,            /* 3.13+: dict pointer before it, values at tp_basicsize */
	} inst_dict;
	uint32_t long_size;         /* signed ob_size (<= 3.11) or lv_tag (3.12+) */
	uint32_t long_digit, long_shift;        /* ob_digit[], bits per digit */
	bool long_tagged;           /* 3.12+: ndigits = lv_tag >> 3, sign in lv_tag & 3 */
};

#define PYVER_NOOFF 0xffffffffu

/* Offsets from the generated table for 3.6-3.12; -PBP_E_VERSION if unknown. */
int pyver_from_table(unsigned major, unsigned minor, unsigned micro, struct pyver *v);
/* Byte offset into the bytecode from a frame's raw instr value. */
int64_t pyver_instr_offset(const struct pyver *v, uint64_t code_addr, uint64_t instr);
/* The kernel's copy spans in k, once its field offsets and the two sizes are final. */
void pyver_kernel_spans(struct pbp_offsets *k, uint32_t fr_size, uint32_t code_size);

/* ------------------------------------------------------------- debugoffsets.c */

/*
 * Validate a raw _Py_DebugOffsets blob (3.13+) read from the target and fill v.
 * Untrusted input: every offset is checked against the sizes it claims.
 */
int pyver_from_debug_offsets(const void *blob, size_t len, struct pyver *v);
/* Bytes of _Py_DebugOffsets to read for validation (largest layout known). */
size_t pyver_debug_offsets_max(void);
/* The newest minor version whose layout is known (14 for 3.14). */
unsigned pyver_newest_minor(void);

/* ------------------------------------------------------------- linetable.c */

/*
 * Line number of the instruction at byte offset `off` into the bytecode.
 * Returns the line, or -1 where the instruction has no line (or the table
 * is malformed). Never reads outside tab[0..len).
 */
int lt_addr2line(int kind, const uint8_t *tab, size_t len, int firstlineno, int64_t off);

/* 3.11+ only: the full position (lines and 0-based UTF-8 byte columns, -1 for none). */
struct lt_pos {
	int line, end_line;
	int col, end_col;
};
/* 0, or -1 where the instruction has no position or the table is malformed. */
int lt_addr2pos(const uint8_t *tab, size_t len, int firstlineno, int64_t off, struct lt_pos *out);

/* ------------------------------------------------------------- pystr.c */

/*
 * Decode a str object (compact ASCII or compact UCS1/2/4) into UTF-8.
 * Reads through the cache. out is NUL-terminated, truncated to outlen-1.
 */
int pystr_read(struct remote *r, const struct pyver *v, uint64_t addr, char *out, size_t outlen);
/* The same past the page cache, for a str made since its pages were cached; maxchars at most. */
int pystr_read_fresh(struct remote *r, const struct pyver *v, uint64_t addr, size_t maxchars,
		     char *out, size_t outlen);
/* Decode from an in-memory copy of the object (for fuzzing and unit tests). */
int pystr_decode(const struct pyver *v, const uint8_t *obj, size_t objlen, char *out, size_t outlen);
/* Read a bytes object's contents into a malloc'd buffer (capped at maxlen). */
int pybytes_read(struct remote *r, const struct pyver *v, uint64_t addr, size_t maxlen,
		 uint8_t **out, size_t *outlen);

/* ------------------------------------------------------------- codeobj.c */

struct codeinfo {
	uint64_t addr;
	uint32_t firstlineno, name_lo;  /* the key that tells a reused address apart */
	char *name;                     /* co_qualname on 3.11+, co_name before */
	char *file;
	uint8_t *linetable;
	size_t lt_len;
	uint64_t used;
};

struct codecache_stats {
	uint64_t hits, misses, stale, bad, evictions;
};

struct codecache;
struct pyproc;

/* At most capacity entries holding at most budget bytes of names and line tables. */
struct codecache *codecache_new(unsigned capacity, size_t budget);
void codecache_free(struct codecache *c);
/*
 * The code object at addr. key (firstlineno, name_lo) comes from the kernel's
 * snapshot; with key == NULL the header is re-read to validate the entry.
 * Returns NULL with *err set when addr is not a readable code object.
 */
const struct codeinfo *codecache_get(struct codecache *c, struct pyproc *p, uint64_t addr,
				     const struct pbp_frame *key, int *err);
const struct codecache_stats *codecache_stats(const struct codecache *c);

/* ------------------------------------------------------------- process.c */

/* threadname.c's per-interpreter memo: where the threading module is. */
struct pyname_cache {
	uint64_t interp;        /* 0: an empty slot */
	uint64_t modules;       /* interp's sys.modules dict then */
	uint64_t module;        /* sys.modules["threading"] when it was looked up */
	uint64_t dict;          /* that module's md_dict */
	uint64_t dict_type;     /* type(sys.modules): what a real dict's ob_type is */
	uint64_t module_type;   /* type(module) then */
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
	struct codecache *codes;
	uint64_t runtime;       /* address of _PyRuntime (3.6: of interp_head) */
	uint64_t gil_static;    /* 3.6: address of the static gil_locked, 0 if unknown */
	uint64_t pycode_type;   /* address of PyCode_Type, 0 if unknown */
	char binary[512];       /* file holding _PyRuntime, as named in maps */
	char binary_open[700];  /* the path it was opened by */
	char version[24];       /* "3.11.7" */
	struct pyname_cache names[PBP_NAME_CACHE];  /* zeroed at open */
	unsigned names_next;    /* slot to reuse next */
};

/*
 * Attach to pid: find its interpreter, version and offsets. Returns -PBP_E_*.
 * On error *out may still be set (p->version tells an unsupported version);
 * the caller closes it.
 */
int pyproc_open(pid_t pid, const struct pyproc_limits *lim, struct pyproc **out);
void pyproc_close(struct pyproc *p);
/* Ok when v validates as a CPython version this program supports. */
bool pyver_supported(const struct pyver *v);

/* ------------------------------------------------------------- thread.c */

struct pythread {
	uint64_t tstate;
	uint64_t interp;
	int64_t interp_id;
	pid_t tid;              /* kernel tid, 0 if it could not be found */
	pid_t ns_tid;           /* its id in the target's own PID namespace, 0 when that is ours */
	uint64_t frame;         /* innermost frame address, 0 if idle */
	uint64_t ident;         /* tstate->thread_id: pthread_t, threading.get_ident() */
};

/* A Python-level thread name: threading.Thread.name of the thread ident. */
struct pythread_name {
	uint64_t ident;         /* threading.get_ident(), as in struct pythread */
	char name[64];          /* UTF-8, NUL-terminated, truncated */
};

#define PBP_MAX_THREADS 8192
#define PBP_MAX_INTERPS 256

/*
 * Walk every interpreter's thread list. *n threads written, at most max.
 * Threads exit while it runs: a walk that faults part way is tried again,
 * and if it keeps faulting gives the threads read before the fault (and 0);
 * a list that stays corrupt (a cycle, too long) is -PBP_E_CORRUPT.
 * A tid or ident that two thread states claim (a thread being started
 * carries its starter's until it writes its own) goes to the oldest; the
 * others get 0, unknown.
 */
int pythreads_read(struct pyproc *p, struct pythread *out, size_t max, size_t *n);
/* Innermost frame of one thread state, read now. */
int pythread_frame(struct pyproc *p, uint64_t tstate, uint64_t *frame);

struct gilstate {
	bool known, locked;
	bool uncreated;         /* not made yet (3.6, one thread): its one Python thread runs freely */
	uint64_t holder;        /* tstate that last took the GIL */
	uint64_t addr;          /* address of the struct _gil_runtime_state */
};
/* The GIL of the interpreter at interp (ignored on <= 3.11: one GIL). */
int pygil_read(struct pyproc *p, uint64_t interp, struct gilstate *g);
/* Whether the thread of tstate holds the GIL g describes (or runs free of an uncreated one). */
bool pygil_holds(const struct gilstate *g, uint64_t tstate);
/* The same, knowing where the GIL struct is (it does not move). */
int pygil_state(struct pyproc *p, uint64_t addr, struct gilstate *g);

/* ------------------------------------------------------------- objects.c */

/*
 * Python objects read from the target p while it runs, layouts from p->v.
 * Each returns -PBP_E_CORRUPT for what makes no sense, -PBP_E_VERSION when
 * this version's layout lacks what it needs.
 */

/* Where a dict keys object's entries are (pure, for tests: hdr holds its first len bytes). */
struct pydict_table {
	uint64_t entries;       /* address of entry 0 */
	uint64_t nentries;      /* entries used so far (deleted ones have a NULL key) */
	uint32_t entry_size, key_off, value_off;
	bool unicode;           /* 3.11+ unicode-only or split keys: no hash field */
	bool split;             /* 3.11+ dk_kind says split (<= 3.10: only ma_values tells) */
};
int pydict_keys_decode(const struct pyver *v, uint64_t keys_addr, const uint8_t *hdr, size_t len,
		       struct pydict_table *t);
/* Value of an int object (its first len bytes in obj) if it is >= 0 and fits 64 bits. */
int pylong_decode(const struct pyver *v, const uint8_t *obj, size_t len, uint64_t *out);

/* The type of the object at obj (never 0). */
int pyobj_type(struct pyproc *p, uint64_t obj, uint64_t *type);
/* The tp_flags of obj's type, for checks like "is it an int". */
int pyobj_type_flags(struct pyproc *p, uint64_t obj, uint64_t *flags);
/* The value of the int object at obj; -PBP_E_NOENT if obj is not an int. */
int pylong_read(struct pyproc *p, uint64_t obj, uint64_t *value);
/* Called for each live entry; > 0 stops the scan (found), < 0 aborts it. */
typedef int (*pydict_entry_fn)(struct pyproc *p, uint64_t key, uint64_t value, void *arg);
/* Each live entry of the dict at dict, up to a bound; fn's non-zero result. */
int pydict_scan(struct pyproc *p, uint64_t dict, pydict_entry_fn fn, void *arg);
/* d[name] for a dict d (any key types: only str keys can match); -PBP_E_NOENT if absent. */
int pydict_get_str(struct pyproc *p, uint64_t dict, const char *name, uint64_t *value);
/* Instance attribute name of obj, wherever this version keeps it; -PBP_E_NOENT if absent. */
int pyobj_attr(struct pyproc *p, uint64_t obj, const char *name, uint64_t *value);

/* ------------------------------------------------------------- threadname.c */

/*
 * Python names of the threads of the interpreter at interp, read from its
 * threading module (_active, then _limbo): *n pairs written, at most max.
 * 0 on success, even when some threads' names could not be read (they are
 * left out); -PBP_E_NOENT when threading is not imported; other -PBP_E_*
 * when the way to it cannot be read. Callers fall back to the kernel's comm.
 * Strings and types are read through the page cache: call it at the start of
 * an epoch (remote_invalidate_all). Where threading is is remembered in p
 * (checked on each call); _active itself is read anew every time.
 */
int pythread_names(struct pyproc *p, uint64_t interp, struct pythread_name *out, size_t max,
		   size_t *n);
/* Python names of the threads ts[0..n): names[i], "" where unknown; one read per interpreter. */
#define PBP_NAME_LEN 64
void pythreads_name_all(struct pyproc *p, const struct pythread *ts, size_t n,
			char (*names)[PBP_NAME_LEN]);

/* ------------------------------------------------------------- text.c */

/*
 * Decode the character at s (NUL-terminated): the bytes it takes (1-4). An
 * invalid byte takes 1 and decodes as U+DC00 | byte, a lone surrogate.
 */
size_t utf8_decode(const unsigned char *s, uint32_t *cp);
/* A code point (< 0x110000) as UTF-8 into b: its length, 1 to 4. */
size_t utf8_encode(uint32_t cp, char b[4]);
/* Bytes of the valid UTF-8 sequence at s (1-4), 0 if invalid. For writers whose format wants UTF-8. */
size_t utf8_seq_len(const unsigned char *s);
/* Make s valid UTF-8 in place: each invalid sequence (a lone surrogate, a cut character) becomes '?'. */
void utf8_scrub(char *s);

/*
 * How text from the target (names, files, command lines) is written: never
 * a control character (C0, DEL, C1) as such, always valid UTF-8.
 */
enum text_esc {
	TEXT_PLAIN,             /* terminal, collapsed stacks: \n \t \r, else \xNN (invalid bytes too) */
	TEXT_JSON,              /* inside a JSON string: controls as \u00NN, invalid bytes U+FFFD */
	TEXT_HTML_JSON,         /* the same inside an HTML <script>: < > & U+2028/9 as \uNNNN too */
	TEXT_XML,               /* XML text or attribute value */
};

void text_put(FILE *o, const char *s, enum text_esc how);
/* At most max_chars characters (code points; a cut text ends in "…"; 0: no limit). */
void text_put_cut(FILE *o, const char *s, enum text_esc how, size_t max_chars);
/* Into out (NUL-terminated, cut before a character or escape that does not fit); like snprintf, the length it needs. */
size_t text_escape(char *out, size_t len, const char *s, enum text_esc how);
/* Characters (code points) in s, counting each invalid byte as one. */
size_t text_len(const char *s);

/* ------------------------------------------------------------- jsonw.c */

/*
 * One JSON object written member by member to a stream; key is NULL for a
 * member of an array. jw_finish ends the object and the line.
 */
struct jsonw {
	FILE *o;
	bool more;              /* the open object or array has a member: a comma first */
};

void jw_begin(struct jsonw *w, FILE *o);
void jw_finish(struct jsonw *w);
void jw_obj(struct jsonw *w, const char *key);
void jw_end_obj(struct jsonw *w);
void jw_arr(struct jsonw *w, const char *key);
void jw_end_arr(struct jsonw *w);
void jw_u64(struct jsonw *w, const char *key, uint64_t v);
void jw_int(struct jsonw *w, const char *key, long long v);
/* A number; null when not finite. */
void jw_num(struct jsonw *w, const char *key, double v);
/* A string escaped for JSON (text.c); null for NULL. */
void jw_str(struct jsonw *w, const char *key, const char *s);

/* ------------------------------------------------------------- stack.c */

/*
 * A stack keeps at most PBP_MAX_DEPTH Python frames: a deeper one keeps its
 * innermost and its outermost frames and one marker frame in between,
 * "[... N frames elided]" (so a profile line has at most PBP_MAX_LOCS
 * locations, root labels and the status leaf counted). A chain is followed
 * to its root up to PBP_MAX_WALK frames; a longer one is taken as corrupt.
 */
#define PBP_MAX_DEPTH 16384
#define PBP_MAX_LOCS (PBP_MAX_DEPTH + 4)
#define PBP_MAX_WALK (1u << 20)

/*
 * Walk the frame chain from frame, innermost first, skipping C-stack shims,
 * to its root. Keeps at most max frames in out, *n of them: the whole chain
 * when it fits; else its innermost max - max/2 frames, then its outermost
 * max/2, and *elided says how many were left out between the two (0 when
 * none was). After an error (-PBP_E_CORRUPT for a cycle or a chain deeper
 * than PBP_MAX_WALK, or a read that failed) out holds what was walked so far.
 */
int stack_walk(struct pyproc *p, uint64_t frame, struct pbp_frame *out, size_t max, size_t *n,
	       size_t *elided);
/* The marker frame's name for n frames left out, into buf. */
const char *elided_name(char *buf, size_t len, size_t n);
/* Line of a frame from its raw instr value, -1 if unknown. */
int frame_line(const struct pyproc *p, const struct codeinfo *ci, uint64_t instr);

/* ------------------------------------------------------------- procfs.c */

/* Kernel scheduler state letter of a thread (R, S, D, Z, ...), '?' if gone. */
char proc_thread_state(pid_t pid, pid_t tid);
char proc_state(pid_t pid);
/* Gone, a zombie, or exiting (its memory may already be unmapped). */
bool proc_exited(pid_t pid);
void proc_thread_comm(pid_t pid, pid_t tid, char *out, size_t len);

/* ------------------------------------------------------------- pidns.c */

#define PBP_PID_MAX 4194304     /* the kernel's PID_MAX_LIMIT on 64-bit */

/*
 * The ids of the "NSpid:" line of a status file's text (len bytes): one per
 * PID namespace from /proc's down to the task's own, innermost last. Their
 * count (>= 1), or -1 when there is no such line or it is malformed.
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

/* ------------------------------------------------------------- cgroup.c */

/* Where a process runs, from /proc/PID/cgroup; "" for what is not known. */
struct cgroup_info {
	char path[512];         /* the v2 path, else the v1 line's (name=systemd, cpu, memory); cut to fit */
	char container_id[65];  /* 64 lower-case hex digits, the outermost container */
	char pod_uid[37];       /* Kubernetes pod UID, with dashes (32 hex for static pods) */
	char runtime[16];       /* "docker", "containerd", "cri-o", "podman" */
};

/*
 * Parse the file's text (len bytes, NUL-terminated or not). Of its lines the
 * one that tells most (a container, then a pod, then a non-root path) wins,
 * ties going to v2, name=systemd, cpu, memory in that order; every field
 * comes from that one line. Malformed lines are skipped. 0, or -1 when no
 * line parsed (out is zeroed either way first).
 */
int cgroup_parse(const char *text, size_t len, struct cgroup_info *out);
/* Read and parse /proc/PID/cgroup: 0 or -PBP_E_NOENT / _PERM / _NOMEM / _GONE. */
int cgroup_read(pid_t pid, struct cgroup_info *out);

/* ------------------------------------------------------------- discover.c */

/*
 * Candidate CPython processes: pids (other than ours) mapping an executable
 * file whose name contains "python". Attaching tells which really are.
 * 0, 1 when more than max were found (*n == max), or -PBP_E_PERM / _NOENT.
 */
int discover_pythons(pid_t *out, size_t max, size_t *n);

/* What -a profiles; NULL / 0 members do not filter. */
struct proc_filter {
	regex_t *comm_re;               /* --comm: POSIX extended, against /proc/PID/comm */
	const char *cgroup_prefix;      /* --cgroup: a prefix of cgroup_info.path */
	const char *container_prefix;   /* --container: a prefix of the container id */
	pid_t *exclude;                 /* --exclude-pid */
	size_t nexclude;
	pid_t *only;                    /* --pid: these and no others */
	size_t nonly;
};

/* Every filter set must hold; comm or cg NULL (unknown) fails the filters that need them. */
bool proc_filter_match(const struct proc_filter *f, pid_t pid, const char *comm,
		       const struct cgroup_info *cg);
/*
 * /proc/PID/cmdline as one line: NULs and control characters become spaces,
 * ends trimmed, cut to len - 1. Its length, or -PBP_E_NOENT / _PERM.
 */
int proc_cmdline(pid_t pid, char *out, size_t len);

/* ------------------------------------------------------------- dump.c */

int dump_process(struct pyproc *p, FILE *o, bool json);

/* ------------------------------------------------------------- status.c */

/* What a thread was doing at the sample instant: one row each in status.c. */
enum pbp_status {
	ST_RUNNING = 0,         /* on a CPU, holding the GIL (or the GIL is unknown) */
	ST_NATIVE,              /* on a CPU without the GIL: native code */
	ST_RUNNABLE,            /* ready to run, waiting for a CPU */
	ST_GIL_WAIT,            /* blocked waiting for the GIL */
	ST_SLEEPING,            /* interruptible sleep: I/O, sleep, lock */
	ST_DISK,                /* uninterruptible sleep */
	ST_UNKNOWN,
	ST__COUNT,
};

/* Everything the writers show of a status. */
struct status_info {
	const char *label;      /* the leaf frame and the summary's word: "[gil wait]" */
	const char *name;       /* the label without brackets: pprof's "status" label */
	const char *colour;     /* "#rrggbb" in the svg and html flame graphs */
};

/* The row of a status; out of range is ST_UNKNOWN's. */
const struct status_info *status_info(uint32_t status);
/* "[running]", "[native, no GIL]", ...: status_info(status)->label. */
const char *status_label(uint32_t status);
/* The status whose label this is, or -PBP_E_NOENT. */
int status_by_label(const char *label);
/*
 * A sample's status from the thread's scheduler state (on a CPU, or why it
 * left: enum pbp_off_reason) and the GIL (whether its state is known, and
 * whether this thread holds it).
 */
uint32_t status_classify(bool oncpu, uint8_t off_reason, bool gil_known, bool holds_gil);

/* ------------------------------------------------------------- aggregate.c */

enum loc_kind {
	LOC_PY = 0,             /* a Python frame: name (file:line) */
	LOC_THREAD,             /* root label: thread TID name */
	LOC_PROCESS,            /* root label: process PID cmdline */
	LOC_STATUS,             /* leaf label: [running], [gil wait], ... */
};

/* Per-sample facts kept beside each stack; identical stacks with equal tags share a count. */
struct stack_tags {
	uint32_t pid, tid;
	uint32_t status;        /* enum pbp_status */
	uint32_t pad;
};

struct agg;
struct agg *agg_new(void);
void agg_free(struct agg *a);
void agg_reset(struct agg *a);
/* Location id (>= 0) for a frame or label; -PBP_E_NOMEM on failure. */
int64_t agg_loc(struct agg *a, const char *name, const char *file, int line, uint32_t kind);
/* Count a stack of location ids, root first. */
int agg_add(struct agg *a, const struct stack_tags *tags, const uint32_t *locs, uint32_t n,
	    uint64_t count);
/* Python thread names, by (pid, tid); NULL when never set. */
/*
 * The stack the last agg_add counted into (-1 if it failed or was folded):
 * a caller that will count the very same stack again can agg_bump it, with
 * no hashing. Ids stay valid until agg_reset.
 */
int64_t agg_last(const struct agg *a);
void agg_bump(struct agg *a, uint32_t id, uint64_t count);
int agg_set_thread_name(struct agg *a, uint32_t pid, uint32_t tid, const char *name);
const char *agg_thread_name(const struct agg *a, uint32_t pid, uint32_t tid);

/*
 * A process that keeps starting threads must not grow the profile for ever:
 * each process keeps at most AGG_MAX_THREADS threads of its own (in order of
 * their first sample); samples of later threads are counted as one thread,
 * tid AGG_OTHER_TID named AGG_OTHER_NAME (its root label AGG_OTHER_LABEL),
 * and agg_folded() says how many. Names of threads not sampled (yet) are
 * kept for the AGG_MAX_NAMED most recently named of each process.
 */
#define AGG_MAX_THREADS 4096
#define AGG_MAX_NAMED 4096
#define AGG_OTHER_TID 0
#define AGG_OTHER_NAME "[other threads]"
#define AGG_OTHER_LABEL "thread 0 " AGG_OTHER_NAME
/*
 * The root label "thread TID name" of a thread's stacks ("?" for no name),
 * or AGG_OTHER_LABEL for a thread past the cap: so that label locations stay
 * bounded too. (agg_add also turns the labels of folded stacks into it.)
 */
int64_t agg_thread_loc(struct agg *a, uint32_t pid, uint32_t tid, uint32_t ns_tid, const char *name);

/*
 * Root labels name a process or thread by our id, then, when it lives in
 * another PID namespace, by its own: "thread 5031 (3 in its namespace) worker".
 * root_label() writes "WORD ID[ (NS in its namespace)][ REST]" (ns 0: none);
 * root_label_parse() reads one back: false when label is not WORD and an id.
 * *rest points into label, NULL when nothing follows.
 */
void root_label(char *out, size_t len, const char *word, uint32_t id, uint32_t ns, const char *rest);
bool root_label_parse(const char *label, const char *word, uint32_t *id, uint32_t *ns, const char **rest);
/* Samples of pid counted as AGG_OTHER_NAME because it had too many threads. */
uint64_t agg_folded(const struct agg *a, uint32_t pid);
/* Threads the aggregate holds a name or an identity for, every process together. */
uint32_t agg_nthreads(const struct agg *a);
/* One line per process that had threads folded; nothing when none did. */
void agg_print_folds(const struct agg *a, FILE *o);

/* What is known of a profiled process, for labels ("" when unknown). */
struct proc_meta {
	uint32_t pid;
	uint32_t ns_pid;        /* its id in its own PID namespace, 0 when that is ours */
	const char *version, *container, *pod;
};
int agg_set_process(struct agg *a, uint32_t pid, uint32_t ns_pid, const char *version,
		    const char *container, const char *pod);
const struct proc_meta *agg_process(const struct agg *a, uint32_t pid);
uint64_t agg_total(const struct agg *a);
uint32_t agg_nstacks(const struct agg *a);
uint32_t agg_nlocs(const struct agg *a);
const uint32_t *agg_stack(const struct agg *a, uint32_t i, uint32_t *n, uint64_t *count,
			  const struct stack_tags **tags);
void agg_loc_info(const struct agg *a, uint32_t id, const char **name, const char **file, int *line,
		  uint32_t *kind);

/* ------------------------------------------------------------- symbolize.c */

struct symstats {
	uint64_t samples;
	uint64_t completed;     /* stack finished in user space from where the kernel stopped */
	uint64_t failed;        /* finishing it failed: the stack is what the kernel saw */
	uint64_t frames;
	uint64_t unknown_frames;/* code object freed or unreadable by the time it was named */
	uint64_t no_python;     /* the thread was in no Python frame */
	uint64_t elided;        /* deeper than PBP_MAX_DEPTH: frames left out in the middle */
};

/* Locations of one sample, root first, into locs (at most max). */
int symbolize(struct pyproc *p, const struct pbp_sample *s, struct agg *a, uint32_t *locs,
	      uint32_t max, uint32_t *n, struct symstats *st);
/* Locations of a thread's stack read now from its thread state, root first. */
int symbolize_thread(struct pyproc *p, uint64_t tstate, struct agg *a, uint32_t *locs,
		     uint32_t max, uint32_t *n, struct symstats *st);

/* ------------------------------------------------------------- output formats */

/*
 * What every writer gets besides the aggregate. Label locations (LOC_THREAD,
 * LOC_PROCESS, LOC_STATUS) are already in the stacks where the options asked
 * for them; formats with a better place for them (pprof labels) skip them and
 * use the stack's tags instead.
 */
struct profile_meta {
	const char *mode;       /* "cpu", "wall" or "gil" */
	unsigned hz;
	uint64_t start_unix_ns; /* wall-clock start of the run */
	uint64_t duration_ns;
};

/* collapsed.c: one line per distinct stack text, root first, `;`-separated, a space, the count. */
int collapsed_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/*
 * A location as text: "name (file:line)" or "name (file)" for Python frames,
 * the bare name of one with neither, the label otherwise. Like snprintf: the
 * length it needs.
 */
int loc_format(const struct agg *a, uint32_t id, char *out, size_t len);
/* speedscope.c: speedscope's JSON file format, one sampled profile per thread. */
int speedscope_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/* pprof.c: gzipped profile.proto; label frames become sample labels. */
int pprof_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/* pstats.c: the marshal'ed dict Python's pstats reads; see pstats.c for the figures. */
int pstats_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/* html.c: a self-contained interactive flame graph page (user/flamegraph.html.tmpl). */
int html_write(const struct agg *a, const struct profile_meta *m, FILE *o);
/* svg.c: a static flame graph, 1200 px wide, a <title> tooltip per frame. */
int svg_write(const struct agg *a, const struct profile_meta *m, FILE *o);

/* top.c: per-function figures, a function being (name, file) whatever the line. */
struct func_stat {
	const char *name, *file;    /* the aggregate's strings */
	int min_line;               /* smallest line seen in it, -1 if none */
	uint64_t own;               /* samples with it as the innermost Python frame */
	uint64_t total;             /* samples with it on the stack, once per sample */
	uint64_t frames;            /* its frames in all samples, recursive ones included */
};

#define FUNC_NONE UINT32_MAX

struct functab {
	struct func_stat *f;        /* in order of first location */
	uint32_t n;
	uint32_t *of_loc;           /* location id -> index into f; FUNC_NONE for labels */
};

int functab_build(const struct agg *a, struct functab *t);     /* -PBP_E_NOMEM */
void functab_free(struct functab *t);
/* The end-of-run table: the top `rows` (<= 0: 10) functions by own, then total, samples. */
void top_print(const struct agg *a, const struct profile_meta *m, FILE *o, int rows);

/* ------------------------------------------------------------- output.c */

struct output {
	FILE *f;                /* the writers write here */
	int fd;
	enum { OUT_NONE, OUT_STDOUT, OUT_RENAME, OUT_INPLACE, OUT_SPECIAL } how;
	void *z;                /* a z_stream, for a .gz file */
	int err;                /* errno of the first write that failed */
	bool discard;
	bool unnamed;           /* OUT_RENAME: the temporary has no name yet (O_TMPFILE) */
	size_t written;
	const char *why;        /* a refusal's reason, for output_error() */
	char path[4096];        /* what is written: symlinks followed */
	char tmp[4096 + 8];     /* OUT_RENAME: the temporary beside it */
};

/* The directory a path names a file in: "." for a bare name, "/" for one at the root. */
void path_dir(const char *path, char *dir, size_t size);
/* SUDO_UID/SUDO_GID when run by root through sudo, else (uid_t)-1. */
void sudo_ids(uid_t *uid, gid_t *gid);
/* Open path for writing ("-" or NULL: stdout), gzipping what is written. Returns -errno. */
int output_open(struct output *out, const char *path, bool gzip);
/* The file renamed into place at the end (NULL: none), for privs_note_output(). */
const char *output_rename_target(const struct output *out);
/* "cannot write PATH: REASON" on stderr, for an error of output_open() or output_commit(). */
void output_error(const struct output *out, const char *path, int err);
/* Flush and move the file into place. Returns -errno. */
int output_commit(struct output *out);
/* Undo output_open(): nothing written, the temporary removed. Safe to call twice. */
void output_abort(struct output *out);

/* ------------------------------------------------------------- formats.c */

/* Index of a format by name ("html") or by a path's extension (collapsed if none matches). */
int format_by_name(const char *name);
int format_by_path(const char *path);
const char *format_name(int fmt);
void format_list(FILE *o);
int format_write(int fmt, const struct agg *a, const struct profile_meta *m, FILE *o);
/* Open path for a profile in format fmt (a .gz path: gzipped, unless fmt is already). -errno. */
int profile_open(struct output *out, int fmt, const char *path);
/* Write the profile to an opened output and commit it, or abort it. Returns -errno. */
int profile_write_to(struct output *out, int fmt, const struct agg *a, const struct profile_meta *m);
/* Both; on failure "cannot write PATH: REASON" has been said. Returns -errno. */
int profile_write(int fmt, const struct agg *a, const struct profile_meta *m, const char *path);

/* ------------------------------------------------------------- convert.c */

/*
 * Read collapsed stacks (as pybpfprof writes them) into a: 0; -1 when line
 * *lineno is not a collapsed-stack line, *why saying why;
 * COLLAPSED_READ_ERROR when reading failed (errno says why); -PBP_E_NOMEM.
 */
#define COLLAPSED_READ_ERROR (-2)
int collapsed_read(struct agg *a, FILE *in, size_t *lineno, const char **why);

/* ------------------------------------------------------------- sampler.c */

struct sampler;
typedef void (*sample_fn)(void *ctx, const struct pbp_sample *s);
typedef void (*proc_event_fn)(void *ctx, uint32_t kind, pid_t pid);

struct sampler_opts {
	unsigned hz;            /* asked; sampler_open lowers it to what the host sustains */
	bool sched;             /* track off-CPU state (wall and gil modes) */
	bool execs;             /* report every exec (whole-host mode) */
	sample_fn cb;
	proc_event_fn pcb;      /* exec and target-exit events */
	void *ctx;
};

/*
 * Why and how far sampler_open lowered the rate (sampler_limit), and what
 * one sample interrupt costs on this host, measured before sampling starts.
 */
enum sampler_cap { CAP_NONE, CAP_KERNEL, CAP_COST };
struct sampler_limit {
	unsigned asked, hz;     /* per CPU: as given, and as run */
	enum sampler_cap why;
	unsigned irq_ns;        /* measured cost of one interrupt; 0: not measured */
	unsigned max_rate;      /* kernel.perf_event_max_sample_rate */
	unsigned budget_pct;    /* the sampler's share of each CPU: perf_cpu_time_max_percent */
};

/* Load the BPF side and sample every online CPU, at a rate the host sustains. */
int sampler_open(struct sampler **out, const struct sampler_opts *o);
void sampler_limit(struct sampler *s, struct sampler_limit *out);
/* Interrupts per second per CPU since sampling started; the program's share of each CPU. */
void sampler_achieved(struct sampler *s, double *per_cpu_hz, double *prog_share);
void sampler_close(struct sampler *s);
void sampler_verbose(bool on);
int sampler_add_proc(struct sampler *s, pid_t pid, const struct pbp_proc *p);
void sampler_del_proc(struct sampler *s, pid_t pid);
/* A slot in the kernel's per-thread state array (-1 when not tracking). */
int sampler_slot_alloc(struct sampler *s);
void sampler_slot_free(struct sampler *s, int slot);
/* The kernel's live view of a slot, NULL when not tracking. */
const volatile struct pbp_tstate *sampler_tstate(struct sampler *s, int slot);
int sampler_set_thread(struct sampler *s, pid_t tid, pid_t tgid, uint64_t tstate, int slot);
void sampler_del_thread(struct sampler *s, pid_t tid);
/* Deliver every sample and event in the ring buffers to the callbacks; never waits. */
int sampler_drain(struct sampler *s);
/* Wait up to ns (less if a process or thread event comes), then drain. */
int sampler_wait(struct sampler *s, uint64_t ns);
void sampler_stats(struct sampler *s, uint64_t out[PBP_STAT__COUNT]);
/* Re-draw each CPU's sampling period around the mean (breaks aliasing). */
void sampler_jitter(struct sampler *s);

/*
 * What the per-thread state (target.c) asks of the kernel side, as a table:
 * bpf_sampler_ops below is the sampler's own, a unit test gives a fake one
 * (tests/unit/test_target.c), so target.c links without the BPF skeleton.
 */
struct sampler_ops {
	int (*add_proc)(struct sampler *s, pid_t pid, const struct pbp_proc *p);
	int (*slot_alloc)(struct sampler *s);
	void (*slot_free)(struct sampler *s, int slot);
	const volatile struct pbp_tstate *(*tstate)(struct sampler *s, int slot);
	int (*set_thread)(struct sampler *s, pid_t tid, pid_t tgid, uint64_t tstate, int slot);
	void (*del_thread)(struct sampler *s, pid_t tid);
};

extern const struct sampler_ops bpf_sampler_ops;

/* ------------------------------------------------------------- target.c */

enum pbp_mode { MODE_CPU, MODE_WALL, MODE_GIL };

struct profile_opts {
	enum pbp_mode mode;
	unsigned hz;
	bool per_thread;        /* root frame "thread TID name" */
	bool status;            /* leaf frame "[running]", ... */
};

/* Where samples and ticks of every target end up. */
struct collector {
	struct profile_opts o;
	struct sampler *smp;
	const struct sampler_ops *ops;  /* what target.c calls smp through */
	struct agg *agg;
	struct symstats sym;
	uint32_t *locs;         /* scratch: one stack */
	uint64_t dropped;       /* samples of threads that are not Python threads */
	uint64_t ticks, late_ticks;
	uint64_t reused;        /* wall/gil: stack reused, the thread had not run: no read */
	uint64_t from_switch;   /* wall/gil: stack the kernel took as the thread left the CPU */
	uint64_t from_kernel;   /* wall/gil: on-CPU thread, stack from its last kernel sample */
	uint64_t read_now;      /* wall/gil: stack read from the target at the tick */
	uint64_t late_switches; /* wall/gil: a switch between the tick instant and the look */
	uint64_t rescans, rescan_ns;    /* thread-list reads, and the time they took */
};

struct tcache;

/* One profiled process and what is known of its threads. */
struct target {
	pid_t pid;
	struct pyproc *p;
	bool alive;
	uint64_t last_rescan, gen;
	uint64_t rescan_ok;     /* no list read before this (its cost bounds their rate) */
	uint64_t names_ok;      /* no names read before this, for the same reason */
	bool names_due;         /* the list changed since the names were read */
	uint64_t init_ns;       /* when target_init registered it */
	uint64_t list_hash;     /* of the thread list last registered */
	uint64_t names_ns;      /* when the threads' Python names were last read */
	uint64_t rescan_soon, rescan_later; /* a thread started: read the list then (0: no) */
	uint64_t gil_addr;      /* the main interpreter's GIL struct, 0 if unknown */
	struct pythread *list;  /* scratch for pythreads_read */
	struct tcache *tc;      /* open addressing by tid */
	uint32_t tc_cap, tc_n;
	int64_t proc_loc;       /* root frame "process PID cmdline", -1 for none */
	uint64_t gil_ticks, gil_held, gil_contended;
};

/* Register a freshly opened process with the sampler and read its threads. */
int target_init(struct collector *c, struct target *t);
void target_fini(struct collector *c, struct target *t);
/*
 * Re-read the thread list; names only when it changed or are old, unless
 * full. One that is not full waits (rescan_soon) if the last one was too
 * recent for what it cost.
 */
void target_rescan(struct collector *c, struct target *t, bool full);
void target_on_sample(struct collector *c, struct target *t, const struct pbp_sample *s);
/* wall and gil modes: count every thread (or the GIL holder) once, as at instant (ns, monotonic). */
void target_tick(struct collector *c, struct target *t, uint64_t instant);
/* After agg_reset: forget what pointed into the old aggregate (kept stacks, ids); re-set names. */
void target_new_window(struct collector *c, struct target *t);
void target_print_threads(const struct collector *c, const struct target *t, FILE *o);

/* ------------------------------------------------------------- loop.c */

#define LOOP_TIMERS 8
#define LOOP_SINKS 4
#define TIMER_NOW 1             /* a timer's next: due at the loop's next look */

/* Something the loop does at a time: a rate (ticks, jitter), a safety net, the run's end. */
struct timer {
	uint64_t period;        /* ns from one run to the next; 0: once */
	uint64_t next;          /* monotonic ns when it is due; 0: off */
	/* Deadlines kept elsewhere (per target, per process): the earliest, 0 if none. NULL: next. */
	uint64_t (*due)(void *ctx);
	/* Do it; false ends the run. It may move t->next itself, to keep its phase. */
	bool (*fn)(void *ctx, struct timer *t, uint64_t now);
};

/* The span of time one aggregate covers. */
struct window {
	uint64_t start_ns, end_ns;      /* monotonic */
	uint64_t start_unix_ns;         /* the wall clock at start_ns */
};

/*
 * Where a closed window's aggregate goes: the profile file and the summary
 * at exit today; a node agent's push or serve later. 0 or -errno/-PBP_E_*.
 */
struct window_sink {
	int (*write)(void *ctx, const struct agg *a, const struct window *w);
	void *ctx;
};

struct loop {
	struct timer timers[LOOP_TIMERS];       /* due at once: run in this order */
	int ntimers;
	struct window_sink sinks[LOOP_SINKS];
	int nsinks;
	uint64_t longest;       /* ns: the longest sleep, samples waiting meanwhile */
	/* Sleep up to ns (0: not at all; events end it early), taking in what arrived. */
	void (*wait)(void *ctx, uint64_t ns);
	/* After a window closed, agg_reset: forget what pointed into the old aggregate. */
	void (*reset)(void *ctx);
	void *ctx;
	struct agg *agg;
	struct window win;      /* the open one (end_ns unused) */
	const volatile sig_atomic_t *stop;      /* a signal's flag: ends the run */
};

uint64_t loop_now(void);        /* CLOCK_MONOTONIC, ns */
/* A copy of t in the table, NULL when it is full (LOOP_TIMERS). */
struct timer *loop_add(struct loop *l, const struct timer *t);
int loop_add_sink(struct loop *l, const struct window_sink *s);       /* -PBP_E_LIMIT when full */
/* Until a timer says stop or *stop is set. */
void loop_run(struct loop *l);
/*
 * The window ends at end_ns: each sink gets the aggregate (all of them, even
 * after one failed: the first error is returned), then it is reset and the
 * next window starts; last: the run ends, no reset hook.
 */
int loop_close_window(struct loop *l, uint64_t end_ns, bool last);

/* ------------------------------------------------------------- statsjson.c */

/* Members of the --stats=json object: the sampler's counters (st: sampler_stats), the collector's, one process. */
void stats_json_sampler(struct jsonw *w, const struct collector *c, const uint64_t *st);
void stats_json_collector(struct jsonw *w, const struct collector *c);
void stats_json_target(struct jsonw *w, const struct target *t);

/* ------------------------------------------------------------- privs.c */

/*
 * First thing: a non-root user needs CAP_BPF, CAP_PERFMON (CAP_SYS_ADMIN
 * stands for either) and CAP_SYS_PTRACE; granted but not effective ones are
 * raised. 0, or one line on stderr naming the missing ones and EXIT_PERM.
 */
int privs_check(void);
/* What the run does after set-up, for privs_drop_after_setup() to keep room for. */
void privs_note_output(const char *path);   /* the profile is written there at the end */
void privs_note_child(void);                /* a launched command is signalled at the end */
void privs_note_attach(void);               /* -a: processes found later are attached too */
/*
 * Once the sampler is attached and the targets registered: drop every
 * capability but CAP_SYS_PTRACE (and the few the notes above and the kernel
 * make necessary: see privs.c) from every set, and where allowed from the
 * bounding set. Of the calling thread: call it while it is the only one.
 */
void privs_drop_after_setup(void);
/* In a launched command's child before exec: none of our capabilities passed on (ambient, inheritable). */
void privs_for_command(void);

/* ------------------------------------------------------------- main.c */

#define PBP_VERSION "0.1.0"

int exit_code_for(int err);
/* One line on stderr, "pybpfprof: [what: ]error", naming the limit a resource error hit; the exit code. */
int report_error(const char *what, int err);
int parse_pid(const char *s, pid_t *pid);
/* Decimal digits only (no sign, space or junk), within [min, max]: 0, else -1. */
int parse_uint(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out);
/* A finite decimal number of seconds (1.5, 2e3; no sign, hex, inf or nan) in [min, max]: 0, else -1. */
int parse_seconds(const char *s, double min, double max, double *out);
/* cpu, wall or gil, in any case; -1 if none of them. */
int mode_by_name(const char *name);
/* "cpu", "wall" or "gil" for a mode_by_name() result. */
const char *mode_name(int mode);
int report_attach_error(pid_t pid, int err, const struct pyproc *p);
/* The sampling command (record.c). */
int record_main(int argc, char **argv);

#endif /* PYPROF_H */
