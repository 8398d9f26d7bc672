"""Review 18: the hook registry and the C API attacked as a hostile library
author would.  Each test failed before its fix:

- a removed handle whose node's address a new node took read the new
  node's errors; errors a hook raised after removing itself were lost once
  its node was freed;
- a Kernel registered in two nodes had every error counted on the first,
  and one that removed itself lost its errors;
- a handle made while freeing retired nodes freed its own node (a hook's
  ``__del__`` calling ``hooks.reset()``) kept the freed address and read
  and unlinked freed memory (a crash);
- the C API's ``hook_remove`` of a stale pointer whose memory a node of
  Python's took (``checked()``'s kernel nodes, a Python hook) removed that
  node: ``checked()`` stopped raising OverflowError.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from capi_probe import build_probe


@pytest.fixture
def installed():
    nclx.install()
    try:
        yield
    finally:
        hooks.reset()
        nclx.uninstall()


@pytest.fixture
def quiet(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    return seen


def _nclx_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(nclx.__file__)))


# ------------------------------------------------------------ handle records

def test_a_removed_handle_never_reads_the_errors_of_a_node_at_its_address(installed, quiet):
    a = np.arange(5, dtype=np.int64)
    twice = (2 * a).tobytes()
    olds = []
    for i in range(64):
        def old(call, i=i):
            raise ValueError(f"old {i}")
        olds.append(hooks.register("funnel", "binary", old, name=f"old{i}"))
    a + a
    for h in olds:
        h.remove()
    hooks.collect()
    # new nodes take (some of) the freed addresses and raise other errors
    news = []
    for i in range(64):
        def new(call):
            raise KeyError("new")
        news.append(hooks.register("funnel", "binary", new, name=f"new{i}"))
    assert (a + a).tobytes() == twice
    for i, h in enumerate(olds):
        assert h.errors == 1 and isinstance(h.last_error, ValueError), (i, h.last_error)
        assert str(h.last_error) == f"old {i}"
    assert all(h.errors == 1 and isinstance(h.last_error, KeyError) for h in news)


def test_errors_raised_after_a_hook_removed_itself_stay_on_its_handle(installed, quiet):
    a = np.arange(5, dtype=np.int64)
    box = {}

    def leave_then_fail(call):
        box["h"].remove()            # the node is retired: this loop still runs it
        raise ValueError("after remove")

    box["h"] = h = hooks.register("funnel", "binary", leave_then_fail)
    assert (a + a).tobytes() == (2 * a).tobytes()
    assert h.removed
    assert h.errors == 1
    hooks.collect()                  # the node is freed now
    assert h.errors == 1 and str(h.last_error) == "after remove"


# ------------------------------------------------------------------ Kernels

class _Failing(hooks.Kernel):
    def __call__(self, inputs, out):
        raise ValueError("kernel")


def test_one_kernel_in_two_nodes_has_its_errors_counted_per_node(installed, quiet):
    a = np.arange(5, dtype=np.int64)
    k = _Failing()
    h1 = hooks.register("kernel", ("add", "int64"), k, name="k1")
    h2 = hooks.register("kernel", ("add", "int64"), k, name="k2", position="back")
    assert (a + a).tobytes() == (2 * a).tobytes()
    assert (h1.errors, h2.errors) == (1, 1)


def test_a_kernel_that_removed_itself_keeps_its_error(installed, quiet):
    a = np.arange(5, dtype=np.int64)

    class Leaving(hooks.Kernel):
        def __call__(self, inputs, out):
            self.handle.remove()
            raise ValueError("gone")

    k = Leaving()
    k.handle = h = hooks.register("kernel", ("add", "int64"), k)
    assert (a + a).tobytes() == (2 * a).tobytes()
    hooks.collect()
    assert h.removed and h.errors == 1 and str(h.last_error) == "gone"


# ------------------------------------------ a handle whose node freeing took

_FREED_BY_DEL = """
import numpy as np, nclx, nclx.hooks as hooks
nclx.install()
box = []

class Resets:
    def __call__(self, call):
        box.pop().remove()       # retired, not freed: this loop still runs it
        call.next()
    def __del__(self):
        hooks.reset()            # runs when the retired node is freed

