/* SPDX-License-Identifier: MIT */
#ifndef PBP_CPYTHON_OBJECTS_H
#define PBP_CPYTHON_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pyproc;
struct pyver;

/*
 * Python objects read from the target p while it runs, layouts from p->v.
 * Each returns -PBP_E_CORRUPT for what makes no sense, -PBP_E_VERSION when
 * this version's layout lacks what it needs.
 */

/* Where a dict keys object's entries are (pure, for tests: hdr holds its first len bytes). */
struct pydict_table {
	uint64_t entries;       /* address of entry 0 */
	uint64_t nentries;      /* entries used so far (deleted ones have a NULL key) */
	uint32_t entry_size, key_off, value_off;
	bool unicode;           /* 3.11+ unicode-only or split keys: no hash field */
	bool split;             /* 3.11+ dk_kind says split (<= 3.10: only ma_values tells) */
};
int pydict_keys_decode(const struct pyver *v, uint64_t keys_addr, const uint8_t *hdr, size_t len,
		       struct pydict_table *t);
/* Value of an int object (its first len bytes in obj) if it is >= 0 and fits 64 bits. */
int pylong_decode(const struct pyver *v, const uint8_t *obj, size_t len, uint64_t *out);

/*
 * The object whose first ob_type + 8 bytes obj holds looks freed: its
 * reference count is 0 (an object freed onto CPython's own free lists, a
 * frame of 3.6-3.10 kept as its code's zombie) or an address (the
 * allocator's free-list link, pymalloc's or glibc's): a live one's is a
 * count, 1 or more, under 2^32 (3.14 keeps flags in the top 16 bits).
 * Free-threaded builds begin with the owner thread's id: never told.
 */
bool pyobj_freed(const struct pyver *v, const uint8_t *obj);
/* The type of the object at obj (never 0). */
int pyobj_type(struct pyproc *p, uint64_t obj, uint64_t *type);
/* The tp_flags of obj's type, for checks like "is it an int". */
int pyobj_type_flags(struct pyproc *p, uint64_t obj, uint64_t *flags);
/* The value of the int object at obj; -PBP_E_NOENT if obj is not an int. */
int pylong_read(struct pyproc *p, uint64_t obj, uint64_t *value);
/* Called for each live entry; > 0 stops the scan (found), < 0 aborts it. */
typedef int (*pydict_entry_fn)(struct pyproc *p, uint64_t key, uint64_t value, void *arg);
/* Each live entry of the dict at dict, up to a bound; fn's non-zero result. */
int pydict_scan(struct pyproc *p, uint64_t dict, pydict_entry_fn fn, void *arg);
/* d[name] for a dict d (any key types: only str keys can match); -PBP_E_NOENT if absent. */
int pydict_get_str(struct pyproc *p, uint64_t dict, const char *name, uint64_t *value);
/* Instance attribute name of obj, wherever this version keeps it; -PBP_E_NOENT if absent. */
int pyobj_attr(struct pyproc *p, uint64_t obj, const char *name, uint64_t *value);

#endif /* PBP_CPYTHON_OBJECTS_H */
