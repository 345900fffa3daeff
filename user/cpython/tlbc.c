/* SPDX-License-Identifier: MIT */
/*
 * Thread-local bytecode (3.14t): a code object's co_tlbc is a _PyCodeArray,
 * a Py_ssize_t size then size pointers, entry 0 the code object's own
 * co_code_adaptive and the others copies made for threads as they first run
 * it (pycore_code.h). The frame says which (tlbc_index), but the kernel's
 * frame record does not carry it, so the copy is found from instr itself.
 */
#include <stdint.h>
#include <stddef.h>

#include "cpython/tlbc.h"
#include "core/errors.h"
#include "cpython/process.h"
#include "cpython/pyver.h"
#include "proc/remote.h"

/* More thread indices than this are not looked through (a read of 8 KiB). */
#define TLBC_MAX 1024

int64_t tlbc_offset(const uint64_t *entries, size_t n, uint64_t instr, uint64_t max)
{
	uint64_t best = UINT64_MAX;

	for (size_t i = 0; i < n; i++)
		if (entries[i] && entries[i] <= instr && instr - entries[i] < best)
			best = instr - entries[i];
	return best <= max ? (int64_t)best : -1;
}

/*
 * A code object is a PyVarObject whose ob_size (right after ob_type) counts
 * its 2-byte code units: every copy is that long. Bounding the offset by it
 * rather than by the caller's generous max means an instr in a copy made
 * after the array was read (or freed with its thread) is no line at all,
 * never a line of the copy that happens to start below it.
 */
static uint64_t code_bytes(const struct pyproc *p, uint64_t code, uint64_t max)
{
	int64_t units = 0;

	if (remote_read(p->r, code + p->v.ob_type + 8, &units, sizeof(units)) != 0 || units <= 0 ||
	    (uint64_t)units > max / 2)
		return 0;
	return (uint64_t)units * 2;
}

int64_t tlbc_instr_offset(const struct pyproc *p, uint64_t code, uint64_t instr, uint64_t max)
{
	uint64_t arr = 0, entries[TLBC_MAX], len = code_bytes(p, code, max);
	int64_t size = 0;

	if (!len || remote_ptr(p->r, code + p->v.code_tlbc, &arr) != 0 || !arr ||
	    remote_read(p->r, arr, &size, sizeof(size)) != 0 || size <= 0)
		return -1;
	if (size > TLBC_MAX)
		size = TLBC_MAX;
	if (remote_read(p->r, arr + 8, entries, (size_t)size * 8) != 0)
		return -1;
	return tlbc_offset(entries, (size_t)size, instr, len - 1);
}
