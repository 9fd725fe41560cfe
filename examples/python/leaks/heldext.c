/* A C extension that keeps what it allocates: a leak inside native code called from Python.
 * memshim's e2e tests build it against each CPython they find: `held_ext.hold(n)` mallocs n bytes and
 * never frees them. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

static void *kept[64];
static int nkept;

static __attribute__((noinline)) void *ext_hold(size_t n) {
    void *p = malloc(n);
    if (p && nkept < 64)
        kept[nkept++] = p;
    return p;
}

static PyObject *hold(PyObject *self, PyObject *args) {
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "n", &n))
        return NULL;
    if (!ext_hold((size_t)n))
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"hold", hold, METH_VARARGS, "malloc n bytes and keep them forever"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "heldext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_heldext(void) { return PyModule_Create(&module); }
