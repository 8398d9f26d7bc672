"""nclx.create through NCLib's Create subsystem: the ledger's rows, hooks at
the python, funnel and kernel levels that observe or replace a call, the
same bytes on any number of threads, after fork and from concurrent Python
threads."""
import multiprocessing
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import nclx
import nclx.create as nc
import nclx.hooks as hooks
import nclx.ledger
from nclx._ncl import creating

FIXED = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64"]
#: public function -> (call op, args before dtype)
OPS = {"empty": "empty", "zeros": "zeros", "ones": "full", "full": "full",
       "empty_like": "empty", "zeros_like": "zeros", "ones_like": "full", "full_like": "full"}


@pytest.fixture(autouse=True)
def clean():
    threads = nclx.get_num_threads()
    thresholds = creating.set_thresholds(creating.PIECE_BYTES, 0)   # split whenever large
    hooks.reset()
    yield
    hooks.reset()
    creating.set_thresholds(*thresholds)
    nclx.set_num_threads(threads)


def call(name, n, dtype, **kw):
    if name.endswith("_like"):
        src = np.ones(2 * n, dtype)[::-2]       # a non-contiguous prototype
        return getattr(nc, name)(src, 5, **kw) if name == "full_like" else \
            getattr(nc, name)(src, **kw)
    return getattr(nc, name)(n, 5, dtype, **kw) if name == "full" else \
        getattr(nc, name)(n, dtype, **kw)


def reference(name, n, dtype):
    if name.endswith("_like"):
        src = np.ones(2 * n, dtype)[::-2]
        return getattr(np, name)(src, 5) if name == "full_like" else getattr(np, name)(src)
    return getattr(np, name)(n, 5, dtype) if name == "full" else getattr(np, name)(n, dtype)


# ------------------------------------------------------------------ ledger

@pytest.mark.parametrize("name", list(OPS))
def test_ledger_has_one_create_row_per_call(name):
    with nclx.ledger.recording() as led:
        for dt in FIXED:
            call(name, 1000, dt)
            call(name, 0, dt)                    # no elements: no Create call
        call(name, 10, "complex128")             # NumPy's own code: no row
        call(name, 10, ">f8")
    # (the prototypes' own copies are rows of the convert subsystem)
    rows = sorted((r.op, r.dtypes, r.elements, r.calls, r.kind, r.subsystem)
                  for r in led.records() if r.subsystem == "create")
    assert rows == sorted((OPS[name], (dt,), 1000, 1, "call", "create") for dt in FIXED)


def test_a_subarray_dtype_is_served_as_its_base():
    with nclx.ledger.recording() as led:
        a = nc.full(4, 1.5, "(2,)f4")
        b = nc.zeros_like(np.ones(3), dtype="(2,)i2")
    assert a.shape == (4, 2) and (a == 1.5).all() and b.shape == (3, 2) and not b.any()
    assert sorted((r.op, r.dtypes, r.elements) for r in led.records()
                  if r.subsystem == "create") == \
        [("full", ("float32",), 8), ("zeros", ("int16",), 6)]


def test_ledger_rows_beside_other_subsystems():
    with nclx.ledger.recording() as led:
        a = nc.full(100_000, 2.0)
        np.add(a, a)
    subs = {r.subsystem for r in led.records()}
    assert {"create", "binary"} <= subs


# ------------------------------------------------------------------ hooks

def test_python_hook_observes_each_call_with_its_arguments():
    seen = []

    def spy(c):
        seen.append((c.ufunc.__name__, c.inputs, dict(c.kwargs)))
        return c.next()
    with hooks.register("python", "create", spy):
        a = nc.zeros((2, 3), np.int8, align=64)
        b = nc.full_like(a, 7, order="F")
    assert not a.any() and (b == 7).all() and b.flags.f_contiguous
    assert a.ctypes.data % 64 == 0
    assert seen == [("zeros", ((2, 3), np.int8, "C"),
                     {"device": None, "like": None, "align": 64, "touch": False}),
                    ("full_like", (a, 7, None, "F", True, None),
                     {"device": None, "align": None, "touch": False})]


def test_python_hook_replaces_or_rewrites_a_call():
    def replace(c):
        return "replaced"

    def to_int16(c):
        shape, _dtype, order = c.inputs
        c.inputs = (shape, np.int16, order)
        return c.next()
    with hooks.register("python", "create", replace):
        assert nc.empty(3) == "replaced"
    with hooks.register("python", "create", to_int16):
        assert nc.ones(3).dtype == np.int16
    assert nc.ones(3).dtype == np.float64


def test_funnel_hook_observes_op_dtypes_and_size():
    seen = []

    def spy(c):
        seen.append((c.op, c.dtypes, c.n, c.subsystem))
        c.next()
    with hooks.register("funnel", "create", spy):
        for name in OPS:
            got = call(name, 1000, "uint16")
            want = reference(name, 1000, "uint16")
            if not name.startswith("empty"):
                assert got.tobytes() == want.tobytes()
    assert seen == [(OPS[name], ("uint16",), 1000, "create") for name in OPS]


def test_funnel_hook_replaces_the_fill():
    def fortytwo(c):
        _, out = c.views()
        out[...] = 42                           # written back; the kernel never runs
    with hooks.register("funnel", "create", fortytwo):
        assert (nc.zeros(5, np.int32) == 42).all()
        assert (nc.full((2, 3), 1.5) == 42).all()
        assert (nc.ones_like(np.ones((3, 3))[::2]) == 42).all()
    assert (nc.full((2, 3), 1.5) == 1.5).all()


