/* SPDX-License-Identifier: MIT */
/*
 * debugoffsets.c: CPython 3.13+ layouts, read from the target itself.
 *
 * CPython keeps a _Py_DebugOffsets table at the start of _PyRuntime for
 * out-of-process tools. That table is read from a process we do not
 * control, so it is treated as hostile input: every offset is checked
 * against the size its own table claims, and every size against what the
 * kernel's 16-bit offsets can hold, before anything is used.
 *
 * A release newer than the newest layout known here (3.15 when 3.14 is the
 * newest) is tried with that newest layout: it is used only if its table
 * validates the same way, and process.c then also requires every frame of
 * the target to decode with it (a code object, a name, a file, a line).
 * Otherwise it is an unsupported version, never a guess.
 */
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "cpython/debugoffsets.h"
#include "core/bytes.h"
#include "core/errors.h"
#include "cpython/pyver.h"
#include "cpython/gen/offsets.h"

/*
 * The blob is a run of uint64_t words in sub-structs. Sub-structs whose
 * first word is their C struct's sizeof() are "sized": every other word in
 * them is an offset into (or a size within) that struct.
 */
enum dsec {
	S_RUNTIME, S_INTERP, S_THREAD, S_FRAME, S_CODE, S_PYOBJECT, S_TYPE,
	S_TUPLE, S_LIST, S_SET, S_DICT, S_FLOAT, S_LONG, S_BYTES, S_UNICODE,
	S_GC, S_GEN,
	S__COUNT
};

/* The words this file reads. */
enum dfield {
	F_RT_INTERP_HEAD,
	F_IS_ID, F_IS_NEXT, F_IS_THREADS_HEAD, F_IS_CEVAL_GIL, F_IS_GIL,
	F_IS_GIL_LOCKED, F_IS_GIL_HOLDER, F_IS_CODE_GEN,
	F_TS_NEXT, F_TS_INTERP, F_TS_FRAME, F_TS_THREAD_ID, F_TS_NATIVE_ID, F_TS_DATASTACK,
	F_FR_PREVIOUS, F_FR_EXECUTABLE, F_FR_INSTR, F_FR_OWNER,
	F_CO_FILENAME, F_CO_NAME, F_CO_QUALNAME, F_CO_LINETABLE, F_CO_FIRSTLINENO,
	F_CO_ADAPTIVE,
	F_OB_TYPE, F_BY_SIZE, F_BY_SVAL, F_UN_STATE, F_UN_LENGTH, F_UN_ASCII_SIZE,
	F__COUNT
};

struct dsec_pos {
	uint16_t base;      /* byte offset of the sub-struct in the blob */
	uint8_t nwords;     /* words in it, the size word included; 0: absent */
};

struct dfield_pos {
	uint8_t sec;        /* enum dsec */
	uint8_t word;       /* index of the word in its sub-struct */
	uint8_t width;      /* bytes the target's field has: offset + width <= size */
};

/*
 * The words thread names read. Optional: when they make no sense the
 * profiler works on and only the names are lost (is_modules = NOOFF).
 */
enum nfield {
	N_IS_MODULES, N_TP_FLAGS, N_DICT_KEYS, N_DICT_VALUES, N_LONG_TAG, N_LONG_DIGIT,
	N__COUNT
};

/*
 * The words asyncio task graphs read (3.14+). Optional like thread names:
 * without them only `--async` is refused (async_ok false).
 */
enum afield {
	A_GEN_IFRAME, A_GEN_STATE, A_FR_STACKPOINTER, A_SET_USED, A_SET_TABLE, A_SET_MASK,
	A__COUNT
};

/*
 * What thread names need that _Py_DebugOffsets leaves out, from offsetof()
 * on the version's headers (the crosscheck block of gen/offsets.h, which the
 * unit tests compare these with).
 */
struct name_facts {
	uint32_t mod_dict;
	uint32_t dk_log2_size, dk_log2_index_bytes, dk_kind, dk_nentries, dk_indices;
	uint32_t de_size, de_key, de_value, due_size, due_key, due_value;
	uint32_t dv_capacity, dv_valid, dv_values;
	uint32_t tp_basicsize, tp_dictoffset, ht_cached_keys;
	uint32_t tpf_managed_dict, tpf_inline_values;
	uint32_t tpf_long_subclass, tpf_unicode_subclass, tpf_dict_subclass;
	uint32_t managed_dict_before, long_shift;
};

/*
 * pycore_dict.h, pycore_object.h (MANAGED_DICT_OFFSET, GIL build),
 * cpython/object.h, object.h and cpython/longintrepr.h of 3.13.0; the same
 * in 3.14.
 */
