"""nclx.ufuncs against the NumPy ufunc of the same name.

Each class times both implementations on the same cached inputs and output
buffer, so a run gives their ratio directly (tools/bench_table.py prints it).
Single-threaded kernels: this measures the loops, not threading.
"""
import numpy as np

import nclx.ufuncs as nu

from ._ratio import alternating_ratio

SIZES = [1_000, 100_000, 10_000_000]
DTYPES = ["int32", "int64", "float32", "float64"]
IMPLS = ["numpy", "nclx"]


def _inputs(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    # positive, non-zero operands: no warnings, no special cases on the timed path
    a = (rng.random(n) * 100 + 1).astype(dtype)
    b = (rng.random(n) * 100 + 1).astype(dtype)
    return a, b


class _Binary:
    op = None
    params = [IMPLS, DTYPES, SIZES]
    param_names = ["impl", "dtype", "n"]
    timeout = 120

    def setup(self, impl, dtype, n):
        self.a, self.b = _inputs(dtype, n)
        self.func = getattr(np if impl == "numpy" else nu, self.op)
        self.out = self.func(self.a, self.b)

    def time_contiguous(self, impl, dtype, n):
        self.func(self.a, self.b, out=self.out)


class _BinarySpeedup:
    """numpy time / nclx time, alternating in one process (> 1: nclx faster)."""
    op = None
    params = [DTYPES, SIZES]
    param_names = ["dtype", "n"]
    unit = "speedup"
    timeout = 300

    def setup(self, dtype, n):
        self.a, self.b = _inputs(dtype, n)
        self.out = getattr(np, self.op)(self.a, self.b)

    def track_speedup(self, dtype, n):
        npf, ncf = getattr(np, self.op), getattr(nu, self.op)
        a, b, out = self.a, self.b, self.out
        return alternating_ratio(lambda: npf(a, b, out=out), lambda: ncf(a, b, out=out))


class AddSpeedup(_BinarySpeedup):
    op = "add"


class MultiplySpeedup(_BinarySpeedup):
    op = "multiply"


class GreaterSpeedup(_BinarySpeedup):
    op = "greater"


class Add(_Binary):
    op = "add"


class Multiply(_Binary):
    op = "multiply"


class Greater(_Binary):
    op = "greater"


class TrueDivide(_Binary):
    op = "true_divide"
    params = [IMPLS, ["float32", "float64"], SIZES]


class Sqrt:
    params = [IMPLS, ["float32", "float64"], SIZES]
    param_names = ["impl", "dtype", "n"]

    def setup(self, impl, dtype, n):
        self.a, _ = _inputs(dtype, n)
        self.func = getattr(np if impl == "numpy" else nu, "sqrt")
        self.out = self.func(self.a)

    def time_contiguous(self, impl, dtype, n):
        self.func(self.a, out=self.out)


class AddReduce:
    params = [IMPLS, DTYPES, SIZES]
    param_names = ["impl", "dtype", "n"]

    def setup(self, impl, dtype, n):
        self.a, _ = _inputs(dtype, n)
        self.func = getattr(np if impl == "numpy" else nu, "add")

    def time_reduce(self, impl, dtype, n):
        self.func.reduce(self.a)


class Strided:
    """Every other element: the general strided path."""
    params = [IMPLS, ["int64", "float64"], [100_000]]
    param_names = ["impl", "dtype", "n"]

    def setup(self, impl, dtype, n):
        a, b = _inputs(dtype, 2 * n)
        self.a, self.b = a[::2], b[::2]
        self.func = getattr(np if impl == "numpy" else nu, "add")
        self.out = self.func(self.a, self.b)

    def time_add_strided(self, impl, dtype, n):
        self.func(self.a, self.b, out=self.out)

    def peakmem_add_strided(self, impl, dtype, n):
        self.func(self.a, self.b)
