"""Review 24, Sort: an unstable float argsort of data holding both signs of
zero or a NaN runs NumPy's function (one thread), so what np.unique builds
on its permutation is NumPy's: the sign of a zero unique value, and
``return_inverse``'s indices of NaNs (``equal_nan=False``: each NaN its own
value).  Before, 2+ threads sorted in runs and merged: np.unique(x,
return_inverse=True) gave 0.0 where NumPy gives -0.0, and unique_inverse
199 other indices of 200,000.  Plain argsorts of other data keep their
threaded path (a valid sorting permutation, docs/sort.md)."""
import numpy as np
import pytest

import nclx
from sort_fixtures import lowered, needs_slots

pytestmark = needs_slots


def _mixed(seed, n, dtype):
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([0.0, -0.0, 1.0, 2.0, np.nan]), n).astype(dtype)
    return x


def _nans(seed, n, dtype):
    y = np.random.default_rng(seed).standard_normal(n).astype(dtype)
    y[::97] = np.nan
    return y


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("make", [_mixed, _nans])
@pytest.mark.parametrize("nthreads", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 3])
def test_unique_and_argsort_of_zeros_and_nans_as_numpy(dtype, make, nthreads, seed):
    x = make(seed, 20_000, dtype)
    want = (np.unique(x, return_inverse=True), np.unique_inverse(x), np.argsort(x),
            np.unique(x, return_inverse=True, equal_nan=False))
    with lowered(nthreads), nclx.installed():
        got = (np.unique(x, return_inverse=True), np.unique_inverse(x), np.argsort(x),
               np.unique(x, return_inverse=True, equal_nan=False))
    for w, g in zip(want, got):
        for a, b in zip(w, g):
            assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())


def test_at_the_default_thresholds():
    x = _mixed(0, 100_000, np.float64)
    want = np.unique(x, return_inverse=True)
    th = nclx.get_num_threads()
    nclx.set_num_threads(2)
    try:
        with nclx.installed():
            got = np.unique(x, return_inverse=True)
    finally:
        nclx.set_num_threads(th)
    assert want[0].tobytes() == got[0].tobytes() and want[1].tobytes() == got[1].tobytes()


def test_argsort_without_zeros_or_nans_still_splits():
    """Control: data with neither gives a valid sorting permutation on the
    threaded path (the documented unstable argsort), as before."""
    x = np.random.default_rng(5).standard_normal(20_000)
    with lowered(2), nclx.installed():
        i = np.argsort(x)
    assert np.array_equal(np.sort(i), np.arange(len(x)))
    assert np.all(np.diff(x[i]) >= 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("data", ["all_nan", "sorted_nan_tail", "sorted_zeros"])
@pytest.mark.parametrize("setting", ["default_1", "default_2", "lowered_2"])
def test_argsort_of_data_in_order_holding_nans_as_numpy(dtype, data, setting):
    """Review 24c: the in-order shortcut (indices 0..n-1 for data already in
    order) ran before the NaN/zero scan, but NumPy's SIMD argsort moves the
    NaNs' indices even there: np.argsort of 50,000 NaNs gave 0, 1, 2, ...
    where NumPy gives 33338, 33326, ... (and np.unique_inverse showed it),
    at the default thresholds and on one thread too."""
    n = 50_000 if setting.startswith("default") else 5_000
    x = {"all_nan": np.full(n, np.nan),
         "sorted_nan_tail": np.r_[np.arange(n - 500.0), np.full(500, np.nan)],
         "sorted_zeros": np.r_[np.full(n // 2, -1.0), np.tile([-0.0, 0.0], n // 4)]}[data]
    x = x.astype(dtype)
    want = (np.argsort(x), np.unique_inverse(x).inverse_indices,
            np.unique(x, return_inverse=True, equal_nan=False)[1])
    threads = 1 if setting == "default_1" else 2
    ctx = lowered(threads) if setting.startswith("lowered") else _threads(threads)
    with ctx, nclx.installed():
        got = (np.argsort(x), np.unique_inverse(x).inverse_indices,
               np.unique(x, return_inverse=True, equal_nan=False)[1])
    for w, g in zip(want, got):
        assert w.tobytes() == g.tobytes()


class _threads:
    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.old = nclx.get_num_threads()
        nclx.set_num_threads(self.n)

    def __exit__(self, *exc):
        nclx.set_num_threads(self.old)