static const struct name_facts names_313 = {
	.mod_dict = 16,
	.dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	.dk_nentries = 24, .dk_indices = 32,
	.de_size = 24, .de_key = 8, .de_value = 16,
	.due_size = 16, .due_key = 0, .due_value = 8,
	.dv_capacity = 0, .dv_valid = 3, .dv_values = 8,
	.tp_basicsize = 32, .tp_dictoffset = 288, .ht_cached_keys = 880,
	.tpf_managed_dict = 1u << 4, .tpf_inline_values = 1u << 2,
	.tpf_long_subclass = 1u << 24, .tpf_unicode_subclass = 1u << 28,
	.tpf_dict_subclass = 1u << 29,
	.managed_dict_before = 24, .long_shift = 30,
};

/*
 * The same headers of 3.14.7 compiled with Py_GIL_DISABLED (a free-threaded
 * build): PyObject_HEAD is 16 bytes longer (ob_tid, ob_flags, ob_mutex,
 * ob_gc_bits, ob_ref_local, ob_ref_shared before ob_type), which moves what
 * follows a header, and the managed dict sits 8 bytes before the object, not
 * 24. Dict keys keep their places (dk_mutex fills the GIL build's padding).
 */
static const struct name_facts names_314t = {
	.mod_dict = 32,
	.dk_log2_size = 8, .dk_log2_index_bytes = 9, .dk_kind = 10,
	.dk_nentries = 24, .dk_indices = 32,
	.de_size = 24, .de_key = 8, .de_value = 16,
	.due_size = 16, .due_key = 0, .due_value = 8,
	.dv_capacity = 0, .dv_valid = 3, .dv_values = 8,
	.tp_basicsize = 48, .tp_dictoffset = 304, .ht_cached_keys = 896,
	.tpf_managed_dict = 1u << 4, .tpf_inline_values = 1u << 2,
	.tpf_long_subclass = 1u << 24, .tpf_unicode_subclass = 1u << 28,
	.tpf_dict_subclass = 1u << 29,
	.managed_dict_before = 8, .long_shift = 30,
};

/*
 * The words only a free-threaded (Py_GIL_DISABLED) build fills in: its GIL
 * build writes 0 there. gil_enabled is relative to the GIL struct, unlike
 * locked and holder, which are relative to the interpreter.
 */
enum tfield { T_FR_TLBC_INDEX, T_CO_TLBC, T_IS_GIL_ENABLED, T_TS_STATUS, T__COUNT };

/* One version's _Py_DebugOffsets, plus the facts its table leaves out. */
struct dlayout {
	unsigned minor;
	uint16_t size;                      /* sizeof(_Py_DebugOffsets) */
	struct dsec_pos sec[S__COUNT];
	struct dfield_pos field[F__COUNT];
	struct dfield_pos nfield[N__COUNT];
	struct dfield_pos afield[A__COUNT];     /* all zero: not in this version's table */
	struct dfield_pos tfield[T__COUNT];    /* all nwords 0: no free-threaded layout known */
	bool ft_known;
	const struct name_facts *names;
	const struct name_facts *names_ft;  /* the free-threaded build's, NULL: names off */
	uint8_t owner_cstack, owner_interp, exec_tag_bits;
};

/* Thread-name words placed alike in 3.13 and 3.14, sys.modules aside. */
#define COMMON_NFIELDS \
	[N_TP_FLAGS] = { S_TYPE, 3, 8 }, \
	[N_DICT_KEYS] = { S_DICT, 1, 8 }, \
	[N_DICT_VALUES] = { S_DICT, 2, 8 }, \
	[N_LONG_TAG] = { S_LONG, 1, 8 }, \
	[N_LONG_DIGIT] = { S_LONG, 2, 4 }

/*
 * Fields whose place is the same in 3.13 and 3.14. Widths are those of the C
 * fields (pointers and Py_ssize_t 8, ints 4, owner a char); a field read
 * through an inline array (ob_sval, co_code_adaptive) needs one element.
 */
