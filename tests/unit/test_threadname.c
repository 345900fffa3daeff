/* SPDX-License-Identifier: MIT */
/*
 * objects.c's pure decoders (dict keys headers, ints) on byte buffers,
 * then pythread_names() (threadname.c) end to end against a fake interpreter built, for
 * every supported version's layout, in this process's own memory (read
 * back with process_vm_readv like any target), and finally against 20k
 * randomly damaged copies of it: names found or not, never a crash, an
 * unbounded loop or an out-of-bounds access (run under ASan too).
 * Run from tests/unit (3.13 and 3.14 layouts come from data/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/errors.h"
#include "core/text.h"
#include "cpython/debugoffsets.h"
#include "cpython/objects.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "cpython/thread.h"
#include "cpython/threadname.h"
#include "proc/remote.h"
#include "unit.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	uint64_t x = rnd_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rnd_state = x;
}

static void put64(uint8_t *b, size_t off, uint64_t x)
{
	memcpy(b + off, &x, sizeof(x));
}

static void put32(uint8_t *b, size_t off, uint32_t x)
{
	memcpy(b + off, &x, sizeof(x));
}

/* Every layout we know: 3.8-3.12 from the table, 3.13/3.14 from real _Py_DebugOffsets. */
static size_t all_versions(struct pyver *vs, size_t max)
{
	size_t n = 0;

	for (unsigned minor = 8; minor <= 12 && n < max; minor++)
		if (pyver_from_table(3, minor, 0, &vs[n]) == 0)
			n++;
	for (unsigned minor = 13; minor <= 14 && n < max; minor++) {
		char path[64];
		size_t len;
		uint8_t *blob;

		snprintf(path, sizeof(path), "data/debug_offsets_3.%u.bin", minor);
		blob = unit_load_file(path, &len);
		CHECK(blob != NULL);
		if (blob && pyver_from_debug_offsets(blob, len, &vs[n]) == 0)
			n++;
		free(blob);
	}
	return n;
}

/* ----------------------------------------------------------- layouts */

static void test_layout_facts(const struct pyver *vs, size_t nv)
{
	CHECK_EQ_INT(nv, 7);
	for (size_t i = 0; i < nv; i++) {
		const struct pyver *v = &vs[i];
		bool new_dict = v->minor >= 11;

		CHECK(v->is_modules != PYVER_NOOFF);
		CHECK(v->is_modules + 8 <= v->is_size);
		CHECK_EQ_INT(v->mod_dict, 16);
		CHECK_EQ_INT(v->dict_keys, 32);
		CHECK_EQ_INT(v->dict_values, 40);
		CHECK_EQ_INT(v->dk_size != PYVER_NOOFF, !new_dict);
		CHECK_EQ_INT(v->dk_log2_size != PYVER_NOOFF, new_dict);
		CHECK_EQ_INT(v->due_size != PYVER_NOOFF, new_dict);
		CHECK_EQ_INT(v->dv_capacity != PYVER_NOOFF, v->minor >= 13);
		CHECK_EQ_INT(v->dv_values, v->minor >= 13 ? 8 : 0);
		CHECK_EQ_INT(v->de_size, 24);
		CHECK_EQ_INT(v->dk_indices, new_dict ? 32 : 40);
		CHECK_EQ_INT(v->tp_flags, 168);
		CHECK_EQ_INT(v->tpf_managed_dict, new_dict ? 1u << 4 : 0);
		CHECK_EQ_INT(v->tpf_inline_values, v->minor >= 13 ? 1u << 2 : 0);
		CHECK_EQ_INT(v->tpf_long_subclass, 1u << 24);
		CHECK_EQ_INT(v->tpf_unicode_subclass, 1u << 28);
		CHECK_EQ_INT(v->tpf_dict_subclass, 1u << 29);
		CHECK_EQ_INT(v->managed_dict_before, new_dict ? 24 : PYVER_NOOFF);
		CHECK_EQ_INT(v->managed_values_before, v->minor == 11 ? 32 : PYVER_NOOFF);
		CHECK_EQ_INT(v->inst_dict, v->minor <= 10 ? INST_DICTOFFSET : v->minor == 11 ?
			     INST_VALUES_PTR : v->minor == 12 ? INST_TAGGED : INST_INLINE);
		CHECK_EQ_INT(v->long_tagged, v->minor >= 12);
		CHECK_EQ_INT(v->long_size, 16);
		CHECK_EQ_INT(v->long_digit, 24);
		CHECK_EQ_INT(v->long_shift, 30);
	}
	/* sys.modules moved into interp->imports in 3.12. */
	CHECK_EQ_INT(vs[0].is_modules, 56);
	CHECK_EQ_INT(vs[3].is_modules, 888);
	CHECK_EQ_INT(vs[4].is_modules, 944);
	CHECK_EQ_INT(vs[5].is_modules, 7656);
	CHECK_EQ_INT(vs[6].is_modules, 7688);
}

