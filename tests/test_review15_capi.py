"""Review 15: the C API, the ledger and checked() attacked as a hostile
library author and user.

A small C extension is compiled at test time against nclx.get_include()
(as tests/test_c_api.py does); calls that crashed the process run in a
subprocess with a timeout."""
import os
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
import nclx.ledger
from capi_probe import build_probe, run_with_probe

SOURCE = r"""
#include <Python.h>
#include "nclx.h"
#include <unistd.h>

static ncl_node *nodes[4];
static int in_hook = 0, let_go = 0;
static long destroyed = 0;

static void on_destroy(void *user) { destroyed++; }

static int slow_hook(ncl_node *node, ncl_call *call) {
    __atomic_store_n(&in_hook, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&let_go, __ATOMIC_SEQ_CST)) usleep(500);
    return NCLX_API->call_next(node, call);
}
static int pyerr_hook(ncl_node *node, ncl_call *call) {
    int rc = NCLX_API->call_next(node, call);
    PyGILState_STATE st = PyGILState_Ensure();
    PyErr_SetString(PyExc_ZeroDivisionError, "set by a C hook");
    PyGILState_Release(st);
    return rc;
}
static int minus_one_hook(ncl_node *node, ncl_call *call) {
    NCLX_API->call_next(node, call);
    return -1;
}
static int punt_hook(ncl_node *node, ncl_call *call) { return NCLX_API->call_next(node, call); }
static ncl_hook_fn fns[] = {slow_hook, pyerr_hook, minus_one_hook, punt_hook};

static PyObject *add(PyObject *self, PyObject *args) {
    int slot, kind; const char *name;
    if (!PyArg_ParseTuple(args, "iis", &slot, &kind, &name)) return NULL;
    ncl_node *n = NCLX_API->hook_add(NCLX_API->funnel_chain(NCL_SUB_BINARY), name, fns[kind],
                                     NULL, on_destroy, NCL_FRONT, NULL);
    if (n == NULL) return NULL;
    nodes[slot] = n;
    Py_RETURN_NONE;
}
static PyObject *remove_(PyObject *self, PyObject *args) {
    int slot;
    if (!PyArg_ParseTuple(args, "i", &slot)) return NULL;
    if (NCLX_API->hook_remove(nodes[slot]) < 0) return NULL;
    Py_RETURN_NONE;
}
static PyObject *bad_add(PyObject *self, PyObject *args) {
    int which;
    if (!PyArg_ParseTuple(args, "i", &which)) return NULL;
    ncl_chain *ch = NCLX_API->funnel_chain(NCL_SUB_BINARY);
    ncl_node *n = NULL;
    switch (which) {
    case 0: n = NCLX_API->hook_add(NULL, "x", punt_hook, NULL, NULL, NCL_FRONT, NULL); break;
    case 1: n = NCLX_API->hook_add(ch, NULL, punt_hook, NULL, NULL, NCL_FRONT, NULL); break;
    case 2: n = NCLX_API->hook_add(ch, "x", NULL, NULL, NULL, NCL_FRONT, NULL); break;
    case 3: n = NCLX_API->hook_add(ch, "\xff\xfe", punt_hook, NULL, NULL, NCL_FRONT, NULL); break;
    case 4: n = NCLX_API->hook_add(ch, "x", punt_hook, NULL, NULL, NCL_BEFORE, "\xff"); break;
    case 5: n = NCLX_API->hook_add(ch, "x", punt_hook, NULL, NULL, -7, NULL); break;
    case 6: n = NCLX_API->hook_add(ch, "", punt_hook, NULL, NULL, NCL_FRONT, NULL); break;
    case 7: if (NCLX_API->hook_remove(NULL) < 0) return NULL; Py_RETURN_NONE;
    }
    if (n == NULL) return NULL;
    NCLX_API->hook_remove(n);
    Py_RETURN_NONE;
}
/* kernel lookups with hostile arguments: NULL dtypes, odd counts, odd ops */
static PyObject *lookups(PyObject *self, PyObject *args) {
    int which;
    if (!PyArg_ParseTuple(args, "i", &which)) return NULL;
    int op = NCLX_API->op_index("add");
    int d[4] = {NCL_INT64, NCL_INT64, NCL_INT64, NCL_INT64};
    switch (which) {
    case 0: return PyBool_FromLong(NCLX_API->kernel(op, NULL, 3) == NULL);
    case 1: if (NCLX_API->kernel_chain(op, NULL, 3) == NULL) return NULL; Py_RETURN_NONE;
    case 2: return Py_BuildValue("(iiii)", NCLX_API->op_index(NULL), NCLX_API->op_index("nope"),
                                 NCLX_API->dtype_of_typenum(-1), NCLX_API->dtype_of_typenum(100000));
    case 3: {   /* NULL and a ValueError each (review 22: before, NULL alone) */
        int a = NCLX_API->funnel_chain(-1) == NULL && PyErr_ExceptionMatches(PyExc_ValueError);
        PyErr_Clear();
        int b = NCLX_API->funnel_chain(100000) == NULL
                && PyErr_ExceptionMatches(PyExc_ValueError);
        PyErr_Clear();
        return PyBool_FromLong(a && b);
    }
    case 4: return PyBool_FromLong(NCLX_API->kernel(op, d, 100) == NULL
                                   && NCLX_API->kernel(op, d, -3) == NULL
                                   && NCLX_API->kernel(-5, d, 3) == NULL
                                   && NCLX_API->kernel(100000, d, 3) == NULL
                                   && NCLX_API->kernel(op, d, 3) != NULL);
    case 5: if (NCLX_API->kernel_chain(op, d, 100) == NULL) return NULL; Py_RETURN_NONE;
    }
    Py_RETURN_NONE;
}
static PyObject *state(PyObject *self, PyObject *a) {
    return Py_BuildValue("(il)", __atomic_load_n(&in_hook, __ATOMIC_SEQ_CST), destroyed);
}
static PyObject *let_go_(PyObject *self, PyObject *a) {
    __atomic_store_n(&let_go, 1, __ATOMIC_SEQ_CST);
    Py_RETURN_NONE;
}
static PyMethodDef methods[] = {
    {"add", add, METH_VARARGS, NULL}, {"remove", remove_, METH_VARARGS, NULL},
    {"bad_add", bad_add, METH_VARARGS, NULL}, {"lookups", lookups, METH_VARARGS, NULL},
    {"state", state, METH_NOARGS, NULL}, {"let_go", let_go_, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nclx_r15_probe", NULL, -1, methods};
PyMODINIT_FUNC PyInit_nclx_r15_probe(void) {
    if (import_nclx() < 0) return NULL;
    return PyModule_Create(&module);
}
"""

