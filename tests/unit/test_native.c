/* SPDX-License-Identifier: MIT */
/*
 * Native frames: executable mappings (natmaps), names through libdwfl
 * (natsym), and the leaf location (native). Files are this program's own
 * and the libz it links, found through its own maps, plus bad ones made
 * here: a truncated ELF, a file that is not ELF, a path that is gone.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "unit.h"
#include "aggregate/aggregate.h"
#include "aggregate/aggnat.h"
#include "aggregate/merge.h"
#include "core/limits.h"
#include "symbol/native.h"
#include "symbol/natfp.h"
#include "symbol/natmaps.h"
#include "symbol/natfold.h"
#include "symbol/natstack.h"
#include "symbol/natsym.h"
#include "symbol/unwind.h"

static const char MAPS[] =
	"55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 100 /usr/bin/prog\n"
	"55d0c0a01000-55d0c0a05000 r-xp 00001000 fd:01 100 /usr/bin/prog\n"
	"7f0000000000-7f0000001000 rwxp 00000000 00:00 0 \n"
	"7f1000000000-7f1000002000 r-xp 00002000 fd:01 7 /tmp/lib a.so (deleted)\n"
	"this line is not a mapping\n"
	"7ffc00000000-7ffc00001000 r-xp 00000000 00:00 0 [vdso]\n"
	"7f2000000000-7f2000001000 r-xp 00000000 fd:01 8 /lib/libz.so.1\n"
	"7f3000000000-7f3000001000 rwxs 00000000 00:01 9 /dev/zero (deleted)\n"
	"7f3000001000-7f3000002000 r-xs 00000000 00:01 10 /memfd:jit (deleted)\n"
	"7f3000002000-7f3000003000 r-xs 00000000 00:01 11 /SYSV00000000 (deleted)\n";

static void test_maps(void)
{
	struct natmaps nm = { 0 };
	FILE *f = fmemopen((void *)MAPS, sizeof(MAPS) - 1, "r");
	const struct natmap *m;

	CHECK_EQ_INT(natmaps_parse(&nm, f), 0);
	fclose(f);
	CHECK_EQ_INT(nm.n, 8);          /* executable ones only; the bad line skipped */
	m = natmaps_find(&nm, 0x55d0c0a01000);
	CHECK(m && strcmp(m->path, "/usr/bin/prog") == 0 && m->offset == 0x1000);
	CHECK(natmaps_find(&nm, 0x55d0c0a04fff) == m);
	CHECK(natmaps_find(&nm, 0x55d0c0a05000) == NULL);     /* end is outside */
	CHECK(natmaps_find(&nm, 0x55d0c0a00000) == NULL);     /* not executable */
	CHECK(natmaps_find(&nm, 0x10) == NULL);
	CHECK(natmaps_find(&nm, UINT64_MAX) == NULL);
	m = natmaps_find(&nm, 0x7f0000000800);
	CHECK(m && m->path[0] == '\0');                       /* anonymous: JIT code */
	m = natmaps_find(&nm, 0x7f1000000000);
	CHECK(m && m->deleted && strcmp(m->path, "/tmp/lib a.so") == 0);
	m = natmaps_find(&nm, 0x7ffc00000010);
	CHECK(m && m->path[0] == '\0');                       /* [vdso]: no file to read */
	m = natmaps_find(&nm, 0x7f2000000010);
	CHECK(m && strcmp(m->path, "/lib/libz.so.1") == 0);
	/* Shared anonymous memory (mmap of -1, memfd, SysV): JIT code, not a library named "zero". */
	for (uint64_t a = 0x7f3000000000; a < 0x7f3000003000; a += 0x1000) {
		m = natmaps_find(&nm, a + 8);
		CHECK(m && m->path[0] == '\0');
	}
	natmaps_free(&nm);
	f = fmemopen((void *)"", 1, "r");
	CHECK_EQ_INT(natmaps_parse(&nm, f), 0);
	fclose(f);
	CHECK(natmaps_find(&nm, 0x1000) == NULL);
	natmaps_free(&nm);
}

static void test_demangle(void)
{
	char out[128];

	natsym_demangle("_ZN3foo3barEi", out, sizeof(out));
	CHECK_EQ_STR(out, "foo::bar(int)");
	natsym_demangle("deflate", out, sizeof(out));
	CHECK_EQ_STR(out, "deflate");
	natsym_demangle("_Znot a mangled name", out, sizeof(out));
	CHECK_EQ_STR(out, "_Znot a mangled name");
	natsym_demangle("_ZN3foo3barEi", out, 5);
	CHECK_EQ_STR(out, "foo:");
}

