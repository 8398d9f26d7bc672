"""Review 22: nclx's C API from a C hook's side.

- C1: a C hook's Python exception (``call_next``/``status_add`` given NULL)
  in the copy, mask, rng or create chains left the call returning a result
  with the exception set: Python's SystemError "returned a result with an
  exception set" instead of the hook's ValueError (the ufunc and sort
  chains raised it).  ``ncl_callop_run`` now gives -1 and its callers raise.
- C2: a C hook's pending exception met a later Python funnel hook or
  Python ``Kernel``: their first C call raised it, it was reported as
  theirs (``handle.errors``) and cleared, and the ufunc raised nothing.
  A Python hook is now not run while an exception is pending.
- C3: ``op_index`` knew only the elementwise ops (``op_index("sort")`` was
  -1 although a sort hook sees ``call->op`` 74), and ``kernel_chain``
  reached no call op's chain (``sort_float64``); its LookupError now names
  the op and the dtypes.
- C4: ``funnel_chain(-1)`` returned NULL with no exception set (the
  header promises one); ``hook_remove`` of a default node said "no live
  nclx node" instead of naming the default node.
- C5: ``import_nclx()`` against a table of another size said "compiled
  against version 2, the installed nclx provides version 2".

A small C extension is compiled at test time (tests/capi_probe.py); each
case runs in a fresh interpreter."""
import pathlib
import subprocess
import sys
import textwrap

import pytest

import nclx
from nclx._ncl import spec
from capi_probe import build_probe, run_with_probe

SOURCE = r"""
#include <Python.h>
#include "nclx.h"

static int null_node(ncl_node *n, ncl_call *c) { return NCLX_API->call_next(NULL, c); }
static int null_status(ncl_node *n, ncl_call *c) {
    NCLX_API->status_add(NULL, NCL_STATUS_INT_OVERFLOW, 1);
    return NCLX_API->call_next(n, c);
}
static long counted = 0;
static int count(ncl_node *n, ncl_call *c) { counted++; return NCLX_API->call_next(n, c); }
static ncl_hook_fn fns[] = {null_node, null_status, count};

static PyObject *add(PyObject *s, PyObject *a) {
    int kind, sub;
    if (!PyArg_ParseTuple(a, "ii", &kind, &sub)) return NULL;
    ncl_chain *ch = NCLX_API->funnel_chain(sub);
    if (ch == NULL) return NULL;
    ncl_node *n = NCLX_API->hook_add(ch, "r22", fns[kind], NULL, NULL, NCL_FRONT, NULL);
    return n ? PyLong_FromVoidPtr(n) : NULL;
}
static PyObject *add_kernel(PyObject *s, PyObject *a) {
    int kind, op, n, d[4];
    if (!PyArg_ParseTuple(a, "iii(iiii)", &kind, &op, &n, &d[0], &d[1], &d[2], &d[3])) return NULL;
    ncl_chain *ch = NCLX_API->kernel_chain(op, d, n);
    if (ch == NULL) return NULL;
    ncl_node *node = NCLX_API->hook_add(ch, "r22k", fns[kind], NULL, NULL, NCL_FRONT, NULL);
    return node ? PyLong_FromVoidPtr(node) : NULL;
}
static PyObject *rm(PyObject *s, PyObject *p) {
    if (NCLX_API->hook_remove(PyLong_AsVoidPtr(p)) < 0) return NULL;
    Py_RETURN_NONE;
}
static PyObject *head(PyObject *s, PyObject *a) {
    int sub;
    if (!PyArg_ParseTuple(a, "i", &sub)) return NULL;
    ncl_chain *ch = NCLX_API->funnel_chain(sub);
    if (ch == NULL) return NULL;
    return PyLong_FromVoidPtr(ch->head);
}
static PyObject *op_index(PyObject *s, PyObject *a) {
    const char *nm;
    if (!PyArg_ParseTuple(a, "s", &nm)) return NULL;
    return PyLong_FromLong(NCLX_API->op_index(nm));
}
static PyObject *get_counted(PyObject *s, PyObject *a) { return PyLong_FromLong(counted); }
static PyMethodDef m[] = {
    {"add", add, METH_VARARGS, NULL}, {"add_kernel", add_kernel, METH_VARARGS, NULL},
    {"rm", rm, METH_O, NULL}, {"head", head, METH_VARARGS, NULL},
    {"op_index", op_index, METH_VARARGS, NULL}, {"counted", get_counted, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "nclx_r22_probe", NULL, -1, m};
PyMODINIT_FUNC PyInit_nclx_r22_probe(void) {
    if (import_nclx() < 0) return NULL;
    return PyModule_Create(&mod);
}
"""