box.append(hooks.register("funnel", "binary", Resets(), name="resets"))
np.arange(3) + 1
# freeing the retired node (in register) runs __del__: reset() frees "new"
h = hooks.register("funnel", "binary", lambda c: c.next(), name="new")
print("chain", hooks.chain("funnel", "binary"))
print("removed", h.removed, h.errors)
h.remove()
h2 = hooks.register("funnel", "binary", lambda c: c.next(), name="new")
print("again", hooks.chain("funnel", "binary"), h2.removed)
h2.remove()
nclx.uninstall()
print("done")
"""


def _run_with_freed_memory_overwritten(script, tmp_path):
    """stdout of ``script`` in a child whose glibc overwrites freed memory
    (tcache off), so reading or unlinking a freed node fails instead of
    reading stale bytes; the child must exit 0."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([_nclx_root(), env.get("PYTHONPATH", "")])
    env["GLIBC_TUNABLES"] = "glibc.malloc.tcache_count=0"
    env["MALLOC_PERTURB_"] = "90"
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    return proc.stdout


def test_a_handle_whose_node_was_freed_while_it_was_made_reads_removed(tmp_path):
    out = _run_with_freed_memory_overwritten(_FREED_BY_DEL, tmp_path)
    assert "chain ['threader', 'kernel']" in out
    assert "removed True 0" in out
    assert "again ['new', 'threader', 'kernel'] False" in out and "done" in out


_RESET_DEL = """
import numpy as np, nclx, nclx.hooks as hooks
nclx.install()

class RemovesB:
    def __init__(self, other):
        self.other = other
    def __call__(self, call):
        call.next()
    def __del__(self):
        self.other.remove()      # runs while reset() walks the chain
        for i in range(50):      # reuse the freed memory
            hooks.register("funnel", "unary", lambda c: c.next(), name=f"z{i}").remove()

hb = hooks.register("funnel", "binary", lambda c: c.next(), name="b", position="back")
ha = hooks.register("funnel", "binary", RemovesB(hb), name="a", position="front")
del ha
print("left", hooks.reset())
print("chain", hooks.chain("funnel", "binary"), hb.removed)
print("sum", (np.arange(3) + 1).tolist())
nclx.uninstall()
print("done")
"""


def test_reset_survives_a_hook_whose_del_removes_the_next_node(tmp_path):
    # before: reset() freed each node as it unlinked it; the node's __del__
    # removed (and freed) the next node, which the walk then read: a
    # segmentation fault with freed memory overwritten (review 18)
    out = _run_with_freed_memory_overwritten(_RESET_DEL, tmp_path)
    assert "left 0" in out
    assert "chain ['threader', 'kernel'] True" in out
    assert "sum [1, 2, 3]" in out and "done" in out


# -------------------------------------------------------------------- C API

