/* A compiled extension that reaches nclx only through the C API
 * (nclx.h + the capsule nclx._C_API): built by tests/test_c_api.py. */
#include <Python.h>
#include "nclx.h"

typedef struct { long calls; long elements; } counter;

static counter *the_counter = NULL;
static ncl_node *the_node = NULL;
static int destroyed = 0;

static int counting_hook(ncl_node *node, ncl_call *call)
{
    counter *c = (counter *)node->data;
    __atomic_add_fetch(&c->calls, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->elements, (long)call->dimensions[0], __ATOMIC_RELAXED);
    return NCLX_API->call_next(node, call);
}

static void free_counter(void *user)
{
    destroyed += 1;
    PyMem_RawFree(user);
}

static PyObject *add_hook(PyObject *self, PyObject *args)
{
    const char *name;
    int position = NCL_FRONT;
    const char *anchor = NULL;
    if (!PyArg_ParseTuple(args, "s|iz", &name, &position, &anchor)) return NULL;
    if (the_node != NULL) { PyErr_SetString(PyExc_RuntimeError, "already added"); return NULL; }
    counter *c = PyMem_RawCalloc(1, sizeof(counter));
    if (c == NULL) return PyErr_NoMemory();
    ncl_node *node = NCLX_API->hook_add(NCLX_API->funnel_chain(NCL_SUB_BINARY), name,
                                        counting_hook, c, free_counter, position, anchor);
    if (node == NULL) { PyMem_RawFree(c); return NULL; }
    the_counter = c;
    the_node = node;
    Py_RETURN_NONE;
}

static PyObject *remove_hook(PyObject *self, PyObject *noargs)
{
    if (the_node == NULL) Py_RETURN_NONE;
    if (NCLX_API->hook_remove(the_node) < 0) return NULL;
    the_node = NULL;
    the_counter = NULL;      /* freed by free_counter once no loop is inside */
    Py_RETURN_NONE;
}

static PyObject *counts(PyObject *self, PyObject *noargs)
{
    if (the_counter == NULL) return Py_BuildValue("(ll)", 0L, 0L);
    return Py_BuildValue("(ll)", the_counter->calls, the_counter->elements);
}

static PyObject *destroy_count(PyObject *self, PyObject *noargs)
{
    return PyLong_FromLong(destroyed);
}

/* add_float64(a, b) -> list: nclx's kernel called directly on C buffers. */
static PyObject *add_float64(PyObject *self, PyObject *args)
{
    PyObject *la, *lb;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &la, &PyList_Type, &lb)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(la);
    if (PyList_GET_SIZE(lb) != n) { PyErr_SetString(PyExc_ValueError, "lengths differ"); return NULL; }
    int dtypes[3] = {NCL_FLOAT64, NCL_FLOAT64, NCL_FLOAT64};
    ncl_loop_fn add = NCLX_API->kernel(NCLX_API->op_index("add"), dtypes, 3);
    if (add == NULL) { PyErr_SetString(PyExc_LookupError, "no add_float64 kernel"); return NULL; }
    double *buf = PyMem_Malloc(3 * (n ? n : 1) * sizeof(double));
    if (buf == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        buf[i] = PyFloat_AsDouble(PyList_GET_ITEM(la, i));
        buf[n + i] = PyFloat_AsDouble(PyList_GET_ITEM(lb, i));
    }
    if (PyErr_Occurred()) { PyMem_Free(buf); return NULL; }
    char *argv[3] = {(char *)buf, (char *)(buf + n), (char *)(buf + 2 * n)};
    ncl_intp dims[1] = {n};
    ncl_intp steps[3] = {sizeof(double), sizeof(double), sizeof(double)};
    add(argv, dims, steps, NULL);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) PyList_SET_ITEM(out, i, PyFloat_FromDouble(buf[2 * n + i]));
    PyMem_Free(buf);
    return out;
}

static PyObject *missing_kernel(PyObject *self, PyObject *noargs)
{
    int dtypes[2] = {NCL_BOOL, NCL_BOOL};
    int op = NCLX_API->op_index("sqrt");
    return PyBool_FromLong(NCLX_API->kernel(op, dtypes, 2) == NULL
                           && NCLX_API->op_index("no_such_op") == -1);
}

static PyMethodDef methods[] = {
    {"add_hook", add_hook, METH_VARARGS, NULL},
    {"remove_hook", remove_hook, METH_NOARGS, NULL},
    {"counts", counts, METH_NOARGS, NULL},
    {"destroy_count", destroy_count, METH_NOARGS, NULL},
    {"add_float64", add_float64, METH_VARARGS, NULL},
    {"missing_kernel", missing_kernel, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nclx_capi_probe", NULL, -1, methods};

PyMODINIT_FUNC PyInit_nclx_capi_probe(void)
{
    if (import_nclx() < 0) return NULL;
    return PyModule_Create(&module);
}
