"""Ufuncs and per-list reductions on Ragged, against NumPy and awkward;
threads, fork and hooks around them."""
import gc
import multiprocessing as mp
import os
import threading

import awkward as ak
import numpy as np
import pytest
from hypothesis import given, strategies as st

import nclx
import nclx.hooks as hooks
from nclx.types import Ragged, from_list, from_strings, to_awkward, typeof
from nclx.types.compute import PARALLEL_MIN_VALUES
from types_strategies import nested_lists

INTS = st.integers(-2 ** 31, 2 ** 31)
FLOATS = st.floats(-1e6, 1e6, allow_nan=False)


def test_elementwise_shares_offsets():
    r = from_list([[1, 2], [], [3, 4, 5]])
    for out in (r * 2, np.sqrt(r), r > 3, -r, r + r, 2 ** r, np.add(r, 1)):
        assert isinstance(out, Ragged) and out.offsets is r.offsets
    assert (r * 2).to_list() == [[2, 4], [], [6, 8, 10]]
    assert (r > 3).to_list() == [[False, False], [], [False, True, True]]
    assert np.sqrt(r).values.tolist() == np.sqrt(r.values).tolist()
    assert (r + r).to_list() == [[2, 4], [], [6, 8, 10]]


@given(nested_lists(leaf=FLOATS, depth=1, none=False), st.sampled_from(
    ["add", "multiply", "subtract", "maximum", "greater", "equal", "true_divide"]))
def test_binary_matches_numpy(data, op):
    r = from_list(data, dtype=np.float64)
    f = getattr(np, op)
    with np.errstate(all="ignore"):
        got = f(r, 1.5)
        both = f(r, r)
        want = f(r.values, 1.5)
        want_both = f(r.values, r.values)
    assert got.values.dtype == want.dtype
    np.testing.assert_array_equal(got.values, want)
    np.testing.assert_array_equal(both.values, want_both)


def test_hooks_see_ragged_calls():
    seen = []

    def spy(call):
        seen.append((call.ufunc.__name__, call.method, type(call.inputs[0]).__name__))
        return call.next()

    r = from_list([[1.0, 4.0], [9.0]])
    with hooks.register("python", "binary", spy), hooks.register("python", "unary", spy):
        r * 2
        np.sqrt(r)
    assert seen == [("multiply", "__call__", "Ragged"), ("sqrt", "__call__", "Ragged")]


def test_kernels_are_nclx(monkeypatch):
    import nclx.aware as aware
    used = []
    real = aware.nclx_ufunc
    monkeypatch.setattr(aware, "nclx_ufunc", lambda u: used.append(u) or real(u))
    import nclx.ufuncs as nu
    r = from_list([[1, 2]])
    r * 2
    assert used and real(np.multiply) is nu.multiply


def test_sliced_window_and_validity():
    base = from_list([[1], None, [2, 3], [4]])
    s = base[1:3]
    out = s * 10
    assert out.to_list() == [None, [20, 30]]
    m = Ragged(base.offsets, base.values, validity=b"\x0d")   # list 1 missing
    both = m + base
    assert both.to_list() == [[2], None, [4, 6], [8]]
    with pytest.raises(ValueError, match="different list lengths"):
        base + from_list([[1], [], [2, 3], [4, 5]])
    with pytest.raises(ValueError, match="array of shape"):
        base + np.arange(4)
    with pytest.raises(TypeError, match="strings"):
        from_strings(["a"]) + 1


def test_out_and_where():
    r = from_list([[1.0, 2.0], [3.0]])
    out = Ragged(r.offsets, np.zeros(3))
    res = np.multiply(r, 2, out=out)
    assert res is out and out.to_list() == [[2.0, 4.0], [6.0]]
    where = r > 1.5
    out2 = Ragged(r.offsets, np.full(3, -1.0))
    np.add(r, 1, out=out2, where=where)
    assert out2.to_list() == [[-1.0, 3.0], [4.0]]


class Foreign:
    """An array type of someone else's, with its own __array_ufunc__."""

    def __init__(self, answer=NotImplemented):
        self.answer = answer

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return self.answer if self.answer is NotImplemented else (self.answer, ufunc.__name__)


def test_foreign_operands_get_notimplemented():
    # NumPy's protocol: Ragged defers to a foreign type that has __array_ufunc__
    r = from_list([[1, 2], [3]])
    f = Foreign("theirs")
    assert r.__array_ufunc__(np.add, "__call__", r, f) is NotImplemented
    assert r.__array_ufunc__(np.add, "__call__", r, 1, out=(f,)) is NotImplemented
    assert np.add(r, f) == ("theirs", "add")
    assert r * f == ("theirs", "multiply") and f - r == ("theirs", "subtract")
    with pytest.raises(TypeError, match="operand type"):     # nobody handles it: NumPy's error
        np.add(r, Foreign())
    # ndarrays and NumPy/Python scalars are not foreign
    assert r.__array_ufunc__(np.add, "__call__", r, np.float32(1)).to_list() == [[2, 3], [4]]


