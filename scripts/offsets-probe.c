/* SPDX-License-Identifier: MIT */
/*
 * Layout probe for scripts/gen-offsets.sh: compiled once per CPython version
 * against that version's installed internal headers (-DPy_BUILD_CORE), it
 * prints the offsetof()/sizeof() values pybpfprof needs as one C initializer.
 * Run with the argument "struct" it prints the matching struct definition
 * instead, so the field list below is the only place that names the fields.
 *
 * Only facts the compiler can compute go here; what a value means for the
 * profiler (which field the kernel starts from, how f_lasti counts) is
 * decided in user/cpython/pyver.c.
 */
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if PY_VERSION_HEX < 0x03060000 || PY_VERSION_HEX >= 0x030f0000
#error "offsets-probe.c knows CPython 3.6 to 3.14"
#endif

#ifdef Py_GIL_DISABLED
#error "free-threaded builds have another layout: not supported"
#endif

/*
 * Which internal headers declare what moved between versions:
 *  3.6:   no _PyRuntime: the public pystate.h declares PyInterpreterState and
 *         PyThreadState; the list of interpreters starts at the static
 *         interp_head of Python/pystate.c, and the GIL is a set of statics in
 *         Python/ceval_gil.h (gil_locked, gil_last_holder, gil_mutex,
 *         gil_cond), found by symbol at run time (user/cpython/process.c).
 *  3.7:   _PyRuntimeState in internal/pystate.h, the GIL struct in
 *         internal/gil.h; PyInterpreterState still public.
 *  3.8:   _PyRuntimeState, PyInterpreterState and the GIL in pycore_pystate.h;
 *         PyFrameObject in the public frameobject.h.
 *  3.9+:  pycore_runtime.h and pycore_interp.h.
 *  3.11+: frames are _PyInterpreterFrame in pycore_frame.h; code objects'
 *         inline bytecode needs pycore_code.h.
 *  3.14:  the frame's f_executable is a tagged _PyStackRef (pycore_stackref.h).
 */
#if PY_VERSION_HEX < 0x03070000
/* 3.6: everything needed is public */
#elif PY_VERSION_HEX < 0x03080000
#include <internal/pystate.h>
#elif PY_VERSION_HEX < 0x03090000
#include <internal/pycore_pystate.h>
#else
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#endif
#if PY_VERSION_HEX >= 0x03080000
#include <internal/pycore_gil.h>
#endif
#if PY_VERSION_HEX < 0x030b0000
#include <frameobject.h>
#else
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#endif
#if PY_VERSION_HEX >= 0x030e0000
#include <internal/pycore_stackref.h>
#endif
/*
 * Thread names (threading._active and the objects on the way to it):
 *  3.10+: PyModuleObject in pycore_moduleobject.h (3.8/3.9: moduleobject.c).
 *  3.11+: dict keys and values in pycore_dict.h (3.8-3.10: Objects/dict-common.h,
 *         not installed: user/cpython/pyver.c knows those), managed dicts in
 *         pycore_object.h; 3.12: sys.modules moved to pycore_import.h.
 */
#if PY_VERSION_HEX >= 0x030a0000
#include <internal/pycore_moduleobject.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_dict.h>
#include <internal/pycore_object.h>
#endif
#if PY_VERSION_HEX < 0x030b0000
#include <longintrepr.h>       /* 3.11+: cpython/longintrepr.h, from Python.h */
#endif

#define NONE 0xffffffffu

/*
 * Every value the generated table carries. An absent field (not in this
 * version) prints as PYGEN_NONE.
 */