/* A function of this program with no exported symbol: its name comes from .symtab. */
__attribute__((noinline)) int native_test_local_fn(int x);
__attribute__((noinline)) int native_test_local_fn(int x)
{
	return x * 3 + 1;
}

/* Where this process maps addr: the mapping's path and the file offset. */
static int where(struct natmaps *nm, const void *addr, const char **path, uint64_t *off)
{
	const struct natmap *m = natmaps_find(nm, (uint64_t)(uintptr_t)addr);

	if (!m)
		return -1;
	*path = m->path;
	*off = (uint64_t)(uintptr_t)addr - m->start + m->offset;
	return 0;
}

static char *write_tmp(const void *buf, size_t len)
{
	char *path = strdup("/tmp/pbp-native-XXXXXX");
	int fd = path ? mkstemp(path) : -1;

	if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

/* What the sampler does with a frame: open the file (any inode), name off in it. */
static void name_of(struct natsym *ns, const char *path, const char *alt, uint64_t off,
		    struct natframe *out)
{
	const char *base = strrchr(path, '/');

	natsym_lookup(ns, natsym_open(ns, "", path, alt, 0), base ? base + 1 : path, off, out);
}

static void test_names(void)
{
	struct natsym *ns = natsym_new();
	struct natmaps nm = { 0 };
	struct natframe f;
	const char *zpath = NULL, *self = NULL;
	uint64_t zoff = 0, soff = 0, files, lookups, hits;
	void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY);
	void *terminate = cxx ? dlsym(cxx, "_ZSt9terminatev") : NULL;
	size_t zlen = 0;
	void *zbytes;
	char *copy, *trunc, *text;

	CHECK(ns != NULL);
	CHECK_EQ_INT(natmaps_read(&nm, getpid()), 0);
	CHECK_EQ_INT(where(&nm, (const void *)deflate, &zpath, &zoff), 0);
	CHECK_EQ_INT(where(&nm, (const void *)native_test_local_fn, &self, &soff), 0);
	if (!zpath || !self) {
		natmaps_free(&nm);
		natsym_free(ns);
		return;
	}
	name_of(ns, zpath, NULL, zoff, &f);
	CHECK_EQ_STR(f.func, "deflate");                        /* .dynsym of a stripped library */
	CHECK(strncmp(f.lib, "libz.so", 7) == 0);
	name_of(ns, self, NULL, soff, &f);
	CHECK_EQ_STR(f.func, "native_test_local_fn");           /* .symtab */
	if (terminate) {
		const char *p;
		uint64_t off;

		CHECK_EQ_INT(where(&nm, terminate, &p, &off), 0);
		name_of(ns, p, NULL, off, &f);
		CHECK_EQ_STR(f.func, "std::terminate()");       /* C++, demangled */
	}
	/* Gone from its path: found by the other name (map_files, in the profiler). */
	name_of(ns, "/nonexistent/libz.so.1", zpath, zoff, &f);
	CHECK_EQ_STR(f.func, "deflate");
	CHECK_EQ_STR(f.lib, "libz.so.1");
	/* Out of every loaded segment: no name, the offset kept. */
	name_of(ns, zpath, NULL, 1ull << 40, &f);
	CHECK_EQ_STR(f.func, "");
	CHECK(f.rel == 1ull << 40);
	/* Another copy of one file (same build-id) is not read again. */
	zbytes = unit_load_file(zpath, &zlen);
	copy = zbytes ? write_tmp(zbytes, zlen) : NULL;
	CHECK(copy != NULL);
	if (copy) {
		CHECK(natsym_open(ns, "", copy, NULL, 0) == natsym_open(ns, "", zpath, NULL, 0));
		/* Not the inode maps named: not taken, whatever the name. */
		CHECK(natsym_open(ns, "", copy, NULL, 1) == NULL);
		unlink(copy);
	}
	/* A truncated ELF, a file that is not ELF, nothing at all: no name, no crash. */
	trunc = zbytes ? write_tmp(zbytes, 200) : NULL;
	text = write_tmp("not an ELF file\n", 16);
	CHECK(trunc && text);
	if (trunc && text) {
		name_of(ns, trunc, NULL, 0x1000, &f);
		CHECK_EQ_STR(f.func, "");
		CHECK(f.rel == 0x1000);
		name_of(ns, text, NULL, 0x10, &f);
		CHECK_EQ_STR(f.func, "");
		CHECK(natsym_open(ns, "", text, NULL, 0) == NULL);
		unlink(trunc);
		unlink(text);
	}
	name_of(ns, "/nonexistent/x.so", NULL, 0x10, &f);
	CHECK_EQ_STR(f.func, "");
	CHECK_EQ_STR(f.lib, "x.so");
	name_of(ns, "/dev", NULL, 0x10, &f);           /* not a regular file */
	CHECK_EQ_STR(f.func, "");
	/* The memo answers the second time. */
	natsym_stats(ns, &files, &lookups, &hits);
	name_of(ns, zpath, NULL, zoff, &f);
	name_of(ns, zpath, NULL, zoff, &f);
	{
		uint64_t h2;

		natsym_stats(ns, &files, &lookups, &h2);
		CHECK(h2 >= hits + 1);
	}
	CHECK(files >= 2 && files <= 4);
	free(zbytes);
	free(copy);
	free(trunc);
	free(text);
	natmaps_free(&nm);
	natsym_free(ns);
	if (cxx)
		dlclose(cxx);
}