def test_unsupported_methods():
    r = from_list([[1, 2]])
    with pytest.raises(TypeError, match="accumulate"):
        np.add.accumulate(r)
    assert np.add.reduce(r, axis=-1).tolist() == [3]


# -------------------------------------------------------------- reductions
def ak_reduce(name, data, dtype=None):
    arr = ak.Array(data) if dtype is None else ak.values_astype(ak.Array(data), dtype)
    return getattr(ak, name)(arr, axis=-1)


@given(nested_lists(leaf=INTS, depth=1, none=False), st.sampled_from(["sum", "prod", "max", "min"]),
       st.sampled_from([np.int8, np.int32, np.int64, np.uint16, np.uint64]))
def test_int_reductions_equal_awkward(data, name, dtype):
    r = from_list(data, dtype=np.int64).values.astype(dtype)
    r = Ragged(from_list(data).offsets if data else np.zeros(1, np.int64), r)
    with np.errstate(all="ignore"):
        mine = getattr(r, name)(axis=-1)
    theirs = getattr(ak, name)(to_awkward(r), axis=-1)
    assert mine.tolist() == theirs.to_list()
    assert str(mine.dtype) == str(ak.type(theirs)).split(" * ")[1].lstrip("?")
    assert typeof(mine) == str(ak.type(theirs))


@given(nested_lists(leaf=FLOATS, depth=1, none=False), st.sampled_from(["sum", "prod", "max", "min"]))
def test_float_reductions_equal_awkward(data, name):
    r = from_list(data, dtype=np.float64)
    with np.errstate(all="ignore"):
        mine = getattr(r, name)(axis=-1)
        theirs = ak.to_list(getattr(ak, name)(to_awkward(r), axis=-1))
    for m, t in zip(mine.tolist(), theirs, strict=True):
        assert (m is None and t is None) or m == pytest.approx(t, rel=1e-12, abs=0)
    if name == "sum":
        # each list summed in order from 0, as awkward does: the same bits
        assert mine.tolist() == theirs


@given(nested_lists(leaf=st.integers(-1000, 1000), depth=2))
def test_nested_and_missing_equal_awkward(data):
    r = from_list(data)
    a = ak.Array(data)
    if not any(v is not None for v in ak.flatten(a, axis=None).to_list()):
        return       # no leaf: awkward's 'unknown' values
    for name in ("sum", "max", "min", "count"):
        mine = getattr(r, name)(axis=-1)
        theirs = getattr(ak, name)(a, axis=-1)
        got = mine.to_list() if isinstance(mine, Ragged) else mine.tolist()
        assert got == theirs.to_list(), name


def test_empty_list_max_is_missing():
    r = from_list([[3, 1], [], [2]])
    assert r.max().tolist() == [3, None, 2]
    assert r.min().tolist() == [1, None, 2]
    assert r.sum().tolist() == [4, 0, 2]
    assert r.prod().tolist() == [3, 1, 2]
    assert typeof(r.max()) == "3 * ?int64" and typeof(r.sum()) == "3 * int64"
    assert r.sum(axis=None) == 6 and r.max(axis=None) == 3
    assert from_list([[], []]).max(axis=None) is None
    with pytest.raises(ValueError, match="axis=0"):
        r.sum(axis=0)
    fixed = Ragged(np.array([0, 2, 3]), np.arange(6.0).reshape(3, 2))
    assert fixed.sum().to_list() == [[1.0, 5.0], [9.0]]


def test_missing_values_are_skipped_by_max_and_min():
    # per list over the values present; a list with none present is missing
    v = np.ma.masked_array([5.0, np.nan, -1.0, 7.0, 2.0], mask=[0, 1, 0, 1, 1])
    r = Ragged(np.array([0, 3, 5, 5]), v)
    assert r.max().tolist() == [5.0, None, None] and r.min().tolist() == [-1.0, None, None]
    assert r.sum().tolist() == [4.0, 0.0, 0.0] and r.count().tolist() == [2, 0, 0]
    c = np.ma.masked_array([1 + 2j, 3 + 0j, -np.inf - 1j, 5j], mask=[0, 1, 0, 0])
    rc = Ragged(np.array([0, 2, 4]), c)
    want = [np.max(c[0:2].compressed()), np.max(c[2:4].compressed())]
    assert rc.max().tolist() == want and rc.min().tolist() == [1 + 2j, -np.inf - 1j]


