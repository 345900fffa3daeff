/* SPDX-License-Identifier: MIT */
/* The interpreter's call machinery folded away (natfold.h). */
#include <string.h>

#include "symbol/natfold.h"

/*
 * CPython's functions that only pass a call on, 3.8 to 3.14, as recorded
 * under --native between Python frames and the C they called. A row is one
 * feature; its names are exact, or a prefix when they end in '*'. What
 * does work of its own for the program is not here: builtins and methods
 * (builtin_sorted, list_sort_impl, functools_reduce, map_next,
 * list_extend), operators that find the method to call (PyObject_GetAttr,
 * PyObject_RichCompare, unsafe_object_compare), allocation, the parser and
 * compiler under exec() and compile().
 */
static const char *const rows[][6] = {
	/* A Python function called: the frame set up and the loop entered. */
	{ "_PyEval_Vector", "_PyFunction_Vectorcall", "_PyFunction_FastCall*", "function_code_fastcall",
	  "_PyEval_EvalCode*", "_PyEval_EvalFrame" },
	/* Code run by exec()/eval() once compiled, and the old entry points. */
	{ "PyEval_EvalCode*", "run_eval_code_obj", "PyEval_EvalFrame*", "PyEval_Call*" },
	/* The generic call API, from the interpreter or an extension (PyObject_CallObject). */
	{ "PyObject_Call*", "_PyObject_Call*", "PyObject_Vectorcall*", "_PyObject_Vectorcall*",
	  "PyVectorcall_Call", "_PyVectorcall_Call" },
	/* Calls of objects without vectorcall, and the variadic helpers. */
	{ "_PyObject_MakeTpCall", "_PyObject_FastCall*", "object_vacall", "callmethod",
	  "call_function", "do_call_core" },
	/* A C function or method called: the wrapper that unpacks the arguments. */
	{ "cfunction_call", "cfunction_vectorcall_*", "_PyCFunction_FastCall*",
	  "_PyMethodDef_RawFastCall*", "_PyCFunctionWithKeywords_TrampolineCall", "method_vectorcall*" },
	{ "method_call", "methoddescr_call", "classmethoddescr_call", "wrapperdescr_call",
	  "wrapper_call", "_PyMethodDescr_FastCall*" },
	/* A type slot a class implements in Python (__call__, __init__, __lt__, __len__...). */
	{ "slot_*", "_Py_slot_*", "vectorcall_method", "vectorcall_unbound", "call_unbound*",
	  "call_method" },
	/* A class called: its __new__ and __init__ dispatched. */
	{ "type_call", "type_vectorcall" },
	/* A generator or coroutine resumed by C (list(gen), next(), send()). */
	{ "gen_iternext", "gen_send", "gen_send_ex*", "_PyGen_Send", "PyIter_Send", "coro_wrapper_*" },
};

static bool matches(const char *pat, const char *func, size_t len)
{
	size_t n = strlen(pat);

	if (pat[n - 1] == '*')
		return len >= n - 1 && strncmp(func, pat, n - 1) == 0;
	return len == n && strncmp(func, pat, n) == 0;
}

bool natfold_machinery(const char *func)
{
	/* "gen_send_ex.cold", "slot_tp_call.constprop.0": the function before the dot. */
	const char *dot = strchr(func, '.');
	size_t len = dot ? (size_t)(dot - func) : strlen(func);

	if (len == 0)
		return false;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
		for (size_t i = 0; i < sizeof(rows[0]) / sizeof(rows[0][0]) && rows[r][i]; i++)
			if (matches(rows[r][i], func, len))
				return true;
	return false;
}

/* FNV-1a: two frames' files compared without keeping their names. */
static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

void natfold_classify(const char *func, const char *lib, bool eval, struct natfold_frame *f)
{
	f->eval = eval;
	f->mach = !eval && natfold_machinery(func);
	f->lib = f->eval || f->mach ? hash(lib) : 0;
}

uint32_t natfold_mark(const struct natfold_frame *f, size_t n, size_t outer, bool *drop)
{
	uint64_t interp = 0;
	uint32_t k = 0;

	/* The interpreter's file: the replaced activation's, else any activation's. */
	for (size_t i = outer < n ? outer : 0; i < n && !interp; i++)
		interp = f[i].eval ? f[i].lib : 0;
	for (size_t i = 0; i < n; i++) {
		drop[i] = interp && i < outer && f[i].mach && f[i].lib == interp;
		k += drop[i];
	}
	return k;
}
