/* SPDX-License-Identifier: MIT */
/*
 * pyver.c: the generated table for 3.6-3.12, and debugoffsets.c: the _Py_DebugOffsets reader
 * for 3.13+ checked against what offsetof() says on the same versions'
 * headers (the crosscheck block of gen/offsets.h) using real tables dumped
 * from those interpreters (data/debug_offsets_3.*.bin, by gen-offsets.sh).
 * Run from tests/unit.
 */
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>

#include "unit.h"
#include "pybpfprof.h"
#include "core/errors.h"
#include "cpython/debugoffsets.h"
#include "cpython/pyver.h"
#include "cpython/pystr.h"
#define PYVER_GEN_CROSSCHECK
#include "cpython/gen/offsets.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Byte positions in the 3.13 layout (pycore_runtime.h), for targeted damage. */
#define D13_VERSION 8
#define D13_FREE_THREADED 16
#define D13_INTERP 48           /* interpreter_state block */
#define D13_THREAD 152          /* thread_state block */
#define D13_FRAME 224           /* interpreter_frame block */
#define D13_CODE 272            /* code_object block */
#define D13_TYPE 368            /* type_object block */
#define D13_DICT 448            /* dict_object block */
#define D13_LONG 488            /* long_object block */
#define D13_UNICODE 536         /* unicode_object block */
#define D13_SIZE 584

static uint64_t xorshift_state = 0x9e3779b97f4a7c15ull;

/* Fixed-seed generator: the fuzz loop must be the same on every run. */
static uint64_t rnd(void)
{
	uint64_t x = xorshift_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return xorshift_state = x;
}

static void put64(uint8_t *blob, size_t off, uint64_t val)
{
	memcpy(blob + off, &val, sizeof(val));
}

static uint64_t get64(const uint8_t *blob, size_t off)
{
	uint64_t val;

	memcpy(&val, blob + off, sizeof(val));
	return val;
}

/* A generated "absent" is PYVER_NOOFF in struct pyver, PBP_NOOFF in the kernel's. */
static unsigned k_of(uint32_t gen)
{
	return gen == PYGEN_NONE ? PBP_NOOFF : gen;
}

static unsigned u8_of(uint32_t gen)
{
	return gen == PYGEN_NONE ? 0xff : gen;
}

static unsigned flag_of(uint32_t gen)
{
	return gen == PYGEN_NONE ? 0 : gen;
}

/*
 * Thread-name offsets. 3.8-3.10 headers do not lay out dict keys (nor, before
 * 3.10, modules): pyver.c's own values for those are checked here instead.
 */
static void check_names_against_gen(const struct pyver_gen *g, const struct pyver *v)
{
	bool old = g->minor <= 10;

	CHECK_EQ_INT(v->is_modules, g->is_modules);
	CHECK_EQ_INT(v->mod_dict, g->mod_dict == PYGEN_NONE ? 16 : g->mod_dict);
	CHECK_EQ_INT(g->mod_dict == PYGEN_NONE, g->minor <= 9);
	CHECK_EQ_INT(v->dict_keys, g->dict_keys);
	CHECK_EQ_INT(v->dict_values, g->dict_values);
	CHECK_EQ_INT(v->dk_size, old ? 8 : PYVER_NOOFF);
	CHECK_EQ_INT(v->dk_log2_size, g->dk_log2_size);
	CHECK_EQ_INT(v->dk_log2_index_bytes, g->dk_log2_index_bytes);
	CHECK_EQ_INT(v->dk_kind, g->dk_kind);
	CHECK_EQ_INT(v->dk_nentries, old ? 32 : g->dk_nentries);
	CHECK_EQ_INT(v->dk_indices, old ? 40 : g->dk_indices);
	CHECK_EQ_INT(v->de_size, old ? 24 : g->de_size);
	CHECK_EQ_INT(v->de_key, old ? 8 : g->de_key);
	CHECK_EQ_INT(v->de_value, old ? 16 : g->de_value);
	CHECK_EQ_INT(v->due_size, g->due_size);
	CHECK_EQ_INT(v->due_key, g->due_key);
	CHECK_EQ_INT(v->due_value, g->due_value);
	CHECK_EQ_INT(v->dv_values, old ? 0 : g->dv_values);
	CHECK_EQ_INT(v->dv_capacity, g->dv_capacity);
	CHECK_EQ_INT(v->dv_valid, g->dv_valid);
	CHECK_EQ_INT(v->tp_basicsize, g->tp_basicsize);
	CHECK_EQ_INT(v->tp_flags, g->tp_flags);
	CHECK_EQ_INT(v->tp_dictoffset, g->tp_dictoffset);
	CHECK_EQ_INT(v->ht_cached_keys, g->ht_cached_keys);
	CHECK_EQ_INT(v->tpf_managed_dict, flag_of(g->tpf_managed_dict));
	CHECK_EQ_INT(v->tpf_inline_values, flag_of(g->tpf_inline_values));
	CHECK_EQ_INT(v->tpf_long_subclass, g->tpf_long_subclass);
	CHECK_EQ_INT(v->tpf_unicode_subclass, g->tpf_unicode_subclass);
	CHECK_EQ_INT(v->tpf_dict_subclass, g->tpf_dict_subclass);
	CHECK_EQ_INT(v->managed_dict_before, g->managed_dict_before);
	CHECK_EQ_INT(v->managed_values_before, g->managed_values_before);
	CHECK_EQ_INT(v->long_size, g->long_size);
	CHECK_EQ_INT(v->long_digit, g->long_digit);
	CHECK_EQ_INT(v->long_shift, g->long_shift);
	CHECK_EQ_INT(v->long_tagged, g->minor >= 12);
	CHECK_EQ_INT(v->inst_dict, old ? INST_DICTOFFSET : g->minor == 11 ? INST_VALUES_PTR :
		     g->minor == 12 ? INST_TAGGED : INST_INLINE);
}