/* ----------------------------------------------------------- keys headers */

static void keys310(uint8_t *h, int64_t size, int64_t nentries)
{
	memset(h, 0, 64);
	put64(h, 0, 1);
	put64(h, 8, (uint64_t)size);
	put64(h, 32, (uint64_t)nentries);
}

static void keys311(uint8_t *h, unsigned log2, unsigned log2ib, unsigned kind, int64_t nentries)
{
	memset(h, 0, 64);
	put64(h, 0, 1);
	h[8] = (uint8_t)log2;
	h[9] = (uint8_t)log2ib;
	h[10] = (uint8_t)kind;
	put64(h, 24, (uint64_t)nentries);
}

static void test_keys_decode(const struct pyver *vs, size_t nv)
{
	struct pydict_table t;
	uint8_t h[64];
	const struct pyver *v38 = &vs[0], *v311 = &vs[3], *v313 = &vs[5];

	(void)nv;
	keys310(h, 8, 5);
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), 0);
	CHECK(t.entries == 0x1000 + 40 + 8 && t.nentries == 5);
	CHECK(t.entry_size == 24 && t.key_off == 8 && t.value_off == 16 && !t.unicode);
	keys310(h, 1 << 10, 600);       /* 2-byte indices */
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), 0);
	CHECK(t.entries == 0x1000 + 40 + 2048);
	keys310(h, 1 << 17, 3);         /* 4-byte indices */
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), 0);
	CHECK(t.entries == 0x1000 + 40 + (4 << 17));
	keys310(h, 1, 0);               /* the shared empty keys */
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), 0);
	keys310(h, 8, 6);               /* more than USABLE_FRACTION(8) */
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), -PBP_E_CORRUPT);
	keys310(h, 12, 1);
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), -PBP_E_CORRUPT);
	keys310(h, 0, 0);
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), -PBP_E_CORRUPT);
	keys310(h, -8, 0);
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), -PBP_E_CORRUPT);
	keys310(h, 1ll << 40, 0);
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), -PBP_E_CORRUPT);
	keys310(h, 8, -1);
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 40, &t), -PBP_E_CORRUPT);
	keys310(h, 8, 1);
	CHECK_EQ_INT(pydict_keys_decode(v38, 0x1000, h, 39, &t), -PBP_E_CORRUPT);
	CHECK_EQ_INT(pydict_keys_decode(v38, ~0ull - 30, h, 40, &t), -PBP_E_CORRUPT);

	for (int k = 0; k < 2; k++) {
		const struct pyver *v = k ? v313 : v311;

		keys311(h, 3, 3, 1, 5);         /* unicode keys */
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 32, &t), 0);
		CHECK(t.entries == 0x1000 + 32 + 8 && t.unicode && !t.split);
		CHECK(t.entry_size == 16 && t.key_off == 0 && t.value_off == 8);
		keys311(h, 3, 3, 0, 5);         /* general */
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 32, &t), 0);
		CHECK(t.entry_size == 24 && t.key_off == 8 && !t.unicode);
		keys311(h, 5, 5, 2, 20);        /* split */
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 32, &t), 0);
		CHECK(t.split && t.unicode && t.entries == 0x1000 + 32 + 32);
		keys311(h, 9, 10, 0, 300);      /* 2-byte indices */
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 32, &t), 0);
		CHECK(t.entries == 0x1000 + 32 + 1024);
		keys311(h, 16, 18, 0, 1);       /* 4-byte indices */
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 32, &t), 0);
		keys311(h, 9, 9, 0, 3);         /* index bytes do not match the size */
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 32, &t), -PBP_E_CORRUPT);
		keys311(h, 3, 3, 3, 1);         /* no such kind */
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 32, &t), -PBP_E_CORRUPT);
		keys311(h, 40, 43, 0, 1);       /* absurd size */
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 32, &t), -PBP_E_CORRUPT);
		keys311(h, 3, 3, 1, 6);
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 32, &t), -PBP_E_CORRUPT);
		keys311(h, 3, 3, 1, 1);
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 31, &t), -PBP_E_CORRUPT);
		CHECK_EQ_INT(pydict_keys_decode(v, 0x1000, h, 0, &t), -PBP_E_CORRUPT);
	}
}