#define FIELDS(X) \
	X(rt_size) X(rt_interpreters_head) X(rt_gil) \
	X(is_size) X(is_next) X(is_threads_head) X(is_id) X(is_ceval_gil) X(is_gil) \
	X(gil_size) X(gil_locked) X(gil_last_holder) X(gil_mutex) X(gil_cond) \
	X(ts_size) X(ts_next) X(ts_interp) X(ts_thread_id) X(ts_native_thread_id) \
	X(ts_frame) X(cframe_current) X(ts_datastack_chunk) \
	X(fr_size) X(fr_previous) X(fr_code) X(fr_instr) X(fr_owner) X(fr_is_entry) \
	X(owner_cstack) X(owner_interp) X(exec_tag_bits) \
	X(code_size) X(code_filename) X(code_name) X(code_qualname) X(code_firstlineno) \
	X(code_linetable) X(code_code) X(code_code_adaptive) \
	X(ob_type) X(bytes_size) X(bytes_sval) \
	X(unicode_state) X(unicode_length) X(ascii_size) X(compact_size) \
	X(is_modules) X(mod_dict) X(dict_keys) X(dict_values) \
	X(dk_log2_size) X(dk_log2_index_bytes) X(dk_kind) X(dk_nentries) X(dk_indices) \
	X(de_size) X(de_key) X(de_value) X(due_size) X(due_key) X(due_value) \
	X(dv_capacity) X(dv_valid) X(dv_values) \
	X(tp_basicsize) X(tp_flags) X(tp_dictoffset) X(ht_cached_keys) \
	X(tpf_managed_dict) X(tpf_inline_values) \
	X(tpf_long_subclass) X(tpf_unicode_subclass) X(tpf_dict_subclass) \
	X(managed_dict_before) X(managed_values_before) \
	X(long_size) X(long_digit) X(long_shift)

#define DECL(f) unsigned long f;
struct vals { FIELDS(DECL) };

static void fill_runtime(struct vals *v)
{
	v->is_size = sizeof(PyInterpreterState);
	v->is_next = offsetof(PyInterpreterState, next);
#if PY_VERSION_HEX < 0x03070000
	/*
	 * 3.6: the "runtime" is the static PyInterpreterState *interp_head
	 * itself, and interpreters have no id yet. The GIL's statics have no
	 * struct: their places come from the symbol table (user/cpython/process.c).
	 */
	v->rt_size = sizeof(PyInterpreterState *);
	v->rt_interpreters_head = 0;
#else
	v->rt_size = sizeof(_PyRuntimeState);
	v->rt_interpreters_head = offsetof(_PyRuntimeState, interpreters.head);
	v->is_id = offsetof(PyInterpreterState, id);
#endif
#if PY_VERSION_HEX < 0x030b0000
	v->is_threads_head = offsetof(PyInterpreterState, tstate_head);
#else
	v->is_threads_head = offsetof(PyInterpreterState, threads.head);
#endif
#if PY_VERSION_HEX >= 0x03070000
	/* 3.12 made the GIL per interpreter: interp->ceval.gil points at it. */
#if PY_VERSION_HEX < 0x030c0000
	v->rt_gil = offsetof(_PyRuntimeState, ceval.gil);
#else
	v->is_ceval_gil = offsetof(PyInterpreterState, ceval.gil);
	v->is_gil = offsetof(PyInterpreterState, _gil);
#endif
	v->gil_size = sizeof(struct _gil_runtime_state);
	v->gil_locked = offsetof(struct _gil_runtime_state, locked);
	v->gil_last_holder = offsetof(struct _gil_runtime_state, last_holder);
	v->gil_mutex = offsetof(struct _gil_runtime_state, mutex);
	v->gil_cond = offsetof(struct _gil_runtime_state, cond);
#endif
}

static void fill_thread(struct vals *v)
{
	v->ts_size = sizeof(PyThreadState);
	v->ts_next = offsetof(PyThreadState, next);
	v->ts_interp = offsetof(PyThreadState, interp);
	v->ts_thread_id = offsetof(PyThreadState, thread_id);
#if PY_VERSION_HEX >= 0x030b0000
	v->ts_native_thread_id = offsetof(PyThreadState, native_thread_id);
#endif
#if PY_VERSION_HEX < 0x030b0000
	v->ts_frame = offsetof(PyThreadState, frame);
#elif PY_VERSION_HEX < 0x030d0000
	v->ts_frame = offsetof(PyThreadState, cframe);
	v->cframe_current = offsetof(_PyCFrame, current_frame);
#else
	v->ts_frame = offsetof(PyThreadState, current_frame);
#endif
#if PY_VERSION_HEX >= 0x030b0000
	/* The kernel reads datastack_top with it: one read of both, so they must be neighbours. */
	_Static_assert(offsetof(PyThreadState, datastack_top) ==
		       offsetof(PyThreadState, datastack_chunk) + sizeof(void *),
		       "datastack_top follows datastack_chunk");
	v->ts_datastack_chunk = offsetof(PyThreadState, datastack_chunk);
#endif
}

