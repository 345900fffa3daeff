/* SPDX-License-Identifier: MIT */
/*
 * The stack memo (symbolize_memo): a stack the kernel gives again, frame
 * for frame and key for key, is given the locations it was named as before,
 * counted as naming it would have counted (samples, frames, code-cache
 * hits), and never once a name could differ: a code object made at a
 * freed one's address, the code cache changed, the aggregate's locations
 * reset, a frame that could not be named, a stack finished from memory.
 *
 * The process is this one: code objects of the 3.12 layout, their strings
 * and line tables laid out in an arena, read back with process_vm_readv.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pybpfprof.h"
#include "aggregate/aggregate.h"
#include "cpython/codeobj.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "proc/remote.h"
#include "symbol/symbolize.h"
#include "unit.h"

#define DEPTH 3
#define MAXLOCS 64

static _Alignas(16) uint8_t arena[16384];
static size_t used;

static uint64_t addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static uint64_t alloc(size_t n)
{
	uint64_t a = addr(arena + used);

	used += (n + 15) & ~(size_t)15;
	CHECK(used <= sizeof(arena));
	return a;
}

static uint8_t *at(uint64_t a)
{
	return arena + (a - addr(arena));
}

static void put64(uint64_t a, uint32_t off, uint64_t x)
{
	memcpy(at(a) + off, &x, 8);
}

static void put32(uint64_t a, uint32_t off, uint32_t x)
{
	memcpy(at(a) + off, &x, 4);
}

/* A compact ASCII str object. */
static uint64_t str(const struct pyver *v, const char *text)
{
	size_t n = strlen(text);
	uint64_t s = alloc(v->ascii_size + n + 1);

	put64(s, v->unicode_length, n);
	put32(s, v->unicode_state, 1u << 2 | 1u << 5 | 1u << 6);    /* kind 1, compact, ascii */
	memcpy(at(s) + v->ascii_size, text, n);
	return s;
}

static uint64_t empty_bytes(const struct pyver *v)
{
	uint64_t b = alloc(v->bytes_sval + 1);

	put64(b, v->bytes_size, 0);
	return b;
}

/*
 * A code object's header at c (made or made again): named name, first line
 * line, and from 3.12 on the next co_version, as the interpreter gives it.
 */
static void code_at(const struct pyver *v, uint64_t c, const char *name, uint32_t line, uint64_t file,
		    uint64_t lt)
{
	static uint32_t made;
	uint64_t s = str(v, name);

	memset(at(c), 0, v->code_size);
	put64(c, v->ob_type - 8, 1);    /* ob_refcnt: alive */
	put64(c, v->code_name, s);
	if (v->code_qualname != PYVER_NOOFF)
		put64(c, v->code_qualname, s);
	put64(c, v->code_filename, file);
	put64(c, v->code_linetable, lt);
	put32(c, v->k.code_firstlineno, line);
	if (v->minor >= 12)
		put32(c, v->k.code_firstlineno + 24, ++made);     /* co_version */
}

struct world {
	struct pyproc p;
	struct agg *a;
	struct stackmemo *m;
	struct symstats st;
	uint64_t code[DEPTH + 1], file, lt;
	struct pbp_sample s;
};

static void frame_of(struct world *w, int i, uint64_t code)
{
	uint8_t *h = at(code);
	uint64_t key;

	memcpy(&key, h + w->p.v.k.code_key, 8);
	w->s.frames[i] = (struct pbp_frame){ .code = code, .instr = 0, .code_key = (uint32_t)key };
	memcpy(&w->s.frames[i].firstlineno, h + w->p.v.k.code_firstlineno, 4);
}

static void setup(struct world *w)
{
	static const char *const names[] = { "leaf", "middle", "root", "other" };
	struct pyver *v = &w->p.v;

	memset(w, 0, sizeof(*w));
	used = 0;
	CHECK_EQ_INT(pyver_from_table(3, 12, 0, v), 0);
	w->p.pid = w->p.ns_pid = getpid();
	w->p.r = remote_open(w->p.pid, 16);
	w->p.codes = codecache_new(64, 1 << 20);
	w->a = agg_new();
	w->file = str(v, "app.py");
	w->lt = empty_bytes(v);
	for (int i = 0; i <= DEPTH; i++) {
		w->code[i] = alloc(v->code_size);
		code_at(v, w->code[i], names[i], 10u * (unsigned)(i + 1), w->file, w->lt);
	}
	w->s.nframes = DEPTH;
	for (int i = 0; i < DEPTH; i++)
		frame_of(w, i, w->code[i]);
}

static void teardown(struct world *w)
{
	stackmemo_free(w->m);
	agg_free(w->a);
	codecache_free(w->p.codes);
	remote_close(w->p.r);
}

/* Names of the sample's locations, root first, "/"-joined into out. */
static int name(struct world *w, char *out, size_t len)
{
	uint32_t locs[MAXLOCS], n = 0;
	int err = symbolize_memo(&w->m, &w->p, &w->s, w->a, locs, MAXLOCS, &n, &w->st);

	out[0] = '\0';
	for (uint32_t i = 0; i < n; i++) {
		const char *nm, *file;
		int line;
		uint32_t kind;

		agg_loc_info(w->a, locs[i], &nm, &file, &line, &kind);
		snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "/" : "", nm);
	}
	return err;
}

/* Named as want, with reused stacks counted so far. */
static void expect(struct world *w, const char *want, uint64_t reused)
{
	char got[256];

	CHECK_EQ_INT(name(w, got, sizeof(got)), 0);
	CHECK_EQ_STR(got, want);
	CHECK_EQ_INT(w->st.reused, reused);
}

