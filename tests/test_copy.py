"""NumPy's copies of a dtype to itself under install() (nclx._ncl.copying):
the same bytes as stock for every dtype, layout, overlap and thread count,
split across the team where large, the ``copy`` call op's ledger row and
hooks, exact restoration, fork and concurrent Python threads."""
import multiprocessing
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx
import nclx.hooks as hooks
import nclx.ledger
from nclx._ncl import copying, spec
from nclx.errors import NclxInstallError

from team_fixtures import threads  # noqa: F401  (a fixture)

from copy_fixtures import split_small

pytestmark = pytest.mark.skipif(copying.layout() != "",
                                reason=f"NumPy's copy methods not reachable: {copying.layout()}")

OTHER = ["complex128", ">f8", ">i4", "M8[ns]", "U3", "V8"]


@pytest.fixture(autouse=True)
def clean():
    with split_small():
        yield


def _data(dtype, n):
    raw = np.random.default_rng(n).integers(0, 256, n * np.dtype(dtype).itemsize + 64,
                                            dtype=np.uint8)
    a = raw[:n * np.dtype(dtype).itemsize].view(dtype)
    if a.dtype.kind == "f":             # NaN payloads, -0.0 and infinities
        a[:4] = np.array([-0.0, np.inf, -np.nan, 0.0], dtype)[:len(a[:4])]
    return a


