"""The RNG subsystem (issue 23): each nclx.random.Generator method against
the same method of numpy.random.Generator(PCG64), timed alternately in one
process on nclx's current thread count (> 1: nclx faster).

``Into`` fills arrays given as ``out=``: the fills without allocation.
``Philox.track_numpy_philox`` is NumPy's own Philox against its PCG64: what
the counter-based generator costs NumPy on one thread.
"""
import numpy as np

import nclx.random

from ._ratio import alternating_ratio

SIZES = [None, 1, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000]


def _call(gen, method, n):
    if method == "random_float32":
        return lambda: gen.random(n, dtype=np.float32)
    if method == "standard_normal_float32":
        return lambda: gen.standard_normal(n, dtype=np.float32)
    if method == "uniform":
        return lambda: gen.uniform(-1.0, 2.0, n)
    if method == "normal":
        return lambda: gen.normal(1.0, 2.0, n)
    if method == "exponential":
        return lambda: gen.exponential(2.0, n)
    if method == "integers":
        return lambda: gen.integers(0, 1000, n)
    if method == "integers_int8":
        return lambda: gen.integers(-100, 100, n, dtype=np.int8)
    if method == "permutation":
        return lambda: gen.permutation(1 if n is None else n)
    return lambda: getattr(gen, method)(n)


def _ratio(base, other, n):
    big = (n or 0) >= 1_000_000
    return alternating_ratio(base, other, rounds=7 if big else 15, budget=0.05 if big else 0.004)


class Methods:
    """numpy.random.Generator(PCG64).method time / nclx.random.Generator.method time."""
    params = [["random", "random_float32", "uniform", "standard_normal", "standard_normal_float32",
               "normal", "exponential", "integers", "integers_int8", "permutation"], SIZES]
    param_names = ["method", "size"]
    unit = "speedup"
    timeout = 900

    def setup(self, method, n):
        self.base = _call(np.random.Generator(np.random.PCG64(1)), method, n)
        self.other = _call(nclx.random.Generator(1), method, n)

    def track_speedup(self, method, n):
        return _ratio(self.base, self.other, n)


class Philox:
    """NumPy's Generator(PCG64) time / its Generator(Philox) time, random(n)."""
    params = [[1000, 1_000_000]]
    param_names = ["size"]
    unit = "speedup"

    def setup(self, n):
        self.base = _call(np.random.Generator(np.random.PCG64(1)), "random", n)
        self.other = _call(np.random.Generator(np.random.Philox(1)), "random", n)

    def track_numpy_philox(self, n):
        return _ratio(self.base, self.other, n)


class Into:
    """The same with ``out=`` (an array filled before): no page faults, no
    allocation -- the fills alone."""
    params = [["random", "standard_normal"], [1000, 100_000, 10_000_000]]
    param_names = ["method", "size"]
    unit = "speedup"
    timeout = 600

    def setup(self, method, n):
        a, b = np.empty(n), np.empty(n)
        ng, g = np.random.Generator(np.random.PCG64(1)), nclx.random.Generator(1)
        self.base = lambda: getattr(ng, method)(out=a)
        self.other = lambda: getattr(g, method)(out=b)

    def track_speedup(self, method, n):
        return _ratio(self.base, self.other, n)
