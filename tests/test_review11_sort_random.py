"""Defects the eleventh hostile review found in the Sort and RNG subsystems
(each test failed before its fix): ``nclx.sort(kind='heapsort')`` ran
NumPy's real heapsort where NumPy 2.4 on makes 'heapsort' its default sort
(other bits for -0.0/0.0 and NaN payloads); ``Generator.integers`` with
array bounds into an F-ordered ``out=`` drew each element from another
element's bounds."""
import numpy as np
import pytest

import nclx
import nclx.random as R


def _mixed_zeros(n, dtype):
    rng = np.random.default_rng(n)
    x = rng.choice(np.array([0.0, -0.0, 1.0, 2.0, np.nan], dtype), n)
    nan = np.array([0x7FF8000000000111, 0x7FF8000000000222], np.uint64)
    if dtype == np.float64:
        k = rng.integers(0, n, 20)
        x.view(np.uint64)[k] = nan[rng.integers(0, 2, 20)]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [8, 100, 16_389, 300_001])
def test_heapsort_equals_numpys_heapsort(dtype, n):
    x = _mixed_zeros(n, dtype)
    want = np.sort(x, kind="heapsort")
    assert nclx.sort(x, kind="heapsort").tobytes() == want.tobytes()
    m = x.reshape(-1, 1) if n < 100 else x[: n - n % 4].reshape(4, -1)
    assert nclx.sort(m, axis=-1, kind="heapsort").tobytes() == \
        np.sort(m, axis=-1, kind="heapsort").tobytes()
    idx = nclx.argsort(x, kind="heapsort")       # unstable: any order of equal keys
    assert np.array_equal(x[idx], want, equal_nan=True)
    assert np.array_equal(np.sort(idx), np.arange(n))


def test_heapsort_indices_of_ties_equal_numpys():
    ties = np.zeros(64)
    assert np.array_equal(nclx.argsort(ties, kind="heapsort"), np.argsort(ties, kind="heapsort"))


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.uint16, bool])
def test_integers_array_bounds_into_f_ordered_out(dtype):
    low = np.array([[0], [1]]) if dtype is bool else np.array([[0], [50]])
    high = low + (1 if dtype is bool else 10)
    for order in ("F", "C"):
        out = np.empty((2, 300), dtype, order=order)
        got = R.Generator(0).integers(low, high, dtype=dtype, out=out)
        assert got is out
        assert ((out >= low) & (out < high)).all(), order
    out = np.empty((3, 4, 5), np.int64, order="F")
    low3 = np.arange(3).reshape(3, 1, 1) * 100
    R.Generator(1).integers(low3, low3 + 7, out=out)
    assert ((out >= low3) & (out < low3 + 7)).all()
    # the draws fill memory in order, whatever the layout: an F-ordered out=
    # of the same bounds holds the C-ordered one's draws in its memory order
    c = np.empty((4, 6), np.int64)
    f = np.empty((4, 6), np.int64, order="F")
    R.Generator(2).integers(np.zeros((4, 1), np.int64), 1 << 40, out=c)
    R.Generator(2).integers(np.zeros((4, 1), np.int64), 1 << 40, out=f)
    assert c.ravel().tobytes() == f.ravel(order="K").tobytes()
