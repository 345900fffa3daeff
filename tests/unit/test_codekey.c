/* SPDX-License-Identifier: MIT */
/*
 * The code-object key (pbp_code_key): co_version's low bits (co_name's
 * address before 3.12) xor the hash cached in the name string, where the
 * kernel finds both, and what the code cache makes of an object caught
 * half built at a freed one's address: its new name stored, its
 * co_version still the freed one's (issue 35). Such an object is never
 * named by what it is becoming; a name the kernel saw unhashed still is.
 *
 * The process is this one: code objects of 3.13's layout (its debug
 * offsets, tests/unit/data) laid out in an arena, read back with
 * process_vm_readv.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pybpfprof.h"
#include "cpython/codeobj.h"
#include "cpython/debugoffsets.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "proc/remote.h"
#include "unit.h"

#define HASH_C 0x5a5a00001111c0deLL   /* "swap_c"'s hash, as the interpreter cached it */
#define HASH_D 0x5a5a00002222d00dLL
#define VERSION 7u

static _Alignas(16) uint8_t arena[4096];
static size_t used;

static uint64_t alloc(size_t n)
{
	uint64_t a = (uint64_t)(uintptr_t)(arena + used);

	used += (n + 15) & ~(size_t)15;
	CHECK(used <= sizeof(arena));
	return a;
}

static uint8_t *at(uint64_t a)
{
	return arena + (a - (uint64_t)(uintptr_t)arena);
}

static void put64(uint64_t a, uint32_t off, uint64_t x)
{
	memcpy(at(a) + off, &x, 8);
}

/* A compact ASCII str at s (made or made again there), its hash as given. */
static void str_at(const struct pyver *v, uint64_t s, const char *text, int64_t hash)
{
	uint32_t state = 1u << 2 | 1u << 5 | 1u << 6;      /* kind 1, compact, ascii */

	memset(at(s), 0, v->ascii_size + 8);
	put64(s, v->unicode_length, strlen(text));
	put64(s, v->unicode_length + 8, (uint64_t)hash);
	memcpy(at(s) + v->unicode_state, &state, 4);
	memcpy(at(s) + v->ascii_size, text, strlen(text));
}

struct world {
	struct pyproc p;
	uint64_t code, name, file, lt;
};

/* 3.13's layout, from the debug offsets of a real 3.13. */
static int layout13(struct pyver *v)
{
	size_t len = 0;
	uint8_t *blob = unit_load_file("data/debug_offsets_3.13.bin", &len);
	int err = blob ? pyver_from_debug_offsets(blob, len, v) : -1;

	free(blob);
	return err;
}

static void setup(struct world *w)
{
	struct pyver *v = &w->p.v;
	uint32_t version = VERSION;

	memset(w, 0, sizeof(*w));
	memset(arena, 0, sizeof(arena));
	used = 0;
	CHECK_EQ_INT(layout13(v), 0);
	CHECK(v->code_size <= 512);
	w->p.pid = w->p.ns_pid = getpid();
	w->p.r = remote_open(w->p.pid, 16);
	w->p.codes = codecache_new(64, 1 << 20);
	w->name = alloc(v->ascii_size + 16);
	w->file = alloc(v->ascii_size + 16);
	w->lt = alloc(v->bytes_sval + 1);
	w->code = alloc(v->code_size);
	str_at(v, w->name, "swap_c", HASH_C);
	str_at(v, w->file, "<swap>", -1);
	put64(w->code, v->ob_type - 8, 1);      /* ob_refcnt: alive */
	put64(w->code, v->code_name, w->name);
	put64(w->code, v->code_qualname, w->name);
	put64(w->code, v->code_filename, w->file);
	put64(w->code, v->code_linetable, w->lt);
	memcpy(at(w->code) + v->k.code_firstlineno, &(uint32_t){ 1 }, 4);
	memcpy(at(w->code) + v->k.code_key, &version, 4);
}

static void teardown(struct world *w)
{
	codecache_free(w->p.codes);
	remote_close(w->p.r);
}

/* The name the cache gives the object at w->code for the kernel's key code_key, or NULL. */
static const char *named(struct world *w, uint32_t code_key)
{
	struct pbp_frame f = { .code = w->code, .firstlineno = 1, .code_key = code_key };
	const struct codeinfo *ci;
	int err;

	codecache_free(w->p.codes);     /* read now, not remembered from before */
	w->p.codes = codecache_new(64, 1 << 20);
	ci = codecache_get(w->p.codes, &w->p, w->code, &f, &err);
	CHECK_EQ_INT(!ci, !!err);
	return ci ? ci->name : NULL;
}

