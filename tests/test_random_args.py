"""nclx.random.Generator takes arguments as numpy.random.Generator does:
the same exception type and message for bad input, the same result type,
dtype and shape for good input (values differ: another stream)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import nclx.random as R

_RO = np.empty(2)
_RO.flags.writeable = False

# (method, args, kwargs): each raises in NumPy 2.4
ERRORS = [
    ("random", (), dict(dtype=np.int64)), ("random", (), dict(dtype=np.float16)),
    ("random", (), dict(dtype=">f8")), ("random", (2.5,), {}), ("random", (-1,), {}),
    ("random", ("a",), {}), ("random", ((2, -1),), {}), ("random", (2**70,), {}),
    ("random", (True,), {}), ("random", (np.float64(2),), {}), ("random", ([2.0],), {}),
    ("random", (3,), dict(out=np.empty(2))), ("random", (), dict(out=np.empty(2, np.float32))),
    ("random", (), dict(out=np.empty(4)[::2])), ("random", (), dict(out=np.empty(2, ">f8"))),
    ("random", (), dict(out=[1.0, 2.0])), ("random", (), dict(out=_RO)),
    ("random", (), dict(out=np.empty((3, 3))[:, :1])), ("random", (3,), dict(out=np.empty(2, np.float32))),
    ("random", ((0, 2),), dict(out=np.empty((2, 0)))), ("random", (), dict(out=np.float64(1))),
    ("random", (3,), dict(dtype=np.int8, out=np.empty(3, np.int8))),
    ("standard_normal", (), dict(dtype=np.int32)), ("standard_normal", (-2,), {}),
    ("standard_normal", (), dict(out=np.empty(3, np.float32))),
    ("standard_normal", (), dict(out=np.empty((1, 3))[:, ::-1])),
    ("normal", (0, -1), {}), ("normal", (0, -0.0), {}), ("normal", (0, [1, -1]), {}),
    ("normal", ("a",), {}), ("normal", (None,), {}), ("normal", (1j,), {}), ("normal", ("1.5",), {}),
    ("normal", (np.zeros(3), np.ones(2)), {}), ("normal", (np.zeros((2, 3)), 1, 3), {}),
    ("normal", ([0], [-0.0]), {}), ("normal", (0, 1, -1), {}), ("normal", (0, 1, 2.5), {}),
    ("uniform", (2, 1), {}), ("uniform", (0, -0.0), {}), ("uniform", (0, np.inf), {}),
    ("uniform", (-1e308, 1e308), {}), ("uniform", (np.nan, 1), {}), ("uniform", (0, np.nan), {}),
    ("uniform", ("a",), {}), ("uniform", ([0, 1], [1, 0]), {}), ("uniform", ([0, 0], [1, np.inf]), {}),
    ("uniform", ([0], [np.nan]), {}), ("uniform", (np.zeros(3), [1, 2]), {}),
    ("uniform", (), dict(size=2, low=np.zeros(3))), ("uniform", (0, [1, -1]), {}),
    ("exponential", (-1,), {}), ("exponential", (-0.0,), {}), ("exponential", ([1, -1],), {}),
    ("exponential", ("x",), {}), ("exponential", (np.ones(2), 3), {}),
    ("integers", (0, 0), {}), ("integers", (5, 3), {}), ("integers", (1, 0), dict(endpoint=True)),
    ("integers", (0, -1), dict(endpoint=True)), ("integers", (3, -1), dict(endpoint=True)),
    ("integers", (-1,), dict(dtype=np.uint8)), ("integers", (0, 257), dict(dtype=np.uint8)),
    ("integers", (-129, 0), dict(dtype=np.int8)), ("integers", (0, 2**63 + 1), {}),
    ("integers", (0, 2**64 + 1), dict(dtype=np.uint64)), ("integers", (2**100,), {}),
    ("integers", (0, 10), dict(dtype=np.float64)), ("integers", (5,), dict(dtype=">i4")),
    ("integers", (5,), dict(size=3, dtype=">i4")), ("integers", (0, 256), dict(dtype=np.uint8, endpoint=True)),
    ("integers", (np.nan,), {}), ("integers", ("a",), {}), ("integers", (5,), dict(dtype=bool)),
    ("integers", (0, 3), dict(dtype=bool)), ("integers", (-1, 1), dict(dtype=bool)),
    ("integers", ([0, 1], [0, 0]), {}), ("integers", ([1, 1], [0, 0]), {}),
    ("integers", ([0, 1], [0, 5]), dict(endpoint=True, dtype=np.int8, size=(3,))),
    ("integers", ([-1, 2],), dict(dtype=np.uint8)), ("integers", ([1, 257],), dict(dtype=np.uint8)),
    ("integers", ([1.5], [0.5]), {}), ("integers", (0, [0.5]), {}), ("integers", (np.nan, [5]), {}),
    ("integers", ([np.nan], [5]), {}), ("integers", (0, [2**64]), dict(dtype=np.int64)),
    ("integers", (0, np.array([256])), dict(dtype=np.uint8, endpoint=True)),
    ("integers", ([0], [3]), dict(dtype=bool)), ("integers", ([5, 6],), dict(size=3)),
    ("integers", (5,), dict(size=-1)), ("integers", (0, [0], None, np.uint64), {}),
    ("integers", (-1, [5], None, np.uint64), {}), ("integers", (0, [2**64 + 1], None, np.uint64), {}),
    ("integers", (np.array([3]), np.array([3]), None, np.int64), {}),
    ("permutation", (2.5,), {}), ("permutation", (np.array(5),), {}),
    ("permutation", (np.zeros(3),), dict(axis=1)), ("permutation", (np.bool_(True),), {}),
    ("permutation", (np.zeros((2, 2)),), dict(axis=-3)),
]


def _raise(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


@pytest.mark.parametrize("method,args,kwargs", ERRORS,
                         ids=[f"{m}{i}" for i, (m, _a, _k) in enumerate(ERRORS)])
def test_errors_are_numpys(method, args, kwargs):
    want = _raise(lambda: getattr(np.random.default_rng(1), method)(*args, **kwargs))
    got = _raise(lambda: getattr(R.Generator(1), method)(*args, **kwargs))
    assert type(got) is type(want), (got, want)
    assert str(got) == str(want)


# (method, args, kwargs): each returns in NumPy; type, dtype, shape compared
GOOD = [
    ("random", (), {}), ("random", (), dict(dtype=np.float32)), ("random", (), dict(dtype="f4")),
    ("random", ((),), {}), ("random", (0,), {}), ("random", ((2, 0),), {}),
    ("random", (np.int64(3),), {}), ("random", ([2, 3],), {}), ("random", (np.array([2, 3]),), {}),
    ("random", (), dict(dtype=float)), ("random", (), dict(out=np.empty(1)[::-1])),
    ("random", (), dict(out=np.empty(0)[::-1])), ("random", ((),), dict(out=np.empty(()))),
    ("standard_normal", (), {}), ("standard_normal", (), dict(dtype=np.float32)),
    ("standard_normal", ((3, 2),), dict(dtype="float32")), ("standard_normal", (), dict(out=np.empty(0))),
    ("normal", (), {}), ("normal", (np.float32(1), 2), {}), ("normal", (np.array(0.0), 1.0), {}),
    ("normal", (np.array([0.0]), 1.0), {}), ("normal", ([1, 2], 1), {}), ("normal", (0, np.nan), {}),
    ("normal", (np.inf, 1), {}), ("normal", ([[1], [2]], [1, 2, 3]), {}), ("normal", (0, 1, ()), {}),
    ("normal", (0, np.array(1.0), 2), {}), ("normal", (["1.5"],), {}), ("normal", (True, 2), {}),
    ("normal", (bytearray(b"1"),), {}), ("normal", (0, [0.0, np.nan]), {}),
    ("uniform", (), {}), ("uniform", (1, 1), {}), ("uniform", (-0.0, 0), {}),
    ("uniform", (np.array(0.0), 1), {}), ("uniform", (1, [2, 3, 4]), {}), ("uniform", ([0, 1], 2, (3, 2)), {}),
    ("exponential", (), {}), ("exponential", (0,), {}), ("exponential", ([np.nan],), {}),
    ("exponential", (np.array([[1.0]]), (2, 1)), {}), ("exponential", (2, (2, 3)), {}),
    ("integers", (5,), {}), ("integers", (5,), dict(dtype=np.int8)), ("integers", (2,), dict(dtype=bool)),
    ("integers", (0, 2), dict(dtype=bool)), ("integers", (0, 1), dict(endpoint=True, dtype=bool)),
    ("integers", (2**64 - 1,), dict(dtype=np.uint64)), ("integers", (0, 2**64), dict(dtype=np.uint64, size=3)),
    ("integers", (5,), dict(size=())), ("integers", (np.array(5),), {}), ("integers", (np.array([5, 6]),), {}),
    ("integers", (0, 0), dict(endpoint=True)), ("integers", (0, 256), dict(dtype=np.uint8)),
    ("integers", (0, 2**63), {}), ("integers", (0.5, 10), {}), ("integers", (5,), dict(dtype="i4")),
    ("integers", (5,), dict(dtype="int")), ("integers", (True,), {}), ("integers", ("5",), {}),
    ("integers", (np.int64(3), np.uint64(5)), {}), ("integers", (5, 3), dict(size=0)),
    ("integers", (5, 3), dict(size=(2, 0))), ("integers", (np.array([[1], [2]]), np.array([3, 4, 5])), {}),
    ("integers", ([1.5, 2.5],), {}), ("integers", (0, [2**64], None, np.uint64), {}),
    ("integers", ([2**63], [2**64 - 1]), dict(dtype=np.uint64)), ("integers", (-5, [2**63]), {}),
    ("integers", (np.uint64(2**63), np.uint64(2**64 - 1)), dict(dtype=np.uint64)),
    ("integers", ([0], [2]), dict(dtype=bool)), ("integers", (0, [1, 2]), dict(dtype=bool)),
    ("integers", (np.array([5]),), dict(size=(2, 1))), ("integers", (0, [5, 6]), dict(size=(2, 2))),
    ("integers", ([0], 5), dict(size=())), ("integers", (np.zeros((2, 3), int) + 5,), dict(size=3)),
    ("integers", (0, np.array([255])), dict(dtype=np.uint8, endpoint=True)), (
        "integers", (["5"],), {}), ("integers", (-3, 5), dict(endpoint=1)),
    ("permutation", (0,), {}), ("permutation", (-3,), {}), ("permutation", (True,), {}),
    ("permutation", (np.int8(5),), {}), ("permutation", (np.uint64(3),), {}),
    ("permutation", ([],), {}), ("permutation", (np.zeros((0, 3)),), {}),
    ("permutation", (np.arange(6).reshape(3, 2),), {}), ("permutation", (np.arange(6).reshape(2, 3),), dict(axis=1)),
    ("permutation", (np.arange(6).reshape(2, 3),), dict(axis=-1)), ("permutation", (list("abc"),), {}),
    ("permutation", (np.arange(10.0)[::-2],), {}), ("permutation", (5,), dict(axis=3)),
]


def _describe(x):
    if isinstance(x, np.ndarray):
        return (type(x), x.dtype, x.shape, x.flags.c_contiguous)
    return (type(x), getattr(x, "dtype", None))


@pytest.mark.parametrize("method,args,kwargs", GOOD,
                         ids=[f"{m}{i}" for i, (m, _a, _k) in enumerate(GOOD)])
def test_result_types_and_shapes_are_numpys(method, args, kwargs):
    want = getattr(np.random.default_rng(1), method)(*args, **kwargs)
    got = getattr(R.Generator(1), method)(*args, **kwargs)
    assert _describe(got) == _describe(want)


def test_out_is_returned_and_subclass_kept():
    g = R.Generator(1)
    m = np.empty(3).view(np.ma.MaskedArray)
    assert g.random(out=m) is m
    o = np.empty((2, 2), np.float32)
    for fn in (lambda: g.standard_normal(out=o, dtype=np.float32),
               lambda: g.normal(1, 2, out=o, dtype=np.float32),
               lambda: g.uniform(1, 2, out=o, dtype=np.float32),
               lambda: g.exponential(3, out=o, dtype=np.float32)):
        assert fn() is o
    i = np.empty(5, np.int16)
    assert g.integers(-3, 3, out=i, dtype=np.int16) is i and i.min() >= -3 and i.max() < 3


def test_values_in_range_and_exact_cases():
    g = R.Generator(3)
    assert g.uniform(1, 1, 5).tolist() == [1.0] * 5
    assert np.all(g.normal(4.0, 0.0, 9) == 4.0)
    assert np.all(g.exponential(0.0, 9) == 0.0)
    assert np.isnan(g.normal(0, np.nan, 4)).all() and np.isinf(g.normal(np.inf, 1, 2)).all()
    assert g.integers(7, 8, 100).tolist() == [7] * 100
    assert g.integers(-128, 127, 100, dtype=np.int8, endpoint=True).dtype == np.int8
    x = g.integers(-2**63, 2**63, 100_000)
    assert x.min() < -2**62 and x.max() > 2**62
    x = g.integers(0, 2**64, 100_000, dtype=np.uint64)
    assert x.max() > 2**63
    lo, hi = np.array([[-5], [-10]]), np.array([-4, 3, 1000])
    x = g.integers(lo, hi, dtype=np.int16)
    assert x.shape == (2, 3) and np.all(x >= lo) and np.all(x < hi) and x[0, 0] == -5
    r = g.random(100_000, dtype=np.float32)
    assert r.min() >= 0 and r.max() < 1
    u = g.uniform(-3, 5, 100_000, dtype=np.float32)
    assert u.dtype == np.float32 and u.min() >= -3 and u.max() <= 5
    with pytest.raises(OverflowError, match="range exceeds"):
        g.uniform(-3e38, 3e38, dtype=np.float32)


def test_permutation_of_arrays_is_a_shuffled_copy():
    g = R.Generator(11)
    a = np.arange(24).reshape(6, 4)
    p = g.permutation(a)
    assert p.base is None or p.base is not a
    assert sorted(map(tuple, p)) == sorted(map(tuple, a)) and not np.shares_memory(p, a)
    q = g.permutation(a, axis=1)
    assert sorted(map(tuple, q.T)) == sorted(map(tuple, a.T))
    s = g.permutation(a[:, 1])
    assert sorted(s) == sorted(a[:, 1])
    assert g.permutation(np.uint64(4)).dtype == np.float64
    assert sorted(g.permutation(np.uint64(4))) == [0.0, 1.0, 2.0, 3.0]


_INT_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@given(st.sampled_from(_INT_DTYPES), st.integers(-2**64 - 2, 2**64 + 2), st.integers(-2**64 - 2, 2**64 + 2),
       st.booleans(), st.sampled_from([None, 0, 1, 5, (2, 3)]), st.booleans())
def test_hypothesis_integers_bounds_as_numpy(dtype, a, b, endpoint, size, as_array):
    """Any bounds: NumPy's error, or values of the right dtype and shape in range."""
    info = np.iinfo(dtype) if dtype != "bool" else None
    lo_b, hi_b = (0, 1) if info is None else (int(info.min), int(info.max))
    # keep most draws near the dtype's edges
    low = a % (hi_b - lo_b + 3) + lo_b - 1 if abs(a) < 2**63 else a
    high = b % (hi_b - lo_b + 3) + lo_b - 1 if abs(b) < 2**63 else b
    args = (np.array([low]), np.array([high], dtype=object)) if as_array else (low, high)
    kwargs = dict(size=size, dtype=dtype, endpoint=endpoint)
    try:
        want = np.random.default_rng(1).integers(*args, **kwargs)
    except Exception as exc:
        with pytest.raises(type(exc)) as info_:
            R.Generator(1).integers(*args, **kwargs)
        assert str(info_.value) == str(exc)
        return
    got = R.Generator(1).integers(*args, **kwargs)
    assert _describe(got) == _describe(want)
    top = high if endpoint else high - 1
    vals = np.asarray(got).astype(object).ravel()
    assert all(low <= int(v) <= top for v in vals)
