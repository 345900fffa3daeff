/* SPDX-License-Identifier: MIT */
/*
 * Python objects read from a target: ints, dicts, types, instance
 * attributes. Layouts come from struct pyver.
 *
 * Instance attributes live in a __dict__ at tp_dictoffset up to 3.10, and
 * from 3.11 in "managed" storage before the object (3.11: a values or a
 * dict pointer; 3.12: one tagged word) or, 3.13+, inline after it, keyed by
 * the class's shared keys (ht_cached_keys) until a real dict is made.
 *
 * All of it is the target's mutable memory read while it runs: every
 * pointer is checked for NULL and every count bounded before use, and
 * whatever does not make sense is -PBP_E_CORRUPT, nothing worse. Callers
 * check the types of what they find by their tp_flags (pyobj_type_flags).
 */
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "cpython/objects.h"
#include "core/bytes.h"
#include "core/errors.h"
#include "cpython/process.h"
#include "cpython/pystr.h"
#include "cpython/pyver.h"
#include "proc/remote.h"

#define DICT_MAX_LOG2 26        /* larger tables are taken as garbage */
#define SCAN_MAX (1u << 17)     /* entries looked at in one dict */
#define CHUNK 128               /* entries per read */
#define ENTRY_MAX 32            /* bytes of one dict entry, at most */
#define KEYS_HDR_MAX 64         /* bytes of a dict keys header before dk_indices */
#define TYPE_SPAN_MAX 2048      /* bytes of a type read for its fields */
#define KEY_MAX 32              /* longest attribute or module name compared */
#define DICTOFFSET_MAX (1 << 20)

static bool has(uint32_t off)
{
	return off != PYVER_NOOFF;
}

/* ------------------------------------------------------ pure decoders */

int pydict_keys_decode(const struct pyver *v, uint64_t keys_addr, const uint8_t *hdr, size_t len,
		       struct pydict_table *t)
{
	uint64_t size, index_bytes, entries;
	int64_t nentries;
	unsigned ixsize;

	memset(t, 0, sizeof(*t));
	if (!has(v->dk_indices) || !has(v->dk_nentries) || !has(v->de_size))
		return -PBP_E_VERSION;
	if (v->dk_indices > len || v->dk_nentries + 8 > len)
		return -PBP_E_CORRUPT;
	memcpy(&nentries, hdr + v->dk_nentries, sizeof(nentries));
	if (has(v->dk_size)) {
		/* <= 3.10: the table size itself, a power of two (1: the shared empty keys). */
		int64_t sz;

		if (v->dk_size + 8 > len)
			return -PBP_E_CORRUPT;
		memcpy(&sz, hdr + v->dk_size, sizeof(sz));
		if (sz <= 0 || sz > ((int64_t)1 << DICT_MAX_LOG2) || (sz & (sz - 1)))
			return -PBP_E_CORRUPT;
		size = (uint64_t)sz;
		ixsize = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		index_bytes = size * ixsize;
		t->unicode = false;
		t->split = false;
	} else {
		/* 3.11+: log2 of the size and of the index table's bytes, and the kind. */
		unsigned log2, log2ib, kind;

		if (!has(v->dk_log2_size) || !has(v->dk_log2_index_bytes) || !has(v->dk_kind) ||
		    !has(v->due_size))
			return -PBP_E_VERSION;
		if (v->dk_log2_size >= len || v->dk_log2_index_bytes >= len || v->dk_kind >= len)
			return -PBP_E_CORRUPT;
		log2 = hdr[v->dk_log2_size];
		log2ib = hdr[v->dk_log2_index_bytes];
		kind = hdr[v->dk_kind];
		if (log2 > DICT_MAX_LOG2 || kind > 2)
			return -PBP_E_CORRUPT;
		ixsize = log2 < 8 ? 1 : log2 < 16 ? 2 : 4;
		if (log2ib != log2 + (ixsize == 1 ? 0 : ixsize == 2 ? 1 : 2))
			return -PBP_E_CORRUPT;
		size = 1ull << log2;
		index_bytes = 1ull << log2ib;
		t->unicode = kind != 0;   /* DICT_KEYS_UNICODE or DICT_KEYS_SPLIT */
		t->split = kind == 2;
	}
	/* USABLE_FRACTION(size): a table is resized before it holds more. */
	if (nentries < 0 || (uint64_t)nentries > (size << 1) / 3)
		return -PBP_E_CORRUPT;
	if (t->unicode) {
		t->entry_size = v->due_size;
		t->key_off = v->due_key;
		t->value_off = v->due_value;
	} else {
		t->entry_size = v->de_size;
		t->key_off = v->de_key;
		t->value_off = v->de_value;
	}
	if (t->entry_size > ENTRY_MAX || t->key_off + 8 > t->entry_size ||
	    t->value_off + 8 > t->entry_size)
		return -PBP_E_VERSION;
	entries = keys_addr + v->dk_indices + index_bytes;
	if (entries < keys_addr || entries + (uint64_t)nentries * t->entry_size < entries)
		return -PBP_E_CORRUPT;
	t->entries = entries;
	t->nentries = (uint64_t)nentries;
	return 0;
}