static const char *loc_name(struct agg *a, int64_t id, const char **file)
{
	const char *name;
	uint32_t kind;
	int line;

	if (id < 0)
		return "";
	agg_loc_info(a, (uint32_t)id, &name, file, &line, &kind);
	return name;
}

/* The mapping and address kept for pprof: deflate's is libz's, the address the one given. */
static void check_mapping(struct agg *a, int64_t loc, uint64_t ip)
{
	const struct agg_mapping *m;
	uint32_t mi;
	uint64_t addr;

	CHECK(loc >= 0 && aggnat_get(agg_nat_of(a), (uint32_t)loc, &mi, &addr));
	if (loc < 0 || !aggnat_get(agg_nat_of(a), (uint32_t)loc, &mi, &addr))
		return;
	m = aggnat_mapping(agg_nat_of(a), mi);
	CHECK(addr == ip && m->start <= ip && ip < m->limit && m->offset % 4096 == 0);
	CHECK(strstr(m->path, "libz.so") != NULL);
	CHECK(strlen(m->build_id) >= 16 && strspn(m->build_id, "0123456789abcdef") == strlen(m->build_id));
}

/*
 * A symbol names an address only inside its size: deflate's last byte is
 * deflate, the byte past its end is not (another function, or libz's own
 * nameless code).
 */