@pytest.fixture(scope="module")
def probe_dir(tmp_path_factory):
    return build_probe(tmp_path_factory, "nclx_r22_probe", SOURCE)


def _run(probe_dir, code):
    proc = run_with_probe(probe_dir, code)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.stdout


CALLS = {
    "binary": "a + a",
    "sort": "np.sort(a)",
    "convert": "a.copy()",
    "convert-copyto": "np.copyto(np.empty(N), a)",
    "convert-setitem": "np.empty(N).__setitem__(Ellipsis, a)",
    "mask": "nclx.mask.extract(a > 3, a)",
    "mask-place": "nclx.mask.place(a.copy(), a > 3, [1.0])",
    "mask-count": "nclx.mask.count(a > 3)",
    "rng": "nclx.random.Generator(1).random(N)",
    "create": "nclx.zeros(N)",
}


@pytest.mark.parametrize("kind", [0, 1], ids=["call_next-NULL", "status_add-NULL"])
@pytest.mark.parametrize("n", [10, 300_000], ids=["small", "large"])
@pytest.mark.parametrize("what", sorted(CALLS))
def test_c1_a_c_hooks_error_is_raised_by_every_call_op(probe_dir, what, n, kind):
    sub = spec.SUBSYSTEMS.index(what.split("-")[0])
    words = "call_next: node is NULL" if kind == 0 else "status_add: call is NULL"
    out = _run(probe_dir, f"""
        import numpy as np
        import nclx, nclx.mask, nclx.random
        import nclx_r22_probe as p
        nclx.install()
        nclx.set_num_threads(2)
        N = {n}
        a = np.arange(N, dtype=np.float64)
        node = p.add({kind}, {sub})
        try:
            {CALLS[what]}
            print("raised: nothing")
        except Exception as e:
            print("raised:", type(e).__name__, e)
        p.rm(node)
        r = {CALLS[what]}
        print("after: ok")
    """)
    assert f"raised: ValueError nclx C API {words}" in out, out
    assert "after: ok" in out


@pytest.mark.parametrize("later", ["funnel", "kernel"])
@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_c2_a_pending_c_error_is_not_blamed_on_a_later_python_hook(probe_dir, later, dtype):
    sub = spec.SUBSYSTEMS.index("binary")
    out = _run(probe_dir, f"""
        import sys
        import numpy as np
        import nclx, nclx.hooks as hooks
        import nclx_r22_probe as p
        unraised = []
        sys.unraisablehook = lambda u: unraised.append(u.exc_value)
        nclx.install()
        seen = []
        def spy(call):
            seen.append(call.n)        # a C call: met the pending exception before
            return call.next()
        class K(hooks.Kernel):
            def __call__(self, inputs, out):
                out[...] = inputs[0] + inputs[1]
        if "{later}" == "funnel":
            h = hooks.register("funnel", "binary", spy, position="back")
        else:
            h = hooks.register("kernel", ("add", "{dtype}"), K())
        node = p.add(1, {sub})
        a = np.arange(10, dtype="{dtype}")
        try:
            np.add(a, a)
            print("raised: nothing")
        except Exception as e:
            print("raised:", type(e).__name__, e)
        print("errors:", h.errors, "unraised:", len(unraised))
        p.rm(node)
        print("after:", np.add(a, a).tolist() == (2 * a).tolist(), h.errors)
        h.remove()
    """)
    assert "raised: ValueError nclx C API status_add: call is NULL" in out, out
    assert "errors: 0 unraised: 0" in out, out
    assert "after: True 0" in out, out


