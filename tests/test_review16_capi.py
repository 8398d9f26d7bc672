"""Review 16: C API calls given NULL by a hook.

``call_next(NULL, call)``, ``call_next(node, NULL)`` and
``status_add(NULL, ...)`` read through the NULL pointer (the process died
with SIGSEGV); each now sets a ValueError that the ufunc call raises, as
an exception a C hook sets itself.  A small C extension is compiled at test
time against nclx.get_include() (as tests/test_review15_capi.py does); the
calls run in a subprocess so that the old crash fails the test instead of
the suite."""
import pytest

import nclx
from capi_probe import build_probe, run_with_probe

SOURCE = r"""
#include <Python.h>
#include "nclx.h"

static int null_node(ncl_node *node, ncl_call *call) { return NCLX_API->call_next(NULL, call); }
static int null_call(ncl_node *node, ncl_call *call) { return NCLX_API->call_next(node, NULL); }
static int null_status(ncl_node *node, ncl_call *call) {
    NCLX_API->status_add(NULL, NCL_STATUS_INT_OVERFLOW, 1);
    return NCLX_API->call_next(node, call);
}
static ncl_hook_fn fns[] = {null_node, null_call, null_status};

static PyObject *add(PyObject *self, PyObject *args) {
    int kind;
    if (!PyArg_ParseTuple(args, "i", &kind)) return NULL;
    ncl_node *n = NCLX_API->hook_add(NCLX_API->funnel_chain(NCL_SUB_BINARY), "r16", fns[kind],
                                     NULL, NULL, NCL_FRONT, NULL);
    if (n == NULL) return NULL;
    return PyLong_FromVoidPtr(n);
}
static PyObject *remove_(PyObject *self, PyObject *args) {
    PyObject *p;
    if (!PyArg_ParseTuple(args, "O", &p)) return NULL;
    if (NCLX_API->hook_remove((ncl_node *)PyLong_AsVoidPtr(p)) < 0) return NULL;
    Py_RETURN_NONE;
}
static PyMethodDef methods[] = {
    {"add", add, METH_VARARGS, NULL}, {"remove", remove_, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nclx_r16_probe", NULL, -1, methods};
PyMODINIT_FUNC PyInit_nclx_r16_probe(void) {
    if (import_nclx() < 0) return NULL;
    return PyModule_Create(&module);
}
"""


@pytest.fixture(scope="module")
def probe_dir(tmp_path_factory):
    return build_probe(tmp_path_factory, "nclx_r16_probe", SOURCE)


_run = run_with_probe


@pytest.mark.parametrize("kind,words", [(0, "call_next: node is NULL"),
                                        (1, "call_next: call is NULL"),
                                        (2, "status_add: call is NULL")],
                         ids=["call_next-node", "call_next-call", "status_add"])
def test_a_null_argument_is_a_value_error_not_a_crash(probe_dir, kind, words):
    proc = _run(probe_dir, f"""
        import numpy as np
        import nclx
        import nclx_r16_probe as p
        nclx.install()
        a = np.arange(10, dtype=np.int64)
        node = p.add({kind})
        try:
            np.add(a, a)
        except ValueError as e:
            print("ValueError:", e)
        p.remove(node)
        print("after:", np.add(a, a).tolist() == (2 * np.arange(10)).tolist())
    """)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    out = proc.stdout
    assert f"ValueError: nclx C API {words}" in out, out + proc.stderr[-2000:]
    assert "after: True" in out
