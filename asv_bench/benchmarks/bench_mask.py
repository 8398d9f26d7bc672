"""NCLib's Mask subsystem (issue 23): nclx.mask against NumPy.

``Speedup.track_speedup`` is NumPy's time / nclx's time for the same call,
alternating in one process (> 1: nclx faster), on nclx's current thread
count.  The NumPy side of each op is the function nclx.mask mirrors
(np.extract, np.compress, np.place, np.putmask, np.count_nonzero), plus
``a[m]`` against ``nclx.mask.compress`` and ``a[m] = v`` against
``nclx.mask.putmask`` (what the issue's speed target names).  Float64
data, masks of density 0.5 (random), 0, 1 and runs (long True/False
stretches).
"""
import numpy as np

import nclx.mask as M

from ._ratio import alternating_ratio

SIZES = [1, 100, 10_000, 100_000, 1_000_000, 10_000_000]
OPS = ["extract", "compress", "a[m]", "place", "putmask", "a[m]=v", "count"]


def _mask(kind, n, rng):
    if kind == "random":
        return rng.random(n) < 0.5
    if kind == "none":
        return np.zeros(n, bool)
    if kind == "all":
        return np.ones(n, bool)
    m = np.zeros(n, bool)
    step = max(n // 16, 1)
    for lo in range(0, n, 2 * step):
        m[lo:lo + step] = True
    return m


def _pair(op, n, kind="random"):
    """(NumPy's call, nclx's call) of ``op`` on n float64 elements."""
    rng = np.random.default_rng(0)
    a = rng.random(n)
    m = _mask(kind, n, rng)
    v = rng.random(max(n // 2, 1))
    b1, b2 = a.copy(), a.copy()
    return {
        "extract": (lambda: np.extract(m, a), lambda: M.extract(m, a)),
        "compress": (lambda: np.compress(m, a), lambda: M.compress(m, a)),
        "a[m]": (lambda: a[m], lambda: M.compress(m, a)),
        "place": (lambda: np.place(b1, m, v), lambda: M.place(b2, m, v)),
        "putmask": (lambda: np.putmask(b1, m, v), lambda: M.putmask(b2, m, v)),
        "a[m]=v": (lambda: b1.__setitem__(m, 0.5), lambda: M.putmask(b2, m, 0.5)),
        "count": (lambda: np.count_nonzero(m), lambda: M.count(m)),
    }[op]


class Speedup:
    """NumPy / nclx.mask, random mask of density 0.5."""
    params = [OPS, SIZES]
    param_names = ["op", "n"]
    unit = "speedup"
    timeout = 300

    def setup(self, op, n):
        self.base, self.other = _pair(op, n)

    def track_speedup(self, op, n):
        return alternating_ratio(self.base, self.other, rounds=9,
                                 budget=0.05 if n >= 1_000_000 else 0.004)


class Densities:
    """NumPy / nclx.mask at 1e6 elements for masks of every density."""
    params = [["extract", "place", "putmask", "count"], ["none", "all", "runs", "random"]]
    param_names = ["op", "mask"]
    unit = "speedup"
    timeout = 300

    def setup(self, op, kind):
        self.base, self.other = _pair(op, 1_000_000, kind)

    def track_speedup(self, op, kind):
        return alternating_ratio(self.base, self.other, rounds=9, budget=0.02)