/* ----------------------------------------------------------- ints */

static size_t long_obj(const struct pyver *v, uint8_t *b, int sign, unsigned nd,
		       const uint32_t *digits)
{
	memset(b, 0, 64);
	if (v->long_tagged)
		put64(b, v->long_size, (uint64_t)nd << 3 | (sign < 0 ? 2 : sign == 0 ? 1 : 0));
	else
		put64(b, v->long_size, (uint64_t)(sign < 0 ? -(int64_t)nd : (int64_t)nd));
	for (unsigned i = 0; i < nd; i++)
		put32(b, v->long_digit + 4 * i, digits[i]);
	return v->long_digit + 4 * (nd ? nd : 1);
}

static void test_long_decode(const struct pyver *vs, size_t nv)
{
	for (size_t i = 0; i < nv; i++) {
		const struct pyver *v = &vs[i];
		const uint64_t vals[] = { 1, 0x3fffffff, 0x40000000, 0x7f5e9a3c1640ull, ~0ull };
		uint8_t b[64];
		uint32_t d[4];
		uint64_t out;
		size_t len;

		for (size_t k = 0; k < ARRAY_LEN(vals); k++) {
			unsigned nd = 0;

			for (uint64_t x = vals[k]; x; x >>= 30)
				d[nd++] = (uint32_t)(x & 0x3fffffff);
			len = long_obj(v, b, 1, nd, d);
			out = 0;
			CHECK_EQ_INT(pylong_decode(v, b, len, &out), 0);
			CHECK(out == vals[k]);
			CHECK_EQ_INT(pylong_decode(v, b, len - 1, &out), -PBP_E_CORRUPT);
		}
		len = long_obj(v, b, 0, 0, d);
		out = 7;
		CHECK_EQ_INT(pylong_decode(v, b, len, &out), 0);
		CHECK(out == 0);
		d[0] = 5;
		len = long_obj(v, b, -1, 1, d);         /* negative */
		CHECK_EQ_INT(pylong_decode(v, b, len, &out), -PBP_E_CORRUPT);
		d[0] = d[1] = d[2] = d[3] = 1;
		len = long_obj(v, b, 1, 4, d);          /* > 64 bits */
		CHECK_EQ_INT(pylong_decode(v, b, len, &out), -PBP_E_CORRUPT);
		d[2] = 16;                              /* bit 64 */
		len = long_obj(v, b, 1, 3, d);
		CHECK_EQ_INT(pylong_decode(v, b, len, &out), -PBP_E_CORRUPT);
		d[0] = 0x40000000;                      /* not a 30-bit digit */
		len = long_obj(v, b, 1, 1, d);
		CHECK_EQ_INT(pylong_decode(v, b, len, &out), -PBP_E_CORRUPT);
		CHECK_EQ_INT(pylong_decode(v, b, 8, &out), -PBP_E_CORRUPT);
		if (v->long_tagged) {
			put64(b, v->long_size, 3);       /* sign bits 3 */
			CHECK_EQ_INT(pylong_decode(v, b, 32, &out), -PBP_E_CORRUPT);
			put64(b, v->long_size, 1 | 1 << 3);   /* "zero" with a digit */
			CHECK_EQ_INT(pylong_decode(v, b, 32, &out), -PBP_E_CORRUPT);
		}
	}
}

/* ----------------------------------------------------------- UTF-8 */

static void scrub_is(const char *in, const char *want)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s", in);
	utf8_scrub(buf);
	CHECK_EQ_STR(buf, want);
}

static void test_scrub(void)
{
	scrub_is("", "");
	scrub_is("MainThread", "MainThread");
	scrub_is("\xc3\xbc" "n" "\xe5\x90\x8d" "\xf0\x9f\x98\x80", "\xc3\xbc" "n" "\xe5\x90\x8d" "\xf0\x9f\x98\x80");
	scrub_is("bad-\xed\xb3\xbf", "bad-?");                 /* U+DCFF, a lone surrogate */
	scrub_is("\xed\xa0\x80\xed\xb0\x80x", "??x");           /* a surrogate pair, UTF-8'd */
	scrub_is("cut-\xe5\x90", "cut-?");                      /* comm cut inside a character */
	scrub_is("\xe5\x90" "a", "?a");
	scrub_is("\x80\xbf", "??");                             /* stray continuation bytes */
	scrub_is("\xc0\xaf", "?");                              /* overlong '/' */
	scrub_is("\xe0\x80\xaf", "?");
	scrub_is("\xf4\x90\x80\x80", "?");                      /* past U+10FFFF */
	scrub_is("\xff\xfe", "??");
}