static void test_fold(void)
{
	CHECK_EQ_INT(pbp_code_key(0x123400000005ull, -1), 5);
	CHECK_EQ_INT(pbp_code_key(5, 0xf0), 5 ^ 0xf0);
	CHECK_EQ_INT(pbp_code_key(5, (int64_t)0x7bcd0000000000f0LL), 5 ^ 0xf0);
	CHECK_EQ_INT(pbp_code_key(5, HASH_C), 5u ^ 0x1111c0deu);
	CHECK(pbp_code_key(VERSION, HASH_C) != pbp_code_key(VERSION, HASH_D));
	CHECK(pbp_code_key(VERSION, HASH_C) != pbp_code_key(VERSION, -1));
}

/*
 * 3.13+: the kernel reads the name user space shows (co_qualname), in the
 * same copy as the key's word, and its hash. Before: no name read, the
 * word alone (pyver_name_hash says why).
 */
static void test_offsets(void)
{
	struct pyver v;

	for (unsigned minor = 6; minor <= 12; minor++) {
		CHECK_EQ_INT(pyver_from_table(3, minor, 0, &v), 0);
		CHECK_EQ_INT(v.k.code_hname, PBP_NOOFF);
		CHECK_EQ_INT(v.k.str_hash, PBP_NOOFF);
	}
	CHECK_EQ_INT(layout13(&v), 0);
	CHECK_EQ_INT(v.k.code_hname, v.code_qualname);
	CHECK_EQ_INT(v.k.str_hash, v.unicode_length + 8);
	CHECK_EQ_INT(v.k.str_hash, 24);         /* PyASCIIObject: refcnt, type, length, hash */
	CHECK(v.k.code_span_len > 0);
	CHECK(v.k.code_span_lo <= v.k.code_hname &&
	      v.k.code_hname + 8u <= (uint32_t)v.k.code_span_lo + v.k.code_span_len);
}

/* What the kernel would have sent at a sample of the object as it is now. */
static void test_read_key(void)
{
	struct world w;
	uint32_t line = 0, key = 0;

	setup(&w);
	CHECK_EQ_INT(codecache_read_key(&w.p, w.code, &line, &key), 0);
	CHECK_EQ_INT(line, 1);
	CHECK_EQ_INT(key, pbp_code_key(VERSION, HASH_C));
	teardown(&w);
}

/*
 * Sampled as swap_c, read after it was freed and a copy began at its
 * address: the copy's name stored (at the old name's address), its hash
 * not yet computed or computed, its co_version not yet written. Before,
 * the key was the word alone and named it swap_d.
 */
static void test_half_built(void)
{
	struct world w;
	uint32_t sampled = pbp_code_key(VERSION, HASH_C);

	setup(&w);
	CHECK_EQ_STR(named(&w, sampled), "swap_c");
	str_at(&w.p.v, w.name, "swap_d", -1);
	CHECK(named(&w, sampled) == NULL);
	str_at(&w.p.v, w.name, "swap_d", HASH_D);
	CHECK(named(&w, sampled) == NULL);
	CHECK(codecache_stats(w.p.codes)->stale == 1);
	/* Finished: its own co_version, and the key the kernel sends for it. */
	memcpy(at(w.code) + w.p.v.k.code_key, &(uint32_t){ VERSION + 1 }, 4);
	CHECK_EQ_STR(named(&w, pbp_code_key(VERSION + 1, HASH_D)), "swap_d");
	CHECK(named(&w, sampled) == NULL);
	teardown(&w);
}

/*
 * Before 3.13 a name made at run time may be hashed after the sample: the
 * kernel sent the word alone. Still its name, while the word is its own.
 */
static void test_hashed_later(void)
{
	struct world w;

	setup(&w);
	CHECK_EQ_STR(named(&w, VERSION), "swap_c");
	memcpy(at(w.code) + w.p.v.k.code_key, &(uint32_t){ VERSION + 1 }, 4);
	CHECK(named(&w, VERSION) == NULL);
	teardown(&w);
}

int main(void)
{
	test_fold();
	test_offsets();
	test_read_key();
	test_half_built();
	test_hashed_later();
	return unit_done("codekey");
}
