"""Section 2 of ``python -m nclx demo``: bit-identical to NumPy, edge cases included."""
import warnings

import numpy as np

import nclx.ufuncs as nu
from nclx.demo._common import section


def run():
    section("2. Bit-identical to NumPy, edge cases included")
    i8 = np.array([127, -128, -128, 7], dtype=np.int8)
    d8 = np.array([1, -1, 0, 0], dtype=np.int8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = nu.add(i8, d8), nu.floor_divide(i8, d8)
    print(f"int8 {i8} + {d8} = {got[0]}  (wraps)")
    print(f"int8 {i8} // {d8} = {got[1]}  warnings: {sorted({str(w.message) for w in caught})}")
    x = np.array([np.nan, -0.0, 1.0, -np.inf])
    y = np.array([1.0, 0.0, np.nan, 2.0])
    print(f"maximum({x}, {y}) = {nu.maximum(x, y)}  (NaN propagates, like np.maximum)")
    big = np.random.default_rng(0).random(1_000_003)
    print(f"float64 sum of 1e6 values: nclx {nu.add.reduce(big)!r} numpy {np.add.reduce(big)!r} "
          f"(same pairwise summation: equal={nu.add.reduce(big) == np.add.reduce(big)})")