static void test_symbol_size(void)
{
	struct natsym *ns = natsym_new();
	struct natproc np = { .pid = getpid() };
	const ElfW(Sym) *sym = NULL;
	uint64_t z = (uint64_t)(uintptr_t)deflate;
	struct natframe f;
	Dl_info info;

	CHECK(ns && dladdr1(deflate, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size > 1);
	if (ns && sym && sym->st_size > 1) {
		CHECK(native_frame(ns, &np, z + sym->st_size - 1, &f));
		CHECK_EQ_STR(f.func, "deflate");
		CHECK(native_frame(ns, &np, z + sym->st_size, &f));
		CHECK(strcmp(f.func, "deflate") != 0);
	}
	natproc_free(&np);
	natsym_free(ns);
}

/* aggnat itself: equal mappings stored once, the first address of a location kept. */
static void test_aggnat(void)
{
	struct aggnat *n = aggnat_new();
	struct agg_mapping m = { .path = "/lib/a.so", .build_id = "ab", .start = 0x1000, .limit = 0x3000 };
	uint32_t mi;
	uint64_t addr;

	CHECK(n && aggnat_set(n, 7, &m, 0x1100) == 0 && aggnat_set(n, 7, &m, 0x1200) == 0);
	CHECK(aggnat_set(n, 1000, &m, 0x2000) == 0 && aggnat_nmappings(n) == 1);
	CHECK(aggnat_get(n, 7, &mi, &addr) && mi == 0 && addr == 0x1100);
	CHECK(aggnat_get(n, 1000, &mi, &addr) && addr == 0x2000);
	CHECK(!aggnat_get(n, 3, &mi, &addr) && !aggnat_get(n, 5000, &mi, &addr) && !aggnat_get(NULL, 7, &mi, &addr));
	m.start = 0x5000;
	CHECK(aggnat_set(n, 2, &m, 0x5000) == 0 && aggnat_nmappings(n) == 2);
	CHECK_EQ_STR(aggnat_mapping(n, 1)->path, "/lib/a.so");
	aggnat_free(n);
}

/* A merge (the agent's windows) keeps a native location's mapping and address. */
static void test_aggnat_merge(void)
{
	struct agg *src = agg_new(), *dst = agg_new();
	struct agg_mapping m = { .path = "/lib/b.so", .build_id = "cd", .start = 0x1000, .limit = 0x2000 };
	struct stack_tags t = { .pid = 1, .tid = 1 };
	int64_t py, nat;
	uint32_t locs[2], mi;
	uint64_t addr;

	CHECK(src && dst && agg_loc(dst, "f", "a.py", 3, LOC_PY) == 0);       /* ids differ in dst */
	py = agg_loc(src, "g", "a.py", 1, LOC_PY);
	nat = agg_loc(src, "[native] h", "b.so", -1, LOC_PY);
	CHECK(py >= 0 && nat >= 0 && aggnat_set(agg_nat(src), (uint32_t)nat, &m, 0x1234) == 0);
	locs[0] = (uint32_t)py, locs[1] = (uint32_t)nat;
	CHECK(agg_add(src, &t, locs, 2, 5) == 0 && agg_merge(dst, src, NULL, NULL) == 0);
	nat = agg_loc(dst, "[native] h", "b.so", -1, LOC_PY);
	CHECK(nat == 2 && aggnat_get(agg_nat_of(dst), (uint32_t)nat, &mi, &addr) && addr == 0x1234);
	CHECK(!aggnat_get(agg_nat_of(dst), 1, &mi, &addr));
	CHECK_EQ_STR(aggnat_mapping(agg_nat_of(dst), 0)->build_id, "cd");
	agg_free(src);
	agg_free(dst);
}

static void test_leaf(void)
{
	struct natsym *ns = natsym_new();
	struct natproc np = { .pid = getpid() };
	struct agg *a = agg_new();
	void *page = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct natframe f = { .func = "", .lib = "libx.so", .rel = 0x1234 };
	const char *file;
	char name[64];

	CHECK(ns && a && page != MAP_FAILED);
	CHECK_EQ_STR(loc_name(a, native_loc(ns, &np, (uint64_t)(uintptr_t)deflate, a), &file),
		     "[native] deflate");
	CHECK(strncmp(file, "libz.so", 7) == 0);
	check_mapping(a, native_loc(ns, &np, (uint64_t)(uintptr_t)deflate, a), (uint64_t)(uintptr_t)deflate);
	CHECK_EQ_STR(loc_name(a, native_loc(ns, &np, 0x10, a), &file), NATIVE_UNKNOWN);
	CHECK_EQ_STR(loc_name(a, native_loc(ns, &np, (uint64_t)(uintptr_t)page + 8, a), &file),
		     NATIVE_UNKNOWN);
	native_text(&f, name, sizeof(name), &file);
	CHECK_EQ_STR(name, "[native] libx.so");      /* one frame per library, whatever the address */
	CHECK(file == NULL);
	munmap(page, 4096);
	natproc_free(&np);
	agg_free(a);
	natsym_free(ns);
}

static void test_groups(void)
{
	struct pbp_sample s = { .nframes = 5, .flags = PBP_F_ENTRIES };
	uint32_t starts[8];

	/* 6 Python frames, the outermost finished in user space; kernel frames 1 and 4 entered the loop. */
	s.entries[0] = 1u << 1 | 1u << 4;
	CHECK_EQ_INT(natstack_groups(&s, 6, starts), 3);
	CHECK(starts[0] == 0 && starts[1] == 1 && starts[2] == 4);
	s.entries[0] = 1u << 4;         /* the outermost kernel frame: no new group at 0 */
	s.nframes = 5;
	CHECK_EQ_INT(natstack_groups(&s, 5, starts), 1);
	s.flags = 0;                    /* before 3.11: every frame is its own activation */
	CHECK_EQ_INT(natstack_groups(&s, 4, starts), 4);
	CHECK(starts[3] == 3);
	CHECK_EQ_INT(natstack_groups(&s, 0, starts), 0);
}

static void test_fold_names(void)
{
	static const char *const mach[] = {
		"_PyEval_Vector", "_PyFunction_Vectorcall", "PyObject_Vectorcall", "PyObject_CallObject",
		"PyObject_CallOneArg", "_PyObject_MakeTpCall", "_PyObject_Call_Prepend",
		"_PyObject_FastCallDictTstate", "_PyObject_VectorcallDictTstate", "cfunction_vectorcall_O",
		"cfunction_vectorcall_FASTCALL_KEYWORDS", "cfunction_call", "method_vectorcall_NOARGS",
		"slot_tp_call", "slot_tp_init", "_Py_slot_tp_getattr_hook", "slot_sq_length.cold",
		"vectorcall_method", "type_call", "gen_iternext", "gen_send_ex2.constprop.0",
		"PyEval_EvalCode", "run_eval_code_obj", "_PyEval_EvalCodeWithName", "function_code_fastcall",
	};
	static const char *const kept[] = {
		"time_sleep", "builtin_sorted", "list_sort_impl", "functools_reduce", "map_next",
		"list_extend", "PyObject_GetAttr", "PyObject_RichCompare", "unsafe_object_compare",
		"PyRun_StringFlags", "run_mod", "_PyPegen_parse", "_PyObject_Malloc", "PyObject_Cal",
		"zlib_compress", "", ".cold", "_PyEval_Vectorcall", "type_call_x", "PyEval",
	};

	for (size_t i = 0; i < sizeof(mach) / sizeof(mach[0]); i++)
		CHECK_EQ_STR(natfold_machinery(mach[i]) ? mach[i] : "(kept)", mach[i]);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		CHECK_EQ_STR(natfold_machinery(kept[i]) ? "(folded)" : kept[i], kept[i]);
}

/* A fake stack, innermost first: Python -> C -> Python callback -> C, as 3.11 runs it. */
static void test_fold_stack(void)
{
	static const struct { const char *func, *lib; bool eval, drop; } st[] = {
		{ "spin_inner", "ext.so", false, false },
		{ "pbpnat_spin", "ext.so", false, false },
		{ "PyObject_Call", "libfoo.so", false, false },         /* another file's own function */
		{ "_PyEval_EvalFrameDefault", "libpython3.11.so", true, false },
		{ "_PyEval_Vector", "libpython3.11.so", false, true },
		{ "PyObject_CallObject", "libpython3.11.so", false, true },
		{ "pbpnat_call", "ext.so", false, false },
		{ "cfunction_vectorcall_O", "libpython3.11.so", false, true },
		{ "builtin_sorted", "libpython3.11.so", false, false },
		{ "_PyEval_EvalFrameDefault", "libpython3.11.so", true, false },
		{ "PyEval_EvalCode", "libpython3.11.so", false, false }, /* below the first Python frame */
		{ "Py_RunMain", "libpython3.11.so", false, false },
	};
	enum { N = sizeof(st) / sizeof(st[0]) };
	struct natfold_frame f[N];
	bool drop[N];

	for (size_t i = 0; i < N; i++)
		natfold_classify(st[i].func, st[i].lib, st[i].eval, &f[i]);
	CHECK_EQ_INT(natfold_mark(f, N, 9, drop), 3);
	for (size_t i = 0; i < N; i++)
		CHECK_EQ_STR(drop[i] == st[i].drop ? st[i].func : "(wrong)", st[i].func);
	/* Python frames at the root (no activation paired): every frame is on their callee side. */
	CHECK_EQ_INT(natfold_mark(f, N, N, drop), 4);
	CHECK(drop[10]);
	/* No activation: no interpreter's file known, nothing folded. */
	for (size_t i = 0; i < N; i++)
		natfold_classify(st[i].func, st[i].lib, false, &f[i]);
	CHECK_EQ_INT(natfold_mark(f, N, N, drop), 0);
}

/*
 * The stack read raw, redzones and all, as the kernel reads it: not
 * checked by ASan, and not through its memcpy.
 */
__attribute__((no_sanitize("address"))) static void raw_copy(uint8_t *to, uint64_t from, size_t len)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)from;

	for (size_t i = 0; i < len; i++)
		to[i] = p[i];
}

