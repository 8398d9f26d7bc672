"""Defects the tenth hostile review found in nclx.random (each test failed
before its fix): integers' 64-bit array bounds read through float
comparisons (values outside the range asked, garbage for NaN), NumPy
2.4's check order for a non-native dtype, empty array bounds, out= that is
a parameter array, out= of another shape than the bounds', parameter
arrays NumPy refuses to cast."""
import warnings

import numpy as np
import pytest

import nclx.random as R


def _numpy():
    return np.random.Generator(np.random.Philox(1))


def _outcome(gen, method, *args, **kw):
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = getattr(gen, method)(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared with NumPy's
        return type(exc).__name__, str(exc)
    return "ok", np.asarray(r).dtype.str, np.shape(r), sorted({str(x.message) for x in w})


_BOUNDS = [
    (2.0 ** 63, [2.0 ** 63], np.uint64, False),           # empty: float64 rounds 2**63 - 1 up
    (0, [2.0 ** 64], np.uint64, True),                     # 2**64 - 1 is 2**64 in float64
    (-2 ** 63, [2.0 ** 63], np.int64, True),
    (0, [np.nan], np.uint64, True),                        # int(nan): NumPy's ValueError
    (1.5, [1], np.int64, True),                            # low read as int(1.5)
    (0, [True], np.uint64, True),
    ([0], [np.inf], np.int64, True),                       # int(inf): NumPy's OverflowError
    ([0], [np.inf], np.int64, False),
    ([0.5], [1.5], np.uint64, False),
    (np.array([-1.5]), [3.0], np.int64, False),
    ([2.0 ** 63], 2 ** 64, np.uint64, False),
    (0, np.array([2 ** 64 - 1], np.uint64), np.uint64, True),
    ([-0.5], 3, np.uint64, False),
    (np.array([2 ** 70], object), 2 ** 71, np.uint64, False),
]


@pytest.mark.parametrize("low,high,dtype,endpoint", _BOUNDS)
def test_64_bit_array_bounds_are_read_exactly_as_numpy(low, high, dtype, endpoint):
    got = _outcome(R.Generator(1), "integers", low, high, None, dtype, endpoint)
    want = _outcome(_numpy(), "integers", low, high, None, dtype, endpoint)
    assert got == want
    if got[0] == "ok":
        r = R.Generator(3).integers(low, high, (200,), dtype, endpoint)
        lo = int(np.asarray(low, dtype=object).reshape(-1)[0])
        hi = int(np.asarray(high, dtype=object).reshape(-1)[0]) - (0 if endpoint else 1)
        assert all(lo <= int(v) <= hi for v in r)


@pytest.mark.parametrize("dtype", [">f8", ">i8", ">u2"])
def test_a_non_native_dtype_is_numpys_value_error_first(dtype):
    assert _outcome(R.Generator(1), "integers", 0, 3, dtype=dtype) == \
        _outcome(_numpy(), "integers", 0, 3, dtype=dtype)


def test_bounds_with_no_element_refuse_a_size():
    """NumPy draws from unread memory there (its loop walks size's count over
    arrays with no element); nclx raised an internal error -- now a
    ValueError that says why."""
    with pytest.raises(ValueError, match="no element"):
        R.Generator(1).integers(np.array([], np.int64), 3, size=(1,))
    assert R.Generator(1).integers(np.array([], np.int64), 3, size=(0,)).shape == (0,)


@pytest.mark.parametrize("method,make", [
    ("normal", lambda a: ((a, 1.0), {})),
    ("uniform", lambda a: ((a, 101.0), {})),
    ("exponential", lambda a: ((a,), {})),
])
def test_out_may_be_a_parameter_array(method, make):
    """The parameters were read after out= was filled with the standard
    variates: out=loc gave loc-free values."""
    a = np.full(6, 100.0)
    args, kw = make(a.copy())
    want = getattr(R.Generator(5), method)(*args, **kw)
    args, kw = make(a)
    got = getattr(R.Generator(5), method)(*args, out=args[0], **kw)
    assert got is args[0]
    assert got.tobytes() == want.tobytes()


def test_out_is_broadcast_with_the_bounds_as_a_size():
    """out= of another shape than the bounds: an internal error, or a
    silent fill of a shape the bounds do not broadcast to."""
    g = R.Generator(1)
    out = np.empty((4, 2), np.int64)
    r = g.integers(np.array([0, 10]), np.array([5, 20]), out=out)
    assert r is out and np.all((out[:, 0] < 5) & (out[:, 1] >= 10) & (out[:, 1] < 20))
    for shape, bounds in (((3,), 2), ((2, 3), 6)):
        with pytest.raises(ValueError, match="shape mismatch") as info:
            g.integers(np.zeros(bounds, np.int64), 5, out=np.empty(shape, np.int64))
        with pytest.raises(ValueError) as ref:
            _numpy().integers(np.zeros(bounds, np.int64), 5, size=shape)
        assert str(info.value) == str(ref.value)
    state = g.state
    with pytest.raises(ValueError, match="shape mismatch"):
        g.normal(np.zeros(6), 1.0, out=np.empty((2, 3)))
    assert g.state == state                            # refused before any draw


@pytest.mark.parametrize("value", [
    np.array([1 + 1j]), np.array(1 + 1j), np.array(2.0, object), np.array([2.0], object),
    np.array([2, "x"], object), np.array([5], "m8[s]"), np.array([1.0], np.longdouble),
    np.array(["3.5"]), np.array([2 ** 70], object)])
@pytest.mark.parametrize("method,make", [
    ("normal", lambda v: (v, 1.0)), ("uniform", lambda v: (0.0, v)),
    ("exponential", lambda v: (v,))])
def test_parameter_arrays_numpy_cannot_cast_safely_are_refused(method, make, value):
    if value.dtype == np.longdouble and np.dtype(np.longdouble).itemsize == 8:
        pytest.skip("longdouble is float64 on this platform (a safe cast)")
    got = _outcome(R.Generator(1), method, *make(value))
    want = _outcome(_numpy(), method, *make(value))
    assert got == want and want[0] == "TypeError"


def test_a_zero_size_out_is_size_zero_s_early_exit():
    """out= of no element raised the bounds' broadcast error where size=0
    returns at once (docs: out's shape is the size)."""
    g = R.Generator(1)
    out = np.empty(0, np.int64)
    assert g.integers(np.zeros(2, np.int64), 5, out=out) is out
    assert g.integers(np.zeros(2, np.int64), 5, size=0).shape == (0,)
    with pytest.raises(TypeError, match="wrong type"):
        g.integers(np.zeros(2, np.int64), 5, out=np.empty(0, np.int32))