/* Named once (codes loaded), named again (all hits: kept), then given as kept. */
static void test_repeat(void)
{
	struct world w;
	char got[256];

	setup(&w);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ_INT(name(&w, got, sizeof(got)), 0);
		CHECK_EQ_STR(got, "root/middle/leaf");
	}
	CHECK_EQ_INT(w.st.samples, 3);
	CHECK_EQ_INT(w.st.frames, 3 * DEPTH);
	CHECK_EQ_INT(w.st.reused, 1);
	/* Counted as if named: DEPTH misses, then 2 * DEPTH hits. */
	CHECK_EQ_INT(codecache_stats(w.p.codes)->misses, DEPTH);
	CHECK_EQ_INT(codecache_stats(w.p.codes)->hits, 2 * DEPTH);
	/* Another instruction in the leaf: another stack, named. */
	w.s.frames[0].instr = 8;
	CHECK_EQ_INT(name(&w, got, sizeof(got)), 0);
	CHECK_EQ_INT(w.st.reused, 1);
	teardown(&w);
}

/* A code object freed and another made at its address: the kernel's key differs, named anew. */
static void test_address_reused(void)
{
	struct world w;
	char got[256];

	setup(&w);
	name(&w, got, sizeof(got));
	name(&w, got, sizeof(got));
	code_at(&w.p.v, w.code[0], "newleaf", 10, w.file, w.lt);
	frame_of(&w, 0, w.code[0]);
	expect(&w, "root/middle/newleaf", 0);
	teardown(&w);
}

/*
 * Made again at the same address, with the same first line and its name
 * at the old name's address, as CodeType.replace in a loop gives: only
 * co_version (3.12+) tells them apart, and it is never the same twice.
 */
static void test_name_at_same_address(void)
{
	struct world w;
	uint64_t name_str;

	setup(&w);
	expect(&w, "root/middle/leaf", 0);
	memcpy(&name_str, at(w.code[0]) + w.p.v.code_name, 8);
	memcpy(at(name_str) + w.p.v.ascii_size, "lea2", 4);
	put32(w.code[0], w.p.v.k.code_firstlineno + 24, 1u << 20);   /* co_version: the next */
	frame_of(&w, 0, w.code[0]);
	expect(&w, "root/middle/lea2", 0);
	teardown(&w);
}

/*
 * Freed and not yet reused: its words are all there but the first, which
 * the allocator made a free-list link (an address, or NULL for the last
 * block). Its name's memory may be the next object's name already: never
 * named by it. Alive again (another object there): named.
 */
static void test_freed_code_unknown(void)
{
	struct world w;
	char got[256];

	setup(&w);
	put64(w.code[0], w.p.v.ob_type - 8, 0x7f1189062330ull);
	CHECK_EQ_INT(name(&w, got, sizeof(got)), 0);
	CHECK_EQ_STR(got, "root/middle/[unknown]");
	put64(w.code[0], w.p.v.ob_type - 8, 0);
	CHECK_EQ_INT(name(&w, got, sizeof(got)), 0);
	CHECK_EQ_STR(got, "root/middle/[unknown]");
	put64(w.code[0], w.p.v.ob_type - 8, 3);
	CHECK_EQ_INT(name(&w, got, sizeof(got)), 0);
	CHECK_EQ_STR(got, "root/middle/leaf");
	teardown(&w);
}

/* Any entry of the code cache made since, or the locations reset: named again, into the new ids. */
static void test_versions(void)
{
	struct world w;
	struct pbp_sample kept;
	char got[256];

	setup(&w);
	name(&w, got, sizeof(got));
	name(&w, got, sizeof(got));
	kept = w.s;
	/* Another stack loads "other": the cache changed, the kept stack is not trusted. */
	frame_of(&w, 0, w.code[DEPTH]);
	name(&w, got, sizeof(got));
	w.s = kept;
	expect(&w, "root/middle/leaf", 0);
	expect(&w, "root/middle/leaf", 1);
	/* A location added since changes nothing; a reset does. */
	agg_loc(w.a, "x", "y", 1, LOC_PY);
	expect(&w, "root/middle/leaf", 2);
	agg_reset(w.a);
	agg_loc(w.a, "first", "in the new window", 1, LOC_PY);
	expect(&w, "root/middle/leaf", 2);
	teardown(&w);
}

/* A frame shown as [unknown], or a stack the kernel did not finish: never kept. */
static void test_not_kept(void)
{
	struct world w;
	char got[256];

	setup(&w);
	w.s.frames[0].code = 0x40;      /* unmapped */
	for (int i = 0; i < 3; i++)
		name(&w, got, sizeof(got));
	CHECK_EQ_STR(got, "root/middle/[unknown]");
	CHECK_EQ_INT(w.st.unknown_frames, 3);
	CHECK_EQ_INT(w.st.reused, 0);
	frame_of(&w, 0, w.code[0]);
	w.s.flags = PBP_F_FAULT;        /* resume 0: nothing more to read */
	for (int i = 0; i < 3; i++)
		name(&w, got, sizeof(got));
	CHECK_EQ_STR(got, "root/middle/leaf");
	CHECK_EQ_INT(w.st.reused, 0);
	teardown(&w);
}

int main(void)
{
	test_repeat();
	test_address_reused();
	test_name_at_same_address();
	test_freed_code_unknown();
	test_versions();
	test_not_kept();
	return unit_done("symbolize");
}