#define COMMON_FIELDS \
	[F_RT_INTERP_HEAD] = { S_RUNTIME, 2, 8 }, \
	[F_IS_ID] = { S_INTERP, 1, 8 }, \
	[F_IS_NEXT] = { S_INTERP, 2, 8 }, \
	[F_IS_THREADS_HEAD] = { S_INTERP, 3, 8 }, \
	[F_TS_NEXT] = { S_THREAD, 2, 8 }, \
	[F_TS_INTERP] = { S_THREAD, 3, 8 }, \
	[F_TS_FRAME] = { S_THREAD, 4, 8 }, \
	[F_TS_THREAD_ID] = { S_THREAD, 5, 8 }, \
	[F_TS_NATIVE_ID] = { S_THREAD, 6, 8 }, \
	[F_TS_DATASTACK] = { S_THREAD, 7, 16 }, /* datastack_chunk, datastack_top after it */ \
	[F_FR_PREVIOUS] = { S_FRAME, 1, 8 }, \
	[F_FR_EXECUTABLE] = { S_FRAME, 2, 8 }, \
	[F_FR_INSTR] = { S_FRAME, 3, 8 }, \
	[F_FR_OWNER] = { S_FRAME, 5, 1 }, \
	[F_CO_FILENAME] = { S_CODE, 1, 8 }, \
	[F_CO_NAME] = { S_CODE, 2, 8 }, \
	[F_CO_QUALNAME] = { S_CODE, 3, 8 }, \
	[F_CO_LINETABLE] = { S_CODE, 4, 8 }, \
	[F_CO_FIRSTLINENO] = { S_CODE, 5, 4 }, \
	[F_CO_ADAPTIVE] = { S_CODE, 9, 2 }, \
	[F_OB_TYPE] = { S_PYOBJECT, 1, 8 }, \
	[F_BY_SIZE] = { S_BYTES, 1, 8 }, \
	[F_BY_SVAL] = { S_BYTES, 2, 1 }, \
	[F_UN_STATE] = { S_UNICODE, 1, 4 }, \
	[F_UN_LENGTH] = { S_UNICODE, 2, 8 }, \
	[F_UN_ASCII_SIZE] = { S_UNICODE, 3, 0 }

/* Include/internal/pycore_runtime.h of 3.13 (584 bytes). */
static const struct dlayout layout_313 = {
	.minor = 13,
	.size = 584,
	.sec = {
		[S_RUNTIME] = { 24, 3 }, [S_INTERP] = { 48, 13 },
		[S_THREAD] = { 152, 9 }, [S_FRAME] = { 224, 6 },
		[S_CODE] = { 272, 10 }, [S_PYOBJECT] = { 352, 2 },
		[S_TYPE] = { 368, 4 }, [S_TUPLE] = { 400, 3 },
		[S_LIST] = { 424, 3 }, [S_SET] = { 0, 0 },
		[S_DICT] = { 448, 3 }, [S_FLOAT] = { 472, 2 },
		[S_LONG] = { 488, 3 }, [S_BYTES] = { 512, 3 },
		[S_UNICODE] = { 536, 4 }, [S_GC] = { 568, 2 },
		[S_GEN] = { 0, 0 },
	},
	.field = {
		COMMON_FIELDS,
		[F_IS_CEVAL_GIL] = { S_INTERP, 8, 8 },
		[F_IS_GIL] = { S_INTERP, 9, 1 },
		[F_IS_GIL_LOCKED] = { S_INTERP, 11, 4 },
		[F_IS_GIL_HOLDER] = { S_INTERP, 12, 8 },
	},
	.nfield = {
		COMMON_NFIELDS,
		[N_IS_MODULES] = { S_INTERP, 5, 8 },
	},
	.names = &names_313,
	/* enum _frameowner in pycore_frame.h; f_executable is a plain PyObject *. */
	.owner_cstack = 3,
	.owner_interp = 0xff,
	.exec_tag_bits = 0,
};

/*
 * Include/internal/pycore_debug_offsets.h of 3.14 (760 bytes): threads_main,
 * code_object_generation and tlbc_generation join the interpreter block,
 * stackpointer and tlbc_index the frame, co_tlbc the code object, and set,
 * generator, llist_node and debugger_support blocks are added (the last two
 * carry no size word and are not read).
 */