/* Everything offsetof() knows must come out of either path unchanged. */
static void check_against_gen(const struct pyver_gen *g, const struct pyver *v)
{
	CHECK_EQ_INT(v->major, 3);
	CHECK_EQ_INT(v->minor, g->minor);
	CHECK_EQ_INT(v->rt_interpreters_head, g->rt_interpreters_head);
	CHECK_EQ_INT(v->rt_gil, g->rt_gil);
	CHECK_EQ_INT(v->rt_size, g->rt_size);
	CHECK_EQ_INT(v->is_next, g->is_next);
	CHECK_EQ_INT(v->is_threads_head, g->is_threads_head);
	CHECK_EQ_INT(v->is_id, g->is_id);
	CHECK_EQ_INT(v->is_ceval_gil, g->is_ceval_gil);
	CHECK_EQ_INT(v->is_size, g->is_size);
	CHECK_EQ_INT(v->gil_locked, g->gil_locked);
	CHECK_EQ_INT(v->gil_last_holder, g->gil_last_holder);
	CHECK_EQ_INT(v->gil_mutex, g->gil_mutex);
	CHECK_EQ_INT(v->gil_cond, g->gil_cond);
	CHECK_EQ_INT(v->gil_size, g->gil_size);
	CHECK_EQ_INT(v->ts_next, g->ts_next);
	CHECK_EQ_INT(v->ts_interp, g->ts_interp);
	CHECK_EQ_INT(v->ts_thread_id, g->ts_thread_id);
	CHECK_EQ_INT(v->ts_native_thread_id, g->ts_native_thread_id);
	CHECK_EQ_INT(v->ts_size, g->ts_size);
	CHECK_EQ_INT(v->k.ts_frame, k_of(g->ts_frame));
	CHECK_EQ_INT(v->k.cframe_current, k_of(g->cframe_current));
	CHECK_EQ_INT(v->k.ts_datastack, k_of(g->ts_datastack_chunk));
	CHECK_EQ_INT(v->k.fr_previous, k_of(g->fr_previous));
	CHECK_EQ_INT(v->k.fr_code, k_of(g->fr_code));
	CHECK_EQ_INT(v->k.fr_instr, k_of(g->fr_instr));
	CHECK_EQ_INT(v->k.fr_owner, k_of(g->fr_owner));
	CHECK_EQ_INT(v->k.fr_is_entry, k_of(g->fr_is_entry));
	CHECK_EQ_INT(v->k.code_firstlineno, k_of(g->code_firstlineno));
	/* co_version, five ints past co_firstlineno, from 3.12 on (cpython/code.h) */
	CHECK_EQ_INT(v->k.code_key, g->minor >= 12 ? k_of(g->code_firstlineno) + 24 : k_of(g->code_name));
	CHECK_EQ_INT(v->k.owner_cstack, u8_of(g->owner_cstack));
	CHECK_EQ_INT(v->k.owner_interp, u8_of(g->owner_interp));
	CHECK_EQ_INT(v->k.exec_tag_bits, g->exec_tag_bits == PYGEN_NONE ? 0 : g->exec_tag_bits);
	CHECK_EQ_INT(v->k.instr_is_int, g->minor <= 10);
	CHECK_EQ_INT(v->fr_size, g->fr_size);
	CHECK_EQ_INT(v->code_filename, g->code_filename);
	CHECK_EQ_INT(v->code_name, g->code_name);
	CHECK_EQ_INT(v->code_qualname, g->code_qualname);
	CHECK_EQ_INT(v->code_linetable, g->code_linetable);
	CHECK_EQ_INT(v->code_code, g->code_code);
	CHECK_EQ_INT(v->code_code_adaptive, g->code_code_adaptive);
	CHECK_EQ_INT(v->code_size, g->code_size);
	CHECK_EQ_INT(v->ob_type, g->ob_type);
	CHECK_EQ_INT(v->bytes_size, g->bytes_size);
	CHECK_EQ_INT(v->bytes_sval, g->bytes_sval);
	CHECK_EQ_INT(v->unicode_state, g->unicode_state);
	CHECK_EQ_INT(v->unicode_length, g->unicode_length);
	CHECK_EQ_INT(v->ascii_size, g->ascii_size);
	CHECK_EQ_INT(v->compact_size, g->compact_size);
	CHECK_EQ_INT(v->lt_kind, g->minor <= 9 ? LT_LNOTAB :
		     g->minor == 10 ? LT_LINETABLE310 : LT_LOCATIONS);
	check_names_against_gen(g, v);
}

/* A field of width bytes lies inside the span the kernel copies. */
static bool in_span(uint16_t off, unsigned width, uint16_t lo, uint16_t len)
{
	return off != PBP_NOOFF && off >= lo && (unsigned)(off - lo) + width <= len;
}

/*
 * The kernel's spans: none (length 0), or 8-aligned, at most PBP_SPAN_MAX,
 * inside their object and holding every field read from them.
 */