/* ----------------------------------------------------------- a fake interpreter */

#define ARENA_SIZE (256u << 10)
#define TYPE_BYTES 1024
#define NTHREADS 7

struct fake {
	const struct pyver *v;
	uint8_t *arena;         /* ARENA_SIZE bytes, 64-aligned */
	size_t used;
	uint64_t dict_type, str_type, long_type, module_type, none_type;
	uint64_t thread_type, plain_type;       /* managed (3.11+) and dictoffset types */
	uint64_t interp, module, none;
	uint64_t idents[NTHREADS];
	const char *names[NTHREADS];
	bool listed[NTHREADS];  /* pythread_names must report it */
};

static uint8_t *at(struct fake *f, uint64_t addr)
{
	(void)f;
	return (uint8_t *)(uintptr_t)addr;
}

static uint64_t alloc(struct fake *f, size_t n)
{
	uint64_t a;

	n = (n + 15) & ~(size_t)15;
	if (f->used + n > ARENA_SIZE) {
		fprintf(stderr, "fake arena full\n");
		exit(2);
	}
	a = (uint64_t)(uintptr_t)(f->arena + f->used);
	f->used += n;
	return a;
}

static uint64_t object(struct fake *f, uint64_t type, size_t size)
{
	uint64_t o = alloc(f, size);

	put64(at(f, o), 0, 1);
	put64(at(f, o), f->v->ob_type, type);
	return o;
}

static uint64_t type_obj(struct fake *f, uint64_t flags, int64_t basicsize, int64_t dictoffset)
{
	const struct pyver *v = f->v;
	uint64_t t = object(f, 0, TYPE_BYTES);

	put64(at(f, t), v->ob_type, t);         /* its own metatype: anything will do */
	put64(at(f, t), v->tp_flags, flags);
	put64(at(f, t), v->tp_basicsize, (uint64_t)basicsize);
	put64(at(f, t), v->tp_dictoffset, (uint64_t)dictoffset);
	return t;
}

/* A compact str: ASCII, or UCS-2 from code points. */
static uint64_t str_obj(struct fake *f, const uint16_t *cps, size_t n)
{
	const struct pyver *v = f->v;
	bool ascii = true;
	uint64_t s;
	uint32_t state;

	for (size_t i = 0; i < n; i++)
		ascii = ascii && cps[i] < 0x80;
	s = object(f, f->str_type, v->compact_size + 2 * n + 2);
	put64(at(f, s), v->unicode_length, n);
	state = (ascii ? 1u : 2u) << 2 | 1u << 5 | (ascii ? 1u << 6 : 0);
	put32(at(f, s), v->unicode_state, state);
	for (size_t i = 0; i < n; i++) {
		if (ascii)
			at(f, s)[v->ascii_size + i] = (uint8_t)cps[i];
		else
			memcpy(at(f, s) + v->compact_size + 2 * i, &cps[i], 2);
	}
	return s;
}

static uint64_t str_ascii(struct fake *f, const char *text)
{
	uint16_t cps[128];
	size_t n = strlen(text);

	for (size_t i = 0; i < n && i < ARRAY_LEN(cps); i++)
		cps[i] = (uint8_t)text[i];
	return str_obj(f, cps, n < ARRAY_LEN(cps) ? n : ARRAY_LEN(cps));
}

static uint64_t long_value(struct fake *f, uint64_t x)
{
	uint32_t d[4];
	unsigned nd = 0;
	uint64_t o = object(f, f->long_type, 64);

	for (; x; x >>= 30)
		d[nd++] = (uint32_t)(x & 0x3fffffff);
	long_obj(f->v, at(f, o), nd ? 1 : 0, nd, d);
	put64(at(f, o), 0, 1);
	put64(at(f, o), f->v->ob_type, f->long_type);
	return o;
}

enum kkind { K_GENERAL, K_UNICODE, K_SPLIT };