static const struct dlayout layout_314 = {
	.minor = 14,
	.size = 760,
	.sec = {
		[S_RUNTIME] = { 24, 3 }, [S_INTERP] = { 48, 16 },
		[S_THREAD] = { 176, 9 }, [S_FRAME] = { 248, 8 },
		[S_CODE] = { 312, 11 }, [S_PYOBJECT] = { 400, 2 },
		[S_TYPE] = { 416, 4 }, [S_TUPLE] = { 448, 3 },
		[S_LIST] = { 472, 3 }, [S_SET] = { 496, 4 },
		[S_DICT] = { 528, 3 }, [S_FLOAT] = { 552, 2 },
		[S_LONG] = { 568, 3 }, [S_BYTES] = { 592, 3 },
		[S_UNICODE] = { 616, 4 }, [S_GC] = { 648, 2 },
		[S_GEN] = { 664, 4 },
	},
	.field = {
		COMMON_FIELDS,
		[F_IS_CEVAL_GIL] = { S_INTERP, 9, 8 },
		[F_IS_GIL] = { S_INTERP, 10, 1 },
		[F_IS_GIL_LOCKED] = { S_INTERP, 12, 4 },
		[F_IS_GIL_HOLDER] = { S_INTERP, 13, 8 },
		[F_IS_CODE_GEN] = { S_INTERP, 14, 8 },  /* code_object_generation */
	},
	.nfield = {
		COMMON_NFIELDS,
		[N_IS_MODULES] = { S_INTERP, 6, 8 },
	},
	/* gen_object {size, gi_name, gi_iframe, gi_frame_state}; frame's stackpointer; set_object. */
	.afield = {
		[A_GEN_IFRAME] = { S_GEN, 2, 8 },
		[A_GEN_STATE] = { S_GEN, 3, 1 },
		[A_FR_STACKPOINTER] = { S_FRAME, 6, 8 },
		[A_SET_USED] = { S_SET, 1, 8 },
		[A_SET_TABLE] = { S_SET, 2, 8 },
		[A_SET_MASK] = { S_SET, 3, 8 },
	},
	/* tlbc_index is an int32_t, co_tlbc a pointer, the GIL's enabled an int. */
	.tfield = {
		[T_FR_TLBC_INDEX] = { S_FRAME, 7, 4 },
		[T_CO_TLBC] = { S_CODE, 10, 8 },
		[T_IS_GIL_ENABLED] = { S_INTERP, 11, 4 },
		[T_TS_STATUS] = { S_THREAD, 8, 4 },
	},
	.ft_known = true,
	.names = &names_313,
	.names_ft = &names_314t,
	/*
	 * pycore_interpframe_structs.h: FRAME_OWNED_BY_INTERPRETER = 3 was put
	 * before FRAME_OWNED_BY_CSTACK, which moved to 4. pycore_stackref.h
	 * (GIL build): Py_TAG_BITS = 3, the mask of f_executable's tag bits;
	 * the free-threaded build's is 1, which the same mask clears.
	 */
	.owner_cstack = 4,
	.owner_interp = 3,
	.exec_tag_bits = 3,
};

static const struct dlayout *const layouts[] = { &layout_313, &layout_314 };

#define DEBUG_COOKIE "xdebugpy"
#define HDR_VERSION 8           /* byte offsets of the header words */
#define HDR_FREE_THREADED 16
#define HDR_SIZE 24

/* Sizes a sane build can have: a few KiB for objects, ~0.5 MiB seen for the two states. */
#define MAX_SMALL_SIZE 0xffffu  /* fits the kernel's __u16, whose 0xffff is NOOFF */
#define MAX_STATE_SIZE (16u << 20)

/*
 * struct _gil_runtime_state is not described by _Py_DebugOffsets beyond
 * locked and last_holder, but its GIL-build layout has not changed from 3.8
 * through 3.14 (checked with offsetof() on the 3.12, 3.13 and 3.14.10
 * headers): interval, last_holder, locked, switch_number, then the pthread
 * cond and mutex. When a target's locked and last_holder sit where that
 * layout puts them, the cond and mutex offsets are taken from it too.
 */
#define GIL_LAST_HOLDER 8u
#define GIL_LOCKED 16u
#define GIL_COND 32u
#define GIL_MUTEX 80u
#define GIL_SIZE 208u

/* Non-ASCII compact strings add utf8_length and utf8 (3.12+: no wstr). */
#define COMPACT_EXTRA 16u

static uint64_t dword(const uint8_t *blob, const struct dlayout *l, enum dsec s, unsigned i)
{
	return load_u64(blob, l->sec[s].base + 8u * i);
}

static uint64_t dfield(const uint8_t *blob, const struct dlayout *l, enum dfield f)
{
	return dword(blob, l, l->field[f].sec, l->field[f].word);
}

static uint64_t max_size(enum dsec s)
{
	return s == S_RUNTIME || s == S_INTERP ? MAX_STATE_SIZE : MAX_SMALL_SIZE;
}

/* Every word of a sized sub-struct must lie inside the size it claims. */
static int check_sections(const uint8_t *blob, const struct dlayout *l)
{
	for (int s = 0; s < S__COUNT; s++) {
		uint64_t size;

		if (!l->sec[s].nwords)
			continue;
		size = dword(blob, l, s, 0);
		if (size == 0 || size > max_size(s))
			return -PBP_E_CORRUPT;
		for (unsigned i = 1; i < l->sec[s].nwords; i++)
			if (dword(blob, l, s, i) >= size)
				return -PBP_E_CORRUPT;
	}
	return 0;
}

/* The fields read must fit whole, not just start, inside their struct. */
static int check_fields(const uint8_t *blob, const struct dlayout *l)
{
	for (int f = 0; f < F__COUNT; f++) {
		const struct dfield_pos *p = &l->field[f];

		if (dfield(blob, l, f) + p->width > dword(blob, l, p->sec, 0))
			return -PBP_E_CORRUPT;
	}
	return 0;
}

#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

/*
 * Decode PY_VERSION_HEX; 3.13 and 3.14 betas onward (alphas moved the layout).
 * A release newer than the newest known (*newer) is tried with the newest
 * layout: only a table that then validates is used (and, in process.c,
 * only if every frame of the target decodes with it).
 */