static void fill_frame(struct vals *v)
{
#if PY_VERSION_HEX < 0x030b0000
	v->fr_size = sizeof(PyFrameObject);
	v->fr_previous = offsetof(PyFrameObject, f_back);
	v->fr_code = offsetof(PyFrameObject, f_code);
	v->fr_instr = offsetof(PyFrameObject, f_lasti);
#else
	v->fr_size = sizeof(_PyInterpreterFrame);
	v->fr_previous = offsetof(_PyInterpreterFrame, previous);
	v->fr_owner = offsetof(_PyInterpreterFrame, owner);
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030d0000
	v->fr_code = offsetof(_PyInterpreterFrame, f_code);
	v->fr_instr = offsetof(_PyInterpreterFrame, prev_instr);
#elif PY_VERSION_HEX >= 0x030d0000
	v->fr_code = offsetof(_PyInterpreterFrame, f_executable);
	v->fr_instr = offsetof(_PyInterpreterFrame, instr_ptr);
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
	v->fr_is_entry = offsetof(_PyInterpreterFrame, is_entry);
#endif
	/* 3.12 replaced is_entry with shim frames the C stack owns. */
#if PY_VERSION_HEX >= 0x030c0000
	v->owner_cstack = FRAME_OWNED_BY_CSTACK;
#endif
	/* 3.14 frames owned by the interpreter are not Python frames either. */
#if PY_VERSION_HEX >= 0x030e0000
	v->owner_interp = FRAME_OWNED_BY_INTERPRETER;
	v->exec_tag_bits = Py_TAG_BITS;
#endif
}

static void fill_code(struct vals *v)
{
	v->code_size = sizeof(PyCodeObject);
	v->code_filename = offsetof(PyCodeObject, co_filename);
	v->code_name = offsetof(PyCodeObject, co_name);
	v->code_firstlineno = offsetof(PyCodeObject, co_firstlineno);
#if PY_VERSION_HEX < 0x030a0000
	v->code_linetable = offsetof(PyCodeObject, co_lnotab);
#else
	v->code_linetable = offsetof(PyCodeObject, co_linetable);
#endif
#if PY_VERSION_HEX < 0x030b0000
	v->code_code = offsetof(PyCodeObject, co_code);
#else
	v->code_qualname = offsetof(PyCodeObject, co_qualname);
	v->code_code_adaptive = offsetof(PyCodeObject, co_code_adaptive);
#endif
}

static void fill_objects(struct vals *v)
{
	v->ob_type = offsetof(PyObject, ob_type);
	v->bytes_size = offsetof(PyBytesObject, ob_base.ob_size);
	v->bytes_sval = offsetof(PyBytesObject, ob_sval);
	v->unicode_state = offsetof(PyASCIIObject, state);
	v->unicode_length = offsetof(PyASCIIObject, length);
	v->ascii_size = sizeof(PyASCIIObject);
	v->compact_size = sizeof(PyCompactUnicodeObject);
}