INTS = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)


@pytest.fixture(scope="module")
def probe_dir(tmp_path_factory):
    return build_probe(tmp_path_factory, "nclx_r15_probe", SOURCE)


@pytest.fixture(scope="module")
def probe(probe_dir):
    sys.path.insert(0, probe_dir)
    try:
        import nclx_r15_probe
        yield nclx_r15_probe
    finally:
        sys.path.remove(probe_dir)


@pytest.fixture(autouse=True)
def _clean():
    hooks.reset()
    yield
    nclx.uninstall()
    hooks.reset()


_run = run_with_probe


# ------------------------------------------------------------------ C API

def test_kernel_lookup_with_null_dtypes_is_null_not_a_crash(probe_dir):
    """kernel(op, NULL, n) read the NULL array (segfault); it is "no kernel"."""
    proc = _run(probe_dir, """
        import nclx_r15_probe as p
        print(p.lookups(0))
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True"


def test_kernel_chain_with_null_dtypes_raises_not_a_crash(probe_dir):
    """kernel_chain(op, NULL, n) read the NULL array (segfault); it is a ValueError."""
    proc = _run(probe_dir, """
        import nclx_r15_probe as p
        try:
            p.lookups(1)
        except ValueError as e:
            print("ValueError", e)
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("ValueError") and "NULL" in proc.stdout


def test_lookups_with_odd_ops_counts_and_typenums(probe):
    assert probe.lookups(2) == (-1, -1, -1, -1)
    assert probe.lookups(3) is True
    assert probe.lookups(4) is True
    with pytest.raises(LookupError):
        probe.lookups(5)


@pytest.mark.parametrize("which, exc", [(0, ValueError), (1, ValueError), (2, ValueError),
                                        (3, UnicodeDecodeError), (4, UnicodeDecodeError),
                                        (5, nclx.errors.HookError), (6, nclx.errors.HookError),
                                        (7, ValueError)])
def test_hook_add_and_remove_with_bad_arguments_raise(probe, which, exc):
    before = hooks.chain("funnel", "binary")
    with pytest.raises(exc):
        probe.bad_add(which)
    assert hooks.chain("funnel", "binary") == before


def test_same_name_twice_then_remove_twice(probe):
    probe.add(0, 3, "twice")
    try:
        with pytest.raises(nclx.errors.HookError, match="already has a node named"):
            probe.add(1, 3, "twice")
    finally:
        probe.remove(0)
    hooks.collect()
    with pytest.raises(ValueError, match="no live nclx node"):
        probe.remove(0)
    assert "twice" not in hooks.chain("funnel", "binary")


def test_unlink_while_a_call_runs_through_the_node(probe):
    """The node is unlinked at once but destroyed only after the call that
    stands on it has punted and left; the call's result is whole."""
    old = nclx.get_num_threads()
    nclx.set_num_threads(1)
    probe.add(0, 0, "slow")
    destroyed0 = probe.state()[1]
    res = {}

    def run():
        a = np.arange(100_000, dtype=np.int64)    # NumPy releases the GIL
        res["r"] = a + a

    try:
        with nclx.installed():
            t = threading.Thread(target=run)
            t.start()
            deadline = time.monotonic() + 20
            while probe.state()[0] == 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            assert probe.state()[0] == 1
            probe.remove(0)
            assert "slow" not in hooks.chain("funnel", "binary")
            assert probe.state()[1] == destroyed0       # still in use: not freed
            probe.let_go()
            t.join(20)
            hooks.collect()
        assert probe.state()[1] == destroyed0 + 1
        assert (res["r"] == 2 * np.arange(100_000)).all()
    finally:
        probe.let_go()
        nclx.set_num_threads(old)


def test_c_hook_that_sets_a_python_exception_and_one_returning_minus_one(probe):
    """An exception a C hook sets (GIL taken) is raised by the ufunc call, as
    an exception NumPy's own loop sets; it does not leak into later calls.
    A hook's return code is not an error channel: -1 after punting leaves
    the result computed."""
    a = np.arange(10, dtype=np.int64)
    probe.add(0, 1, "pyerr")
    try:
        with nclx.installed():
            with pytest.raises(ZeroDivisionError, match="set by a C hook"):
                a + a
    finally:
        probe.remove(0)
    with nclx.installed():
        assert (a + a == 2 * a).all()
    probe.add(0, 2, "minus_one")
    try:
        with nclx.installed():
            assert (a + a == 2 * a).all()
    finally:
        probe.remove(0)


def test_c_hook_survives_uninstall_and_fork(probe_dir):
    proc = _run(probe_dir, """
        import os
        import numpy as np, nclx, nclx.hooks as hooks
        import nclx_r15_probe as p
        p.add(0, 3, "c_node")
        nclx.install(); nclx.uninstall()
        a = np.arange(100_000.0)
        assert (a + a == 2 * a).all()
        with nclx.installed():
            pid = os.fork()
            if pid == 0:
                ok = (a + a == 2 * a).all()
                p.remove(0); hooks.collect()
                os._exit(0 if ok and p.state()[1] == 1 else 3)
            _, st = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(st) == 0
            assert "c_node" in hooks.chain("funnel", "binary")
        p.remove(0); hooks.collect()
        assert p.state()[1] == 1
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


# ------------------------------------------------------------------ ledger

def test_ledger_nested_threads_clear_and_bounded():
    a = np.arange(300_000, dtype=np.float64)
    old = nclx.get_num_threads()
    nclx.set_num_threads(3)
    try:
        with nclx.ledger.recording() as outer:
            with nclx.ledger.recording() as inner:
                a + a                                  # split across threads: one call
            a * a
            hooks.reset()                              # the recording's nodes stay
            a - a
        np.add(a, a)                                   # after the block: not counted
        rows_in = {(r.op, r.kind): r.calls for r in inner.records()}
        rows_out = {(r.op, r.kind): r.calls for r in outer.records()}
        assert rows_in == {("add", "elementwise"): 1}
        assert rows_out == {("add", "elementwise"): 1, ("multiply", "elementwise"): 1,
                            ("subtract", "elementwise"): 1}

        def work():
            b = np.arange(1000.0)
            for _ in range(50):
                b + b

        with nclx.ledger.recording() as led:
            ts = [threading.Thread(target=work) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            a + a
            led.clear()
            a * a
        assert [(r.op, r.calls) for r in led.records()] == [("multiply", 1)]

        b = np.arange(4.0)
        with nclx.ledger.recording() as led:
            for _ in range(20_000):
                b + b
        assert [(r.op, r.calls, r.elements) for r in led.records()] == [("add", 20_000, 80_000)]
    finally:
        nclx.set_num_threads(old)


# ------------------------------------------------------------------ checked

def _fits(v, dt):
    i = np.iinfo(dt)
    return i.min <= v <= i.max


def _values(dt):
    i = np.iinfo(dt)
    vals = {i.min, i.min + 1, -2, -1, 0, 1, 2, 3, 7, 100, i.max // 2, i.min // 2, i.max - 1, i.max}
    return sorted(v for v in vals if i.min <= v <= i.max)


def _power(x, y):
    if y < 0:
        return None
    if abs(x) < 2 or y < 130:
        return x ** y
    return 1 << 200


BINARY = {"add": lambda x, y: x + y, "subtract": lambda x, y: x - y,
          "multiply": lambda x, y: x * y, "power": _power,
          "floor_divide": lambda x, y: x // y if y else None,
          "remainder": lambda x, y: x % y if y else None}
UNARY = {"negative": lambda x: -x, "absolute": abs, "square": lambda x: x * x}


def _check_elements(uf, operands, true):
    """The call of the elements whose true result fits gives NumPy's values
    and no OverflowError; each element whose result does not fit raises."""
    ok = np.array([t is not None and _fits(t, operands[0].dtype.type) for t in true])
    over = np.array([t is not None and not _fits(t, operands[0].dtype.type) for t in true])
    fit_ops = [o[ok] for o in operands]
    with np.errstate(all="ignore"):
        stock = uf(*fit_ops)
    with nclx.checked(), warnings.catch_warnings():
        warnings.simplefilter("error")
        got = uf(*fit_ops)
    assert got.tobytes() == stock.tobytes()
    for k in np.flatnonzero(over):
        with pytest.raises(OverflowError, match=uf.__name__), nclx.checked():
            uf(*[o[k:k + 1] for o in operands])


@pytest.mark.parametrize("dt", INTS, ids=lambda d: d.__name__)
def test_checked_equals_python_integers(dt):
    vals = _values(dt)
    xs = np.array([x for x in vals for _ in vals], dt)
    ys = np.array([y for _ in vals for y in vals], dt)
    for name, f in BINARY.items():
        true = [f(x, y) for x, y in zip(xs.tolist(), ys.tolist())]
        _check_elements(getattr(np, name), (xs, ys), true)
    x1 = np.array(vals, dt)
    for name, f in UNARY.items():
        _check_elements(getattr(np, name), (x1,), [f(x) for x in vals])


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64], ids=lambda d: d.__name__)
def test_checked_floor_divide_min_by_minus_one_raises(dt):
    """MIN // -1 (the one quotient outside the type) only warned "overflow
    encountered in floor_divide" under checked(); it raises OverflowError,
    and the values written and the divide-by-zero warning stay NumPy's."""
    lo = np.iinfo(dt).min
    a = np.array([lo, 7, -7, lo, 5], dt)
    b = np.array([-1, -2, 2, 1, 0], dt)
    with pytest.raises(OverflowError, match=r"floor_divide \(%s\): 1 element" % dt.__name__):
        with nclx.checked(), np.errstate(divide="ignore"):
            a // b
    with np.errstate(all="ignore"):
        stock = a // b
    with nclx.checked(), np.errstate(over="ignore", divide="ignore"):
        assert (a // b).tobytes() == stock.tobytes()
    with nclx.checked(), pytest.warns(RuntimeWarning, match="divide by zero"):
        r = a[1:] // b[1:]
    assert r.tobytes() == stock[1:].tobytes()
    # in place, and a call split across threads
    c = a.copy()
    with pytest.raises(OverflowError), nclx.checked():
        c //= np.array([-1, -2, 2, 1, 1], dt)
    assert c.tobytes() == np.array([lo, -4, -4, lo, 5], dt).tobytes()   # NumPy's values
    old = nclx.get_num_threads()
    nclx.set_num_threads(3)
    try:
        big = np.full(400_000, 9, dt)
        big[-1] = lo
        with pytest.raises(OverflowError, match="1 element"), nclx.checked():
            big // np.array(-1, dt)
        with nclx.checked():
            assert ((big[:-1] // np.array(-3, dt)) == -3).all()
    finally:
        nclx.set_num_threads(old)


def test_checked_is_per_thread_and_nests():
    a8 = np.array([100], np.int8)
    ready, res = threading.Event(), {}

    def other():
        ready.wait()
        res["r"] = int((a8 + a8)[0])

    t = threading.Thread(target=other)
    t.start()
    with pytest.raises(OverflowError):
        with nclx.checked():
            with nclx.checked():
                pass
            ready.set()
            t.join()
            a8 + a8
    assert res["r"] == -56
    assert not nclx.checked.active()
    assert (a8 + a8)[0] == -56
