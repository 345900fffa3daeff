/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for pyver_from_debug_offsets(): arbitrary bytes as the
 * _Py_DebugOffsets blob a 3.13+ target exposes in _PyRuntime (the first
 * thing read from a process, before anything else can be checked).
 *
 *   make fuzz            (all harnesses; see the Makefile)
 *   build/fuzz/fuzz_debug_offsets -max_total_time=60 /tmp/do tests/fuzz/corpus/debug_offsets
 *
 * The whole input is the blob. An accepted blob must give a struct pyver
 * whose every offset leaves room, inside the size its blob claims, for what
 * the readers fetch there (the kernel reads fixed widths at the k offsets;
 * user space sizes its reads from ts_size, fr_size and friends), and that
 * is the same on a second call; each span the kernel copies in one read
 * must hold its fields inside its object. Then the bytes past the largest
 * layout (pyver_debug_offsets_max()) are handed to the pure decoders that
 * take their layout from that pyver (str, int, dict keys), so offsets that
 * pass validation but mislead a consumer show up too.
 *
 * Seeds (tests/fuzz/corpus/debug_offsets/): the real blobs of 3.13 and 3.14
 * (tests/unit/data/debug_offsets_3.1[34].bin), 3.14's saying it is 3.15
 * (3.14+as_3.15), the free-threaded 3.14t's (3.14t, made from the headers:
 * scripts/debug-offsets-blob.c), and each of the two padded to 760 bytes
 * and followed by a compact str, an int and a dict keys header laid out as
 * that version lays them out.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pybpfprof.h"
#include "core/errors.h"
#include "cpython/debugoffsets.h"
#include "cpython/objects.h"
#include "cpython/pystr.h"
#include "cpython/pyver.h"

#define MUST(c) do { if (!(c)) { fprintf(stderr, "invariant failed: %s\n", #c); __builtin_trap(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A kernel offset: a real one (not NOOFF) with width bytes of room in size. */
static void fits16(uint16_t off, unsigned width, uint32_t size)
{
	MUST(off != PBP_NOOFF);
	MUST((uint32_t)off + width <= size);
}

static void fits32(uint32_t off, unsigned width, uint32_t size)
{
	MUST(off != PYVER_NOOFF);
	MUST((uint64_t)off + width <= size);
}

/* A span the kernel copies in one read: absent, or bounded, in its object, holding each field. */
static void span_holds(uint16_t lo, uint16_t len, uint32_t size, const uint16_t *offs,
		       const unsigned *widths, size_t n)
{
	if (len == 0)
		return;
	MUST(lo % 8 == 0 && len <= PBP_SPAN_MAX);
	MUST((uint32_t)lo + len <= size);
	for (size_t i = 0; i < n; i++)
		MUST(offs[i] >= lo && (uint32_t)(offs[i] - lo) + widths[i] <= len);
}

static void check_spans(const struct pyver *v)
{
	const struct pbp_offsets *k = &v->k;
	const uint16_t fr[] = { k->fr_previous, k->fr_code, k->fr_instr, k->fr_owner };
	const unsigned frw[] = { 8, 8, 8, 1 };
	const uint16_t co[] = { k->code_firstlineno, k->code_key };
	const unsigned cow[] = { 4, 8 };

	span_holds(k->fr_span_lo, k->fr_span_len, v->fr_size, fr, frw, 4);
	span_holds(k->code_span_lo, k->code_span_len, v->code_size, co, cow, 2);
}

/* The layout a blob was read with: 3.15+ ("newer") with the newest, 3.14's. */
static unsigned layout_minor(const struct pyver *v)
{
	return v->newer ? 14 : v->minor;
}