/* Where sys.modules is and how dicts, modules, types and ints are laid out. */
static void fill_names(struct vals *v)
{
#if PY_VERSION_HEX < 0x030c0000
	v->is_modules = offsetof(PyInterpreterState, modules);
#else
	v->is_modules = offsetof(PyInterpreterState, imports.modules);
#endif
#if PY_VERSION_HEX >= 0x030a0000
	v->mod_dict = offsetof(PyModuleObject, md_dict);
#endif
	v->dict_keys = offsetof(PyDictObject, ma_keys);
	v->dict_values = offsetof(PyDictObject, ma_values);
#if PY_VERSION_HEX >= 0x030b0000
	v->dk_log2_size = offsetof(PyDictKeysObject, dk_log2_size);
	v->dk_log2_index_bytes = offsetof(PyDictKeysObject, dk_log2_index_bytes);
	v->dk_kind = offsetof(PyDictKeysObject, dk_kind);
	v->dk_nentries = offsetof(PyDictKeysObject, dk_nentries);
	v->dk_indices = offsetof(PyDictKeysObject, dk_indices);
	v->de_size = sizeof(PyDictKeyEntry);
	v->de_key = offsetof(PyDictKeyEntry, me_key);
	v->de_value = offsetof(PyDictKeyEntry, me_value);
	v->due_size = sizeof(PyDictUnicodeEntry);
	v->due_key = offsetof(PyDictUnicodeEntry, me_key);
	v->due_value = offsetof(PyDictUnicodeEntry, me_value);
	v->dv_values = offsetof(PyDictValues, values);
#endif
#if PY_VERSION_HEX >= 0x030d0000
	v->dv_capacity = offsetof(PyDictValues, capacity);
	v->dv_valid = offsetof(PyDictValues, valid);
#endif
	v->tp_basicsize = offsetof(PyTypeObject, tp_basicsize);
	v->tp_flags = offsetof(PyTypeObject, tp_flags);
	v->tp_dictoffset = offsetof(PyTypeObject, tp_dictoffset);
	v->ht_cached_keys = offsetof(PyHeapTypeObject, ht_cached_keys);
#ifdef Py_TPFLAGS_MANAGED_DICT
	v->tpf_managed_dict = Py_TPFLAGS_MANAGED_DICT;
#endif
#ifdef Py_TPFLAGS_INLINE_VALUES
	v->tpf_inline_values = Py_TPFLAGS_INLINE_VALUES;
#endif
	v->tpf_long_subclass = Py_TPFLAGS_LONG_SUBCLASS;
	v->tpf_unicode_subclass = Py_TPFLAGS_UNICODE_SUBCLASS;
	v->tpf_dict_subclass = Py_TPFLAGS_DICT_SUBCLASS;
#if PY_VERSION_HEX >= 0x030b0000
	{
		/*
		 * Instances of classes with Py_TPFLAGS_MANAGED_DICT keep their
		 * dict (3.11: also their values) pointer before the object:
		 * ask the interpreter's own accessors where, on a fake object.
		 */
		static PyTypeObject type;
		static PyObject *buf[16];
		PyObject *obj = (PyObject *)&buf[8];

		type.tp_flags = Py_TPFLAGS_MANAGED_DICT;
		obj->ob_type = &type;
#if PY_VERSION_HEX < 0x030c0000
		v->managed_dict_before = (char *)obj - (char *)_PyObject_ManagedDictPointer(obj);
		v->managed_values_before = (char *)obj - (char *)_PyObject_ValuesPointer(obj);
#elif PY_VERSION_HEX < 0x030d0000
		v->managed_dict_before = (char *)obj - (char *)_PyObject_DictOrValuesPointer(obj);
#else
		v->managed_dict_before = (char *)obj - (char *)_PyObject_ManagedDictPointer(obj);
#endif
	}
#endif
	/* 3.12 replaced the signed digit count ob_size with the tagged lv_tag. */
#if PY_VERSION_HEX < 0x030c0000
	v->long_size = offsetof(PyLongObject, ob_base.ob_size);
	v->long_digit = offsetof(PyLongObject, ob_digit);
#else
	v->long_size = offsetof(PyLongObject, long_value.lv_tag);
	v->long_digit = offsetof(PyLongObject, long_value.ob_digit);
#endif
	v->long_shift = PyLong_SHIFT;
}

static void print_struct(void)
{
	printf("struct pyver_gen {\n\tuint32_t major, minor, micro, hexversion;\n");
#define PDECL(f) printf("\tuint32_t %s;\n", #f);
	FIELDS(PDECL)
	printf("};\n");
}

static void print_value(const char *name, unsigned long val)
{
	if (val == NONE)
		printf("\t\t.%s = PYGEN_NONE,\n", name);
	else
		printf("\t\t.%s = %lu,\n", name, val);
}

static void print_entry(const struct vals *v)
{
	printf("\t{ /* %s */\n", PY_VERSION);
	printf("\t\t.major = %d, .minor = %d, .micro = %d, .hexversion = 0x%08lx,\n",
	       PY_MAJOR_VERSION, PY_MINOR_VERSION, PY_MICRO_VERSION,
	       (unsigned long)PY_VERSION_HEX);
#define PVAL(f) print_value(#f, v->f);
	FIELDS(PVAL)
	printf("\t},\n");
}

/*
 * "async": the asyncio layout of 3.11 to 3.13 (no AsyncioDebug table before
 * 3.14), one initializer of struct aio_gen. TaskObj and FutureObj are
 * defined in Modules/_asynciomodule.c, which no header exports: the probe
 * mirrors their field lists (the facts: order and C types, per version)
 * and lets the compiler place them with the version's own PyObject_HEAD;
 * coroutines, frames, sets and weak references are the headers' own.
 */
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030e0000
#define FUT_COMMON PyObject_HEAD PyObject *loop, *callback0, *context0, *callbacks, *exception, \
	*exception_tb, *result, *source_tb, *cancel_msg;