/* A keys object holding n entries (values NULL in split tables). */
static uint64_t keys_obj(struct fake *f, enum kkind kind, const uint64_t *keys,
			 const uint64_t *vals, size_t n)
{
	const struct pyver *v = f->v;
	unsigned log2 = 3;
	size_t esize, ib, koff, voff;
	uint64_t k;

	while ((size_t)((1u << log2) * 2 / 3) < n)
		log2++;
	ib = (size_t)1 << log2;         /* one byte each below 256 */
	if (log2 >= 8)
		ib *= 2;
	if (v->dk_size != PYVER_NOOFF || kind == K_GENERAL) {
		esize = v->de_size, koff = v->de_key, voff = v->de_value;
	} else {
		esize = v->due_size, koff = v->due_key, voff = v->due_value;
	}
	k = alloc(f, v->dk_indices + ib + esize * n);
	memset(at(f, k), 0, v->dk_indices + ib);
	memset(at(f, k) + v->dk_indices, 0xff, ib);
	put64(at(f, k), 0, 1);
	if (v->dk_size != PYVER_NOOFF) {
		put64(at(f, k), v->dk_size, 1u << log2);
	} else {
		at(f, k)[v->dk_log2_size] = (uint8_t)log2;
		at(f, k)[v->dk_log2_index_bytes] = (uint8_t)(log2 >= 8 ? log2 + 1 : log2);
		at(f, k)[v->dk_kind] = (uint8_t)kind;
	}
	put64(at(f, k), v->dk_nentries, n);
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = at(f, k) + v->dk_indices + ib + esize * i;

		memset(e, 0, esize);
		put64(e, koff, keys[i]);
		put64(e, voff, kind == K_SPLIT ? 0 : vals[i]);
		if (esize == v->de_size)
			put64(e, 0, 0x1234 + i);        /* a hash */
	}
	return k;
}

/* A values array for split keys; 3.13+ with its header. */
static uint64_t values_obj(struct fake *f, const uint64_t *vals, size_t n)
{
	const struct pyver *v = f->v;
	uint64_t a = alloc(f, v->dv_values + 8 * n + 8);

	memset(at(f, a), 0, v->dv_values + 8 * n);
	if (v->dv_capacity != PYVER_NOOFF) {
		at(f, a)[v->dv_capacity] = (uint8_t)n;
		at(f, a)[v->dv_valid] = 1;
	}
	for (size_t i = 0; i < n; i++)
		put64(at(f, a), v->dv_values + 8 * i, vals[i]);
	return a;
}

static uint64_t dict_obj(struct fake *f, uint64_t keys, uint64_t values)
{
	uint64_t d = object(f, f->dict_type, 64);

	put64(at(f, d), f->v->dict_keys, keys);
	put64(at(f, d), f->v->dict_values, values);
	return d;
}

static uint64_t combined(struct fake *f, bool str_keys, const uint64_t *keys,
			 const uint64_t *vals, size_t n)
{
	bool unicode = str_keys && f->v->dk_size == PYVER_NOOFF;

	return dict_obj(f, keys_obj(f, unicode ? K_UNICODE : K_GENERAL, keys, vals, n), 0);
}

/* The attribute names every Thread instance has, in the order of the shared keys. */
static const char *const attrs[] = { "_target", "_name", "_args", "_ident", "_started" };

/*
 * A Thread object with _name and _ident, its attributes kept as this version
 * keeps them by default (style 0) or in a dict of their own (style 1).
 */
static uint64_t thread_obj(struct fake *f, uint64_t shared, const uint64_t *attr_keys,
			   uint64_t name, uint64_t ident, int style)
{
	const struct pyver *v = f->v;
	uint64_t vals[ARRAY_LEN(attrs)], o, values;
	size_t n = ARRAY_LEN(attrs);

	for (size_t i = 0; i < n; i++)
		vals[i] = f->none;
	vals[1] = name;
	vals[3] = ident;
	if (v->inst_dict == INST_DICTOFFSET) {
		o = object(f, f->plain_type, 32);
		if (style == 0)
			put64(at(f, o), 16, dict_obj(f, shared, values_obj(f, vals, n)));
		else
			put64(at(f, o), 16, combined(f, true, attr_keys, vals, n));
		return o;
	}
	/* A pre-header of two words (3.11: values, dict), the GC header, the object. */
	o = alloc(f, 32 + 16 + 8 * (n + 2)) + 32;
	memset(at(f, o - 32), 0, 32 + 16 + 8 * (n + 2));
	put64(at(f, o), 0, 1);
	put64(at(f, o), v->ob_type, f->thread_type);
	if (style == 1) {
		put64(at(f, o - v->managed_dict_before), 0, combined(f, true, attr_keys, vals, n));
		return o;
	}
	switch (v->inst_dict) {
	case INST_VALUES_PTR:
		put64(at(f, o - v->managed_values_before), 0, values_obj(f, vals, n));
		break;
	case INST_TAGGED:
		put64(at(f, o - v->managed_dict_before), 0, values_obj(f, vals, n) - 1);
		break;
	default:
		/* Inline after tp_basicsize (16): the header then values[]. */
		values = o + 16;
		at(f, values)[v->dv_capacity] = (uint8_t)n;
		at(f, values)[v->dv_valid] = 1;
		for (size_t i = 0; i < n; i++)
			put64(at(f, values), v->dv_values + 8 * i, vals[i]);
		break;
	}
	return o;
}

