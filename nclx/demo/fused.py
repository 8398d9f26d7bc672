"""A section of ``python -m nclx demo``: fused evaluation --
``nclx.evaluate`` and ``@nclx.fuse`` on the block executor, bit-identical
to the same NumPy code, against numexpr when it is installed."""
import warnings

import numpy as np

import nclx
from nclx.demo._common import median_time, section

EXPRESSIONS = [("2*a+b*b", lambda a, b: 2 * a + b * b),
               ("(a-b)/(a+b)", lambda a, b: (a - b) / (a + b)),
               ("sqrt(a*a+b*b)", lambda a, b: np.sqrt(a * a + b * b)),
               ("sum(a*b)", lambda a, b: np.sum(a * b))]


def run():
    section("Fused: nclx.evaluate / @nclx.fuse, a cache-sized block at a time, NumPy's semantics")
    try:
        import numexpr
    except ImportError:
        numexpr = None
    rng = np.random.default_rng(0)
    n = 2_000_000
    a, b = rng.random(n), rng.random(n) + 0.5
    head = f"{n:.0e} float64, {nclx.get_num_threads()} threads"
    print(f"{head:<22}{'numpy ms':>10}{'nclx ms':>9}{'same bits':>11}"
          + (f"{'numexpr ms':>12}" if numexpr else ""))
    for text, fn in EXPRESSIONS:
        names = {"a": a, "b": b}
        ref = fn(a, b)
        got = nclx.evaluate(text, local_dict=names)
        same = np.asarray(ref).tobytes() == np.asarray(got).tobytes()
        t_np = median_time(lambda: fn(a, b), repeat=7) * 1e3
        t_nx = median_time(lambda: nclx.evaluate(text, local_dict=names), repeat=7) * 1e3
        line = f"{text:<22}{t_np:>10.2f}{t_nx:>9.2f}{str(same):>11}"
        if numexpr:
            t_ne = median_time(lambda: numexpr.evaluate(text, local_dict=names), repeat=7)
            line += f"{t_ne * 1e3:>12.2f}"
        print(line)
    if numexpr is None:
        print("(numexpr is not installed: pip install numexpr for its column)")
    f32 = a.astype(np.float32)
    print(f"float32 * 2.5 stays {nclx.evaluate('f32 * 2.5').dtype} (NEP 50; numexpr: float64)")
    z = np.zeros(n)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nclx.evaluate("log(z) + a")
    print(f"warnings as NumPy gives them: {[str(x.message) for x in w]}")

    @nclx.fuse
    def hypot(a, b):
        return np.sqrt(a * a + b * b)

    same = hypot(a, b).tobytes() == np.sqrt(a * a + b * b).tobytes()
    print(f"@nclx.fuse hypot(a, b): same bits {same}; explain(a, b) = {hypot.explain(a, b)!r}")
    print(f"explain(a[::2], b[::2]) = {hypot.explain(a[::2], b[::2])!r} (runs eagerly)")