static void check_pyver(const struct pyver *v, size_t len)
{
	MUST(v->major == 3 && (v->minor == 13 || v->minor == 14 || (v->newer && v->minor > 14)));
	MUST(v->from_debug_offsets);
	MUST(v->hexversion >> 24 == 3 && (v->hexversion >> 16 & 0xff) == v->minor);
	MUST(v->micro == (v->hexversion >> 8 & 0xff));
	MUST(len >= (layout_minor(v) == 13 ? 584u : 760u));
	/* Thread names rest on facts of known versions only. */
	MUST(!v->newer || v->is_modules == PYVER_NOOFF);
	MUST(v->lt_kind == LT_LOCATIONS);

	/* thread and interpreter states */
	fits32(v->rt_interpreters_head, 8, v->rt_size);
	fits32(v->is_next, 8, v->is_size);
	fits32(v->is_threads_head, 8, v->is_size);
	fits32(v->is_id, 8, v->is_size);
	fits32(v->is_ceval_gil, 8, v->is_size);
	MUST(v->rt_gil == PYVER_NOOFF);
	fits32(v->ts_next, 8, v->ts_size);
	fits32(v->ts_interp, 8, v->ts_size);
	fits32(v->ts_thread_id, 8, v->ts_size);
	fits32(v->ts_native_thread_id, 8, v->ts_size);

	/* the GIL: its fields inside the struct it claims */
	MUST((uint64_t)v->gil_locked + 4 <= v->gil_size);
	MUST((uint64_t)v->gil_last_holder + 8 <= v->gil_size);
	MUST(v->gil_cond == PYVER_NOOFF || (uint64_t)v->gil_cond < v->gil_size);
	MUST(v->gil_mutex == PYVER_NOOFF || (uint64_t)v->gil_mutex < v->gil_size);
	MUST((v->gil_cond == PYVER_NOOFF) == (v->gil_mutex == PYVER_NOOFF));

	/* what the kernel reads, with the widths it reads */
	fits16(v->k.ts_frame, 8, v->ts_size);
	MUST(v->k.cframe_current == PBP_NOOFF);
	fits16(v->k.fr_previous, 8, v->fr_size);
	fits16(v->k.fr_code, 8, v->fr_size);
	fits16(v->k.fr_instr, 8, v->fr_size);
	fits16(v->k.fr_owner, 1, v->fr_size);
	MUST(v->k.fr_is_entry == PBP_NOOFF);
	fits16(v->k.code_firstlineno, 4, v->code_size);
	fits16(v->k.code_key, 8, v->code_size);
	MUST(v->k.instr_is_int == 0);
	MUST(v->k.exec_tag_bits == (layout_minor(v) == 14 ? 3 : 0));
	check_spans(v);

	/* code objects, strings, bytes */
	fits32(v->code_filename, 8, v->code_size);
	fits32(v->code_name, 8, v->code_size);
	fits32(v->code_qualname, 8, v->code_size);
	fits32(v->code_linetable, 8, v->code_size);
	fits32(v->code_code_adaptive, 2, v->code_size);
	MUST(v->code_code == PYVER_NOOFF);
	MUST((uint64_t)v->unicode_state + 4 <= v->ascii_size);
	MUST((uint64_t)v->unicode_length + 8 <= v->ascii_size);
	MUST(v->compact_size == v->ascii_size + 16);
	/* pystr_read() reads compact_size + 8 bytes of header into 128 bytes: it must refuse, not overrun */
	MUST(v->bytes_size != PYVER_NOOFF && v->bytes_sval != PYVER_NOOFF);

	/* thread names: all or nothing */
	if (v->is_modules != PYVER_NOOFF) {
		fits32(v->is_modules, 8, v->is_size);
		MUST(v->long_tagged && v->inst_dict == INST_INLINE);
		MUST(v->long_shift == 30 || v->long_shift == 15);
	}
}

/* Results of the decoders that take their layout from v: in range, repeatable. */
static void decode_objects(const struct pyver *v, const uint8_t *obj, size_t len)
{
	static const size_t outlens[] = { 1, 3, 64, 20000 };
	char *out = malloc(20000);
	struct pydict_table t, t2;
	uint64_t n, n2;
	int r;

	MUST(out != NULL);
	for (size_t i = 0; i < sizeof(outlens) / sizeof(outlens[0]); i++) {
		r = pystr_decode(v, obj, len, out, outlens[i]);
		MUST(r <= 0);
		if (r == 0)
			MUST(strlen(out) < outlens[i]);
	}
	free(out);

	r = pylong_decode(v, obj, len, &n);
	MUST(r <= 0);
	MUST(pylong_decode(v, obj, len, &n2) == r);
	MUST(r != 0 || n == n2);

	r = pydict_keys_decode(v, 0x7f0000001000ull, obj, len, &t);
	MUST(r <= 0);
	MUST(pydict_keys_decode(v, 0x7f0000001000ull, obj, len, &t2) == r);
	if (r == 0) {
		MUST(memcmp(&t, &t2, sizeof(t)) == 0);
		MUST(t.entry_size > 0 && t.entry_size <= 32);
		MUST((uint64_t)t.key_off + 8 <= t.entry_size && (uint64_t)t.value_off + 8 <= t.entry_size);
		MUST(t.entries > 0x7f0000001000ull);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pyver v, again;
	size_t max = pyver_debug_offsets_max();
	/* a private copy: exactly size bytes, so reading past it is caught */
	uint8_t *blob = malloc(size ? size : 1);
	int r;

	MUST(blob != NULL);
	memcpy(blob, data, size);
	memset(&v, 0xa5, sizeof(v));
	r = pyver_from_debug_offsets(blob, size, &v);
	MUST(r == 0 || r == -PBP_E_CORRUPT || r == -PBP_E_VERSION || r == -PBP_E_FREETHREADED);
	memset(&again, 0x5a, sizeof(again));
	MUST(pyver_from_debug_offsets(blob, size, &again) == r);
	if (r == 0) {
		MUST(memcmp(&v, &again, sizeof(v)) == 0);
		check_pyver(&v, size);
		MUST(pyver_supported(&v));
		if (size > max)
			decode_objects(&v, blob + max, size - max);
	}
	/* No blob is accepted from fewer bytes than its layout has. */
	if (size > 0)
		MUST(pyver_from_debug_offsets(blob, r == 0 ? (layout_minor(&v) == 13 ? 583 : 759) : 0,
					      &again) != 0);
	free(blob);
	return 0;
}