SOURCE = r"""
#include <Python.h>
#include "nclx.h"

static long destroyed = 0;
static void on_destroy(void *user) { destroyed++; }
static int punt(ncl_node *node, ncl_call *call) { return NCLX_API->call_next(node, call); }

static PyObject *add(PyObject *self, PyObject *args) {
    const char *name; int sub;
    if (!PyArg_ParseTuple(args, "si", &name, &sub)) return NULL;
    ncl_node *n = NCLX_API->hook_add(NCLX_API->funnel_chain(sub), name, punt, NULL, on_destroy,
                                     NCL_FRONT, NULL);
    if (n == NULL) return NULL;
    return PyLong_FromVoidPtr(n);
}
static PyObject *remove_(PyObject *self, PyObject *args) {
    PyObject *p;
    if (!PyArg_ParseTuple(args, "O", &p)) return NULL;
    if (NCLX_API->hook_remove((ncl_node *)PyLong_AsVoidPtr(p)) < 0) return NULL;
    Py_RETURN_NONE;
}
/* the address of the first node of a funnel chain */
static PyObject *head(PyObject *self, PyObject *args) {
    int sub;
    if (!PyArg_ParseTuple(args, "i", &sub)) return NULL;
    return PyLong_FromVoidPtr(NCLX_API->funnel_chain(sub)->head);
}
static PyObject *destroyed_(PyObject *self, PyObject *a) { return PyLong_FromLong(destroyed); }
static PyMethodDef methods[] = {
    {"add", add, METH_VARARGS, NULL}, {"remove", remove_, METH_VARARGS, NULL},
    {"head", head, METH_VARARGS, NULL}, {"destroyed", destroyed_, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nclx_r18_probe", NULL, -1, methods};
PyMODINIT_FUNC PyInit_nclx_r18_probe(void) {
    if (import_nclx() < 0) return NULL;
    return PyModule_Create(&module);
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    probe_dir = build_probe(tmp_path_factory, "nclx_r18_probe", SOURCE)
    sys.path.insert(0, probe_dir)
    try:
        import nclx_r18_probe
        yield nclx_r18_probe
    finally:
        sys.path.remove(probe_dir)


def test_hook_remove_of_stale_pointers_leaves_checked_nodes_alone(installed, probe):
    sub = hooks.SUBSYSTEMS.index("binary")
    a = np.array([2**62], dtype=np.int64)
    stale = [probe.add(f"c{i}", sub) for i in range(200)]
    for p in stale:
        probe.remove(p)
    hooks.collect()
    with nclx.checked():             # its kernel nodes may take the freed addresses
        with pytest.raises(OverflowError):
            a * 4
        refused = 0
        for p in stale:
            try:
                probe.remove(p)      # a buggy library removing its hooks twice
            except ValueError as e:
                refused += 1
                assert "hook_remove" in str(e)
        assert refused == len(stale)
        with pytest.raises(OverflowError):
            a * 4                    # before: the overflow was lost
    assert probe.destroyed() >= len(stale)


def test_hook_remove_refuses_a_python_hook_and_keeps_it(installed, probe):
    sub = hooks.SUBSYSTEMS.index("binary")
    seen = []

    def spy(call):
        seen.append(call.op)
        call.next()

    a = np.arange(4)
    twice = (2 * a).tobytes()
    h = hooks.register("funnel", "binary", spy)
    with pytest.raises(ValueError, match="not added by hook_add"):
        probe.remove(probe.head(sub))
    assert (a + a).tobytes() == twice
    assert seen == ["add"] and not h.removed
    h.remove()
    # its own nodes it still removes, once
    p = probe.add("mine", sub)
    probe.remove(p)
    assert hooks.chain("funnel", "binary") == ["threader", "kernel"]


# ------------------------------------- a function hook returning NotImplemented

@pytest.mark.parametrize("level", ["funnel", "kernel"])
def test_a_function_hook_returning_notimplemented_passes_the_call_on(installed, quiet, level):
    # before: the call counted as done and the output was never written
    # (np.empty's bytes, or out='s old values, came back as the result)
    seen = []

    def declines(call):
        seen.append(1)
        return NotImplemented

    target = "binary" if level == "funnel" else "add_float64"
    h = hooks.register(level, target, declines, name="declines")
    try:
        a = np.arange(1000.0)
        out = np.full(1000, -7.0)
        np.add(a, 1.5, out=out)
        assert seen
        assert out.tobytes() == (np.arange(1000.0) + 1.5).tobytes()
        assert h.errors == 0
    finally:
        h.remove()


def test_notimplemented_after_next_keeps_the_result(installed, quiet):
    def runs_then_declines(call):
        call.next()
        return NotImplemented           # too late to decline: the loop ran

    h = hooks.register("funnel", "binary", runs_then_declines, name="late")
    try:
        out = np.full(100, -7.0)
        np.multiply(np.arange(100.0), 2.0, out=out)
        assert out.tobytes() == (np.arange(100.0) * 2.0).tobytes()
    finally:
        h.remove()


def test_a_stale_c_pointer_is_refused_while_hook_add_makes_new_nodes(installed, probe):
    # before: malloc handed a removed node's memory to the next hook_add,
    # and a second hook_remove of the stale pointer removed that new node;
    # freed C API nodes now wait in a ring of 1024 before malloc reuses them
    sub = hooks.SUBSYSTEMS.index("binary")
    hooks.collect()
    stale = probe.add("old", sub)
    probe.remove(stale)
    hooks.collect()
    fresh = [probe.add(f"n{i}", sub) for i in range(64)]
    try:
        assert stale not in fresh
        with pytest.raises(ValueError, match="no live nclx node"):
            probe.remove(stale)
        assert hooks.chain("funnel", "binary")[:64] == [f"n{i}" for i in range(63, -1, -1)]
    finally:
        for p in fresh:
            probe.remove(p)
