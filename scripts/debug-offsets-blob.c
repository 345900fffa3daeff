/* SPDX-License-Identifier: MIT */
/*
 * Writes to stdout the _Py_DebugOffsets table that a CPython 3.13+ built
 * from the headers it is compiled against would publish at the start of its
 * _PyRuntime: the table of a build that cannot be run here. Made for the
 * free-threaded 3.14t (tests/unit/data/debug_offsets_3.14t.bin), from sid's
 * 3.14.10 headers in the chroot that scripts/sid-chroot.sh builds (gcc from
 * scripts/build-freethreaded.sh):
 *
 *   chroot DIR gcc -DPy_GIL_DISABLED=1 -I/usr/include/python3.14 \
 *       -I/usr/include/python3.14/internal \
 *       -I/usr/include/python3.14/internal/mimalloc \
 *       debug-offsets-blob.c -o blob && chroot DIR ./blob >debug_offsets_3.14t.bin
 *
 * Without -DPy_GIL_DISABLED it writes, byte for byte, the table the running
 * sid 3.14.10 publishes (tests/unit/data/debug_offsets_3.14.bin): the check
 * that the method gives what the interpreter itself does.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include "internal/pycore_debug_offsets.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#include <stdio.h>

int main(void)
{
	struct _Py_DebugOffsets d = _Py_DebugOffsets_INIT("xdebugpy");

	return fwrite(&d, sizeof(d), 1, stdout) == 1 ? 0 : 1;
}
