"""Section 5b of ``python -m nclx demo``: unary math, IsUnary, Ternary and
Convert through NumPy's own loops, threaded, with the same bits."""
import numpy as np

import nclx
import nclx.ufuncs as nu
from nclx.demo._common import median_time, section


def run():
    section("5b. Unary math, IsUnary, Ternary, Convert: NumPy's own loops, threaded, same bits")
    x = np.random.default_rng(4).random(1_000_000) * 3 + 0.1
    print(f"{'call':<26}{'stock ms':>10}{'installed ms':>14}{'ratio':>8}  same bits")
    for label, fn in [("np.exp(x)", lambda: np.exp(x)), ("np.sin(x)", lambda: np.sin(x)),
                      ("np.isnan(x)", lambda: np.isnan(x)), ("np.clip(x, 1, 2)", lambda: np.clip(x, 1, 2)),
                      ("np.arctan2(x, x)", lambda: np.arctan2(x, x))]:
        want = fn()
        ts = median_time(fn, repeat=9)
        with nclx.installed():
            got = fn()
            ti = median_time(fn, repeat=9)
        print(f"{label:<26}{ts * 1e3:>10.3f}{ti * 1e3:>14.3f}{ts / ti:>8.2f}  "
              f"{want.tobytes() == got.tobytes()}")
    print(f"(on {nclx.get_num_threads()} thread(s); each thread runs NumPy's SIMD loop on its slice)")
    with nclx.ledger.recording() as led:
        nclx.convert(x, np.float32)
        nu.fma(x[:4], 10.0, -1.0)
        nu.multiply(x[:4], 2.0)
    print("nclx.convert, nclx.ufuncs.fma and nclx.ufuncs.multiply in the ledger: "
          f"{sorted({r.op for r in led.records()})}")
    print(f"fma(0.1, 10, -1) = {nu.fma(0.1, 10.0, -1.0)!r} (one rounding); 0.1 * 10 - 1 = {0.1 * 10.0 - 1.0!r}")
