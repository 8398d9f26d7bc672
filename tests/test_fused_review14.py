"""Defects found in the fourteenth look at fused evaluation (each test
failed on the code before its fix): a fused function whose ``__code__`` was
replaced (a reload) kept serving the old code's plan; a function reading
np.geterr()/np.geterrcall() saw the trace's own errstate and the branch it
took there became the plan; fused results were reshaped views that did not
own their data (``resize`` refused them); dtype metadata was dropped; and
uninstall() gave a context the handler another context's
install(recycle=True) had replaced."""
import sys
import threading

import numpy as np
import pytest

import nclx
from nclx._ncl import recycle as _recycle

N = 1 << 17             # above fuse_threshold()


def test_a_replaced_code_object_traces_again():
    a = np.arange(N, dtype=np.float64)

    def f(x):
        return x * 2.0

    def g(x):
        return x + 100.0

    fused = nclx.fuse(f)
    assert fused(a).tobytes() == (a * 2.0).tobytes()
    f.__code__ = g.__code__                  # what a reload does
    assert fused(a).tobytes() == (a + 100.0).tobytes()
    assert fused.explain(a) == "fused"


def test_a_partial_of_a_replaced_function_traces_again():
    import functools
    a = np.arange(N, dtype=np.float64)

    def f(x, k):
        return x * k

    def g(x, k):
        return x - k

    fused = nclx.fuse(functools.partial(f, k=3.0))
    assert fused(a).tobytes() == (a * 3.0).tobytes()
    f.__code__ = g.__code__
    assert fused(a).tobytes() == (a - 3.0).tobytes()


def _scaled(x):
    return x * 2.0 if np.geterr()["divide"] == "warn" else x * 3.0


def _signed(x):
    return x * (1.0 if np.geterrcall() is None else -1.0)


@pytest.mark.parametrize("fn", [_scaled, _signed], ids=lambda f: f.__name__)
def test_a_function_reading_the_errstate_runs_eagerly(fn):
    a = np.arange(N, dtype=np.float64)
    fused = nclx.fuse(fn)
    assert fused(a).tobytes() == fn(a).tobytes()
    assert "reads np.geterr" in fused.explain(a)
    with np.errstate(divide="ignore"):
        assert fused(a).tobytes() == fn(a).tobytes()


def test_under_a_profiler_it_runs_eagerly_and_traces_later():
    a = np.arange(N, dtype=np.float64)

    def f(x):
        return x * 2.0 + 1.0

    fused = nclx.fuse(f)
    calls = []
    sys.setprofile(lambda frame, event, arg: calls.append(event))
    try:
        assert fused(a).tobytes() == f(a).tobytes()
        assert "profiler" in fused.explain(a)
    finally:
        sys.setprofile(None)
    assert calls                                  # the user's profiler kept running
    assert fused.explain(a) == "fused"            # the refusal was not kept


@pytest.mark.parametrize("shape", [(N,), (256, N // 256), (4, 8, N // 32)])
def test_results_own_their_data(shape):
    a = np.arange(N, dtype=np.float64).reshape(shape)
    b = a + 1.0
    for got in (nclx.evaluate("2*a+b*b"), nclx.fuse(lambda x, y: 2 * x + y * y)(a, b)):
        assert got.shape == shape and got.flags.owndata and got.base is None
        assert got.tobytes() == (2 * a + b * b).tobytes()
        got.resize(N + 5, refcheck=False)         # as an eager result allows
        assert got.shape == (N + 5,)


def test_dtype_metadata_is_kept():
    dt = np.dtype(np.float64, metadata={"unit": "m"})
    a = np.arange(N, dtype=dt)
    b = a + 1.0
    want = a + b * 2.0
    for got in (nclx.evaluate("a+b*2.0"), nclx.fuse(lambda x, y: x + y * 2.0)(a, b)):
        assert got.dtype.metadata == want.dtype.metadata == {"unit": "m"}
        assert got.tobytes() == want.tobytes()


def _user_handler():
    """A handler of the user's own: a copy of NumPy's default handler under
    another name (a distinct capsule; its struct kept alive for good)."""
    import ctypes
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_New.restype = ctypes.py_object
    api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    p = api.PyCapsule_GetPointer(_recycle.numpy_default(), b"mem_handler")
    size = 128 + 5 * 8              # name[127], version, ctx and four functions
    buf = ctypes.create_string_buffer(ctypes.string_at(p, size), size)
    ctypes.memmove(buf, b"user_handler\0", 13)
    _KEEP.append(buf)
    return api.PyCapsule_New(ctypes.addressof(buf), b"mem_handler", None)


_KEEP = []


def test_uninstall_restores_this_contexts_handler():
    from numpy._core.multiarray import get_handler_name
    before = _recycle.current_handler()
    mine = _user_handler()
    _recycle.set_handler(mine)
    try:
        assert get_handler_name() == "user_handler"
        nclx.install(recycle=True)
        try:
            # another context (a thread starts with NumPy's default handler)
            t = threading.Thread(target=nclx.install, kwargs={"recycle": True})
            t.start()
            t.join()
        finally:
            nclx.uninstall()
            if nclx.is_installed():
                nclx.uninstall()
        assert _recycle.current_handler() is mine
        assert get_handler_name() == "user_handler"
    finally:
        _recycle.set_handler(before)