class Sentinel(hooks.Kernel):
    """A debugging fill: new memory reads as a recognisable NaN."""

    def __call__(self, inputs, out):
        out.view(np.uint64)[...] = 0x7FF8DEADBEEF0000


class Observer(hooks.Kernel):
    def __init__(self):
        self.sizes = []

    def __call__(self, inputs, out):
        self.sizes.append(len(out))
        return NotImplemented                   # pass the call on: nclx fills


def test_kernel_hook_fills_empty_with_a_sentinel():
    with hooks.register("kernel", ("empty", "float64"), Sentinel()):
        for a in (nc.empty(1000), nc.empty((4, 5), order="F"), nc.empty_like(np.ones(7)[::-1]),
                  nc.empty(3 << 20, touch=True)):
            assert (a.view(np.uint64) == 0x7FF8DEADBEEF0000).all()
        assert nc.empty(3, np.float32).dtype == np.float32     # other kernel chains unhooked


def test_kernel_hook_observes_and_passes_on():
    obs = Observer()
    with hooks.register("kernel", ("full", "int64"), obs):
        a = nc.full(12345, -3)
        b = nc.ones_like(np.ones((10, 10), np.int64).T)
    assert (a == -3).all() and (b == 1).all()
    assert obs.sizes == [12345, 100]


def test_a_failing_hook_is_reported_and_the_call_still_made():
    def boom(c):
        raise RuntimeError("boom")
    caught = []
    old = sys.unraisablehook
    sys.unraisablehook = caught.append
    try:
        with hooks.register("funnel", "create", boom) as h:
            a = nc.full(1000, 2.5)
    finally:
        sys.unraisablehook = old
    assert (a == 2.5).all()
    assert "boom" in str(caught[0].exc_value) and h.errors == 1


# ------------------------------------------------------------------ threads

SIZES_BYTES = [4096 * k + d for k in (1, 2, 3, 5, 8, 17) for d in (-8, 0, 8)]


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("align", [None, 4096, 64])
def test_same_bytes_on_any_number_of_threads(threads, align):
    nclx.set_num_threads(threads)
    creating.set_thresholds(4096)               # every thread gets a piece here
    for nbytes in SIZES_BYTES:
        for dt, value in (("float64", -1.25), ("int8", 7), ("uint16", 0xABCD), ("bool", True),
                          ("float32", np.float32(3.3)), ("int64", 0)):
            n = nbytes // np.dtype(dt).itemsize
            np.full(n + 64, 0x55, np.uint8)      # dirty heap memory, freed
            want = np.full(n, value, dt)
            assert nc.full(n, value, dt, align=align).tobytes() == want.tobytes()
            assert nc.full(n, value, dt, align=align, touch=True).tobytes() == want.tobytes()
            assert not nc.zeros(n, dt, align=align, touch=True).any()
            assert not nc.zeros_like(np.ones((n, 2), dt)[:, ::-1], align=align).any()
            nc.empty(n, dt, align=align, touch=True)


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_threads_split_large_fresh_memory(threads):
    nclx.set_num_threads(threads)       # pieces of 4 MiB and more: huge-page bounds
    for n in (10**6, 3 * 10**6 + 7, 10**7 + 3):
        assert (nc.full(n, 2.5) == 2.5).all()
        assert (nc.ones(n, np.int16) == 1).all()
        assert not nc.zeros(n, touch=True).any()


def test_default_thresholds_around_the_cold_size():
    creating.set_thresholds(creating.PIECE_BYTES, creating.COLD_BYTES)
    nclx.set_num_threads(2)
    for nbytes in (creating.COLD_BYTES - 8, creating.COLD_BYTES, creating.COLD_BYTES + 4104):
        for _ in range(2):                      # a sleeping team, then a spinning one
            a = nc.full(nbytes // 8, -7.0)
            assert a.shape == (nbytes // 8,) and (a == -7.0).all()


def _child_fills():
    nclx.set_num_threads(2)
    a = nc.full(3_000_000, 3.5)
    return bool((a == 3.5).all()) and not nc.zeros(3_000_000, touch=True).any(), \
        nclx.get_num_threads()


def test_forked_child_fills_single_threaded():
    nclx.set_num_threads(2)
    assert (nc.full(3_000_000, 1.0) == 1.0).all()   # the parent's team has run
    with multiprocessing.get_context("fork").Pool(1) as pool:
        ok, child_threads = pool.apply(_child_fills)
    assert ok and child_threads == 1


def test_concurrent_python_threads():
    nclx.set_num_threads(2)
    barrier = threading.Barrier(4)

    def work(k):
        barrier.wait()
        for i in range(20):
            n = 200_000 + 4099 * i + k
            a = nc.full(n, float(k), align=64 if i % 2 else None)
            if not (a == k).all() or a.shape != (n,):
                return False
            if nc.zeros(n, np.int32, touch=bool(i % 3)).any():
                return False
        return True
    with nclx.ledger.recording() as led:
        with ThreadPoolExecutor(4) as pool:
            assert all(pool.map(work, range(4)))
    counts = {r.op: r.calls for r in led.records() if r.subsystem == "create"}
    assert counts == {"full": 80, "zeros": 80}
