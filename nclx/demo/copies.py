"""Section 5c2 of ``python -m nclx demo``: NumPy's own copies split across
nclx's team under install(), the same bytes."""
import numpy as np

import nclx
import nclx.ledger
from nclx._ncl import copying
from nclx.demo._common import median_time, section


def run():
    section("5c2. Copies: NumPy's copies of a dtype to itself on nclx's threads")
    if copying.layout():
        print(f"install() leaves this NumPy's copies alone: {copying.layout()}")
        return
    a = np.random.default_rng(6).standard_normal(4_000_000)
    out = np.empty_like(a)

    def setitem():
        out[...] = a[::-1]
        return out

    cases = [("np.copyto(out, a)", lambda: (np.copyto(out, a), out)[1]),
             ("np.ascontiguousarray(a[::-1])", lambda: np.ascontiguousarray(a[::-1])),
             ("out[...] = a[::-1]", setitem)]
    print(f"{'call (4e6 float64)':<32}{'stock ms':>10}{'installed ms':>14}{'ratio':>8}  same bits")
    for label, fn in cases:
        want = fn().tobytes()
        ts = median_time(fn, repeat=7)
        with nclx.installed():
            got = fn().tobytes()
            ti = median_time(fn, repeat=7)
        print(f"{label:<32}{ts * 1e3:>10.2f}{ti * 1e3:>14.2f}{ts / ti:>8.2f}  {want == got}")
    with nclx.installed(), nclx.ledger.recording() as led:
        a[:1000].copy()
    print("ledger rows: " + ", ".join(f"{r.op} {r.dtypes[0]} x{r.elements} ({r.subsystem})"
                                      for r in led.records()))
    print(f"(on {nclx.get_num_threads()} thread(s): each piece NumPy's own copy loop; "
          f"calls under {2 * copying.PIECE_BYTES >> 10} KiB stay on the calling thread)")
