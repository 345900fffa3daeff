/* SPDX-License-Identifier: MIT */
/*
 * pyver.c: what this program knows about CPython memory layouts.
 *
 * 3.6-3.12 come from user/cpython/gen/offsets.h, which scripts/gen-offsets.sh makes
 * by running offsetof() against each version's own internal headers; this
 * file adds the few facts that are not offsets (how f_lasti counts, which
 * line table format is in use).
 *
 * 3.13+ come from the target itself: see debugoffsets.c. Both fill the
 * kernel's copy spans with pyver_kernel_spans() here.
 */
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "pybpfprof.h"
#include "cpython/pyver.h"
#include "core/errors.h"
#include "cpython/gen/offsets.h"

/* ------------------------------------------------- kernel copy spans */

struct span_field {
	__u16 off;
	uint8_t width;
	bool optional;          /* may be PBP_NOOFF */
};

/*
 * The smallest run of bytes holding every field, for the kernel to copy in
 * one read. It starts 8-aligned, so the kernel's loads out of its buffer
 * are as aligned as the object's own, and must end inside the object:
 * past it the copy could touch a page the object does not (a frame ending
 * its data-stack chunk). A span that cannot be had stays 0 (field reads).
 */
static void span_of(const struct span_field *f, size_t n, uint32_t objsize,
		    __u16 *lo, __u16 *len)
{
	uint32_t start = UINT32_MAX, end = 0;

	*lo = 0;
	*len = 0;
	for (size_t i = 0; i < n; i++) {
		if (f[i].off == PBP_NOOFF) {
			if (!f[i].optional)
				return;
			continue;
		}
		if (f[i].off < start)
			start = f[i].off;
		if ((uint32_t)f[i].off + f[i].width > end)
			end = (uint32_t)f[i].off + f[i].width;
	}
	if (end == 0)
		return;
	start &= ~7u;
	if (end > objsize || end - start > PBP_SPAN_MAX)
		return;
	*lo = (__u16)start;
	*len = (__u16)(end - start);
}

/*
 * co_version, 24 bytes past co_firstlineno in 3.12's, 3.13's and 3.14's
 * PyCodeObject (five ints between them); _Py_DebugOffsets does not give
 * it. Each code object made takes the next value of its interpreter's
 * count (3.12: the runtime's), which stops at 0 once it wraps: from then
 * on every new object's key is 0 and tells none apart (the kernel reads no
 * other word). Other versions key on co_name's address.
 */
#define CO_VERSION_PAST_FIRSTLINENO 24

__u16 pyver_code_key(unsigned minor, __u16 firstlineno, __u16 name)
{
	if (minor >= 12 && minor <= 14 && firstlineno < PBP_NOOFF - CO_VERSION_PAST_FIRSTLINENO)
		return (__u16)(firstlineno + CO_VERSION_PAST_FIRSTLINENO);
	return name;
}

/*
 * The name whose hash pbp_code_key folds in: co_qualname, the one user
 * space shows, so that the key binds the text read. Py_hash_t hash follows
 * Py_ssize_t length in every PyASCIIObject. 3.13+ only: init_code interns
 * co_name and co_qualname there, so every code object's names are hashed
 * before it can run, and between storing them and co_version it makes
 * dict lookups, a window a preempted target stays in. 3.12 stores the
 * two a few instructions apart and does not intern them (a name made at
 * run time, as CodeType.replace's, has no hash to fold), and before 3.12
 * the key is co_name's address, which the hash of a name made at run
 * time would not change either: there the read would only cost, one per
 * frame where the kernel keeps no cache (3.11 depth 30: 1.5x the walk).
 */
void pyver_name_hash(struct pbp_offsets *k, unsigned minor, uint32_t code_qualname,
		     uint32_t unicode_length)
{
	k->code_hname = PBP_NOOFF;
	k->str_hash = PBP_NOOFF;
	k->pad_hash = 0;
	if (minor < 13 || code_qualname >= PBP_NOOFF || unicode_length + 8 >= PBP_NOOFF)
		return;
	k->code_hname = (__u16)code_qualname;
	k->str_hash = (__u16)(unicode_length + 8);
}

/* Called once the field offsets in k are final, for every version. */
void pyver_kernel_spans(struct pbp_offsets *k, uint32_t fr_size, uint32_t code_size)
{
	const struct span_field fr[] = {
		{ k->fr_previous, 8, false },
		{ k->fr_code, 8, false },
		{ k->fr_instr, k->instr_is_int ? 4 : 8, false },
		{ k->fr_owner, 1, true },
	};
	const struct span_field co[] = {
		{ k->code_firstlineno, 4, false },
		{ k->code_key, 8, false },
		{ k->code_hname, 8, true },
	};

	span_of(fr, sizeof(fr) / sizeof(fr[0]), fr_size, &k->fr_span_lo, &k->fr_span_len);
	span_of(co, sizeof(co) / sizeof(co[0]), code_size, &k->code_span_lo, &k->code_span_len);
}

/* ----------------------------------------------------- 3.6-3.12: table */