static bool spans_ok(const struct pyver *v)
{
	const struct pbp_offsets *k = &v->k;
	bool fr = k->fr_span_len == 0 ||
		(k->fr_span_lo % 8 == 0 && k->fr_span_len <= PBP_SPAN_MAX &&
		 (uint32_t)k->fr_span_lo + k->fr_span_len <= v->fr_size &&
		 in_span(k->fr_previous, 8, k->fr_span_lo, k->fr_span_len) &&
		 in_span(k->fr_code, 8, k->fr_span_lo, k->fr_span_len) &&
		 in_span(k->fr_instr, k->instr_is_int ? 4 : 8, k->fr_span_lo, k->fr_span_len) &&
		 (k->fr_owner == PBP_NOOFF || in_span(k->fr_owner, 1, k->fr_span_lo, k->fr_span_len)));
	bool co = k->code_span_len == 0 ||
		(k->code_span_lo % 8 == 0 && k->code_span_len <= PBP_SPAN_MAX &&
		 (uint32_t)k->code_span_lo + k->code_span_len <= v->code_size &&
		 in_span(k->code_firstlineno, 4, k->code_span_lo, k->code_span_len) &&
		 in_span(k->code_key, 8, k->code_span_lo, k->code_span_len) &&
		 (k->code_hname == PBP_NOOFF || in_span(k->code_hname, 8, k->code_span_lo,
							 k->code_span_len)));

	return fr && co;
}

/* Facts each version must have whichever way its layout was found. */
static void check_version_facts(const struct pyver *v)
{
	bool has_iframe = v->minor >= 11;

	CHECK(v->k.ts_frame != PBP_NOOFF && v->k.fr_previous != PBP_NOOFF);
	CHECK(v->k.fr_code != PBP_NOOFF && v->k.fr_instr != PBP_NOOFF);
	CHECK(v->k.code_key != PBP_NOOFF && v->k.code_firstlineno != PBP_NOOFF);
	CHECK_EQ_INT(v->k.cframe_current != PBP_NOOFF, v->minor == 11 || v->minor == 12);
	CHECK_EQ_INT(v->k.fr_is_entry != PBP_NOOFF, v->minor == 11);
	CHECK_EQ_INT(v->k.fr_owner != PBP_NOOFF, has_iframe);
	/* 3.11+ frames live on data-stack chunks: the kernel copies them a window at a time. */
	CHECK_EQ_INT(v->k.ts_datastack != PBP_NOOFF, has_iframe);
	/* 3.14+ counts freed code objects: the kernel's code cache is on there only. */
	CHECK_EQ_INT(v->k.is_code_gen != PBP_NOOFF, v->minor >= 14);
	/* 3.13 counts code objects made, found only for a layout the probed table knows. */
	CHECK(v->minor == 13 || v->k.is_code_new == PBP_NOOFF);
	CHECK_EQ_INT(v->k.ts_interp, v->ts_interp);
	/* 3.6's GIL is statics found by symbol (process.c), not part of a version's layout */
	CHECK_EQ_INT(v->rt_gil != PYVER_NOOFF, v->minor >= 7 && v->minor <= 11);
	CHECK_EQ_INT(v->is_id != PYVER_NOOFF, v->minor >= 7);
	CHECK_EQ_INT(v->is_ceval_gil != PYVER_NOOFF, v->minor >= 12);
	CHECK_EQ_INT(v->ts_native_thread_id != PYVER_NOOFF, has_iframe);
	CHECK_EQ_INT(v->code_qualname != PYVER_NOOFF, has_iframe);
	CHECK_EQ_INT(v->code_code != PYVER_NOOFF, !has_iframe);
	CHECK_EQ_INT(v->code_code_adaptive != PYVER_NOOFF, has_iframe);
	CHECK_EQ_INT(v->k.owner_cstack, v->minor == 12 || v->minor == 13 ? 3 : v->minor == 14 ? 4 : 0xff);
	CHECK_EQ_INT(v->k.owner_interp, v->minor == 14 ? 3 : 0xff);
	CHECK_EQ_INT(v->k.exec_tag_bits, v->minor == 14 ? 3 : 0);
	CHECK_EQ_INT(v->from_debug_offsets, v->minor >= 13);
	/* Every kernel offset must leave room for what it reads. */
	CHECK(v->k.ts_frame + 8u <= v->ts_size);
	CHECK(v->k.ts_datastack == PBP_NOOFF || v->k.ts_datastack + 16u <= v->ts_size);
	CHECK(v->k.fr_previous + 8u <= v->fr_size && v->k.fr_code + 8u <= v->fr_size);
	CHECK(v->k.fr_instr + 4u <= v->fr_size);
	CHECK(v->k.code_key + 8u <= v->code_size && v->k.code_firstlineno + 4u <= v->code_size);
	CHECK(v->minor == 6 ||
	      (v->gil_locked + 4 <= v->gil_size && v->gil_last_holder + 8 <= v->gil_size));
	/* Every supported version gets both spans: the kernel's one-copy frame reads. */
	CHECK(spans_ok(v));
	CHECK(v->k.fr_span_len > 0 && v->k.code_span_len > 0);
}

