"""Section 5f of ``python -m nclx demo``: nclx.random, counter-based
streams filled on nclx's threads, NumPy's Philox values."""
import numpy as np

import nclx
import nclx.ledger
import nclx.random
from nclx.demo._common import median_time, section


def run():
    section("5f. RNG: nclx.random.Generator, Philox streams on nclx's threads")
    g, philox = nclx.random.Generator(2024), np.random.Generator(np.random.Philox(2024))
    same = all(g.random(n).tobytes() == philox.random(n).tobytes() for n in (5, 1_000_000))
    same &= g.uniform(-1, 1, 777).tobytes() == philox.uniform(-1, 1, 777).tobytes()
    print(f"random / uniform equal numpy.random.Generator(Philox(2024))'s, bit for bit: {same}")

    keep = nclx.get_num_threads()
    bytes_by_threads = []
    for t in (1, 2, 3, 7):
        nclx.set_num_threads(t)
        bytes_by_threads.append(nclx.random.Generator(7).standard_normal(1_000_003).tobytes())
    nclx.set_num_threads(keep)
    print("standard_normal(1_000_003) on 1, 2, 3, 7 threads, same bytes: "
          f"{all(b == bytes_by_threads[0] for b in bytes_by_threads)} "
          f"(block streams of {nclx.random.default_block} elements)")

    pcg = np.random.Generator(np.random.PCG64(1))
    g = nclx.random.Generator(1)
    n = 10_000_000
    print(f"{'n = 1e7':<34}{'PCG64 ms':>10}{'nclx ms':>10}{'ratio':>8}")
    for label, base, ours in [
            ("random(n)", lambda: pcg.random(n), lambda: g.random(n)),
            ("standard_normal(n)", lambda: pcg.standard_normal(n), lambda: g.standard_normal(n)),
            ("exponential(2.0, n)", lambda: pcg.exponential(2.0, n), lambda: g.exponential(2.0, n)),
            ("integers(0, 1000, n)", lambda: pcg.integers(0, 1000, n), lambda: g.integers(0, 1000, n)),
            ("permutation(n)", lambda: pcg.permutation(n), lambda: g.permutation(n))]:
        tb, to = median_time(base, repeat=3), median_time(ours, repeat=3)
        print(f"{label:<34}{tb * 1e3:>10.1f}{to * 1e3:>10.1f}{tb / to:>8.2f}")
    print(f"(on {nclx.get_num_threads()} thread(s))")

    with nclx.ledger.recording() as led:
        g.normal(0.0, 1.0, 1000)
        g.integers(0, 6, 10, dtype=np.int8)
    rows = sorted((r.op, r.dtypes[0], r.elements) for r in led.records() if r.subsystem == "rng")
    print(f"RNG calls in the ledger: {rows}")