/* Digits of an int object from its header; -PBP_E_CORRUPT for a negative one. */
static int long_ndigits(const struct pyver *v, const uint8_t *obj, size_t len, uint64_t *nd)
{
	if (!has(v->long_size) || !has(v->long_digit) || (v->long_shift != 15 && v->long_shift != 30))
		return -PBP_E_VERSION;
	if (v->long_size + 8 > len)
		return -PBP_E_CORRUPT;
	if (v->long_tagged) {
		/* lv_tag: digit count << 3 | sign (0 positive, 1 zero, 2 negative). */
		uint64_t tag = load_u64(obj, v->long_size);

		if ((tag & 3) == 1 && tag >> 3 == 0) {
			*nd = 0;
			return 0;
		}
		if ((tag & 3) != 0)
			return -PBP_E_CORRUPT;
		*nd = tag >> 3;
	} else {
		int64_t size;

		memcpy(&size, obj + v->long_size, sizeof(size));
		if (size < 0)
			return -PBP_E_CORRUPT;
		*nd = (uint64_t)size;
	}
	/* 64 bits are at most 3 digits of 30 bits, 5 of 15. */
	return *nd > (64 + v->long_shift - 1) / v->long_shift ? -PBP_E_CORRUPT : 0;
}

/* Bytes of one digit: uint32_t for 30-bit digits, uint16_t for 15-bit ones. */
static unsigned digit_width(const struct pyver *v)
{
	return v->long_shift == 15 ? 2 : 4;
}

int pylong_decode(const struct pyver *v, const uint8_t *obj, size_t len, uint64_t *out)
{
	uint64_t nd, value = 0;
	unsigned w = digit_width(v);
	int err = long_ndigits(v, obj, len, &nd);

	if (err)
		return err;
	if (v->long_digit + w * nd > len)
		return -PBP_E_CORRUPT;
	for (uint64_t i = 0; i < nd; i++) {
		uint32_t d = 0;
		uint64_t at = i * v->long_shift;

		memcpy(&d, obj + v->long_digit + w * i, w);
		if (d >> v->long_shift)
			return -PBP_E_CORRUPT;
		if (d && (at >= 64 || (at && (uint64_t)d >> (64 - at))))
			return -PBP_E_CORRUPT;
		if (d)
			value |= (uint64_t)d << at;
	}
	*out = value;
	return 0;
}

/* ------------------------------------------------------ remote objects */

bool pyobj_freed(const struct pyver *v, const uint8_t *obj)
{
	uint64_t w;

	if (v->free_threaded || v->ob_type < 8)
		return false;
	w = load_u64(obj, v->ob_type - 8);
	return (uint32_t)w == 0 || (w >> 32 & 0xffff) != 0;
}