def _cases(a):
    """NumPy code that copies ``a``'s dtype to itself, each returning arrays."""
    n = len(a)
    m = np.resize(a, (max(n // 4, 1), 4)) if n else a.reshape(0, 4)

    def setitem(dst, src):
        dst[...] = src
        return dst

    def shifted(step):
        b = a.copy()
        if step > 0:
            b[1:] = b[:-1]                  # overlapping, forward
        else:
            b[:-1] = b[1:]                  # overlapping, backward
        return b

    def reversed_in_place():
        b = a.copy()
        b[...] = b[::-1]
        return b

    return {
        "copy": lambda: a.copy(),
        "copy strided": lambda: a[::3].copy(),
        "copy reversed": lambda: a[::-1].copy(),
        "array": lambda: np.array(a),
        "F order": lambda: np.array(m, order="F"),
        "transpose C": lambda: np.ascontiguousarray(m.T),
        "columns": lambda: np.ascontiguousarray(m[:, ::-2]),
        "setitem": lambda: setitem(np.empty_like(a), a),
        "setitem strided": lambda: setitem(np.zeros(2 * n, a.dtype)[::2], a),
        "broadcast": lambda: setitem(np.empty_like(a), a[:1]) if n else a.copy(),
        "copyto where": lambda: (lambda d: (np.copyto(d, a, where=np.arange(n) % 3 == 0), d)[1])(
            np.zeros_like(a)),
        "concatenate": lambda: np.concatenate([a, a[::-1], a[:5]]),
        "astype": lambda: a.astype(a.dtype, copy=True),
        "shift forward": lambda: shifted(1),
        "shift backward": lambda: shifted(-1),
        "reversed in place": reversed_in_place,
    }


def _run_all(a):
    out = {}
    for name, fn in _cases(a).items():
        r = fn()
        out[name] = (r.dtype.str, r.shape, r.flags.c_contiguous, r.flags.f_contiguous, r.tobytes())
    return out


def _compare(a):
    nclx.uninstall()
    want = _run_all(a)
    nclx.install()
    got = _run_all(a)
    nclx.uninstall()
    for name in want:
        assert got[name] == want[name], name


SIZES = [0, 1, 7, 511, 512, 513, 1025, 4099, 100_003]


@pytest.mark.parametrize("dtype", list(spec.ALL) + OTHER)
def test_copies_equal_stock_for_every_dtype_and_layout(dtype, threads):  # noqa: F811
    for n in SIZES:
        _compare(_data(dtype, n))


def test_large_copies_are_split_and_small_ones_are_not():
    nclx.set_num_threads(2)
    copying.tune(256 << 10, 0)
    a = np.arange(1 << 20, dtype=np.float64)
    nclx.install()
    before = copying.split_calls()
    small = a[:(256 << 10) // 8 * 2 - 1].copy()      # one byte short of two pieces
    assert copying.split_calls() == before
    big = a.copy()
    assert copying.split_calls() == before + 1
    nclx.uninstall()
    assert big.tobytes() == a.tobytes() and small.tobytes() == a[:len(small)].tobytes()
    a.copy()
    assert copying.split_calls() == before + 1       # NumPy's own getter again


def test_byte_swapped_and_other_dtypes_stay_numpys():
    nclx.set_num_threads(2)
    nclx.install()
    before = copying.split_calls()
    for dt in OTHER:
        _data(dt, 100_000).copy()
    assert copying.split_calls() == before


def test_one_thread_never_splits():
    nclx.set_num_threads(1)
    nclx.install()
    before = copying.split_calls()
    np.ones(10**6).copy()
    assert copying.split_calls() == before


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 3000), start=st.integers(-40, 40), step=st.sampled_from([1, 2, 3, -1, -2, -7]),
       dt=st.sampled_from(list(spec.ALL)), nthreads=st.sampled_from([1, 2, 3, 7]),
       shift=st.integers(-5, 5))
def test_views_and_overlaps_hypothesis(n, start, step, dt, nthreads, shift):
    nclx.set_num_threads(nthreads)
    base = _data(dt, n + 100)

    def run():
        src = base.copy()
        v = src[start::step] if start < len(src) else src[:0]
        k = len(v)
        dst = src.copy()
        lo, hi = max(0, shift), max(0, min(len(dst), len(dst) + shift))
        w = dst[lo:hi]
        m = min(len(w), k)
        if m:
            w[:m] = v[:m] if step > 0 else v[::-1][:m]
        # an overlapping assignment within one buffer
        o = src.copy()
        if m and 0 < m < len(o):
            o[abs(shift):abs(shift) + m] = o[:m]
        return v.copy().tobytes(), dst.tobytes(), o.tobytes()

    nclx.uninstall()
    want = run()
    nclx.install()
    got = run()
    nclx.uninstall()
    assert got == want


def test_ledger_row_of_the_copy_call_op():
    nclx.install()
    a = np.arange(1000, dtype=np.int32)
    with nclx.ledger.recording() as led:
        b = a.copy()
    assert b.tobytes() == a.tobytes()
    rows = [(r.op, r.dtypes, r.elements, r.calls, r.kind, r.subsystem) for r in led.records()]
    assert ("copy", ("int32", "int32"), 1000, 1, "call", "convert") in rows


def test_funnel_hook_observes_each_copy_and_replaces_one():
    nclx.install()
    seen = []

    def spy(c):
        if c.op == "copy":
            seen.append((c.dtypes, c.n))
        c.next()
    a = np.arange(5000, dtype=np.float64)
    with hooks.register("funnel", "convert", spy):
        b = a.copy()
    assert b.tobytes() == a.tobytes() and seen == [(("float64", "float64"), 5000)]

    def fortytwo(c):
        if c.op != "copy":
            return c.next()
        _, out = c.views()
        out[...] = 42
    with hooks.register("funnel", "convert", fortytwo):
        assert (a.copy() == 42).all()
        assert (np.array(a[::-2]) == 42).all()
    assert a.copy().tobytes() == a.tobytes()


class Observer(hooks.Kernel):
    def __init__(self):
        self.sizes = []

    def __call__(self, inputs, out):
        self.sizes.append(len(out))
        return NotImplemented                   # pass the call on: nclx copies


def test_kernel_hook_observes_and_passes_on():
    nclx.install()
    obs = Observer()
    a = np.arange(12345, dtype=np.uint16)
    with hooks.register("kernel", ("copy", "uint16"), obs):
        b = a.copy()
        c = np.arange(10, dtype=np.int8).copy()      # another kernel chain
    assert b.tobytes() == a.tobytes() and c.sum() == 45
    assert obs.sizes == [12345]


def test_a_failing_hook_is_reported_and_the_copy_still_made():
    nclx.install()

    def boom(c):
        raise RuntimeError("boom")
    caught = []
    old = sys.unraisablehook
    sys.unraisablehook = caught.append
    a = np.arange(100_000, dtype=np.float32)
    try:
        with hooks.register("funnel", "convert", boom) as h:
            b = a.copy()
    finally:
        sys.unraisablehook = old
    assert b.tobytes() == a.tobytes()
    assert "boom" in str(caught[0].exc_value) and h.errors >= 1


def test_copies_false_and_true():
    before = copying.getters()
    nclx.install(copies=False)
    assert copying.getters() == before and not copying.is_swapped()
    nclx.install(copies=True)
    assert copying.is_swapped()
    nclx.uninstall()
    assert copying.getters() == before
    with pytest.raises(TypeError, match="copies"):
        nclx.install(copies="yes")


def test_an_unknown_layout_refuses_when_required_and_is_left_alone_otherwise(monkeypatch):
    before = copying.getters()
    monkeypatch.setattr(copying, "_why", "a layout this test made up")
    with pytest.raises(NclxInstallError, match="made up"):
        nclx.install(copies=True)
    assert not nclx.is_installed() and not copying.is_swapped()
    nclx.install()
    assert nclx.is_installed() and not copying.is_swapped()
    nclx.uninstall()
    monkeypatch.undo()
    assert copying.getters() == before


def test_uninstall_twice_leaves_numpys_getters():
    before = copying.getters()
    nclx.install()
    assert copying.is_swapped()
    nclx.uninstall()
    nclx.uninstall()
    assert copying.getters() == before


def test_buffered_nditer_and_its_copy_clone_the_loop_data():
    nclx.install()
    a = np.arange(300_000, dtype=np.float64)[::3]        # a strided operand: buffered copies
    it = np.nditer([a, None], flags=["buffered", "external_loop"], buffersize=50_000,
                   op_flags=[["readonly"], ["writeonly", "allocate"]],
                   op_dtypes=[np.float64, np.float64])
    it2 = it.copy()                                     # clones each transfer's data
    del it2
    with it:
        for x, y in it:
            y[...] = x
        out = it.operands[1]
    assert out.tobytes() == np.ascontiguousarray(a).tobytes()


def _child():
    nclx.install()
    nclx.set_num_threads(2)
    a = np.arange(3_000_000, dtype=np.int64)
    b = a.copy()
    ok = b.tobytes() == a.tobytes()
    nclx.uninstall()
    return ok, nclx.get_num_threads()


def test_forked_child_copies_single_threaded():
    nclx.install()
    nclx.set_num_threads(2)
    np.ones(3_000_000).copy()                           # the parent's team has run
    with multiprocessing.get_context("fork").Pool(1) as pool:
        ok, child_threads = pool.apply(_child)
    assert ok and child_threads == 1


def test_concurrent_python_threads():
    nclx.install()
    nclx.set_num_threads(2)
    barrier = threading.Barrier(4)
    results = []

    def work(k):
        barrier.wait()
        ok = True
        for i in range(20):
            a = np.arange(200_000 + 4099 * i + k, dtype=np.float64) * (k + 1)
            b = a.copy()
            c = np.empty_like(a)
            c[...] = a[::-1]
            ok &= b.tobytes() == a.tobytes() and c.tobytes() == a[::-1].tobytes()
        results.append(ok)
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results == [True] * 4


def test_tune_rejects_bad_values():
    with pytest.raises(ValueError, match="piece_bytes"):
        copying.tune(0)
    with pytest.raises(ValueError, match="cold_bytes"):
        copying.tune(None, -1)


@pytest.mark.parametrize("dtype", list(spec.ALL))
def test_zero_d_and_empty_copies(dtype):
    nclx.install()
    nclx.set_num_threads(2)
    z = _data(dtype, 1).reshape(())
    e = np.empty((0, 5), dtype)
    assert z.copy().tobytes() == z.tobytes() and z.copy().shape == ()
    d = np.zeros((), dtype)
    d[...] = z
    assert d.tobytes() == z.tobytes()
    assert e.copy().shape == (0, 5) and e.T.copy().shape == (5, 0)


def test_copies_under_checked_mode():
    nclx.install()
    nclx.set_num_threads(2)
    a = np.arange(100_000, dtype=np.int64)
    with nclx.checked():
        b = a.copy()
        c = np.empty_like(a)
        c[...] = a[::-1]
        s = a.sum()
    assert b.tobytes() == a.tobytes() and c.tobytes() == a[::-1].tobytes()
    assert s == a.sum()
