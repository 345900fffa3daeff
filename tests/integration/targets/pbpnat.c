/*
 * A C extension for test_native.py, built by natext.py with the target's
 * own headers: spin() burns CPU in C holding the GIL; call(fn) calls back
 * into Python from C. Not inlined, so each keeps its own native frame.
 */
#include <Python.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void spin_inner(long n)
{
	for (long i = 0; i < n; i++)
		sink += (unsigned long)i * (unsigned long)i;
}

__attribute__((noinline)) static PyObject *pbpnat_spin(PyObject *self, PyObject *arg)
{
	long n = PyLong_AsLong(arg);

	(void)self;
	if (n < 0 && PyErr_Occurred())
		return NULL;
	spin_inner(n);
	Py_RETURN_NONE;
}

__attribute__((noinline)) static PyObject *pbpnat_call(PyObject *self, PyObject *fn)
{
	PyObject *r;

	(void)self;
	r = PyObject_CallObject(fn, NULL);
	sink++;         /* not a tail call: this frame stays under the callback */
	return r;
}

static PyMethodDef methods[] = {
	{ "spin", pbpnat_spin, METH_O, "spin in C" },
	{ "call", pbpnat_call, METH_O, "call fn() from C" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "pbpnat", NULL, -1, methods,
				     NULL, NULL, NULL, NULL };

PyMODINIT_FUNC PyInit_pbpnat(void)
{
	PyObject *m = PyModule_Create(&module);

#ifdef Py_GIL_DISABLED
	/* Safe without a GIL: else importing it turns a free-threaded 3.14t's GIL on. */
	if (m)
		PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
	return m;
}
