"""Section 3 of ``python -m nclx demo``: speed against stock NumPy."""
import numpy as np

import nclx.ufuncs as nu
from nclx.demo._common import median_time, section


def run():
    section("3. Speed against stock NumPy (single thread, medians of 15)")
    rng = np.random.default_rng(1)
    print(f"{'op':<10}{'dtype':<9}{'n':>10}{'numpy ms':>11}{'nclx ms':>10}{'ratio':>8}")
    for name, dt in [("add", np.int64), ("multiply", np.float64), ("greater", np.int32),
                     ("sqrt", np.float64)]:
        n = 1_000_000
        p = (rng.random(n) * 100 + 1).astype(dt)
        q = (rng.random(n) * 100 + 1).astype(dt)
        args = (p,) if name == "sqrt" else (p, q)
        npf, ncf = getattr(np, name), getattr(nu, name)
        o = npf(*args)
        tn = median_time(lambda: npf(*args, out=o))
        tc = median_time(lambda: ncf(*args, out=o))
        print(f"{name:<10}{np.dtype(dt).name:<9}{n:>10}{tn * 1e3:>11.3f}{tc * 1e3:>10.3f}{tn / tc:>8.2f}")
    print("\n(ratio > 1: nclx faster. Reproducible figures: docs/benchmarks.md)")
