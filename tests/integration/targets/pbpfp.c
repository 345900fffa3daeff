/*
 * A C extension for test_native.py's --native=fp test, built by natfp.py
 * with -O2 -fno-omit-frame-pointer: chain() calls fp_a -> fp_b -> fp_c,
 * which spins. Each keeps its frame (not inlined, no tail calls), so the
 * kernel's frame-pointer walk finds fp_c under fp_b under fp_a. fp_c calls
 * fp_touch first: gcc 12 gives a leaf that needs no stack no frame at all
 * (even with -mno-omit-leaf-frame-pointer), and the walk from inside one
 * skips its caller.
 */
#include <Python.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void fp_touch(void)
{
	sink++;
}

__attribute__((noinline)) static void fp_c(long n)
{
	fp_touch();     /* not a leaf: keeps its frame */
	for (long i = 0; i < n; i++)
		sink += (unsigned long)i * (unsigned long)i;
}

__attribute__((noinline)) static void fp_b(long n)
{
	fp_c(n);
	sink++;         /* not a tail call */
}

__attribute__((noinline)) static void fp_a(long n)
{
	fp_b(n);
	sink++;
}

static PyObject *pbpfp_chain(PyObject *self, PyObject *arg)
{
	long n = PyLong_AsLong(arg);

	(void)self;
	if (n < 0 && PyErr_Occurred())
		return NULL;
	fp_a(n);
	Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
	{ "chain", pbpfp_chain, METH_O, "fp_a -> fp_b -> fp_c, spinning" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "pbpfp", NULL, -1, methods,
				     NULL, NULL, NULL, NULL };

PyMODINIT_FUNC PyInit_pbpfp(void)
{
	PyObject *m = PyModule_Create(&module);

#ifdef Py_GIL_DISABLED
	/* Safe without a GIL: else importing it turns a free-threaded 3.14t's GIL on. */
	if (m)
		PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
	return m;
}
