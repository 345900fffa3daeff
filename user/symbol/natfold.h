/* SPDX-License-Identifier: MIT */
/*
 * --native: the interpreter's call machinery folded away. Between two
 * Python frames, or between a Python frame and the C function it called,
 * the interpreter's own object (the file holding _PyEval_EvalFrameDefault:
 * the python binary or libpython) runs functions that only pass a call on
 * (PyObject_Vectorcall, _PyObject_MakeTpCall, cfunction_vectorcall_O,
 * _PyEval_Vector, slot_tp_call, ...). They say how CPython made the call,
 * not what the program did, so they are dropped on the callee side of the
 * outermost Python frame, the way the evaluation loop's own activations are
 * replaced by the Python frames they ran. Functions the interpreter
 * implements for the program (time_sleep, builtin_sorted, list_sort_impl,
 * map_next, the parser under exec) stay, and so does every frame of
 * another file, and every frame below the first Python frame
 * (_start;main;Py_RunMain;...).
 */
#ifndef PBP_SYMBOL_NATFOLD_H
#define PBP_SYMBOL_NATFOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One native frame as the fold sees it. */
struct natfold_frame {
	bool eval;      /* an activation of the evaluation loop */
	bool mach;      /* its function is call machinery (natfold_machinery) */
	uint64_t lib;   /* its file's base name, hashed (0 when neither eval nor mach: not needed) */
};

/*
 * Whether func, a function's name (a compiler's split-off part such as
 * ".cold", ".constprop.0" or ".isra.0" allowed), is one of CPython's call
 * machinery: a row of natfold.c's table, by name or prefix.
 */
bool natfold_machinery(const char *func);

/* f for a frame of function func ("" for none) in file lib. */
void natfold_classify(const char *func, const char *lib, bool eval, struct natfold_frame *f);

/*
 * f[0..n): a stack's native frames, innermost first; outer: the outermost
 * activation replaced by Python frames (n when Python frames with no
 * activation go at the root: every frame is on their callee side). Sets
 * drop[i] for the machinery frames inner to outer that are in the file of
 * the activations; the number dropped.
 */
uint32_t natfold_mark(const struct natfold_frame *f, size_t n, size_t outer, bool *drop);

#endif /* PBP_SYMBOL_NATFOLD_H */