static int check_version(uint64_t ver, const struct dlayout **lp, bool *newer)
{
	unsigned major = ver >> 24 & 0xff, minor = ver >> 16 & 0xff, level = ver >> 4 & 0xf;

	*newer = false;
	if (ver >> 32)
		return -PBP_E_CORRUPT;
	if (level != 0xa && level != 0xb && level != 0xc && level != 0xf)
		return -PBP_E_CORRUPT;
	if (major != 3 || level == 0xa)
		return -PBP_E_VERSION;
	for (size_t i = 0; i < NLAYOUTS; i++) {
		if (minor == layouts[i]->minor) {
			*lp = layouts[i];
			return 0;
		}
	}
	if (minor < layouts[NLAYOUTS - 1]->minor)
		return -PBP_E_VERSION;
	*lp = layouts[NLAYOUTS - 1];
	*newer = true;
	return 0;
}

static int check_header(const uint8_t *blob, size_t len, const struct dlayout **lp, bool *newer,
			bool *free_threaded)
{
	uint64_t ft;
	int err;

	if (!blob || len < HDR_SIZE || memcmp(blob, DEBUG_COOKIE, 8) != 0)
		return -PBP_E_CORRUPT;
	err = check_version(load_u64(blob, HDR_VERSION), lp, newer);
	if (err)
		return err;
	/*
	 * Free-threaded builds lay out objects and frames differently: only a
	 * known version whose free-threaded words are known is read (debug_ft).
	 */
	ft = load_u64(blob, HDR_FREE_THREADED);
	if (ft > 1)
		return -PBP_E_CORRUPT;
	if (ft && (*newer || !(*lp)->ft_known))
		return -PBP_E_FREETHREADED;
	*free_threaded = ft == 1;
	if (len < (*lp)->size)
		return *newer ? -PBP_E_VERSION : -PBP_E_CORRUPT;
	return 0;
}

/* Offsets relative to the struct _gil_runtime_state embedded in the interpreter. */
static int debug_gil(const uint8_t *blob, const struct dlayout *l, struct pyver *v)
{
	uint64_t gil = dfield(blob, l, F_IS_GIL);
	uint64_t locked = dfield(blob, l, F_IS_GIL_LOCKED);
	uint64_t holder = dfield(blob, l, F_IS_GIL_HOLDER);

	if (locked < gil || holder < gil)
		return -PBP_E_CORRUPT;
	v->is_ceval_gil = (uint32_t)dfield(blob, l, F_IS_CEVAL_GIL);
	v->gil_locked = (uint32_t)(locked - gil);
	v->gil_last_holder = (uint32_t)(holder - gil);
	if (v->gil_locked == GIL_LOCKED && v->gil_last_holder == GIL_LAST_HOLDER &&
	    gil + GIL_SIZE <= v->is_size) {
		v->gil_cond = GIL_COND;
		v->gil_mutex = GIL_MUTEX;
		v->gil_size = GIL_SIZE;
	} else {
		/* An unknown GIL layout: only what the table vouches for. */
		v->gil_cond = PYVER_NOOFF;
		v->gil_mutex = PYVER_NOOFF;
		v->gil_size = (v->gil_locked + 4 > v->gil_last_holder + 8) ?
			v->gil_locked + 4 : v->gil_last_holder + 8;
	}
	return 0;
}

static void debug_states(const uint8_t *blob, const struct dlayout *l, struct pyver *v)
{
	v->rt_interpreters_head = (uint32_t)dfield(blob, l, F_RT_INTERP_HEAD);
	v->rt_gil = PYVER_NOOFF;
	v->rt_size = (uint32_t)dword(blob, l, S_RUNTIME, 0);
	v->is_next = (uint32_t)dfield(blob, l, F_IS_NEXT);
	v->is_threads_head = (uint32_t)dfield(blob, l, F_IS_THREADS_HEAD);
	v->is_id = (uint32_t)dfield(blob, l, F_IS_ID);
	v->is_size = (uint32_t)dword(blob, l, S_INTERP, 0);
	v->ts_next = (uint32_t)dfield(blob, l, F_TS_NEXT);
	v->ts_interp = (uint32_t)dfield(blob, l, F_TS_INTERP);
	v->ts_thread_id = (uint32_t)dfield(blob, l, F_TS_THREAD_ID);
	v->ts_native_thread_id = (uint32_t)dfield(blob, l, F_TS_NATIVE_ID);
	v->ts_size = (uint32_t)dword(blob, l, S_THREAD, 0);
}