#if PY_VERSION_HEX < 0x030d0000
/* 3.11, 3.12: state, log_tb and blocking ints, then the dict and weakref list inline. */
struct probe_task {
	FUT_COMMON
	int state, log_tb, blocking;
	PyObject *dict, *weakreflist, *cancelled_exc;
	PyObject *fut_waiter, *coro, *name, *context;
	int must_cancel, log_destroy_pending, num_cancels_requested;
};
#else
/* 3.13: dict and weakrefs managed (before the object); bitfields shared with the task's. */
struct probe_task {
	FUT_COMMON
	PyObject *cancelled_exc;
	int state;
	unsigned log_tb : 1, blocking : 1, must_cancel : 1, log_destroy_pending : 1;
	int num_cancels_requested;
	PyObject *fut_waiter, *coro, *name, *context;
};
#endif

static int print_async(void)
{
	printf("\t{ /* %s */ .minor = %d, .task_size = %zu, .task_loop = %zu, .task_fut_waiter = %zu, "
	       ".task_coro = %zu, .task_name = %zu,\n", PY_VERSION, PY_MINOR_VERSION,
	       sizeof(struct probe_task), offsetof(struct probe_task, loop),
	       offsetof(struct probe_task, fut_waiter), offsetof(struct probe_task, coro),
	       offsetof(struct probe_task, name));
	printf("\t  .gen_iframe = %zu, .gen_frame_state = %zu, .fr_stacktop = %zu, .fr_localsplus = %zu,\n",
	       offsetof(PyGenObject, gi_iframe), offsetof(PyGenObject, gi_frame_state),
	       offsetof(_PyInterpreterFrame, stacktop), offsetof(_PyInterpreterFrame, localsplus));
	printf("\t  .set_used = %zu, .set_mask = %zu, .set_table = %zu, .wr_object = %zu },\n",
	       offsetof(PySetObject, used), offsetof(PySetObject, mask), offsetof(PySetObject, table),
	       offsetof(PyWeakReference, wr_object));
	return 0;
}
#else
static int print_async(void)
{
	fprintf(stderr, "offsets-probe: async: 3.11 to 3.13 only\n");
	return 1;
}
#endif

/*
 * "codenew": 3.13's count of code objects made, interp->func_state.next_version
 * (init_code() gives each new code object the count as its co_version, then
 * adds one; it only grows, and stops at 0 once it wraps). _Py_DebugOffsets
 * does not give it, so it is taken from the headers, with the words of the
 * debug offsets' interpreter block as the headers give them: a target whose
 * words differ has another layout, and gets no kernel code-object cache.
 */
#if PY_VERSION_HEX >= 0x030d0000 && PY_VERSION_HEX < 0x030e0000
static int print_codenew(void)
{
	printf("\t{ /* %s */ .minor = %d, .is_code_new = %zu,\n", PY_VERSION, PY_MINOR_VERSION,
	       offsetof(PyInterpreterState, func_state.next_version));
	printf("\t  .words = { %zu, %zu, %zu, %zu, %zu, %zu, %zu, %zu, %zu, %zu } },\n",
	       sizeof(PyInterpreterState), offsetof(PyInterpreterState, id),
	       offsetof(PyInterpreterState, next), offsetof(PyInterpreterState, threads.head),
	       offsetof(PyInterpreterState, gc), offsetof(PyInterpreterState, imports.modules),
	       offsetof(PyInterpreterState, sysdict), offsetof(PyInterpreterState, builtins),
	       offsetof(PyInterpreterState, ceval.gil), offsetof(PyInterpreterState, _gil));
	return 0;
}
#else
static int print_codenew(void)
{
	fprintf(stderr, "offsets-probe: codenew: 3.13 only\n");
	return 1;
}
#endif

int main(int argc, char **argv)
{
	struct vals v;

	if (argc > 1 && strcmp(argv[1], "struct") == 0) {
		print_struct();
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "async") == 0)
		return print_async();
	if (argc > 1 && strcmp(argv[1], "codenew") == 0)
		return print_codenew();
#define UNSET(f) v.f = NONE;
	FIELDS(UNSET)
	fill_runtime(&v);
	fill_thread(&v);
	fill_frame(&v);
	fill_code(&v);
	fill_objects(&v);
	fill_names(&v);
	print_entry(&v);
	return 0;
}