static void test_table(void)
{
	struct pyver v;

	for (size_t i = 0; i < ARRAY_LEN(pyver_gen_table); i++) {
		const struct pyver_gen *g = &pyver_gen_table[i];

		CHECK_EQ_INT(pyver_from_table(3, g->minor, 4, &v), 0);
		CHECK_EQ_INT(v.micro, 4);
		CHECK_EQ_INT(v.hexversion, 0x03000000u | g->minor << 16 | 4 << 8 | 0xf0);
		check_against_gen(g, &v);
		check_version_facts(&v);
	}
	CHECK_EQ_INT(ARRAY_LEN(pyver_gen_table), 7);
	/* 3.13+ must come from the target; 3.5 and 2.x are not supported. */
	CHECK_EQ_INT(pyver_from_table(3, 13, 0, &v), -PBP_E_VERSION);
	CHECK_EQ_INT(pyver_from_table(3, 14, 0, &v), -PBP_E_VERSION);
	CHECK_EQ_INT(pyver_from_table(3, 5, 10, &v), -PBP_E_VERSION);
	CHECK_EQ_INT(pyver_from_table(2, 8, 0, &v), -PBP_E_VERSION);
	CHECK_EQ_INT(pyver_from_table(4, 8, 0, &v), -PBP_E_VERSION);
}

/* A few well-known values, so that a regenerated table that drifted shows. */
static void test_table_spot_values(void)
{
	struct pyver v;

	CHECK_EQ_INT(pyver_from_table(3, 6, 15, &v), 0);
	CHECK_EQ_INT(v.k.fr_instr, 120);        /* PyFrameObject.f_lasti */
	CHECK_EQ_INT(v.rt_interpreters_head, 0);        /* the static interp_head itself */
	CHECK_EQ_INT(v.lt_kind, LT_LNOTAB);
	CHECK_EQ_INT(pyver_from_table(3, 7, 16, &v), 0);
	CHECK_EQ_INT(v.k.fr_instr, 104);
	CHECK_EQ_INT(v.rt_gil, 1264);           /* _PyRuntime.ceval.gil */
	CHECK_EQ_INT(v.lt_kind, LT_LNOTAB);
	CHECK_EQ_INT(pyver_from_table(3, 8, 18, &v), 0);
	CHECK_EQ_INT(v.k.fr_instr, 104);        /* PyFrameObject.f_lasti */
	CHECK_EQ_INT(v.k.ts_frame, 24);
	CHECK_EQ_INT(pyver_from_table(3, 10, 13, &v), 0);
	CHECK_EQ_INT(v.k.fr_instr, 96);
	CHECK_EQ_INT(pyver_from_table(3, 11, 7, &v), 0);
	CHECK_EQ_INT(v.k.ts_frame, 56);         /* tstate->cframe */
	CHECK_EQ_INT(v.k.cframe_current, 8);
	CHECK_EQ_INT(v.k.fr_is_entry, 68);
	CHECK_EQ_INT(pyver_from_table(3, 12, 1, &v), 0);
	CHECK_EQ_INT(v.k.cframe_current, 0);
	CHECK_EQ_INT(v.k.fr_code, 0);
	CHECK_EQ_INT(v.gil_locked, 16);
	CHECK_EQ_INT(v.gil_mutex, 80);
}

/* Spans from known layouts: f_back .. f_lasti, owner-less and owned frames. */
static void test_span_values(void)
{
	struct pyver v;

	CHECK_EQ_INT(pyver_from_table(3, 8, 18, &v), 0);
	CHECK_EQ_INT(v.k.fr_span_lo, 24);       /* f_back */
	CHECK_EQ_INT(v.k.fr_span_len, 84);      /* to the end of the int f_lasti at 104 */
	CHECK_EQ_INT(v.k.code_span_lo, 40);     /* co_firstlineno */
	CHECK_EQ_INT(v.k.code_span_len, 80);    /* to the end of co_name at 112 */
	CHECK_EQ_INT(pyver_from_table(3, 11, 7, &v), 0);
	CHECK_EQ_INT(v.k.fr_span_lo, 32);       /* f_code */
	CHECK_EQ_INT(v.k.fr_span_len, 38);      /* to the owner byte at 69 */
	CHECK_EQ_INT(pyver_from_table(3, 12, 1, &v), 0);
	CHECK_EQ_INT(v.k.fr_span_lo, 0);
	CHECK_EQ_INT(v.k.fr_span_len, 71);
	CHECK_EQ_INT(v.k.code_span_lo, 64);     /* co_firstlineno at 68, aligned down */
	CHECK_EQ_INT(v.k.code_span_len, 36);    /* to the end of the 8 bytes read at co_version, 92 */
}

/* The real table of the interpreter each crosscheck entry was probed from. */
static uint8_t *load_fixture(unsigned minor, size_t *len)
{
	char path[64];

	snprintf(path, sizeof(path), "data/debug_offsets_3.%u.bin", minor);
	return unit_load_file(path, len);
}

static void test_crosscheck(void)
{
	for (size_t i = 0; i < ARRAY_LEN(pyver_gen_crosscheck); i++) {
		const struct pyver_gen *g = &pyver_gen_crosscheck[i];
		struct pyver v;
		size_t len;
		uint8_t *blob = load_fixture(g->minor, &len);

		CHECK(blob != NULL);
		if (!blob)
			continue;
		CHECK_EQ_INT(pyver_from_debug_offsets(blob, len, &v), 0);
		CHECK_EQ_INT(v.hexversion, g->hexversion);
		CHECK_EQ_INT(v.micro, g->micro);
		check_against_gen(g, &v);
		check_version_facts(&v);
		free(blob);
	}
	CHECK(ARRAY_LEN(pyver_gen_crosscheck) >= 1);
	CHECK_EQ_INT(pyver_gen_crosscheck[0].minor, 13);
}

