"""Sorts of data already in NumPy's order under install(): the in-order
check (ncl_order.h: 64-bit integers scanned with AVX2 or SSE4.2 compares
where the CPU has them) before a sort that is not split, and before a
split one.  Each sort's values equal stock's bytes; argsorts are stock's
for stable kinds and a valid sorting permutation for the others; a single
descent anywhere (either side of a 2,048-element block edge, first and
last element) is found."""
import numpy as np
import pytest

import nclx
from nclx._ncl import sorting

DTYPES = ["int64", "uint64", "int32", "int16", "uint8", "bool", "float64", "float32"]
SIZES = [1 << 14, 100_003, (1 << 18) - 1]


def _sorted(dt, n, rng):
    if dt == "bool":
        a = np.zeros(n, bool)
        a[n // 3:] = True
        return a
    info = np.iinfo(dt) if np.dtype(dt).kind in "iu" else None
    if info is not None:
        a = np.sort(rng.integers(info.min, info.max, n, dtype=dt, endpoint=True))
        a[0], a[-1] = info.min, info.max              # the extremes (the sign tricks)
        a[n // 2: n // 2 + 10] = a[n // 2]            # a run of equal keys
        return np.sort(a)
    a = np.sort(rng.standard_normal(n).astype(dt))
    a[-3:] = np.nan                                   # NaNs last: in NumPy's order
    return a


def _broken(a, i):
    """a with one descent at i (a[i] < a[i - 1])."""
    b = a.copy()
    if b.dtype == bool:
        b[i - 1], b[i] = True, False
    else:
        b[i - 1], b[i] = b[i], b[i - 1]
        if not b[i] < b[i - 1]:
            b[i - 1] = b[i] + 1 if b.dtype.kind in "iu" else np.inf
    return b


def _check(a, kind):
    nclx.uninstall()
    want = np.sort(a, kind=kind)
    want_idx = np.argsort(a, kind=kind)
    nclx.install()
    try:
        got = np.sort(a, kind=kind)
        idx = np.argsort(a, kind=kind)
        inplace = a.copy()
        inplace.sort(kind=kind)
    finally:
        nclx.uninstall()
    assert got.tobytes() == want.tobytes()
    assert inplace.tobytes() == want.tobytes()
    if kind == "stable":
        assert idx.tobytes() == want_idx.tobytes()
    else:
        assert np.array_equal(np.sort(idx), np.arange(len(a)))
        assert a[idx].tobytes() == want.tobytes()


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_sorted_data_sorts_as_stock(dt, n):
    rng = np.random.default_rng(n)
    a = _sorted(dt, n, rng)
    for kind in ("quicksort", "stable", "heapsort"):
        _check(a, kind)


@pytest.mark.parametrize("dt", ["int64", "uint64", "float64", "int32"])
def test_one_descent_anywhere_is_found(dt):
    n = 100_003
    a = _sorted(dt, n, np.random.default_rng(5))
    for i in (1, 2, 3, 2047, 2048, 2049, 2050, 4096, n // 2, n - 2, n - 1):
        _check(_broken(a, i), "quicksort")
        _check(_broken(a, i), "stable")


def test_checked_from_in_order_min_only():
    a = np.arange(1 << 15, dtype=np.int64)
    old = sorting.in_order_min()
    try:
        for m in (0, 1 << 20):
            sorting.in_order_min(m)
            _check(a, "quicksort")
            _check(a[::-1].copy(), "quicksort")
        with pytest.raises(ValueError, match="in_order_min"):
            sorting.in_order_min(-1)
    finally:
        sorting.in_order_min(old)
    assert sorting.in_order_min() == old


@pytest.mark.parametrize("prefetch", [True, False])
@pytest.mark.parametrize("dt", ["int64", "float64", "uint64"])
def test_prefetched_or_not_the_check_finds_every_descent(dt, prefetch):
    # runs of more than 2 MiB each (the prefetched size) on 1 and 2 threads
    n = 600_011
    a = _sorted(dt, n, np.random.default_rng(11))
    old, old_threads = sorting.in_order_prefetch(), nclx.get_num_threads()
    try:
        assert sorting.in_order_prefetch(prefetch) is prefetch
        for threads in (1, 2):
            nclx.set_num_threads(threads)
            _check(a, "stable")
            for i in (1, 2047, 2048, 300_005, n - 2049, n - 2048, n - 1):
                _check(_broken(a, i), "stable")
                _check(_broken(a, i), "quicksort")
    finally:
        sorting.in_order_prefetch(old)
        nclx.set_num_threads(old_threads)
    assert sorting.in_order_prefetch() is old