/*
 * 3.13: where the interpreter counts the code objects it made (its
 * func_state.next_version, which _Py_DebugOffsets does not give), as the
 * headers the table was probed from put it, for a target whose interpreter
 * block gives every word those headers give: a micro version that moved a
 * field (3.13.18's interpreter is 16 bytes larger than 3.13.0's) gets no
 * kernel code-object cache rather than a count read from the wrong place.
 */
static __u16 code_new_offset(const uint8_t *blob, const struct dlayout *l)
{
	for (size_t i = 0; i < sizeof(code_new_table) / sizeof(code_new_table[0]); i++) {
		const struct code_new_gen *g = &code_new_table[i];
		bool same = g->minor == l->minor && g->is_code_new < PBP_NOOFF &&
			    l->sec[S_INTERP].nwords >= CODE_NEW_WORDS;

		for (unsigned w = 0; same && w < CODE_NEW_WORDS; w++)
			same = dword(blob, l, S_INTERP, w) == g->words[w];
		if (same)
			return (__u16)g->is_code_new;
	}
	return PBP_NOOFF;
}

/* check_sections() bounded these by MAX_SMALL_SIZE, so they fit 16 bits. */
static void debug_kernel(const uint8_t *blob, const struct dlayout *l, struct pbp_offsets *k)
{
	k->ts_frame = (__u16)dfield(blob, l, F_TS_FRAME);
	k->cframe_current = PBP_NOOFF;
	k->fr_previous = (__u16)dfield(blob, l, F_FR_PREVIOUS);
	k->fr_code = (__u16)dfield(blob, l, F_FR_EXECUTABLE);
	k->fr_instr = (__u16)dfield(blob, l, F_FR_INSTR);
	k->fr_owner = (__u16)dfield(blob, l, F_FR_OWNER);
	k->fr_is_entry = PBP_NOOFF;
	k->code_firstlineno = (__u16)dfield(blob, l, F_CO_FIRSTLINENO);
	k->code_key = pyver_code_key(l->minor, k->code_firstlineno, (__u16)dfield(blob, l, F_CO_NAME));
	k->instr_is_int = 0;
	k->owner_cstack = l->owner_cstack;
	k->owner_interp = l->owner_interp;
	k->exec_tag_bits = l->exec_tag_bits;
	k->ts_datastack = (__u16)dfield(blob, l, F_TS_DATASTACK);
	k->ts_interp = (__u16)dfield(blob, l, F_TS_INTERP);
	/* 3.14+ counts freed code objects; the interpreter is large: the count may lie past 16 bits. */
	k->is_code_gen = PBP_NOOFF;
	if (l->field[F_IS_CODE_GEN].width && dfield(blob, l, F_IS_CODE_GEN) < PBP_NOOFF)
		k->is_code_gen = (__u16)dfield(blob, l, F_IS_CODE_GEN);
	k->is_code_new = k->is_code_gen == PBP_NOOFF ? code_new_offset(blob, l) : PBP_NOOFF;
	pyver_name_hash(k, l->minor, (uint32_t)dfield(blob, l, F_CO_QUALNAME),
			(uint32_t)dfield(blob, l, F_UN_LENGTH));
	pyver_kernel_spans(k, (uint32_t)dword(blob, l, S_FRAME, 0), (uint32_t)dword(blob, l, S_CODE, 0));
}

static int debug_objects(const uint8_t *blob, const struct dlayout *l, struct pyver *v)
{
	uint64_t unicode_size = dword(blob, l, S_UNICODE, 0);
	uint64_t ascii = dfield(blob, l, F_UN_ASCII_SIZE);

	v->fr_size = (uint32_t)dword(blob, l, S_FRAME, 0);
	v->code_filename = (uint32_t)dfield(blob, l, F_CO_FILENAME);
	v->code_name = (uint32_t)dfield(blob, l, F_CO_NAME);
	v->code_qualname = (uint32_t)dfield(blob, l, F_CO_QUALNAME);
	v->code_linetable = (uint32_t)dfield(blob, l, F_CO_LINETABLE);
	v->code_code = PYVER_NOOFF;
	v->code_code_adaptive = (uint32_t)dfield(blob, l, F_CO_ADAPTIVE);
	v->code_size = (uint32_t)dword(blob, l, S_CODE, 0);
	v->ob_type = (uint32_t)dfield(blob, l, F_OB_TYPE);
	v->bytes_size = (uint32_t)dfield(blob, l, F_BY_SIZE);
	v->bytes_sval = (uint32_t)dfield(blob, l, F_BY_SVAL);
	v->unicode_state = (uint32_t)dfield(blob, l, F_UN_STATE);
	v->unicode_length = (uint32_t)dfield(blob, l, F_UN_LENGTH);
	/* PyASCIIObject must hold state and length; PyUnicodeObject the compact header. */
	if (v->unicode_state + 4 > ascii || v->unicode_length + 8 > ascii ||
	    ascii + COMPACT_EXTRA > unicode_size)
		return -PBP_E_CORRUPT;
	v->ascii_size = (uint32_t)ascii;
	v->compact_size = (uint32_t)ascii + COMPACT_EXTRA;
	v->unicode_kind_shift = 2;     /* debug_ft() moves it for a free-threaded build */
	return 0;
}