/* Exact-size heap copy, so that ASan sees any read past len. */
static int parse_copy(const uint8_t *blob, size_t len, struct pyver *v)
{
	uint8_t *copy = malloc(len ? len : 1);
	int err;

	memcpy(copy, blob, len);
	err = pyver_from_debug_offsets(copy, len, v);
	free(copy);
	return err;
}

static int parse_with(const uint8_t *base, size_t len, size_t off, uint64_t val)
{
	uint8_t *copy = malloc(len);
	struct pyver v;
	int err;

	memcpy(copy, base, len);
	put64(copy, off, val);
	err = pyver_from_debug_offsets(copy, len, &v);
	free(copy);
	return err;
}

static void test_truncated(const uint8_t *b, size_t len)
{
	struct pyver v;

	CHECK_EQ_INT(pyver_from_debug_offsets(NULL, 0, &v), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_copy(b, 0, &v), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_copy(b, 8, &v), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_copy(b, 23, &v), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_copy(b, 24, &v), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_copy(b, len - 1, &v), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_copy(b, len, &v), 0);
	for (size_t n = 0; n < len; n += 7)
		CHECK_EQ_INT(parse_copy(b, n, &v), -PBP_E_CORRUPT);
}

static void test_header(const uint8_t *b, size_t len)
{
	uint8_t *copy = malloc(len);
	struct pyver v;

	memcpy(copy, b, len);
	copy[0] = 'y';
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), -PBP_E_CORRUPT);
	free(copy);
	/* 3.12 never had the table; 3.15's layout is unknown; 3.13 alphas moved it. */
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x030c01f0), -PBP_E_VERSION);
	/* 3.15 is tried with 3.14's 760-byte layout, which a 3.13 table cannot be */
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x030f00f0), -PBP_E_VERSION);
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x040d00f0), -PBP_E_VERSION);
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x030d00a1), -PBP_E_VERSION);
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x030d00b1), 0);
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x030d05c2), 0);
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x030d0000), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x1030d00f0ull), -PBP_E_CORRUPT);
	/* 3.14 in a 584-byte 3.13 table: too short for the 3.14 layout. */
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x030e00f0), -PBP_E_CORRUPT);
	/* 3.13t: no free-threaded layout known for 3.13, and said so apart from other versions */
	CHECK_EQ_INT(parse_with(b, len, D13_FREE_THREADED, 1), -PBP_E_FREETHREADED);
	CHECK_EQ_INT(parse_with(b, len, D13_FREE_THREADED, 2), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_FREE_THREADED, ~0ull), -PBP_E_CORRUPT);
}

static void test_bad_offsets(const uint8_t *b, size_t len)
{
	uint64_t frame_size = get64(b, D13_FRAME);
	uint64_t code_size = get64(b, D13_CODE);
	uint64_t gil = get64(b, D13_INTERP + 9 * 8);

	/* owner one past the end; instr_ptr whose 8 bytes straddle the end. */
	CHECK_EQ_INT(parse_with(b, len, D13_FRAME + 5 * 8, frame_size), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_FRAME + 3 * 8, frame_size - 4), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_FRAME + 3 * 8, frame_size - 8), 0);
	CHECK_EQ_INT(parse_with(b, len, D13_CODE + 2 * 8, code_size + 100), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_CODE + 2 * 8, ~0ull), -PBP_E_CORRUPT);
	/* A word the profiler never reads (gc) is still checked. */
	CHECK_EQ_INT(parse_with(b, len, D13_INTERP + 4 * 8, 1ull << 62), -PBP_E_CORRUPT);
	/* GIL fields before the GIL they belong to. */
	CHECK_EQ_INT(parse_with(b, len, D13_INTERP + 11 * 8, gil - 1), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_INTERP + 12 * 8, 0), -PBP_E_CORRUPT);
	/* A PyASCIIObject too small for its own length field. */
	CHECK_EQ_INT(parse_with(b, len, D13_UNICODE + 3 * 8, 8), -PBP_E_CORRUPT);
}

/*
 * Offsets that are valid but too far apart for one kernel copy leave that
 * span off (field reads), and never a span past the object.
 */
static void test_bad_spans(const uint8_t *b, size_t len)
{
	uint8_t *copy = malloc(len);
	struct pyver v;

	memcpy(copy, b, len);
	put64(copy, D13_FRAME, 4096);                   /* a bigger frame ... */
	put64(copy, D13_FRAME + 5 * 8, 4000);           /* ... whose owner is far off */
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), 0);
	CHECK_EQ_INT(v.k.fr_span_len, 0);
	CHECK(v.k.code_span_len > 0);
	CHECK(spans_ok(&v));
	memcpy(copy, b, len);
	put64(copy, D13_FRAME + 5 * 8, PBP_SPAN_MAX - 1);      /* owner at 255: 256 bytes from 0 */
	put64(copy, D13_FRAME, PBP_SPAN_MAX);
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), 0);
	CHECK_EQ_INT(v.k.fr_span_len, PBP_SPAN_MAX);
	CHECK(spans_ok(&v));
	memcpy(copy, b, len);
	put64(copy, D13_CODE, 4096);
	put64(copy, D13_CODE + 2 * 8, 1000);            /* co_name: not the key from 3.12 on */
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), 0);
	CHECK_EQ_INT(v.k.code_key, v.k.code_firstlineno + 24);   /* co_version */
	CHECK(v.k.code_span_len >= 32 && v.k.code_span_len <= 80);  /* to co_qualname, not co_name */
	CHECK_EQ_INT(v.k.code_hname, v.code_qualname);
	CHECK(v.k.fr_span_len > 0);
	CHECK(spans_ok(&v));
	free(copy);
}