int pyobj_type(struct pyproc *p, uint64_t obj, uint64_t *type)
{
	int err;

	if (!obj)
		return -PBP_E_CORRUPT;
	err = remote_ptr(p->r, obj + p->v.ob_type, type);
	return !err && !*type ? -PBP_E_CORRUPT : err;
}

struct typeinfo {
	uint64_t flags;
	int64_t basicsize, dictoffset;
	uint64_t cached_keys;   /* heap types only: meaningless on static types */
};

static int type_info(struct pyproc *p, uint64_t type, struct typeinfo *ti)
{
	const struct pyver *v = &p->v;
	uint32_t offs[] = { v->tp_basicsize, v->tp_flags, v->tp_dictoffset, v->ht_cached_keys };
	uint8_t buf[TYPE_SPAN_MAX];
	size_t span = 0;
	int err;

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		if (!has(offs[i]))
			return -PBP_E_VERSION;
		if (offs[i] + 8u > span)
			span = offs[i] + 8u;
	}
	if (span > sizeof(buf))
		return -PBP_E_VERSION;
	/* Types outlive their instances: the page cache is fine for them. */
	err = remote_read_cached(p->r, type, buf, span);
	if (err)
		return err;
	ti->flags = load_u64(buf, v->tp_flags);
	memcpy(&ti->basicsize, buf + v->tp_basicsize, 8);
	memcpy(&ti->dictoffset, buf + v->tp_dictoffset, 8);
	ti->cached_keys = load_u64(buf, v->ht_cached_keys);
	return 0;
}

/* The tp_flags of obj's type, for checks like "is it an int". */
int pyobj_type_flags(struct pyproc *p, uint64_t obj, uint64_t *flags)
{
	uint64_t type;
	int err = pyobj_type(p, obj, &type);

	if (!err)
		err = remote_read_cached(p->r, type + p->v.tp_flags, flags, sizeof(*flags));
	return err;
}

/* Whether the str at addr is exactly the ASCII text lit. */
static bool str_is(struct pyproc *p, uint64_t addr, const char *lit)
{
	const struct pyver *v = &p->v;
	size_t n = strlen(lit), len = v->ascii_size + n;
	uint8_t buf[128 + KEY_MAX];
	char out[KEY_MAX + 2];

	/* An ASCII-only str is always compact ASCII: its characters follow the header. */
	if (n > KEY_MAX || len > sizeof(buf) || remote_read_cached(p->r, addr, buf, len) != 0)
		return false;
	return pystr_decode(v, buf, len, out, sizeof(out)) == 0 && strcmp(out, lit) == 0;
}

/*
 * Entries of a keys table; values from the table, or (split tables) from
 * values[0..nvalues).
 */
static int table_scan(struct pyproc *p, const struct pydict_table *t, uint64_t values,
		      uint64_t nvalues, pydict_entry_fn fn, void *arg)
{
	uint8_t buf[CHUNK * ENTRY_MAX];
	uint64_t vbuf[CHUNK];
	uint64_t n = t->nentries < SCAN_MAX ? t->nentries : SCAN_MAX;
	int err;

	if (values && nvalues < n)
		n = nvalues;
	for (uint64_t i = 0; i < n; i += CHUNK) {
		size_t c = n - i < CHUNK ? (size_t)(n - i) : CHUNK;

		err = remote_read(p->r, t->entries + i * t->entry_size, buf, c * t->entry_size);
		if (!err && values)
			err = remote_read(p->r, values + 8 * i, vbuf, 8 * c);
		if (err)
			return err;
		for (size_t j = 0; j < c; j++) {
			const uint8_t *e = buf + j * t->entry_size;
			uint64_t key = load_u64(e, t->key_off);
			uint64_t val = values ? vbuf[j] : load_u64(e, t->value_off);
			int r;

			if (!key || !val)       /* deleted, or a split table's unset value */
				continue;
			r = fn(p, key, val, arg);
			if (r)
				return r;
		}
	}
	return 0;
}