/* A word of a sized sub-struct that must hold a field of width bytes. */
static bool pos_ok(const uint8_t *blob, const struct dlayout *l, const struct dfield_pos *p)
{
	/* check_sections() bounded the word by the size, the size by MAX_*_SIZE. */
	return l->sec[p->sec].nwords > p->word &&
	       dword(blob, l, p->sec, p->word) + p->width <= dword(blob, l, p->sec, 0);
}

/*
 * A free-threaded table must fill in what only such a build has: a table
 * that says free_threaded with those words 0 (a GIL build's) or out of
 * their structs is of no build we can read.
 */
static int debug_ft(const uint8_t *blob, const struct dlayout *l, struct pyver *v)
{
	const struct dfield_pos *t = l->tfield;
	uint64_t gil = dfield(blob, l, F_IS_GIL);

	for (int f = 0; f < T__COUNT; f++)
		if (!pos_ok(blob, l, &t[f]))
			return -PBP_E_VERSION;
	v->fr_tlbc_index = (uint32_t)dword(blob, l, t[T_FR_TLBC_INDEX].sec, t[T_FR_TLBC_INDEX].word);
	v->code_tlbc = (uint32_t)dword(blob, l, t[T_CO_TLBC].sec, t[T_CO_TLBC].word);
	v->gil_enabled = (uint32_t)dword(blob, l, t[T_IS_GIL_ENABLED].sec, t[T_IS_GIL_ENABLED].word);
	/*
	 * cpython/pystate.h (3.14): the 4-byte _status bitfield, then int
	 * holds_gil, int _whence, int state. The table names _status only.
	 */
	v->ts_state = (uint32_t)dword(blob, l, t[T_TS_STATUS].sec, t[T_TS_STATUS].word) + 12;
	if (!v->fr_tlbc_index || !v->code_tlbc || gil + v->gil_enabled + 4 > v->is_size ||
	    v->ts_state + 4 > v->ts_size)
		return -PBP_E_VERSION;
	v->free_threaded = true;
	/* cpython/unicodeobject.h: interned is a whole unsigned char there, not 2 bits. */
	v->unicode_kind_shift = 8;
	return 0;
}

static bool nfield_ok(const uint8_t *blob, const struct dlayout *l, enum nfield f)
{
	return pos_ok(blob, l, &l->nfield[f]);
}

static uint32_t nword(const uint8_t *blob, const struct dlayout *l, enum nfield f)
{
	return (uint32_t)dword(blob, l, l->nfield[f].sec, l->nfield[f].word);
}

/*
 * Thread names: words from the table, the rest from l->names. A table that
 * does not agree leaves names off (is_modules NOOFF), never the profiler.
 */
static void debug_names(const uint8_t *blob, const struct dlayout *l, const struct name_facts *nf,
			struct pyver *v)
{
	uint64_t type_size = dword(blob, l, S_TYPE, 0);

	v->is_modules = PYVER_NOOFF;
	for (int f = 0; f < N__COUNT; f++)
		if (!nfield_ok(blob, l, f))
			return;
	/* PyTypeObject must hold the fields read; PyHeapTypeObject follows it. */
	if (nf->tp_basicsize + 8 > type_size || nf->tp_dictoffset + 8 > type_size ||
	    nword(blob, l, N_TP_FLAGS) + 8 > type_size || nf->ht_cached_keys < type_size ||
	    nf->ht_cached_keys > type_size + 1024)
		return;
	v->mod_dict = nf->mod_dict;
	v->dict_keys = nword(blob, l, N_DICT_KEYS);
	v->dict_values = nword(blob, l, N_DICT_VALUES);
	v->dk_size = PYVER_NOOFF;
	v->dk_log2_size = nf->dk_log2_size;
	v->dk_log2_index_bytes = nf->dk_log2_index_bytes;
	v->dk_kind = nf->dk_kind;
	v->dk_nentries = nf->dk_nentries;
	v->dk_indices = nf->dk_indices;
	v->de_size = nf->de_size;
	v->de_key = nf->de_key;
	v->de_value = nf->de_value;
	v->due_size = nf->due_size;
	v->due_key = nf->due_key;
	v->due_value = nf->due_value;
	v->dv_capacity = nf->dv_capacity;
	v->dv_valid = nf->dv_valid;
	v->dv_values = nf->dv_values;
	v->tp_basicsize = nf->tp_basicsize;
	v->tp_flags = nword(blob, l, N_TP_FLAGS);
	v->tp_dictoffset = nf->tp_dictoffset;
	v->ht_cached_keys = nf->ht_cached_keys;
	v->tpf_managed_dict = nf->tpf_managed_dict;
	v->tpf_inline_values = nf->tpf_inline_values;
	v->tpf_long_subclass = nf->tpf_long_subclass;
	v->tpf_unicode_subclass = nf->tpf_unicode_subclass;
	v->tpf_dict_subclass = nf->tpf_dict_subclass;
	v->managed_dict_before = nf->managed_dict_before;
	v->managed_values_before = PYVER_NOOFF;
	v->inst_dict = INST_INLINE;
	v->long_size = nword(blob, l, N_LONG_TAG);
	v->long_digit = nword(blob, l, N_LONG_DIGIT);
	v->long_shift = nf->long_shift;
	v->long_tagged = true;
	v->is_modules = nword(blob, l, N_IS_MODULES);
}