/* Thread-name words that make no sense turn names off, never the profiler. */
static void test_bad_name_offsets(const uint8_t *b, size_t len)
{
	uint64_t is_size = get64(b, D13_INTERP), type_size = get64(b, D13_TYPE);
	uint8_t *copy = malloc(len);
	struct pyver v;

	CHECK_EQ_INT(pyver_from_debug_offsets(b, len, &v), 0);
	CHECK_EQ_INT(v.is_modules, get64(b, D13_INTERP + 5 * 8));
	CHECK_EQ_INT(v.tp_flags, get64(b, D13_TYPE + 3 * 8));
	CHECK_EQ_INT(v.dict_keys, get64(b, D13_DICT + 8));
	CHECK_EQ_INT(v.long_digit, get64(b, D13_LONG + 2 * 8));
	memcpy(copy, b, len);
	put64(copy, D13_INTERP + 5 * 8, is_size - 4);   /* imports_modules straddles the end */
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), 0);
	CHECK_EQ_INT(v.is_modules, PYVER_NOOFF);
	CHECK_EQ_INT(v.k.ts_frame, get64(b, D13_THREAD + 4 * 8));
	memcpy(copy, b, len);
	put64(copy, D13_TYPE + 3 * 8, type_size - 1);   /* tp_flags */
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), 0);
	CHECK_EQ_INT(v.is_modules, PYVER_NOOFF);
	memcpy(copy, b, len);
	put64(copy, D13_TYPE, 200);     /* a PyTypeObject too small for tp_dictoffset */
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), 0);
	CHECK_EQ_INT(v.is_modules, PYVER_NOOFF);
	memcpy(copy, b, len);
	put64(copy, D13_LONG + 2 * 8, get64(b, D13_LONG) - 2);  /* ob_digit */
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), 0);
	CHECK_EQ_INT(v.is_modules, PYVER_NOOFF);
	free(copy);
}

static void test_bad_sizes(const uint8_t *b, size_t len)
{
	CHECK_EQ_INT(parse_with(b, len, D13_THREAD, 0), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_THREAD, 1ull << 40), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_THREAD, ~0ull), -PBP_E_CORRUPT);
	/* 64 KiB: offsets could reach 0xffff, the kernel's "absent". */
	CHECK_EQ_INT(parse_with(b, len, D13_FRAME, 0x10000), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_FRAME, 0xffff), 0);
	CHECK_EQ_INT(parse_with(b, len, D13_INTERP, 1ull << 32), -PBP_E_CORRUPT);
	/* Sizes that cut off fields the profiler reads. */
	CHECK_EQ_INT(parse_with(b, len, D13_FRAME, 8), -PBP_E_CORRUPT);
	CHECK_EQ_INT(parse_with(b, len, D13_UNICODE, 41), -PBP_E_CORRUPT);
}

/* What the caller does: read pyver_debug_offsets_max() bytes whatever the version. */
static void test_longer_read(const uint8_t *b, size_t len)
{
	size_t max = pyver_debug_offsets_max();
	uint8_t *big = calloc(1, max);
	struct pyver v;

	CHECK_EQ_INT(max, 760);
	memcpy(big, b, len < max ? len : max);
	CHECK_EQ_INT(pyver_from_debug_offsets(big, max, &v), 0);
	CHECK_EQ_INT(v.minor, 13);
	free(big);
}

/*
 * A version bump on a real table: 3.14's own bytes saying 3.15 (or 3.99) are
 * read with 3.14's layout, flagged newer, without thread names; the same
 * bump on a table whose layout moved (a word inserted, as a new field of the
 * runtime block would) is an unsupported version, not corrupt and not read.
 */
static void test_newer(const uint8_t *b, size_t len)
{
	uint8_t *copy = malloc(len);
	struct pyver v14, v;

	CHECK_EQ_INT(pyver_from_debug_offsets(b, len, &v14), 0);
	CHECK(!v14.newer && v14.minor == 14 && v14.is_modules != PYVER_NOOFF);
	CHECK_EQ_INT(pyver_newest_minor(), 14);
	memcpy(copy, b, len);
	put64(copy, D13_VERSION, 0x030f02f0);
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), 0);
	CHECK(v.newer && v.major == 3 && v.minor == 15 && v.micro == 2);
	CHECK_EQ_INT(v.hexversion, 0x030f02f0);
	CHECK(pyver_supported(&v));
	CHECK(memcmp(&v.k, &v14.k, sizeof(v.k)) == 0);
	CHECK_EQ_INT(v.rt_interpreters_head, v14.rt_interpreters_head);
	CHECK_EQ_INT(v.ts_native_thread_id, v14.ts_native_thread_id);
	CHECK_EQ_INT(v.code_linetable, v14.code_linetable);
	CHECK_EQ_INT(v.is_modules, PYVER_NOOFF);
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x036300f0), 0);      /* 3.99 */
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x030f00b1), 0);      /* 3.15 beta */
	CHECK_EQ_INT(parse_with(b, len, D13_VERSION, 0x030f00a3), -PBP_E_VERSION);
	/* The same bump, with one more word at the start of the runtime block. */
	memmove(copy + 32, copy + 24, len - 32);
	put64(copy, 24, get64(b, 24) + 8);
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), -PBP_E_VERSION);
	/* A known version with the same damage is corrupt, as before. */
	put64(copy, D13_VERSION, 0x030e0af0);
	CHECK_EQ_INT(pyver_from_debug_offsets(copy, len, &v), -PBP_E_CORRUPT);
	free(copy);
}