def test_bool_and_dtype_argument():
    r = from_list([[True, True], [False]])
    assert r.sum().tolist() == [2, 0] and r.sum().dtype == np.int64
    assert r.max().tolist() == [True, False]
    i8 = Ragged(np.array([0, 3]), np.array([100, 100, 100], np.int8))
    assert i8.sum().tolist() == [300]
    assert i8.sum(dtype=np.int8).tolist() == [np.int8(300 - 256)]


def test_reduce_large_lists():
    rng = np.random.default_rng(0)
    lens = rng.integers(0, 20, 10 ** 5)
    offsets = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    values = rng.random(int(offsets[-1]))
    r = Ragged(offsets, values)
    theirs = ak.sum(to_awkward(r), axis=-1).to_numpy()
    np.testing.assert_allclose(r.sum(), theirs, rtol=1e-12)
    imax = ak.max(to_awkward(r), axis=-1)
    np.testing.assert_array_equal(np.ma.getmaskarray(r.max()), ak.is_none(imax).to_numpy())


def test_long_lists_use_the_kernel_path():
    # lists longer than the fold threshold go through nclx's reduction kernel
    r = Ragged(np.array([0, 1000, 1000, 3000]), np.arange(3000, dtype=np.int64))
    assert r.sum().tolist() == [sum(range(1000)), 0, sum(range(1000, 3000))]
    assert r.max().tolist() == [999, None, 2999]
    f = Ragged(r.offsets, np.linspace(-1, 1, 3000))
    np.testing.assert_allclose(f.sum(), [np.sum(f.values[:1000]), 0, np.sum(f.values[1000:])],
                               rtol=1e-12)


def test_reductions_check_trusted_offsets():
    # validate=False: the segment kernels check every list against the values
    values = np.arange(5.0)
    bad = Ragged(np.array([0, 100, 101, 2]), values, validate=False)
    with pytest.raises(ValueError, match="leave the values"):
        bad.sum()
    dec = Ragged(np.array([0, 4, 1]), values, validate=False)
    with pytest.raises(ValueError, match="list 1: offsets 4..1 run backwards"):
        dec.sum()           # named by the offsets as given (list 0, 0..4, is inside the values)


def test_empty_raggeds_compute():
    e = Ragged(np.zeros(1, np.int64), np.zeros(0))
    assert e.sum().tolist() == [] and e.max().tolist() == [] and (e * 2).to_list() == []
    allempty = Ragged(np.zeros(4, np.int64), np.zeros(0, np.int32))
    assert allempty.sum().tolist() == [0, 0, 0] and allempty.max().tolist() == [None] * 3


def test_strided_and_overlapping_values():
    base = np.arange(20.0)
    strided = base[::2]                       # stride 16
    r = Ragged(np.array([0, 3, 10]), strided)
    assert r.sum().tolist() == [0 + 2 + 4, sum(range(6, 20, 2))]
    assert (r * 1).to_list() == r.to_list()
    rev = Ragged(np.array([0, 2, 4]), base[::-1][:4])     # negative stride
    assert rev.sum().tolist() == [19 + 18, 17 + 16]
    # two Raggeds over overlapping windows of one buffer; out= into one of them
    a = Ragged(np.array([0, 2, 4]), base[0:4])
    b = Ragged(np.array([0, 2, 4]), base[1:5])
    want = base[0:4] + base[1:5]              # NumPy's answer: as if the inputs were copied
    np.add(a, b, out=b)
    assert base[1:5].tolist() == want.tolist()
    big_endian = Ragged(np.array([0, 2]), np.arange(2, dtype=">i4"))
    assert big_endian.sum().tolist() == [1]


def test_results_keep_their_buffers():
    r = from_list([[1, 2], [3]])
    out = r * 2
    del r
    gc.collect()
    assert out.to_list() == [[2, 4], [6]]


# ------------------------------------------------- hooks, threads and fork
def test_hook_that_raises_leaves_no_trace():
    r = from_list([[1.0, 2.0], [3.0]])

    def boom(call):
        raise RuntimeError("hook says no")
    with hooks.register("python", "binary", boom):
        with pytest.raises(RuntimeError, match="hook says no"):
            r * 2
    with hooks.register("python", "reduce", boom):
        with pytest.raises(RuntimeError, match="hook says no"):
            r.sum()
    assert (r * 2).to_list() == [[2.0, 4.0], [6.0]] and r.sum().tolist() == [3.0, 3.0]


def test_hook_sees_reduction_and_can_replace_it():
    r = from_list([[1, 2], [], [3]])
    seen = []

    def spy(call):
        seen.append((call.ufunc.__name__, call.method))
        return call.next()
    with hooks.register("python", "reduce", spy):
        assert r.sum().tolist() == [3, 0, 3]
    assert seen == [("add", "reduceat")]