static const uint16_t unicode_name[] = {
	0xfc, 'n', 0xef, 'c', 'o', 'd', 'e', '-', 0x540d, 0x524d
};
static const char unicode_utf8[] = "\xc3\xbc" "n" "\xc3\xaf" "code-\xe5\x90\x8d\xe5\x89\x8d";

static void build(struct fake *f, const struct pyver *v, uint8_t *arena)
{
	uint64_t attr_keys[ARRAY_LEN(attrs)], shared, thr[NTHREADS], names[NTHREADS];
	uint64_t active_k[NTHREADS], active_v[NTHREADS], limbo_k[2], limbo_v[2];
	uint64_t mkeys[40], mvals[40], tkeys[5], tvals[5];
	size_t na = 0;
	bool managed = v->inst_dict != INST_DICTOFFSET;

	memset(f, 0, sizeof(*f));
	f->v = v;
	f->arena = arena;
	memset(arena, 0, ARENA_SIZE);
	f->dict_type = type_obj(f, v->tpf_dict_subclass, 48, 0);
	f->str_type = type_obj(f, v->tpf_unicode_subclass, (int64_t)v->compact_size, 0);
	f->long_type = type_obj(f, v->tpf_long_subclass, 24, 0);
	f->module_type = type_obj(f, 0, 48, 16);
	f->none_type = type_obj(f, 0, 16, 0);
	f->none = object(f, f->none_type, 16);
	f->plain_type = type_obj(f, 0, 32, 16);
	f->thread_type = type_obj(f, v->tpf_managed_dict | v->tpf_inline_values, 16,
				  managed ? -1 : 0);
	for (size_t i = 0; i < ARRAY_LEN(attrs); i++)
		attr_keys[i] = str_ascii(f, attrs[i]);
	shared = keys_obj(f, K_SPLIT, attr_keys, NULL, ARRAY_LEN(attrs));
	put64(at(f, f->thread_type), v->ht_cached_keys, shared);

	f->names[0] = "MainThread";
	f->names[1] = "alpha";
	f->names[2] = "beta-2";
	f->names[3] = unicode_utf8;
	f->names[4] = "in-a-dict";
	f->names[5] = "limbo-started";
	f->names[6] = "limbo-not-started";
	for (size_t i = 0; i < NTHREADS; i++) {
		f->idents[i] = 0x7f0000001000ull + 0x801000ull * i;
		f->listed[i] = i != 6;
		names[i] = i == 3 ? str_obj(f, unicode_name, ARRAY_LEN(unicode_name)) :
			str_ascii(f, f->names[i]);
		thr[i] = thread_obj(f, shared, attr_keys, names[i],
				    i == 6 ? f->none : long_value(f, f->idents[i]), i == 4);
	}
	for (size_t i = 0; i < 5; i++) {
		active_k[na] = long_value(f, f->idents[i]);
		active_v[na++] = thr[i];
	}
	limbo_k[0] = limbo_v[0] = thr[5];
	limbo_k[1] = limbo_v[1] = thr[6];

	/* threading's dict: a few other names around _active and _limbo */
	tkeys[0] = str_ascii(f, "__name__"), tvals[0] = str_ascii(f, "threading");
	tkeys[1] = str_ascii(f, "_active"), tvals[1] = combined(f, false, active_k, active_v, na);
	tkeys[2] = str_ascii(f, "_activ"), tvals[2] = f->none;
	tkeys[3] = str_ascii(f, "_limbo"), tvals[3] = combined(f, false, limbo_k, limbo_v, 2);
	tkeys[4] = str_ascii(f, "_active_limbo_lock"), tvals[4] = f->none;
	f->module = object(f, f->module_type, 48);
	put64(at(f, f->module), v->mod_dict, combined(f, true, tkeys, tvals, 5));

	/* sys.modules: "threading" among others, one of them a prefix of it */
	for (size_t i = 0; i < ARRAY_LEN(mkeys); i++) {
		char name[32];

		snprintf(name, sizeof(name), i == 7 ? "thread" : i == 8 ? "threadingx" : "mod%zu", i);
		mkeys[i] = str_ascii(f, name);
		mvals[i] = object(f, f->module_type, 48);
	}
	mkeys[31] = str_ascii(f, "threading");
	mvals[31] = f->module;
	mkeys[12] = 0;                          /* a deleted entry */
	f->interp = alloc(f, v->is_modules + 64);
	put64(at(f, f->interp), v->is_modules, combined(f, true, mkeys, mvals, ARRAY_LEN(mkeys)));
}