/* This thread's registers and the top of its stack, here: what the kernel would take. */
__attribute__((noinline)) static size_t unwind_here(struct unwinder *u, uint64_t *pcs, size_t max,
						    bool *cut)
{
	static uint8_t copy[2048];
	struct ustack_in in = { (pid_t)syscall(SYS_gettid), 0, 0, 0, copy, sizeof(copy) };
	size_t n = 0;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(in.ip), "=r"(in.sp), "=r"(in.bp));
	raw_copy(copy, in.sp, sizeof(copy));
	CHECK_EQ_INT(unwind_stack(u, &in, pcs, max, &n, cut), 0);
	return n;
}

__attribute__((noinline)) static size_t native_test_caller(struct unwinder *u, uint64_t *pcs,
							   size_t max, bool *cut)
{
	size_t n = unwind_here(u, pcs, max, cut);

	__asm__ volatile("" ::: "memory");      /* no tail call: this frame stays */
	return n;
}

static void test_unwind(void)
{
	struct unwinder *u = unwinder_new(getpid()), *gone = unwinder_new(0x7ffffff0);
	struct natsym *ns = natsym_new();
	struct natproc np = { .pid = getpid() };
	uint64_t pcs[NATIVE_MAX_FRAMES];
	struct ustack_in nowhere = { (pid_t)syscall(SYS_gettid), 0x1010, 0x8, 0, NULL, 0 };
	struct natframe f;
	size_t n;
	bool cut, caller = false, in_main = false;

	CHECK(u && gone && ns);
	n = native_test_caller(u, pcs, NATIVE_MAX_FRAMES, &cut);
	CHECK(n >= 3 && !cut);
	for (size_t i = 0; i < n; i++) {
		if (!native_frame(ns, &np, pcs[i], &f))
			continue;
		if (strcmp(f.func, "native_test_caller") == 0) {
			uint64_t start = 0, end = 0;

			caller = true;
			/* Its bounds from .eh_frame_hdr, as a stripped file would give them. */
			CHECK(unwind_func_span(u, pcs[i], &start, &end));
			CHECK(start == (uint64_t)(uintptr_t)native_test_caller && pcs[i] < end);
		}
		in_main |= strcmp(f.func, "main") == 0;
	}
	CHECK(caller);
	{
		uint64_t start, end;

		CHECK(!unwind_func_span(u, 0x1010, &start, &end));     /* in no module */
	}
	CHECK(in_main);
	/* At most max, and said. */
	n = native_test_caller(u, pcs, 2, &cut);
	CHECK(n == 2 && cut);
	/* A stack pointing nowhere, an ip in nothing: the one frame, no crash, no hang. */
	CHECK_EQ_INT(unwind_stack(u, &nowhere, pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
	CHECK(n == 1 && pcs[0] == 0x1010 && !cut);
	/* A process that is not there. */
	CHECK_EQ_INT(unwind_stack(gone, &nowhere, pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
	CHECK(n == 1);
	natproc_free(&np);
	unwinder_free(u);
	unwinder_free(gone);
	natsym_free(ns);
}

/* A sample taken here and kept: two of them, at two pcs of one frame. */
static uint8_t kept_copy[2][4096];
static struct ustack_in kept[2];

__attribute__((noinline)) static void keep_here(void)
{
	for (int i = 0; i < 2; i++) {
		struct ustack_in *in = &kept[i];

		in->tid = (pid_t)syscall(SYS_gettid);
		if (i == 0)
			__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
					 : "=r"(in->ip), "=r"(in->sp), "=r"(in->bp));
		else
			__asm__ volatile("nop\n\tlea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
					 : "=r"(in->ip), "=r"(in->sp), "=r"(in->bp));
		raw_copy(kept_copy[i], in->sp, sizeof(kept_copy[i]));
		in->stack = kept_copy[i];
		in->len = sizeof(kept_copy[i]);
	}
}

static bool same_pcs(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	return na == nb && memcmp(a, b, na * sizeof(*a)) == 0;
}

/*
 * libdwfl's walks remembered (unwmemo.h): the same sample again is
 * walked from the memo, to the same frames; a sample at another pc of the
 * same frame takes the walk from its second frame on; and a stack whose
 * return address differs at the same pc, sp and bp (another caller) is
 * walked again, never given the remembered caller.
 */
static void test_unwind_memo(void)
{
	struct unwinder *u = unwinder_new(getpid());
	uint64_t first[NATIVE_MAX_FRAMES], pcs[NATIVE_MAX_FRAMES];
	size_t nfirst, n, at = sizeof(kept_copy[0]);
	uint64_t hits;
	bool cut;

	CHECK(u);
	keep_here();
	__asm__ volatile("" ::: "memory");
	CHECK_EQ_INT(unwind_stack(u, &kept[0], first, NATIVE_MAX_FRAMES, &nfirst, &cut), 0);
	CHECK(nfirst >= 3);
	hits = unwind_remembered(u);
	CHECK_EQ_INT(unwind_stack(u, &kept[0], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
	CHECK(unwind_remembered(u) == hits + 1);
	CHECK(same_pcs(first, nfirst, pcs, n));
	/* Off, libdwfl walks it again, to the same frames. */
	unwind_remember(u, false);
	CHECK_EQ_INT(unwind_stack(u, &kept[0], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
	CHECK(unwind_remembered(u) == hits + 1);
	CHECK(same_pcs(first, nfirst, pcs, n));
	unwind_remember(u, true);
	/* Another pc in keep_here, the same frame above it: remembered from the second frame. */
	CHECK(kept[1].sp == kept[0].sp);
	if (kept[1].sp == kept[0].sp) {
		CHECK_EQ_INT(unwind_stack(u, &kept[1], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
		CHECK(unwind_remembered(u) == hits + 2);
		CHECK(pcs[0] == kept[1].ip && pcs[0] != first[0]);
		CHECK(same_pcs(first + 1, nfirst - 1, pcs + 1, n - 1));
	}
	/* keep_here's return address replaced by its caller's caller's: the same pc, sp, bp. */
	for (size_t i = 0; i + 8 <= sizeof(kept_copy[0]) && at == sizeof(kept_copy[0]); i += 8) {
		uint64_t w;

		memcpy(&w, kept_copy[0] + i, 8);
		if (w == first[1] + 1)
			at = i;
	}
	CHECK(at < sizeof(kept_copy[0]));
	if (at < sizeof(kept_copy[0])) {
		uint64_t other = first[2] + 1;

		memcpy(kept_copy[0] + at, &other, 8);
		hits = unwind_remembered(u);
		CHECK_EQ_INT(unwind_stack(u, &kept[0], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
		CHECK(unwind_remembered(u) == hits);
		CHECK(n >= 2 && pcs[0] == first[0] && pcs[1] == first[2]);
	}
	/*
	 * The modules read again (an ip in none of them, REBUILD_NS after the
	 * last reading): what was remembered under the old ones is gone.
	 */
	{
		struct ustack_in nowhere = { kept[1].tid, 0x1010, 0x8, 0, NULL, 0 };
		struct timespec wait = { 0, 250 * 1000 * 1000 };

		CHECK_EQ_INT(unwind_stack(u, &kept[1], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
		hits = unwind_remembered(u);
		CHECK_EQ_INT(unwind_stack(u, &kept[1], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
		CHECK(unwind_remembered(u) == hits + 1);
		nanosleep(&wait, NULL);
		CHECK_EQ_INT(unwind_stack(u, &nowhere, pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
		hits = unwind_remembered(u);
		CHECK_EQ_INT(unwind_stack(u, &kept[1], pcs, NATIVE_MAX_FRAMES, &n, &cut), 0);
		CHECK(unwind_remembered(u) == hits);
		CHECK(n >= 3 && pcs[0] == kept[1].ip);
	}
	unwinder_free(u);
}

/*
 * --native=fp. Named like CPython's evaluation loop, so that a return
 * address into it is an activation; fp_leaf is where the sample was.
 */
__attribute__((noinline)) void _PyEval_EvalFrameDefault(void);
__attribute__((noinline)) void _PyEval_EvalFrameDefault(void)
{
	__asm__ volatile("nop\n\tnop\n\tnop\n\tnop" ::: "memory");
}

__attribute__((noinline)) static void fp_leaf(void)
{
	__asm__ volatile("nop\n\tnop\n\tnop\n\tnop" ::: "memory");
}

static struct pbp_ustack fpu;

/* A walk of n addresses, as the kernel puts it in the record. */
static void fp_walk(const uint64_t *addrs, size_t n)
{
	fpu.magic = PBP_UADDRS_MAGIC;
	fpu.len = (uint32_t)(n * sizeof(*addrs));
	memcpy(fpu.data, addrs, n * sizeof(*addrs));
}

static void test_fp_pcs(void)
{
	uint64_t pcs[NATIVE_MAX_FRAMES], many[PBP_UADDRS_MAX + 8];
	uint64_t chain[] = { 0x1000, 0x2001, 0x3001, 0, 0x4001 };
	size_t n;
	bool cut;

	/* ip as it is, return addresses one byte back into their call; 0 ends the chain. */
	fp_walk(chain, 5);
	natfp_pcs(&fpu, 0x1000, pcs, NATIVE_MAX_FRAMES, &n, &cut);
	CHECK(n == 3 && !cut);
	CHECK(pcs[0] == 0x1000 && pcs[1] == 0x2000 && pcs[2] == 0x3000);
	/* An empty walk: the sample's ip alone. */
	fp_walk(chain, 0);
	natfp_pcs(&fpu, 0x1234, pcs, NATIVE_MAX_FRAMES, &n, &cut);
	CHECK(n == 1 && pcs[0] == 0x1234 && !cut);
	/* A walk that filled the kernel's bound may have had more. */
	for (size_t i = 0; i < PBP_UADDRS_MAX; i++)
		many[i] = 0x10000 + i;
	fp_walk(many, PBP_UADDRS_MAX);
	natfp_pcs(&fpu, 0x10000, pcs, NATIVE_MAX_FRAMES, &n, &cut);
	CHECK(n == PBP_UADDRS_MAX && cut && pcs[n - 1] == 0x10000 + PBP_UADDRS_MAX - 2);
	/* A length past the record's addresses is held to them; max holds too. */
	fpu.len = sizeof(fpu.data);
	natfp_pcs(&fpu, 0x10000, pcs, NATIVE_MAX_FRAMES, &n, &cut);
	CHECK(n == PBP_UADDRS_MAX && cut);
	natfp_pcs(&fpu, 0x10000, pcs, 4, &n, &cut);
	CHECK(n == 4 && cut);
}

/* One fp walk woven with two Python frames: the merged stack's names, root first. */
static void fp_weave(const uint64_t *addrs, size_t naddr, char out[][64], uint32_t *nout,
		     uint64_t *unpaired)
{
	struct natsym *ns = natsym_new();
	struct natproc np = { .pid = getpid() };
	struct agg *a = agg_new();
	struct pbp_sample s = { .nframes = 2, .flags = PBP_F_ENTRIES | PBP_F_USTACK | PBP_F_REGS,
				.ip = (uint64_t)(uintptr_t)fp_leaf };
	struct natstack_stats st = { 0 };
	uint32_t locs[PBP_MAX_LOCS], n = 2;
	const char *file;

	CHECK(ns && a);
	locs[0] = (uint32_t)agg_loc(a, "outer", "app.py", 3, LOC_PY);
	locs[1] = (uint32_t)agg_loc(a, "inner", "app.py", 7, LOC_PY);
	s.entries[0] = 1u << 1;         /* one activation ran both */
	fp_walk(addrs, naddr);
	CHECK_EQ_INT(native_stack(ns, &np, &s, &fpu, a, locs, &n, PBP_MAX_LOCS, &st), 0);
	for (uint32_t i = 0; i < n && i < 8; i++)
		snprintf(out[i], 64, "%s", loc_name(a, locs[i], &file));
	*nout = n;
	*unpaired = st.unpaired;
	natproc_free(&np);
	agg_free(a);
	natsym_free(ns);
}

static void test_fp_weave(void)
{
	uint64_t leaf = (uint64_t)(uintptr_t)fp_leaf, eval = (uint64_t)(uintptr_t)_PyEval_EvalFrameDefault;
	uint64_t good[] = { leaf, eval + 2, 0x18, 0x20 }, garbage[] = { 0x18, 0x28, 0xdead0000 };
	char out[8][64];
	uint32_t n;
	uint64_t unpaired;

	/* The activation replaced by its Python frames; garbage past it one [unknown] at the root. */
	fp_weave(good, 4, out, &n, &unpaired);
	CHECK(n == 4 && unpaired == 0);
	CHECK_EQ_STR(out[0], NATIVE_UNKNOWN);
	CHECK_EQ_STR(out[1], "outer");
	CHECK_EQ_STR(out[2], "inner");
	CHECK_EQ_STR(out[3], "[native] fp_leaf");
	/* No walk: the Python frames at the root, ip under them, the mismatch counted. */
	fp_weave(good, 0, out, &n, &unpaired);
	CHECK(n == 3 && unpaired == 1);
	CHECK_EQ_STR(out[0], "outer");
	CHECK_EQ_STR(out[2], "[native] fp_leaf");
	/* A chain of garbage: no activation, Python frames kept, [unknown] once. */
	fp_weave(garbage, 3, out, &n, &unpaired);
	CHECK(n == 3 && unpaired == 1);
	CHECK_EQ_STR(out[0], "outer");
	CHECK_EQ_STR(out[1], "inner");
	CHECK_EQ_STR(out[2], NATIVE_UNKNOWN);
}

int main(void)
{
	test_maps();
	test_demangle();
	test_names();
	test_symbol_size();
	test_aggnat();
	test_aggnat_merge();
	test_leaf();
	test_groups();
	test_fold_names();
	test_fold_stack();
	test_unwind();
	test_unwind_memo();
	test_fp_pcs();
	test_fp_weave();
	return unit_done("test_native");
}