def big_ragged(seed=0, nlists=50_000):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 12, nlists)
    offsets = np.zeros(nlists + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    return Ragged(offsets, rng.standard_normal(int(offsets[-1])))


def test_threaded_reduction_is_exact():
    r = big_ragged(nlists=max(50_000, PARALLEL_MIN_VALUES // 5))
    assert len(r.values) >= PARALLEL_MIN_VALUES
    old = nclx.get_num_threads()
    try:
        nclx.set_num_threads(1)
        one = r.sum(), r.max(), r.min()
        nclx.set_num_threads(4)
        four = r.sum(), r.max(), r.min()
    finally:
        nclx.set_num_threads(old)
    for a, b in zip(one, four, strict=True):
        assert np.array_equal(np.ma.getdata(a), np.ma.getdata(b))      # bit for bit
        assert np.array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(b))


def test_many_threads_at_once():
    r = big_ragged(1)
    want = r.sum()
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(np.array_equal(r.sum(), want) and (r * 2).equals(r + r))
        except Exception as exc:   # noqa: BLE001 - reported below
            errors.append(exc)
    ts = [threading.Thread(target=work) for _ in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors and len(results) == 30 and all(results)


def _child_sum(conn):
    r = big_ragged(2)
    conn.send(float(r.sum().sum()))
    conn.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_after_threaded_reduction():
    r = big_ragged(2)
    r.sum()                                   # threads started and joined in the parent
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_child_sum, args=(child,))
    p.start()
    assert parent.poll(60), "the forked child hung"
    assert parent.recv() == float(r.sum().sum())
    p.join(10)
    assert p.exitcode == 0


def test_logical_ufuncs_take_numpys_promoters():
    # nclx.aware.nclx_ufunc leaves logical_* to NumPy (its int64 | uint64 promoter)
    r = from_list([[1, 0, 3], [4]])
    got = np.logical_or(r, np.array(0, np.uint64))
    assert got.to_list() == [[True, False, True], [True]]


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("odt", [np.int32, np.int64, np.uint32, ">i8"])
def test_a_bad_trusted_list_is_named_by_its_global_index_on_any_thread(threads, odt):
    """The lists are split over the core's team; the first list whose
    trusted offsets leave the values is named by its index in the whole
    Ragged, whichever thread found it, for every offsets dtype."""
    from nclx.types import _segments
    n = 200_000
    offsets = np.arange(n + 1, dtype=np.int64)
    offsets[-40:] = offsets[-41] + 10 ** 7          # the last 40 lists leave the values
    values = np.ones(n, np.float64)
    out = np.empty(n)
    old = nclx.get_num_threads()
    try:
        nclx.set_num_threads(threads)
        with pytest.raises(ValueError, match=rf"^list {n - 40}: offsets"):
            _segments.segment_reduce("maximum", values, offsets.astype(odt), out,
                                     identity=None, threads=threads)
    finally:
        nclx.set_num_threads(old)


@pytest.mark.parametrize("op", ["add", "multiply", "maximum", "minimum"])
def test_team_split_equals_one_thread_bit_for_bit(op):
    from nclx.types import _segments
    r = big_ragged(3, nlists=60_000)
    vals = np.ascontiguousarray(r.values)
    outs = []
    old = nclx.get_num_threads()
    try:
        for t in (1, 2, 3):
            nclx.set_num_threads(t)
            out = np.empty(len(r))
            empty = np.zeros(len(r), np.uint8)
            assert _segments.segment_reduce(op, vals, r.offsets, out, empty, 0.0, threads=t)
            outs.append((out.tobytes(), empty.tobytes()))
    finally:
        nclx.set_num_threads(old)
    assert outs[0] == outs[1] == outs[2]


def test_a_packed_record_field_reduces_through_numpy():
    """Values whose stride is not a whole number of items (a packed record's
    field) or that are unaligned go to NumPy's reduceat, not the C kernels."""
    rec = np.zeros(10, dtype=[("a", "i4"), ("b", "f8")])
    rec["b"] = np.arange(10)
    r = Ragged(np.array([0, 4, 10]), rec["b"])
    assert r.sum().tolist() == [6.0, 39.0] and r.max().tolist() == [3.0, 9.0]
    raw = np.zeros(8 * 6 + 1, np.uint8)
    unaligned = raw[1:].view(np.float64)
    unaligned[:] = np.arange(6.0)
    assert not unaligned.flags.aligned
    assert Ragged(np.array([0, 2, 6]), unaligned).sum().tolist() == [1.0, 14.0]


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_decreasing_trusted_offsets_raise_for_every_reduction(name):
    r = Ragged(np.array([0, 3, 1, 4]), np.arange(4.0), validate=False)
    with pytest.raises(ValueError, match=r"^list 1: offsets"):
        getattr(r, name)()
