"""Section 5d of ``python -m nclx demo``: NCLib's Mask subsystem --
nclx.mask's selections and masked writes against NumPy's, threaded, same
bits, same errors, in the ledger."""
import numpy as np

import nclx
import nclx.mask as M
from nclx.demo._common import median_time, section


def run():
    section("5d. Mask: extract, compress, place, putmask, count -- NumPy's results, threaded")
    rng = np.random.default_rng(5)
    n = 2_000_000
    a = rng.random(n)
    m = rng.random(n) < 0.5
    v = rng.random(1000)
    b1, b2 = a.copy(), a.copy()
    print(f"{n:,} float64, random mask of density 0.5")
    print(f"{'NumPy call':<22}{'NumPy ms':>10}{'nclx.mask ms':>14}{'ratio':>8}  same bits")
    for label, numpy_fn, nclx_fn, written in [
            ("a[m]", lambda: a[m], lambda: M.compress(m, a), None),
            ("np.extract(m, a)", lambda: np.extract(m, a), lambda: M.extract(m, a), None),
            ("np.compress(m, a)", lambda: np.compress(m, a), lambda: M.compress(m, a), None),
            ("np.place(b, m, v)", lambda: np.place(b1, m, v), lambda: M.place(b2, m, v), (b1, b2)),
            ("np.putmask(b, m, v)", lambda: np.putmask(b1, m, v), lambda: M.putmask(b2, m, v), (b1, b2)),
            ("np.count_nonzero(m)", lambda: np.count_nonzero(m), lambda: M.count(m), None)]:
        want, got = numpy_fn(), nclx_fn()
        same = (np.asarray(want).tobytes() == np.asarray(got).tobytes() if written is None
                else written[0].tobytes() == written[1].tobytes())
        tn = median_time(numpy_fn, repeat=7)
        tx = median_time(nclx_fn, repeat=7)
        print(f"{label:<22}{tn * 1e3:>10.3f}{tx * 1e3:>14.3f}{tn / tx:>8.2f}  {same}")
    print(f"(on {nclx.get_num_threads()} thread(s): each piece of the mask is counted, a prefix "
          "sum gives each its place in the output, each copies its own elements)")
    for label, fn in [("np.compress([1, 0, 1, 1], a[:3])", lambda mod: mod.compress([1, 0, 1, 1], a[:3])),
                      ("np.putmask(a, m[:5], 1.0)", lambda mod: mod.putmask(a, m[:5], 1.0))]:
        errors = []
        for mod in (np, M):
            try:
                fn(mod)
            except (IndexError, ValueError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        print(f"{label}: NumPy and nclx.mask both raise {errors[0]!r}: {errors[0] == errors[1]}")
    with nclx.ledger.recording() as led:
        M.extract(m, a)
        M.putmask(b2, m, 0.0)
        M.count(m)
    print("in the ledger: " + ", ".join(f"{r.op} {r.dtypes} x{r.calls}" for r in led.records()))
    print("np.compress, np.extract, a[m] and a[m] = v are not reached by nclx.install(): "
          "NumPy offers no slot for them (docs/mask.md)")
