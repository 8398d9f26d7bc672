"""The Sort subsystem under nclx.install() (issue 23): np.sort, np.argsort
and axis sorts, stock time / installed time alternating in one process
(also with ``install(recycle=True)``: ``SortRecycled``, ``AxisSortRecycled``)
(> 1: nclx faster).

``TwoHalves.track_limit`` is this machine's 2-thread limit for a sort: stock
np.sort time / time of NumPy sorting the two halves in two threads (NumPy
releases the GIL while it sorts) -- before any merge, so it bounds what a
merge-based parallel sort can reach here.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import nclx

from ._ratio import alternating_ratio

_POOL = ThreadPoolExecutor(2)


def _data(dtype, pattern, n):
    rng = np.random.default_rng(0)
    if dtype == "float64":
        a = rng.standard_normal(n)
    else:
        a = rng.integers(-(1 << 62), 1 << 62, n)
    if pattern == "sorted":
        a.sort()
    elif pattern == "dups":
        a = a[rng.integers(0, min(100, n), n)]
    return a


def _ratio(fn, n):
    return alternating_ratio(fn, fn, nclx.uninstall, nclx.install, rounds=5 if n >= 10**6 else 15,
                             budget=0.02 if n >= 10**6 else 0.004)


class Sort:
    """np.sort, stock / installed."""
    params = [["int64", "float64"], ["random", "sorted", "dups"], ["quicksort", "stable"],
              [1, 1000, 100_000, 10_000_000]]
    param_names = ["dtype", "data", "kind", "n"]
    unit = "speedup"
    timeout = 600

    def setup(self, dtype, pattern, kind, n):
        nclx.uninstall()
        a = _data(dtype, pattern, n)
        self.fn = lambda: np.sort(a, kind=kind)

    def teardown(self, *args):
        nclx.uninstall()

    def track_speedup(self, dtype, pattern, kind, n):
        try:
            return _ratio(self.fn, n)
        finally:
            nclx.uninstall()


class Argsort:
    """np.argsort, stock / installed."""
    params = [["int64", "float64"], ["quicksort", "stable"], [1, 1000, 100_000, 10_000_000]]
    param_names = ["dtype", "kind", "n"]
    unit = "speedup"
    timeout = 600

    def setup(self, dtype, kind, n):
        nclx.uninstall()
        a = _data(dtype, "random", n)
        self.fn = lambda: np.argsort(a, kind=kind)

    def teardown(self, *args):
        nclx.uninstall()

    def track_speedup(self, dtype, kind, n):
        try:
            return _ratio(self.fn, n)
        finally:
            nclx.uninstall()


class AxisSort:
    """np.sort(a, axis=1) of a (1000, 10000) float64 array, stock / installed."""
    unit = "speedup"
    timeout = 600

    def setup(self):
        nclx.uninstall()
        a = np.random.default_rng(0).standard_normal((1000, 10_000))
        self.fn = lambda: np.sort(a, axis=1)

    def teardown(self):
        nclx.uninstall()

    def track_speedup(self):
        try:
            return _ratio(self.fn, 10**7)
        finally:
            nclx.uninstall()


class SmallSort:
    """The smallest sorts, where install() can only add its getters' and
    entries' instructions: np.sort and np.argsort of 10 and 100 float64,
    and np.sort(m, axis=1) of a (2, 5) (n=10) or (8, 12) (n=100) array,
    one call a lane, stock / installed."""
    params = [["sort", "argsort", "axis1"], [10, 100]]
    param_names = ["call", "n"]
    unit = "speedup"

    def setup(self, call, n):
        nclx.uninstall()
        rng = np.random.default_rng(0)
        if call == "axis1":
            m = rng.standard_normal((8, 12) if n == 100 else (2, 5))
            self.fn = lambda: np.sort(m, axis=1)
        else:
            a = rng.standard_normal(n)
            f = np.sort if call == "sort" else np.argsort
            self.fn = lambda: f(a)

    def teardown(self, *args):
        nclx.uninstall()

    def track_speedup(self, call, n):
        try:
            return _ratio(self.fn, n)
        finally:
            nclx.uninstall()


class TwoHalves:
    """stock np.sort / NumPy sorting the two halves in two threads."""
    params = [["int64", "float64"], ["quicksort", "stable"]]
    param_names = ["dtype", "kind"]
    unit = "speedup"
    timeout = 600

    def setup(self, dtype, kind):
        nclx.uninstall()
        self.a = _data(dtype, "random", 10_000_000)

    def track_limit(self, dtype, kind):
        a, h = self.a, len(self.a) // 2

        def halves():
            b = a.copy()
            list(_POOL.map(lambda s: s.sort(kind=kind), (b[:h], b[h:])))

        return alternating_ratio(lambda: np.sort(a, kind=kind), halves, rounds=5, budget=0.02)


def _install_recycling():
    nclx.install(recycle=True)


class SortRecycled:
    """np.sort of 1e7 elements, stock / ``install(recycle=True)``: NumPy's
    copy of ``a`` in np.sort then reuses a freed block instead of faulting
    in 80 MB of fresh pages (docs/recycle.md)."""
    params = [["int64", "float64"], ["random", "sorted", "dups"], ["quicksort", "stable"]]
    param_names = ["dtype", "data", "kind"]
    unit = "speedup"
    timeout = 600

    def setup(self, dtype, pattern, kind):
        nclx.uninstall()
        a = _data(dtype, pattern, 10_000_000)
        self.fn = lambda: np.sort(a, kind=kind)

    def teardown(self, *args):
        nclx.uninstall()

    def track_speedup(self, dtype, pattern, kind):
        try:
            return alternating_ratio(self.fn, self.fn, nclx.uninstall, _install_recycling,
                                     rounds=5, budget=0.02)
        finally:
            nclx.uninstall()


class AxisSortRecycled:
    """np.sort(a, axis=1) of a (1000, 10000) float64 array, stock /
    ``install(recycle=True)``."""
    unit = "speedup"
    timeout = 600

    def setup(self):
        nclx.uninstall()
        a = np.random.default_rng(0).standard_normal((1000, 10_000))
        self.fn = lambda: np.sort(a, axis=1)

    def teardown(self):
        nclx.uninstall()

    def track_speedup(self):
        try:
            return alternating_ratio(self.fn, self.fn, nclx.uninstall, _install_recycling,
                                     rounds=5, budget=0.02)
        finally:
            nclx.uninstall()