static const struct pyver_gen *gen_find(unsigned minor)
{
	size_t n = sizeof(pyver_gen_table) / sizeof(pyver_gen_table[0]);

	for (size_t i = 0; i < n; i++)
		if (pyver_gen_table[i].minor == minor)
			return &pyver_gen_table[i];
	return NULL;
}

/* The kernel's copy is 16 bits wide; the table only holds small structs' offsets here. */
static __u16 k16(uint32_t off)
{
	return off == PYGEN_NONE || off >= PBP_NOOFF ? PBP_NOOFF : (__u16)off;
}

static void table_kernel(const struct pyver_gen *g, struct pbp_offsets *k)
{
	k->ts_frame = k16(g->ts_frame);
	k->cframe_current = k16(g->cframe_current);
	k->fr_previous = k16(g->fr_previous);
	k->fr_code = k16(g->fr_code);
	k->fr_instr = k16(g->fr_instr);
	k->fr_owner = k16(g->fr_owner);
	k->fr_is_entry = k16(g->fr_is_entry);
	k->code_firstlineno = k16(g->code_firstlineno);
	k->code_key = pyver_code_key(g->minor, k->code_firstlineno, k16(g->code_name));
	/* Up to 3.10 frames are PyFrameObjects whose f_lasti is an int. */
	k->instr_is_int = g->minor <= 10;
	k->owner_cstack = g->owner_cstack == PYGEN_NONE ? 0xff : (__u8)g->owner_cstack;
	/* Interpreter-owned frames and tagged f_executable arrive with 3.14. */
	k->owner_interp = 0xff;
	k->exec_tag_bits = 0;
	k->ts_datastack = k16(g->ts_datastack_chunk);
	/* 3.6-3.12: no count of code objects the kernel can find (3.12's is a static): no cache. */
	k->ts_interp = k16(g->ts_interp);
	k->is_code_gen = PBP_NOOFF;
	k->is_code_new = PBP_NOOFF;
	pyver_name_hash(k, g->minor, g->code_qualname, g->unicode_length);
	pyver_kernel_spans(k, g->fr_size, g->code_size);
}

static void table_runtime(const struct pyver_gen *g, struct pyver *v)
{
	v->rt_interpreters_head = g->rt_interpreters_head;
	v->rt_gil = g->rt_gil;
	v->rt_size = g->rt_size;
	v->is_next = g->is_next;
	v->is_threads_head = g->is_threads_head;
	v->is_id = g->is_id;
	v->is_ceval_gil = g->is_ceval_gil;
	v->is_size = g->is_size;
	v->gil_locked = g->gil_locked;
	v->gil_last_holder = g->gil_last_holder;
	v->gil_mutex = g->gil_mutex;
	v->gil_cond = g->gil_cond;
	v->gil_size = g->gil_size;
	v->ts_next = g->ts_next;
	v->ts_interp = g->ts_interp;
	v->ts_thread_id = g->ts_thread_id;
	v->ts_native_thread_id = g->ts_native_thread_id;
	v->ts_size = g->ts_size;
}

static void table_objects(const struct pyver_gen *g, struct pyver *v)
{
	v->fr_size = g->fr_size;
	v->code_filename = g->code_filename;
	v->code_name = g->code_name;
	v->code_qualname = g->code_qualname;
	v->code_linetable = g->code_linetable;
	v->code_code = g->code_code;
	v->code_code_adaptive = g->code_code_adaptive;
	v->code_size = g->code_size;
	v->ob_type = g->ob_type;
	v->bytes_size = g->bytes_size;
	v->bytes_sval = g->bytes_sval;
	v->unicode_state = g->unicode_state;
	v->unicode_length = g->unicode_length;
	v->ascii_size = g->ascii_size;
	v->compact_size = g->compact_size;
	v->unicode_kind_shift = 2;
}

/*
 * Objects on the way to thread names (threadname.c). 3.8-3.10 install neither
 * the header that lays out dict keys (Objects/dict-common.h) nor, before 3.10,
 * the module object (Objects/moduleobject.c), so the probe cannot see them;
 * these are those files' layouts, the same from 3.6 (keys) and 3.0 (module)
 * through 3.10, and checked on live 3.8-3.10 interpreters by the integration
 * tests. dk_size, dk_nentries and dk_indices follow Py_ssize_t dk_refcnt,
 * dk_size; dict_lookup_func dk_lookup; Py_ssize_t dk_usable, dk_nentries.
 */
#define DK310_SIZE 8u
#define DK310_NENTRIES 32u
#define DK310_INDICES 40u
#define DE310_SIZE 24u          /* PyDictKeyEntry: Py_hash_t me_hash; PyObject *me_key, *me_value */
#define DE310_KEY 8u
#define DE310_VALUE 16u
#define MOD39_DICT 16u          /* PyModuleObject: PyObject_HEAD, PyObject *md_dict */

static uint32_t opt(uint32_t gen)
{
	return gen == PYGEN_NONE ? PYVER_NOOFF : gen;
}

