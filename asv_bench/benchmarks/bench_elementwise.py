"""The elementwise subsystems under nclx.install() (issue 21): Unary math,
IsUnary, Binary, Ternary (clip) and Convert (nclx.convert against astype).

``Speedup.track_speedup`` is stock time / installed time, alternating in one
process.  ``TwoHalves.track_limit`` is this machine's own 2-thread limit for
the same call, measured the same way: stock time / time of NumPy's loop run
on the two halves of the operands in two threads (NumPy releases the GIL
around loops of more than 500 elements), so a figure can be read against
what two threads can give here and now.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import nclx

from ._ratio import alternating_ratio

OPS = ["exp", "log", "sin", "cos", "tanh", "cbrt", "arctan2", "power", "isnan", "isfinite",
       "clip", "square", "floor"]
SIZES = [1, 1_000, 100_000, 1_000_000]
_POOL = ThreadPoolExecutor(2)


def _call(op, n):
    """(fn(lo, hi): the op on elements [lo, hi) with out=, n)."""
    rng = np.random.default_rng(0)
    a = rng.random(n) * 3 + 0.1
    b = rng.random(n) * 3 + 0.1
    if op in ("isnan", "isfinite"):
        out = np.empty(n, bool)
    else:
        out = np.empty(n)
    f = getattr(np, op)
    if op == "clip":
        return lambda lo, hi: np.clip(a[lo:hi], 0.5, 2.5, out=out[lo:hi])
    if op in ("arctan2", "power"):
        return lambda lo, hi: f(a[lo:hi], b[lo:hi], out=out[lo:hi])
    return lambda lo, hi: f(a[lo:hi], out=out[lo:hi])


class Speedup:
    """stock / installed (nclx's threads), > 1: nclx faster."""
    params = [OPS, SIZES]
    param_names = ["op", "n"]
    unit = "speedup"
    timeout = 300

    def setup(self, op, n):
        nclx.uninstall()
        fn = _call(op, n)
        self.fn = lambda: fn(0, n)

    def teardown(self, op, n):
        nclx.uninstall()

    def track_speedup(self, op, n):
        try:
            return alternating_ratio(self.fn, self.fn, nclx.uninstall, nclx.install, rounds=9,
                                     budget=0.02 if n >= 1_000_000 else 0.004)
        finally:
            nclx.uninstall()


class TwoHalves:
    """stock / NumPy's loop on two halves in two threads: the 2-thread limit."""
    params = [OPS, [1_000_000]]
    param_names = ["op", "n"]
    unit = "speedup"
    timeout = 300

    def setup(self, op, n):
        nclx.uninstall()
        fn = _call(op, n)
        half = n // 2
        self.whole = lambda: fn(0, n)

        def halves():
            f1 = _POOL.submit(fn, 0, half)
            fn(half, n)
            f1.result()
        self.halves = halves

    def track_limit(self, op, n):
        return alternating_ratio(self.whole, self.halves, rounds=9, budget=0.02)


class Convert:
    """astype / nclx.convert (installed or not: nclx.convert is always nclx's)."""
    params = [[("int64", "float64"), ("float64", "float32"), ("int32", "int8")],
              [1_000, 1_000_000, 10_000_000]]
    param_names = ["cast", "n"]
    unit = "speedup"
    timeout = 300

    def setup(self, cast, n):
        src, dst = cast
        a = (np.random.default_rng(0).random(n) * 100).astype(src)
        self.stock = lambda: a.astype(dst)
        self.mine = lambda: nclx.convert(a, dst)

    def track_speedup(self, cast, n):
        return alternating_ratio(self.stock, self.mine, rounds=9,
                                 budget=0.05 if n >= 1_000_000 else 0.004)