static struct pyproc *fake_proc(const struct pyver *v)
{
	struct pyproc *p = calloc(1, sizeof(*p));

	p->pid = getpid();
	p->v = *v;
	p->r = remote_open(p->pid, 64);
	return p;
}

static int names_of(struct pyproc *p, struct fake *f, struct pythread_name *out, size_t max,
		    size_t *n)
{
	remote_invalidate_all(p->r);
	return pythread_names(p, f->interp, out, max, n);
}

static const char *find(const struct pythread_name *out, size_t n, uint64_t ident)
{
	for (size_t i = 0; i < n; i++)
		if (out[i].ident == ident)
			return out[i].name;
	return NULL;
}

static void check_all_named(const struct fake *f, const struct pythread_name *out, size_t n)
{
	CHECK_EQ_INT(n, NTHREADS - 1);
	for (size_t i = 0; i < NTHREADS; i++) {
		const char *got = find(out, n, f->idents[i]);

		if (f->listed[i])
			CHECK_EQ_STR(got, f->names[i]);
		else
			CHECK(got == NULL);
	}
}

static void test_fake(const struct pyver *v, uint8_t *arena)
{
	struct fake f;
	struct pythread_name out[16];
	struct pyproc *p = fake_proc(v);
	size_t n = 99;
	uint64_t md;

	build(&f, v, arena);
	memset(out, 0x5a, sizeof(out));
	CHECK_EQ_INT(names_of(p, &f, out, ARRAY_LEN(out), &n), 0);
	check_all_named(&f, out, n);
	CHECK(p->names[0].interp == f.interp && p->names[0].module == f.module);

	/* Again, from the cache; then with a cache that no longer holds. */
	CHECK_EQ_INT(names_of(p, &f, out, ARRAY_LEN(out), &n), 0);
	check_all_named(&f, out, n);
	memcpy(&md, at(&f, f.module) + v->mod_dict, 8);
	put64(at(&f, f.module), v->mod_dict, 0);
	CHECK_EQ_INT(names_of(p, &f, out, ARRAY_LEN(out), &n), -PBP_E_CORRUPT);
	CHECK_EQ_INT(n, 0);
	CHECK(p->names[0].interp == 0);
	put64(at(&f, f.module), v->mod_dict, md);
	CHECK_EQ_INT(names_of(p, &f, out, ARRAY_LEN(out), &n), 0);
	check_all_named(&f, out, n);

	/* Room for two: two, and nothing written past them. */
	memset(out, 0x5a, sizeof(out));
	CHECK_EQ_INT(names_of(p, &f, out, 2, &n), 0);
	CHECK_EQ_INT(n, 2);
	CHECK(out[2].ident == 0x5a5a5a5a5a5a5a5aull);

	/* No threading module: sys.modules without it. */
	{
		uint64_t modules;

		memcpy(&modules, at(&f, f.interp) + v->is_modules, 8);
		put64(at(&f, f.interp), v->is_modules, 0);
		CHECK_EQ_INT(names_of(p, &f, out, ARRAY_LEN(out), &n), -PBP_E_NOENT);
		CHECK_EQ_INT(n, 0);
		put64(at(&f, f.interp), v->is_modules, 0x10);  /* unmapped */
		CHECK(names_of(p, &f, out, ARRAY_LEN(out), &n) < 0);
		put64(at(&f, f.interp), v->is_modules, modules);
	}
	CHECK_EQ_INT(pythread_names(p, 0, out, ARRAY_LEN(out), &n), -PBP_E_CORRUPT);
	remote_close(p->r);
	free(p);
}