static uint32_t flag(uint32_t gen)
{
	return gen == PYGEN_NONE ? 0 : gen;
}

static void table_names(const struct pyver_gen *g, struct pyver *v)
{
	v->is_modules = g->is_modules;
	v->mod_dict = g->mod_dict == PYGEN_NONE ? MOD39_DICT : g->mod_dict;
	v->dict_keys = g->dict_keys;
	v->dict_values = g->dict_values;
	v->dk_log2_size = opt(g->dk_log2_size);
	v->dk_log2_index_bytes = opt(g->dk_log2_index_bytes);
	v->dk_kind = opt(g->dk_kind);
	v->due_size = opt(g->due_size);
	v->due_key = opt(g->due_key);
	v->due_value = opt(g->due_value);
	v->dv_capacity = opt(g->dv_capacity);
	v->dv_valid = opt(g->dv_valid);
	if (g->minor <= 10) {
		v->dk_size = DK310_SIZE;
		v->dk_nentries = DK310_NENTRIES;
		v->dk_indices = DK310_INDICES;
		v->de_size = DE310_SIZE;
		v->de_key = DE310_KEY;
		v->de_value = DE310_VALUE;
		v->dv_values = 0;       /* ma_values is a PyObject *[] */
	} else {
		v->dk_size = PYVER_NOOFF;
		v->dk_nentries = g->dk_nentries;
		v->dk_indices = g->dk_indices;
		v->de_size = g->de_size;
		v->de_key = g->de_key;
		v->de_value = g->de_value;
		v->dv_values = g->dv_values;
	}
	v->tp_basicsize = g->tp_basicsize;
	v->tp_flags = g->tp_flags;
	v->tp_dictoffset = g->tp_dictoffset;
	v->ht_cached_keys = g->ht_cached_keys;
	v->tpf_managed_dict = flag(g->tpf_managed_dict);
	v->tpf_inline_values = flag(g->tpf_inline_values);
	v->tpf_long_subclass = g->tpf_long_subclass;
	v->tpf_unicode_subclass = g->tpf_unicode_subclass;
	v->tpf_dict_subclass = g->tpf_dict_subclass;
	v->managed_dict_before = opt(g->managed_dict_before);
	v->managed_values_before = opt(g->managed_values_before);
	v->inst_dict = g->minor <= 10 ? INST_DICTOFFSET : g->minor == 11 ? INST_VALUES_PTR :
		g->minor == 12 ? INST_TAGGED : INST_INLINE;
	v->long_size = g->long_size;
	v->long_digit = g->long_digit;
	v->long_shift = g->long_shift;
	v->long_tagged = g->minor >= 12;
}

/* PY_VERSION_HEX of a final release: callers of the table know no more. */
static uint32_t hexversion(unsigned major, unsigned minor, unsigned micro)
{
	return (uint32_t)major << 24 | (uint32_t)minor << 16 | (uint32_t)(micro & 0xff) << 8 | 0xf0;
}

int pyver_from_table(unsigned major, unsigned minor, unsigned micro, struct pyver *v)
{
	const struct pyver_gen *g = major == 3 ? gen_find(minor) : NULL;

	/* Layouts are stable within a minor version, so the micro is only recorded. */
	if (!g)
		return -PBP_E_VERSION;
	memset(v, 0, sizeof(*v));
	v->major = major;
	v->minor = minor;
	v->micro = micro;
	v->hexversion = hexversion(major, minor, micro);
	v->from_debug_offsets = false;
	table_runtime(g, v);
	table_kernel(g, &v->k);
	table_objects(g, v);
	table_names(g, v);
	v->lt_kind = minor <= 9 ? LT_LNOTAB : minor == 10 ? LT_LINETABLE310 : LT_LOCATIONS;
	return 0;
}

/* ------------------------------------------------------ instructions */

/* Past this a "byte offset" is garbage: no code object is 256 MiB. */
#define MAX_INSTR_OFFSET ((int64_t)1 << 28)

int64_t pyver_instr_offset(const struct pyver *v, uint64_t code_addr, uint64_t instr)
{
	int64_t off;

	if (v->k.instr_is_int) {
		/* The kernel copied a C int; only its low 32 bits are meaningful. */
		off = (int32_t)(uint32_t)instr;
		/* 3.10 counts f_lasti in 2-byte code units, earlier in bytes. */
		if (v->minor == 10)
			off *= 2;
	} else {
		uint64_t start;

		if (v->code_code_adaptive == PYVER_NOOFF)
			return -1;
		start = code_addr + v->code_code_adaptive;
		/* prev_instr starts one unit before the code: "nothing run yet". */
		if (start < code_addr || instr < start)
			return -1;
		if (instr - start > (uint64_t)MAX_INSTR_OFFSET)
			return -1;
		off = (int64_t)(instr - start);
	}
	return off < 0 || off > MAX_INSTR_OFFSET ? -1 : off;
}

bool pyver_supported(const struct pyver *v)
{
	return v->major == 3 && v->minor >= 6 && (v->minor <= 14 || v->newer);
}