/* A parse that succeeded must only ever hand out offsets inside their structs. */
static int sane(const struct pyver *v)
{
	const struct pbp_offsets *k = &v->k;

	return k->ts_frame < v->ts_size && k->fr_previous < v->fr_size &&
	       k->fr_code < v->fr_size && k->fr_instr < v->fr_size &&
	       k->fr_owner < v->fr_size && k->code_key < v->code_size &&
	       k->code_firstlineno < v->code_size && v->ts_thread_id < v->ts_size &&
	       v->is_threads_head < v->is_size && v->rt_interpreters_head < v->rt_size &&
	       v->code_code_adaptive < v->code_size && v->ascii_size < v->compact_size &&
	       (v->is_modules == PYVER_NOOFF || v->is_modules + 8 <= v->is_size) &&
	       spans_ok(v);
}

static void mutate(uint8_t *buf, size_t len, const uint8_t *orig)
{
	size_t nwords = len / 8;
	unsigned edits = 1 + rnd() % 4;

	for (unsigned e = 0; e < edits; e++) {
		size_t w = rnd() % nwords;
		uint64_t old = get64(orig, w * 8);

		switch (rnd() % 6) {
		case 0: buf[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8)); break;
		case 1: put64(buf, w * 8, rnd()); break;
		case 2: put64(buf, w * 8, old + 1 + rnd() % 16); break;
		case 3: put64(buf, w * 8, old ? old - 1 - rnd() % old : 0); break;
		case 4: put64(buf, w * 8, (uint64_t)1 << (rnd() % 64)); break;
		default: put64(buf, w * 8, rnd() % 0x20000); break;
		}
	}
}

/* 10k damaged tables: rejected or sane, never a crash or an out-of-bounds read. */
static void test_fuzz(const uint8_t *orig, size_t len)
{
	unsigned accepted = 0, insane = 0;

	for (int i = 0; i < 10000; i++) {
		size_t n = rnd() % 8 ? len : rnd() % (len + 1);
		uint8_t *buf = malloc(len);
		struct pyver v;
		int err;

		memcpy(buf, orig, len);
		mutate(buf, len, orig);
		err = pyver_from_debug_offsets(buf, n, &v);
		if (err == 0) {
			accepted++;
			insane += !sane(&v);
		} else if (err != -PBP_E_CORRUPT && err != -PBP_E_VERSION && err != -PBP_E_FREETHREADED) {
			insane++;
		}
		free(buf);
	}
	CHECK_EQ_INT(insane, 0);
	/* Harmless mutations must still pass, or the checks reject too much. */
	CHECK(accepted > 0);
}

/*
 * data/debug_offsets_3.14t.bin: the table a free-threaded 3.14.10 publishes,
 * from scripts/debug-offsets-blob.c compiled with -DPy_GIL_DISABLED against
 * sid's 3.14.10 headers (the same program without it gives, byte for byte,
 * data/debug_offsets_3.14.bin, read from the running 3.14.10). Its values
 * are those offsetof() gives on those headers.
 */
#define D14_FRAME 248
#define D14_CODE 312
#define D14_INTERP 48