/* A name checked from its Thread alone: a str renamed in place is told by its content; no str fails. */
static void test_same(const struct pyver *v, uint8_t *arena)
{
	struct fake f;
	struct pythread_name out[16];
	struct pyproc *p = fake_proc(v);
	uint64_t alpha = 0, str = 0;
	size_t n = 0;

	build(&f, v, arena);
	CHECK_EQ_INT(names_of(p, &f, out, ARRAY_LEN(out), &n), 0);
	for (size_t i = 0; i < n; i++)
		alpha = strcmp(out[i].name, "alpha") == 0 ? out[i].thread : alpha;
	CHECK(alpha && pythread_name_same(p, alpha, "alpha"));
	CHECK(!pythread_name_same(p, alpha, "beta-2") && !pythread_name_same(p, alpha, "alph"));
	CHECK(!pythread_name_same(p, 0, "alpha"));
	CHECK_EQ_INT(pyobj_attr(p, alpha, "_name", &str), 0);
	if (str) {
		at(&f, str)[v->ascii_size] = 'A';
		remote_invalidate_all(p->r);
		CHECK(!pythread_name_same(p, alpha, "alpha") && pythread_name_same(p, alpha, "Alpha"));
		put64(at(&f, str), v->ob_type, f.long_type);
		remote_invalidate_all(p->r);
		CHECK(!pythread_name_same(p, alpha, "Alpha"));
	}
	remote_close(p->r);
	free(p);
}

/* Damaged copies of the fake: any result but a crash, and only sane names. */
static void test_fuzz(const struct pyver *v, uint8_t *arena, unsigned rounds)
{
	struct fake f;
	struct pythread_name out[16];
	struct pyproc *p = fake_proc(v);
	uint8_t *pristine = malloc(ARENA_SIZE);
	unsigned ok = 0, found = 0;

	build(&f, v, arena);
	memcpy(pristine, arena, ARENA_SIZE);
	for (unsigned r = 0; r < rounds; r++) {
		unsigned edits = 1 + rnd() % 6;
		size_t n = 0;
		int err;

		memcpy(arena, pristine, f.used);
		for (unsigned e = 0; e < edits; e++) {
			size_t off = rnd() % f.used;
			size_t w = off & ~(size_t)7;

			switch (rnd() % 7) {
			case 0: arena[off] ^= (uint8_t)(1u << rnd() % 8); break;
			case 1: put64(arena, w, rnd()); break;
			case 2: put64(arena, w, (uint64_t)(uintptr_t)arena + rnd() % f.used); break;
			case 3: put64(arena, w, rnd() % 512); break;
			case 4: put64(arena, w, 0); break;
			case 5: arena[off] = (uint8_t)rnd(); break;
			default: put64(arena, w, ~0ull - rnd() % 64); break;
			}
		}
		/* Keep a cached lookup in play now and then. */
		if (rnd() % 4 == 0)
			memset(p->names, 0, sizeof(p->names));
		err = names_of(p, &f, out, ARRAY_LEN(out), &n);
		if (err == 0)
			ok++;
		CHECK(n <= ARRAY_LEN(out));
		for (size_t i = 0; i < n && i < ARRAY_LEN(out); i++) {
			CHECK(memchr(out[i].name, '\0', sizeof(out[i].name)) != NULL);
			found++;
		}
		if (err != 0 && n != 0)
			CHECK(err == 0);
	}
	/* Most damage misses what is read: the walk must still succeed then. */
	CHECK(ok > rounds / 4);
	CHECK(found > 0);
	memcpy(arena, pristine, f.used);
	free(pristine);
	remote_close(p->r);
	free(p);
}

int main(void)
{
	struct pyver vs[8];
	size_t nv = all_versions(vs, ARRAY_LEN(vs));
	uint8_t *arena = aligned_alloc(64, ARENA_SIZE);

	test_layout_facts(vs, nv);
	test_keys_decode(vs, nv);
	test_long_decode(vs, nv);
	test_scrub();
	for (size_t i = 0; i < nv; i++) {
		test_fake(&vs[i], arena);
		test_same(&vs[i], arena);
		test_fuzz(&vs[i], arena, 3000);
	}
	free(arena);
	return unit_done("threadname");
}
