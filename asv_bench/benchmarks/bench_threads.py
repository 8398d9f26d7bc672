"""Threaded nclx.install() against stock NumPy on large arrays (issue 5 targets).

Same ops, dtypes and sizes as ``python -m nclx bench``; asv runs each
parameter set in its own process, so "stock" and "installed" are measured
in the same asv run on the same machine.
"""
import numpy as np

import nclx

from ._ratio import alternating_ratio

OPS = ["add", "subtract", "multiply", "true_divide", "greater", "equal", "maximum",
       "sum", "sqrt"]
DTYPES = ["int32", "int64", "float32", "float64"]
SIZES = [1_000, 10_000, 100_000, 1_000_000, 10_000_000]


class Ops:
    params = [["stock", "installed"], OPS, DTYPES, SIZES]
    param_names = ["mode", "op", "dtype", "n"]
    timeout = 300

    def setup(self, mode, op, dtype, n):
        rng = np.random.default_rng(0)
        self.a = (rng.random(n) * 100 + 1).astype(dtype)
        self.b = (rng.random(n) * 100 + 1).astype(dtype)
        if op == "sum":
            a = self.a
            self.fn = a.sum
        elif op == "sqrt":
            a, out = self.a, np.sqrt(self.a)
            self.fn = lambda: np.sqrt(a, out=out)
        else:
            f = getattr(np, op)
            a, b, out = self.a, self.b, f(self.a, self.b)
            self.fn = lambda: f(a, b, out=out)
        nclx.uninstall()
        if mode == "installed":
            nclx.install()

    def teardown(self, mode, op, dtype, n):
        nclx.uninstall()

    def time_op(self, mode, op, dtype, n):
        self.fn()


class Speedup:
    """stock time / time with nclx.install() (threaded), alternating in one
    process: > 1 means nclx is faster."""
    params = [OPS, DTYPES, SIZES]
    param_names = ["op", "dtype", "n"]
    unit = "speedup"
    timeout = 600

    def setup(self, op, dtype, n):
        Ops.setup(self, "stock", op, dtype, n)

    def track_speedup(self, op, dtype, n):
        try:
            return alternating_ratio(self.fn, self.fn, nclx.uninstall, nclx.install,
                                     rounds=9, budget=0.02 if n >= 1_000_000 else 0.004)
        finally:
            nclx.uninstall()


class BandwidthReference:
    """A threaded memcpy of n float64 values: the memory-bandwidth limit."""
    params = [SIZES]
    param_names = ["n"]

    def setup(self, n):
        from nclx._ncl import team
        self.copy = team.threaded_copy
        self.src = np.ones(n)
        self.dst = np.empty(n)

    def time_threaded_copy(self, n):
        self.copy(self.dst, self.src)
