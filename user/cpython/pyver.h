/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_PYVER_H
#define PBP_CPYTHON_PYVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pybpfprof.h"

/*
 * Everything this program knows about one CPython version's memory layout.
 * All per-version knowledge lives in pyver.c with the generated table it
 * includes (user/cpython/gen/offsets.h), and for 3.13+ in debugoffsets.c.
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

	/*
	 * Free-threaded (3.14t, from _Py_DebugOffsets): a frame's instr_ptr is in
	 * its thread's copy of the bytecode, entries[tlbc_index] of the code
	 * object's co_tlbc array (entry 0: co_code_adaptive). Valid when set.
	 */
	bool free_threaded;
	uint32_t fr_tlbc_index;     /* int32_t _PyInterpreterFrame.tlbc_index */
	uint32_t code_tlbc;         /* _PyCodeArray *PyCodeObject.co_tlbc */
	uint32_t gil_enabled;       /* int enabled, relative to the GIL struct: 0 = no GIL */
	uint32_t ts_state;          /* int PyThreadState.state: 1 attached, 0 detached */

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
	/*
	 * Where kind:3, compact:1, ascii:1 start in the state word: after
	 * interned:2 (2), or after the free-threaded build's unsigned char
	 * interned, which it reads atomically (8).
	 */
	uint8_t unicode_kind_shift;

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

	/*
	 * asyncio task graphs (3.14+, asyncio_tasks.c): a coroutine's embedded
	 * frame and state, a frame's stack pointer (what a suspended coroutine
	 * awaits is its top), a set's table. Only meaningful when async_ok.
	 */
	bool async_ok;
	uint32_t gen_iframe, gen_frame_state, fr_stackpointer;
	uint32_t set_used, set_table, set_mask;
};

#define PYVER_NOOFF 0xffffffffu

/* Offsets from the generated table for 3.6-3.12; -PBP_E_VERSION if unknown. */
int pyver_from_table(unsigned major, unsigned minor, unsigned micro, struct pyver *v);
/* Byte offset into the bytecode from a frame's raw instr value. */
int64_t pyver_instr_offset(const struct pyver *v, uint64_t code_addr, uint64_t instr);
/* The kernel's copy spans in k, once its field offsets and the two sizes are final. */
void pyver_kernel_spans(struct pbp_offsets *k, uint32_t fr_size, uint32_t code_size);
/* Where the kernel finds the name hash folded into the key (code_hname, str_hash). */
void pyver_name_hash(struct pbp_offsets *k, unsigned minor, uint32_t code_qualname,
		     uint32_t unicode_length);
/* Where the word is that tells a code object from a later one at its address (code_key). */
__u16 pyver_code_key(unsigned minor, __u16 firstlineno, __u16 name);
/* Ok when v validates as a CPython version this program supports. */
bool pyver_supported(const struct pyver *v);

#endif /* PBP_CPYTHON_PYVER_H */