def test_c3_call_ops_are_named_and_their_kernel_chains_reached(probe_dir):
    ops = list(spec.ALL_OP_NAMES)
    dt = {name: i for i, name in enumerate(spec.DTYPES)} if hasattr(spec, "DTYPES") else None
    from nclx._ncl.dtypes import DTYPES
    f64, i64, b = DTYPES.index("float64"), DTYPES.index("int64"), DTYPES.index("bool")
    out = _run(probe_dir, f"""
        import numpy as np
        import nclx, nclx.mask
        import nclx_r22_probe as p
        print("sort", p.op_index("sort"), "copy", p.op_index("copy"),
              "extract", p.op_index("extract"), "add", p.op_index("add"),
              "nonsense", p.op_index("nonsense"))
        nclx.install()
        node = p.add_kernel(2, {ops.index("sort")}, 1, ({f64}, 0, 0, 0))
        np.sort(np.arange(1000.0)[::-1])
        print("sort counted", p.counted())
        p.rm(node)
        node = p.add_kernel(2, {ops.index("extract")}, 3, ({b}, {i64}, {i64}, 0))
        a = np.arange(100, dtype=np.int64)
        got = nclx.mask.extract(a > 50, a)
        print("extract counted", p.counted(), got.tolist() == list(range(51, 100)))
        p.rm(node)
        try:
            p.add_kernel(2, {ops.index("sort")}, 2, ({f64}, {f64}, 0, 0))
        except LookupError as e:
            print("LookupError:", e)
    """)
    assert (f"sort {ops.index('sort')} copy {ops.index('copy')} extract "
            f"{ops.index('extract')} add {ops.index('add')} nonsense -1") in out, out
    assert "sort counted 1" in out, out
    assert "extract counted 2 True" in out, out
    assert (f"LookupError: kernel_chain: nclx has no kernel chain for op {ops.index('sort')} "
            f"('sort') with dtypes (float64, float64)") in out, out


def test_c4_bad_chain_lookups_say_what_is_wrong(probe_dir):
    binary = spec.SUBSYSTEMS.index("binary")
    out = _run(probe_dir, f"""
        import nclx
        import nclx_r22_probe as p
        for sub in (-1, {len(spec.SUBSYSTEMS)}):
            try:
                p.head(sub)
            except Exception as e:
                print(type(e).__name__ + ":", e)
        nclx.set_num_threads(2)
        try:
            p.rm(p.head({binary}))          # the threader: a default node
        except ValueError as e:
            print("remove:", e)
    """)
    assert f"ValueError: funnel_chain: no subsystem -1 (enum ncl_subsystem: 0 to " \
           f"{len(spec.SUBSYSTEMS) - 1})" in out, out
    assert f"ValueError: funnel_chain: no subsystem {len(spec.SUBSYSTEMS)}" in out, out
    assert "is a default node of chain 'binary': it cannot be removed" in out, out


def test_c5_a_table_of_another_size_is_named(tmp_path):
    inc = tmp_path / "include"
    inc.mkdir()
    real = pathlib.Path(nclx.get_include())
    for f in real.iterdir():
        if f.suffix == ".h":
            (inc / f.name).write_text(f.read_text())
    header = (inc / "nclx.h").read_text()
    anchor = "    void (*status_add)(ncl_call *call, int flag, long count);\n"
    assert anchor in header
    (inc / "nclx.h").write_text(header.replace(anchor, anchor + "    void (*future)(void);\n"))
    (tmp_path / "nclx_r22_big.c").write_text(textwrap.dedent("""
        #include <Python.h>
        #include "nclx.h"
        static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "nclx_r22_big", NULL, -1, NULL};
        PyMODINIT_FUNC PyInit_nclx_r22_big(void) {
            if (import_nclx() < 0) return NULL;
            return PyModule_Create(&mod);
        }
    """))
    (tmp_path / "setup.py").write_text(textwrap.dedent(f"""
        from setuptools import setup, Extension
        setup(ext_modules=[Extension("nclx_r22_big", ["nclx_r22_big.c"],
                                     include_dirs=[{str(inc)!r}])],
              script_args=["build_ext", "--inplace"])
    """))
    proc = subprocess.run([sys.executable, "setup.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = run_with_probe(str(tmp_path), """
        try:
            import nclx_r22_big
        except ImportError as e:
            print("ImportError:", e)
    """)
    assert "an nclx C API table of" in proc.stdout, proc.stdout + proc.stderr
    assert "rebuild it against the installed nclx.h" in proc.stdout
