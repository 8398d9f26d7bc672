"""Section 1 of ``python -m nclx demo``: nclx.ufuncs are real NumPy ufuncs."""
import numpy as np

import nclx.ufuncs as nu
from nclx.demo._common import section


def run():
    section("1. nclx.ufuncs are real NumPy ufuncs")
    a = np.arange(-4, 5, dtype=np.int8)
    b = np.int8(3)
    print(f"a                     = {a}")
    print(f"nu.floor_divide(a, 3) = {nu.floor_divide(a, b)}   (floors like Python)")
    print(f"nu.remainder(a, 3)    = {nu.remainder(a, b)}   (sign of the divisor)")
    print(f"type(nu.add)          = {type(nu.add).__name__}; nu.add.types[:4] = {nu.add.types[:4]}")
    m = np.arange(12.0).reshape(3, 4)
    print(f"nu.add.reduce(m, axis=0)   = {nu.add.reduce(m, axis=0)}")
    print(f"nu.maximum.accumulate(row) = {nu.maximum.accumulate(np.array([3, 1, 4, 1, 5, 9, 2, 6]))}")
    out = np.zeros(4)
    nu.multiply(m[1], 10.0, out=out, where=m[1] > 4)
    print(f"multiply with where=       = {out}")
