"""Copies made of one call a row (NumPy calls the copy loop once per row
when rows do not join into one run): stock time / time under
nclx.install(), alternating in one process (asv_bench's alternating_ratio).

    python tools/bench_copy_rows.py [DTYPES] [SIZES]

DTYPES: comma-separated (default f8,f4,i2,u1); SIZES: total elements
(default 100000,1000000).  For each row width w (1, 4, 8, 16, 17, 64, 1000)
it times np.copyto of: reversed rows (rev), every second source item
(src2), into every second destination item (dst2), both strided (both),
rows filled from their first item (bcast: source stride 0) and the same
into a strided destination (bcast_s).  Prints one line per cell and the
lowest ratio.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "asv_bench"))

import nclx  # noqa: E402
from benchmarks._ratio import alternating_ratio  # noqa: E402

WIDTHS = (1, 4, 8, 16, 17, 64, 1000)


def cases(dt, n, w):
    a = np.arange(n).astype(dt)
    m = a[: n // w * w].reshape(-1, w)
    out = np.empty_like(m)
    out2 = np.empty((m.shape[0], 2 * w), dt)[:, ::2]
    return {
        "rev": lambda: np.copyto(out, m[:, ::-1]),
        "src2": lambda: np.copyto(out[:, : (w + 1) // 2], m[:, ::2]),
        "dst2": lambda: np.copyto(out2, m),
        "both": lambda: np.copyto(out2[:, ::-1], m),
        "bcast": lambda: np.copyto(out, m[:, :1]),
        "bcast_s": lambda: np.copyto(out2, m[:, :1]),
    }


def main(argv):
    dts = argv[1].split(",") if len(argv) > 1 else ["f8", "f4", "i2", "u1"]
    sizes = [int(s) for s in argv[2].split(",")] if len(argv) > 2 else [100_000, 1_000_000]
    res = []
    try:
        for dt in dts:
            for n in sizes:
                for w in WIDTHS:
                    for name, fn in cases(dt, n, w).items():
                        r = alternating_ratio(fn, fn, nclx.uninstall, nclx.install,
                                              rounds=9, budget=0.004)
                        res.append((r, dt, n, w, name))
                        print(f"{dt:>3} n={n:<8} w={w:<5} {name:<8} {r:.3f}", flush=True)
    finally:
        nclx.uninstall()
    r, dt, n, w, name = min(res)
    print(f"lowest: {r:.3f} ({dt}, n={n}, w={w}, {name})")


if __name__ == "__main__":
    main(sys.argv)