static void test_free_threaded(const uint8_t *b14, const uint8_t *bt, size_t len)
{
	struct pyver v;

	CHECK_EQ_INT(get64(bt, D13_FREE_THREADED), 1);
	CHECK_EQ_INT(pyver_from_debug_offsets(bt, len, &v), 0);
	CHECK(v.free_threaded && v.minor == 14 && v.micro == 10 && !v.newer);
	CHECK(sane(&v));
	CHECK_EQ_INT(v.ob_type, 24);            /* ob_tid, flags, mutex, gc bits, refcounts first */
	CHECK_EQ_INT(v.fr_tlbc_index, 72);
	CHECK_EQ_INT(v.k.fr_owner, 78);
	CHECK_EQ_INT(v.k.fr_code, 0);
	CHECK_EQ_INT(v.k.fr_instr, 56);
	CHECK_EQ_INT(v.k.exec_tag_bits, 3);     /* covers the free-threaded Py_TAG_BITS, 1 */
	CHECK_EQ_INT(v.code_size, 240);
	CHECK_EQ_INT(v.code_tlbc, 224);
	CHECK_EQ_INT(v.code_code_adaptive, 232);
	CHECK_EQ_INT(v.k.code_firstlineno, 84);
	CHECK_EQ_INT(v.k.code_key, 108);        /* co_version, 24 past co_firstlineno */
	CHECK_EQ_INT(v.ascii_size, 56);
	CHECK_EQ_INT(v.bytes_sval, 48);
	/* The GIL struct starts with enabled; last_holder and locked move by 8. */
	CHECK_EQ_INT(v.gil_enabled, 0);
	CHECK_EQ_INT(v.gil_last_holder, 16);
	CHECK_EQ_INT(v.gil_locked, 24);
	CHECK_EQ_INT(v.gil_cond, PYVER_NOOFF);
	/* --native-leaf's detached test: offsetof(PyThreadState, state), 44 on 3.14.7t's headers. */
	CHECK_EQ_INT(v.ts_state, 44);
	/*
	 * A compact ASCII "abc" as the free-threaded build lays it out: state
	 * at 48 with interned a whole byte (1), so kind 1 at bit 8, compact at
	 * 11, ascii at 12 (a GIL build's bits 2, 5, 6 read kind 0 here).
	 */
	{
		uint8_t obj[64] = { 0 };
		uint32_t state = 1u | 1u << 8 | 1u << 11 | 1u << 12;
		int64_t len3 = 3;
		char out[8];

		CHECK_EQ_INT(v.unicode_kind_shift, 8);
		memcpy(obj + v.unicode_state, &state, 4);
		memcpy(obj + v.unicode_length, &len3, 8);
		memcpy(obj + v.ascii_size, "abc", 3);
		CHECK_EQ_INT(pystr_decode(&v, obj, sizeof(obj), out, sizeof(out)), 0);
		CHECK(strcmp(out, "abc") == 0);
	}
	/*
	 * Thread names: the table's sys.modules, with the free-threaded build's
	 * own module, type and managed-dict places (offsetof() on 3.14.7's
	 * headers with Py_GIL_DISABLED), not the GIL build's.
	 */
	CHECK(v.is_modules != PYVER_NOOFF);
	CHECK_EQ_INT(v.mod_dict, 32);
	CHECK_EQ_INT(v.tp_basicsize, 48);
	CHECK_EQ_INT(v.tp_dictoffset, 304);
	CHECK_EQ_INT(v.ht_cached_keys, 896);
	CHECK_EQ_INT(v.managed_dict_before, 8);
	CHECK_EQ_INT(v.dk_indices, 32);
	/* The GIL build's table saying free_threaded: its tlbc words are 0. */
	CHECK_EQ_INT(parse_with(b14, len, D13_FREE_THREADED, 1), -PBP_E_FREETHREADED);
	CHECK_EQ_INT(parse_with(bt, len, D14_FRAME + 7 * 8, 0), -PBP_E_FREETHREADED);
	CHECK_EQ_INT(parse_with(bt, len, D14_CODE + 10 * 8, 0), -PBP_E_FREETHREADED);
	CHECK_EQ_INT(parse_with(bt, len, D14_CODE + 10 * 8, 240), -PBP_E_CORRUPT);
	/* tlbc_index is 4 bytes: one that ends past the frame is refused. */
	CHECK_EQ_INT(parse_with(bt, len, D14_FRAME + 7 * 8, 86), -PBP_E_FREETHREADED);
	/* The GIL's enabled count must lie inside the interpreter. */
	CHECK_EQ_INT(parse_with(bt, len, D14_INTERP + 11 * 8, 1u << 20), -PBP_E_CORRUPT);
	/* A newer free-threaded version is never tried with 3.14's layout. */
	CHECK_EQ_INT(parse_with(bt, len, D13_VERSION, 0x030f00f0), -PBP_E_FREETHREADED);
	CHECK(pyver_from_debug_offsets(b14, len, &v) == 0 && !v.free_threaded);
	CHECK_EQ_INT(v.unicode_kind_shift, 2);
}

static void test_instr_offset(void)
{
	struct pyver v;

	CHECK_EQ_INT(pyver_from_table(3, 9, 18, &v), 0);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 10), 10);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 0xffffffffu), -1);    /* f_lasti -1 */
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 0xffffffffffffffffull), -1);
	CHECK_EQ_INT(pyver_from_table(3, 10, 13, &v), 0);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 10), 20);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 0), 0);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 0x7fffffff), -1);      /* absurd */
	CHECK_EQ_INT(pyver_from_table(3, 11, 7, &v), 0);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 0x1000 + v.code_code_adaptive + 6), 6);
	/* prev_instr before the first instruction: nothing has run yet. */
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 0x1000 + v.code_code_adaptive - 2), -1);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 0), -1);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x1000, 0x1000 + v.code_code_adaptive + (1ull << 40)), -1);
	CHECK_EQ_INT(pyver_instr_offset(&v, ~0ull - 8, 4), -1);
}

static void test_instr_offset_313(const uint8_t *b, size_t len)
{
	struct pyver v;

	CHECK_EQ_INT(pyver_from_debug_offsets(b, len, &v), 0);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x7f0000, 0x7f0000 + v.code_code_adaptive + 40), 40);
	CHECK_EQ_INT(pyver_instr_offset(&v, 0x7f0000, 0x7f0000), -1);
}

int main(void)
{
	size_t len13 = 0, len14 = 0, lent = 0;
	uint8_t *b13 = load_fixture(13, &len13);
	uint8_t *b14 = load_fixture(14, &len14);
	const char *path_t = "data/debug_offsets_3.14t.bin";
	uint8_t *bt;

	test_table();
	test_table_spot_values();
	test_span_values();
	test_crosscheck();
	test_instr_offset();
	CHECK(b13 != NULL && len13 == D13_SIZE);
	if (b13 && len13 == D13_SIZE) {
		test_truncated(b13, len13);
		test_header(b13, len13);
		test_bad_offsets(b13, len13);
		test_bad_spans(b13, len13);
		test_bad_sizes(b13, len13);
		test_bad_name_offsets(b13, len13);
		test_longer_read(b13, len13);
		test_instr_offset_313(b13, len13);
		test_fuzz(b13, len13);
	}
	CHECK(b14 != NULL && len14 == 760);
	if (b14 && len14 == 760) {
		test_truncated(b14, len14);
		test_newer(b14, len14);
		test_fuzz(b14, len14);
	}
	bt = unit_load_file(path_t, &lent);
	CHECK(bt != NULL && lent == 760);
	if (b14 && len14 == 760 && bt && lent == 760) {
		test_free_threaded(b14, bt, lent);
		test_fuzz(bt, lent);
	}
	free(b13);
	free(b14);
	free(bt);
	return unit_done("pyver");
}