static bool afield_ok(const uint8_t *blob, const struct dlayout *l, enum afield f)
{
	const struct dfield_pos *p = &l->afield[f];

	return p->width && l->sec[p->sec].nwords > p->word &&
	       dword(blob, l, p->sec, p->word) + p->width <= dword(blob, l, p->sec, 0);
}

/*
 * Coroutines and sets for asyncio task graphs, when this version's table has
 * them (3.14) and they agree: a coroutine's frame must fit whole inside it.
 */
static void debug_async(const uint8_t *blob, const struct dlayout *l, struct pyver *v)
{
	v->async_ok = false;
	for (int f = 0; f < A__COUNT; f++)
		if (!afield_ok(blob, l, f))
			return;
	v->gen_iframe = (uint32_t)dword(blob, l, S_GEN, 2);
	v->gen_frame_state = (uint32_t)dword(blob, l, S_GEN, 3);
	v->fr_stackpointer = (uint32_t)dword(blob, l, S_FRAME, 6);
	v->set_used = (uint32_t)dword(blob, l, S_SET, 1);
	v->set_table = (uint32_t)dword(blob, l, S_SET, 2);
	v->set_mask = (uint32_t)dword(blob, l, S_SET, 3);
	if ((uint64_t)v->gen_iframe + v->fr_size > dword(blob, l, S_GEN, 0))
		return;
	v->async_ok = true;
}

static int debug_layout(const uint8_t *b, const struct dlayout *l, bool ft, struct pyver *out)
{
	int err = check_sections(b, l);

	if (!err)
		err = check_fields(b, l);
	if (err)
		return err;
	debug_states(b, l, out);
	err = debug_gil(b, l, out);
	if (!err)
		err = debug_objects(b, l, out);
	if (!err && ft)
		err = debug_ft(b, l, out);
	if (err)
		return err;
	debug_kernel(b, l, &out->k);
	debug_async(b, l, out);
	/*
	 * Thread names rest on facts the table does not give (dict and module
	 * layouts): for a newer version, or objects with a debug build's
	 * Py_TRACE_REFS header (ob_type not at 8, or 24 free-threaded), they
	 * are left off.
	 */
	if (!out->newer && !ft && out->ob_type == 8)
		debug_names(b, l, l->names, out);
	else if (!out->newer && ft && l->names_ft && out->ob_type == 24)
		debug_names(b, l, l->names_ft, out);
	else
		out->is_modules = PYVER_NOOFF;
	return 0;
}

int pyver_from_debug_offsets(const void *blob, size_t len, struct pyver *v)
{
	const uint8_t *b = blob;
	const struct dlayout *l = NULL;
	struct pyver out;
	uint64_t ver;
	bool newer = false, ft = false;
	int err;

	err = check_header(b, len, &l, &newer, &ft);
	if (err)
		return err;
	memset(&out, 0, sizeof(out));
	ver = load_u64(b, HDR_VERSION);
	out.major = 3;
	out.minor = ver >> 16 & 0xff;
	out.micro = ver >> 8 & 0xff;
	out.hexversion = (uint32_t)ver;
	out.from_debug_offsets = true;
	out.newer = newer;
	err = debug_layout(b, l, ft, &out);
	/* A newer version whose table does not fit the newest layout: not one we can read. */
	if (err == -PBP_E_VERSION && ft)
		return -PBP_E_FREETHREADED;     /* says free-threaded, and is not one we read */
	if (err)
		return newer ? -PBP_E_VERSION : err;
	out.lt_kind = LT_LOCATIONS;
	*v = out;
	return 0;
}

unsigned pyver_newest_minor(void)
{
	return layouts[NLAYOUTS - 1]->minor;
}

size_t pyver_debug_offsets_max(void)
{
	size_t max = 0;

	for (size_t i = 0; i < NLAYOUTS; i++)
		if (layouts[i]->size > max)
			max = layouts[i]->size;
	return max;
}