static int keys_open(struct pyproc *p, uint64_t keys, struct pydict_table *t)
{
	uint8_t hdr[KEYS_HDR_MAX];
	const struct pyver *v = &p->v;
	int err;

	if (!keys)
		return -PBP_E_CORRUPT;
	if (!has(v->dk_indices) || v->dk_indices > sizeof(hdr))
		return -PBP_E_VERSION;
	err = remote_read(p->r, keys, hdr, v->dk_indices);
	if (!err)
		err = pydict_keys_decode(v, keys, hdr, v->dk_indices, t);
	return err;
}

/* Values array of a split table: where values[0] is and how many it holds. */
static int values_span(struct pyproc *p, uint64_t values, const struct pydict_table *t,
		       uint64_t *first, uint64_t *n)
{
	const struct pyver *v = &p->v;
	uint8_t cap;
	int err;

	*first = values + v->dv_values;
	*n = t->nentries;
	if (!has(v->dv_capacity))
		return 0;
	/* 3.13+ says how many it holds. */
	err = remote_read(p->r, values + v->dv_capacity, &cap, 1);
	if (!err && cap < *n)
		*n = cap;
	return err;
}

int pydict_scan(struct pyproc *p, uint64_t dict, pydict_entry_fn fn, void *arg)
{
	const struct pyver *v = &p->v;
	struct pydict_table t;
	uint64_t keys, values, first = 0, n = 0;
	int err = remote_ptr(p->r, dict + v->dict_keys, &keys);

	if (!err)
		err = remote_ptr(p->r, dict + v->dict_values, &values);
	if (!err)
		err = keys_open(p, keys, &t);
	if (!err && values)
		err = values_span(p, values, &t, &first, &n);
	if (err)
		return err;
	return table_scan(p, &t, first, n, fn, arg);
}

struct find_str {
	const char *name;
	uint64_t value;
};

static int find_str_cb(struct pyproc *p, uint64_t key, uint64_t value, void *arg)
{
	struct find_str *f = arg;

	if (!str_is(p, key, f->name))
		return 0;
	f->value = value;
	return 1;
}

/* d[name] for a dict d (any key types: only str keys can match). */
int pydict_get_str(struct pyproc *p, uint64_t dict, const char *name, uint64_t *value)
{
	struct find_str f = { name, 0 };
	int r = pydict_scan(p, dict, find_str_cb, &f);

	if (r < 0)
		return r;
	if (r == 0)
		return -PBP_E_NOENT;
	*value = f.value;
	return 0;
}

/* An attribute kept in values[] beside the shared keys of its class. */
static int values_get_str(struct pyproc *p, uint64_t keys, uint64_t values, uint64_t nvalues,
			  const char *name, uint64_t *value)
{
	struct pydict_table t;
	struct find_str f = { name, 0 };
	int r = keys_open(p, keys, &t);

	if (r)
		return r;
	if (!t.unicode && p->v.dk_size == PYVER_NOOFF)
		return -PBP_E_CORRUPT;  /* 3.11+ shared keys are str-only */
	r = table_scan(p, &t, values, nvalues, find_str_cb, &f);
	if (r < 0)
		return r;
	if (r == 0)
		return -PBP_E_NOENT;
	*value = f.value;
	return 0;
}

/* The dict at obj + tp_dictoffset, if the type has one. */
static int offset_dict(struct pyproc *p, uint64_t obj, const struct typeinfo *ti, uint64_t *dict)
{
	if (ti->dictoffset <= 0 || ti->dictoffset > DICTOFFSET_MAX)
		return -PBP_E_NOENT;    /* none, or after variable-size items: not read */
	return remote_ptr(p->r, obj + (uint64_t)ti->dictoffset, dict);
}

