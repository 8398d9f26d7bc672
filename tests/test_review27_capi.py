"""Review 27: a C hook's pending Python exception in the Convert or Sort
funnel chain was left set by ``nclx.convert`` (its one-segment fast path),
``nclx.sort`` and ``nclx.argsort`` (their lane loops), which returned a
result with it: Python's SystemError "returned a result with an exception
set" instead of the hook's error (``np.sort``, ``a.copy()`` and
``nclx.ufuncs.cast`` raised it).  A small C extension is compiled at test
time (tests/capi_probe.py); each case runs in a fresh interpreter."""
import pytest

from capi_probe import build_probe, run_with_probe
from nclx._ncl import spec

SOURCE = r"""
#include <Python.h>
#include "nclx.h"

static int leave_error(ncl_node *n, ncl_call *c) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyErr_SetString(PyExc_KeyError, "left by a C hook");
    PyGILState_Release(g);
    return 0;
}
static int null_node(ncl_node *n, ncl_call *c) { return NCLX_API->call_next(NULL, c); }
static ncl_hook_fn fns[] = {leave_error, null_node};

static PyObject *add(PyObject *s, PyObject *a) {
    int kind, sub;
    if (!PyArg_ParseTuple(a, "ii", &kind, &sub)) return NULL;
    ncl_chain *ch = NCLX_API->funnel_chain(sub);
    if (ch == NULL) return NULL;
    ncl_node *n = NCLX_API->hook_add(ch, "r27", fns[kind], NULL, NULL, NCL_FRONT, NULL);
    return n ? PyLong_FromVoidPtr(n) : NULL;
}
static PyObject *rm(PyObject *s, PyObject *p) {
    if (NCLX_API->hook_remove(PyLong_AsVoidPtr(p)) < 0) return NULL;
    Py_RETURN_NONE;
}
static PyMethodDef m[] = {{"add", add, METH_VARARGS, NULL}, {"rm", rm, METH_O, NULL},
                          {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "nclx_r27_probe", NULL, -1, m};
PyMODINIT_FUNC PyInit_nclx_r27_probe(void) {
    if (import_nclx() < 0) return NULL;
    return PyModule_Create(&mod);
}
"""

CALLS = {
    "convert": ["nclx.convert(a, np.int32)", "nclx.convert(a.reshape(2, -1).T, np.int32)",
                "nclx.convert(a[:1].reshape(()), np.float32)"],
    "sort": ["nclx.sort(a)", "nclx.argsort(a)", "nclx.sort(a, kind='stable')",
             "nclx.argsort(a.reshape(2, -1), axis=1)"],
}
WANT = {0: "KeyError 'left by a C hook'", 1: "ValueError"}


@pytest.fixture(scope="module")
def probe_dir(tmp_path_factory):
    return build_probe(tmp_path_factory, "nclx_r27_probe", SOURCE)


@pytest.mark.parametrize("installed", [False, True], ids=["plain", "installed"])
@pytest.mark.parametrize("n", [10, 3000], ids=["small", "large"])
@pytest.mark.parametrize("kind", [0, 1], ids=["left-error", "call_next-NULL"])
@pytest.mark.parametrize("sub", sorted(CALLS))
def test_a_c_hooks_error_is_raised_by_nclx_convert_and_sort(probe_dir, sub, kind, n, installed):
    calls = CALLS[sub]
    proc = run_with_probe(probe_dir, f"""
        import numpy as np
        import nclx
        import nclx_r27_probe as p
        if {installed}:
            nclx.install()
        a = np.arange({n}, dtype=np.float64)[::-1].copy()
        for call in {calls!r}:
            node = p.add({kind}, {spec.SUBSYSTEMS.index(sub)})
            try:
                eval(call)
                print("raised: nothing")
            except Exception as e:
                print("raised:", type(e).__name__, e)
            p.rm(node)
            eval(call)                   # nothing left over
        print("done")
    """)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("raised:")]
    assert len(lines) == len(calls) and proc.stdout.rstrip().endswith("done")
    for ln in lines:
        assert ln.startswith(f"raised: {WANT[kind]}"), ln     # before: SystemError
