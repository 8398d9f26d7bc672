"""Review 16: C API calls given NULL by a hook.

``call_next(NULL, call)``, ``call_next(node, NULL)`` and
``status_add(NULL, ...)`` read through the NULL pointer (the process died
with SIGSEGV); each now sets a ValueError that the ufunc call raises, as
an exception a C hook sets itself.  A small C extension is compiled at test
time against nclx.get_include() (as tests/test_review15_capi.py does); the
calls run in a subprocess so that the old crash fails the test instead of
the suite."""
import os
import subprocess
import sys
import textwrap

import pytest

import nclx

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
    build = tmp_path_factory.mktemp("r16_capi")
    (build / "nclx_r16_probe.c").write_text(SOURCE)
    (build / "setup.py").write_text(textwrap.dedent("""
        import nclx
        from setuptools import setup, Extension
        setup(ext_modules=[Extension("nclx_r16_probe", ["nclx_r16_probe.c"],
                                     include_dirs=[nclx.get_include()])],
              script_args=["build_ext", "--inplace"])
    """))
    proc = subprocess.run([sys.executable, "setup.py"], cwd=build, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return str(build)


def _run(probe_dir, code):
    env = dict(os.environ)
    nclx_root = os.path.dirname(os.path.dirname(os.path.abspath(nclx.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([probe_dir, nclx_root, env.get("PYTHONPATH", "")])
    # from the probe's directory: the repository's root would import the
    # unbuilt source tree's nclx
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=60, cwd=probe_dir)


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