/* Instance attribute name of obj, wherever this version keeps it. */
int pyobj_attr(struct pyproc *p, uint64_t obj, const char *name, uint64_t *value)
{
	const struct pyver *v = &p->v;
	struct typeinfo ti;
	uint64_t type, dict = 0, word, values;
	uint8_t hdr[8];
	int err = pyobj_type(p, obj, &type);

	if (!err)
		err = type_info(p, type, &ti);
	if (err)
		return err;
	if (v->inst_dict == INST_DICTOFFSET || !(ti.flags & v->tpf_managed_dict)) {
		err = offset_dict(p, obj, &ti, &dict);
	} else if (!has(v->managed_dict_before) || obj < v->managed_dict_before + 32u) {
		return -PBP_E_VERSION;
	} else if (v->inst_dict == INST_VALUES_PTR) {
		/* 3.11: values (keyed by the class's shared keys) or else a dict. */
		if (!has(v->managed_values_before))
			return -PBP_E_VERSION;
		err = remote_ptr(p->r, obj - v->managed_values_before, &values);
		if (!err && values) {
			struct pydict_table t;

			/* The array was sized for every key the shared keys can take. */
			err = keys_open(p, ti.cached_keys, &t);
			if (err)
				return err;
			return values_get_str(p, ti.cached_keys, values + v->dv_values,
					      t.nentries, name, value);
		}
		if (!err)
			err = remote_ptr(p->r, obj - v->managed_dict_before, &dict);
	} else if (v->inst_dict == INST_TAGGED) {
		/* 3.12: a dict, or the values pointer minus one (an odd word). */
		err = remote_ptr(p->r, obj - v->managed_dict_before, &word);
		if (!err && (word & 1)) {
			struct pydict_table t;

			values = word + 1;
			err = keys_open(p, ti.cached_keys, &t);
			if (err)
				return err;
			return values_get_str(p, ti.cached_keys, values + v->dv_values,
					      t.nentries, name, value);
		}
		dict = word;
	} else {
		/* 3.13+: a dict once one was made, else the values inline after the object. */
		err = remote_ptr(p->r, obj - v->managed_dict_before, &dict);
		if (!err && !dict && (ti.flags & v->tpf_inline_values)) {
			uint64_t first, n;
			struct pydict_table t;

			if (ti.basicsize <= 0 || ti.basicsize > DICTOFFSET_MAX || !has(v->dv_valid))
				return -PBP_E_CORRUPT;
			values = obj + (uint64_t)ti.basicsize;
			err = remote_read(p->r, values, hdr, sizeof(hdr));
			if (err)
				return err;
			if (v->dv_valid >= sizeof(hdr) || !hdr[v->dv_valid])
				return -PBP_E_NOENT;
			err = keys_open(p, ti.cached_keys, &t);
			if (!err)
				err = values_span(p, values, &t, &first, &n);
			if (err)
				return err;
			return values_get_str(p, ti.cached_keys, first, n, name, value);
		}
	}
	if (err)
		return err;
	if (!dict)
		return -PBP_E_NOENT;
	return pydict_get_str(p, dict, name, value);
}

/* The value of the int object at obj; -PBP_E_NOENT if obj is not an int. */
int pylong_read(struct pyproc *p, uint64_t obj, uint64_t *value)
{
	const struct pyver *v = &p->v;
	uint8_t buf[64];
	uint64_t flags, nd;
	size_t len;
	int err = pyobj_type_flags(p, obj, &flags);

	if (err)
		return err;
	if (!(flags & v->tpf_long_subclass))
		return -PBP_E_NOENT;    /* None, say */
	/* Header first (every int has room for one digit), then exactly its digits. */
	len = v->long_digit + digit_width(v);
	if (v->long_digit + 5 * 4 > sizeof(buf))
		return -PBP_E_VERSION;
	err = remote_read(p->r, obj, buf, len);
	if (!err)
		err = long_ndigits(v, buf, len, &nd);
	if (!err && nd > 1) {
		len = v->long_digit + digit_width(v) * nd;
		err = remote_read(p->r, obj, buf, len);
	}
	if (!err)
		err = pylong_decode(v, buf, len, value);
	return err;
}
