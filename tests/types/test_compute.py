"""Ufuncs and per-list reductions on Ragged, against NumPy and awkward."""
import awkward as ak
import numpy as np
import pytest
from hypothesis import given, strategies as st

import nclx.hooks as hooks
from nclx.types import Ragged, typeof
from types_strategies import nested_lists

INTS = st.integers(-2 ** 31, 2 ** 31)
FLOATS = st.floats(-1e6, 1e6, allow_nan=False)


def test_elementwise_shares_offsets():
    r = Ragged.from_list([[1, 2], [], [3, 4, 5]])
    for out in (r * 2, np.sqrt(r), r > 3, -r, r + r, 2 ** r, np.add(r, 1)):
        assert isinstance(out, Ragged) and out.offsets is r.offsets
    assert (r * 2).to_list() == [[2, 4], [], [6, 8, 10]]
    assert (r > 3).to_list() == [[False, False], [], [False, True, True]]
    assert np.sqrt(r).values.tolist() == np.sqrt(r.values).tolist()
    assert (r + r).to_list() == [[2, 4], [], [6, 8, 10]]


@given(nested_lists(leaf=FLOATS, depth=1, none=False), st.sampled_from(
    ["add", "multiply", "subtract", "maximum", "greater", "equal", "true_divide"]))
def test_binary_matches_numpy(data, op):
    r = Ragged.from_list(data, dtype=np.float64)
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

    r = Ragged.from_list([[1.0, 4.0], [9.0]])
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
    r = Ragged.from_list([[1, 2]])
    r * 2
    assert used and real(np.multiply) is nu.multiply


def test_sliced_window_and_validity():
    base = Ragged.from_list([[1], None, [2, 3], [4]])
    s = base[1:3]
    out = s * 10
    assert out.to_list() == [None, [20, 30]]
    m = Ragged(base.offsets, base.values, validity=b"\x0d")   # list 1 missing
    both = m + base
    assert both.to_list() == [[2], None, [4, 6], [8]]
    with pytest.raises(ValueError, match="different list lengths"):
        base + Ragged.from_list([[1], [], [2, 3], [4, 5]])
    with pytest.raises(ValueError, match="array of shape"):
        base + np.arange(4)
    with pytest.raises(TypeError, match="strings"):
        Ragged.from_strings(["a"]) + 1


def test_out_and_where():
    r = Ragged.from_list([[1.0, 2.0], [3.0]])
    out = Ragged(r.offsets, np.zeros(3))
    res = np.multiply(r, 2, out=out)
    assert res is out and out.to_list() == [[2.0, 4.0], [6.0]]
    where = r > 1.5
    out2 = Ragged(r.offsets, np.full(3, -1.0))
    np.add(r, 1, out=out2, where=where)
    assert out2.to_list() == [[-1.0, 3.0], [4.0]]


def test_unsupported_methods():
    r = Ragged.from_list([[1, 2]])
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
    r = Ragged.from_list(data, dtype=np.int64).values.astype(dtype)
    r = Ragged(Ragged.from_list(data).offsets if data else np.zeros(1, np.int64), r)
    with np.errstate(all="ignore"):
        mine = getattr(r, name)(axis=-1)
    theirs = getattr(ak, name)(r.to_awkward(), axis=-1)
    assert mine.tolist() == theirs.to_list()
    assert str(mine.dtype) == str(ak.type(theirs)).split(" * ")[1].lstrip("?")
    assert typeof(mine) == str(ak.type(theirs))


@given(nested_lists(leaf=FLOATS, depth=1, none=False), st.sampled_from(["sum", "prod", "max", "min"]))
def test_float_reductions_equal_awkward(data, name):
    r = Ragged.from_list(data, dtype=np.float64)
    with np.errstate(all="ignore"):
        mine = getattr(r, name)(axis=-1)
        theirs = ak.to_list(getattr(ak, name)(r.to_awkward(), axis=-1))
    for m, t in zip(mine.tolist(), theirs, strict=True):
        assert (m is None and t is None) or m == pytest.approx(t, rel=1e-12, abs=0)
    if name == "sum":
        # each list summed in order from 0, as awkward does: the same bits
        assert mine.tolist() == theirs


@given(nested_lists(leaf=st.integers(-1000, 1000), depth=2))
def test_nested_and_missing_equal_awkward(data):
    r = Ragged.from_list(data)
    a = ak.Array(data)
    if not any(v is not None for v in ak.flatten(a, axis=None).to_list()):
        return       # no leaf: awkward's 'unknown' values
    for name in ("sum", "max", "min", "count"):
        mine = getattr(r, name)(axis=-1)
        theirs = getattr(ak, name)(a, axis=-1)
        got = mine.to_list() if isinstance(mine, Ragged) else mine.tolist()
        assert got == theirs.to_list(), name


def test_empty_list_max_is_missing():
    r = Ragged.from_list([[3, 1], [], [2]])
    assert r.max().tolist() == [3, None, 2]
    assert r.min().tolist() == [1, None, 2]
    assert r.sum().tolist() == [4, 0, 2]
    assert r.prod().tolist() == [3, 1, 2]
    assert typeof(r.max()) == "3 * ?int64" and typeof(r.sum()) == "3 * int64"
    assert r.sum(axis=None) == 6 and r.max(axis=None) == 3
    assert Ragged.from_list([[], []]).max(axis=None) is None
    with pytest.raises(ValueError, match="axis=0"):
        r.sum(axis=0)
    fixed = Ragged(np.array([0, 2, 3]), np.arange(6.0).reshape(3, 2))
    assert fixed.sum().to_list() == [[1.0, 5.0], [9.0]]


def test_bool_and_dtype_argument():
    r = Ragged.from_list([[True, True], [False]])
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
    theirs = ak.sum(r.to_awkward(), axis=-1).to_numpy()
    np.testing.assert_allclose(r.sum(), theirs, rtol=1e-12)
    imax = ak.max(r.to_awkward(), axis=-1)
    np.testing.assert_array_equal(np.ma.getmaskarray(r.max()), ak.is_none(imax).to_numpy())
