#!/usr/bin/env python3
"""Thread scaling and single-thread cost of nclx.install() against stock NumPy.

Each case is timed in one process with nclx uninstalled (stock) and
installed, alternately, round after round (asv_bench/benchmarks/_ratio.py's
method), so machine noise hits both; the result is the median over rounds of
stock time / nclx time (> 1: nclx is faster) and the median times.

  scaling   add, sum, sqrt float64 and greater int64 at --scale-n elements,
            nclx.set_num_threads(t) for each t in --threads
  overhead  nclx.set_num_threads(1): add, greater, sqrt, sum on float64 and
            int64 at each of --sizes; "control" times stock against stock
            (add float64), i.e. the noise of the method

    python tools/bench_threads.py [--json FILE] [--quick]

Run it outside the source tree (the checkout's nclx/ would shadow the
installed package).
"""
import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

import nclx
from nclx._timing import samples

SCALING = [("add", "float64"), ("sum", "float64"), ("sqrt", "float64"), ("greater", "int64")]
OVERHEAD = [(op, dt) for op in ("add", "greater", "sqrt", "sum") for dt in ("float64", "int64")]
SIZES = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000]


def operands(op, dtype, n):
    """A call of ``op`` on contiguous ``dtype`` arrays of n elements (out= preallocated)."""
    rng = np.random.default_rng(n)
    a = (rng.random(n) * 100 + 1).astype(dtype)
    if op == "sum":
        return a.sum
    func = getattr(np, op)
    if op == "sqrt":
        out = func(a)
        return lambda: func(a, out=out)
    b = (rng.random(n) * 100 + 1).astype(dtype)
    out = func(a, b)
    return lambda: func(a, b, out=out)


def _stock():
    nclx.uninstall()


def alternate(fn, rounds, budget, enter_other=nclx.install):
    """(median ratio, median stock s, median other s): stock and ``enter_other``
    state alternately, each side the best of 3 samples of ``budget`` seconds."""
    for enter in (_stock, enter_other, _stock):
        enter()
        fn()
    t0 = time.perf_counter()
    fn()
    inner = max(1, int(budget / max(time.perf_counter() - t0, 1e-7)))
    base, other = [], []
    try:
        for _ in range(rounds):
            _stock()
            base.append(min(samples(fn, 3, inner=inner)))
            enter_other()
            other.append(min(samples(fn, 3, inner=inner)))
    finally:
        _stock()
    ratio = statistics.median(b / o for b, o in zip(base, other))
    return ratio, statistics.median(base), statistics.median(other)


def _rounds(n, rounds):
    return max(3, rounds // 3) if n >= 50_000_000 else rounds


def _case(kind, op, dt, n, threads, rounds, budget, enter_other=nclx.install):
    nclx.set_num_threads(threads)
    fn = operands(op, dt, n)
    r, s, m = alternate(fn, _rounds(n, rounds), budget, enter_other)
    row = {"table": kind, "op": op, "dtype": dt, "n": n, "threads": nclx.get_num_threads(),
           "ratio": round(r, 4), "stock_s": s, "nclx_s": m}
    print(f"{kind:9} {op:8} {dt:8} n={n:<10.0e} t={row['threads']:<3} "
          f"stock {s * 1e6:12.2f} us  nclx {m * 1e6:12.2f} us  ratio {r:.3f}", flush=True)
    return row


def _markdown(rows, row_key, col_key, cols):
    cells = {}
    for r in rows:
        cells.setdefault(row_key(r), {})[r[col_key]] = r["ratio"]
    head = "| case | " + " | ".join(f"{c:g}" for c in cols) + " |"
    lines = [head, "|---|" + "---:|" * len(cols)]
    for name, vals in cells.items():
        lines.append(f"| {name} | " + " | ".join(
            f"{vals[c]:.3f}" if c in vals else "" for c in cols) + " |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2, 4, 8, 16])
    p.add_argument("--scale-n", type=int, default=10_000_000)
    p.add_argument("--sizes", nargs="+", type=int, default=SIZES)
    p.add_argument("--rounds", type=int, default=15, help="alternations per case (1/3 at >= 5e7)")
    p.add_argument("--budget", type=float, default=0.004, help="seconds per timing sample")
    p.add_argument("--only", choices=["scaling", "overhead"])
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--quick", action="store_true", help="smoke test: small sizes, few rounds")
    a = p.parse_args(argv)
    if a.quick:
        a.threads, a.scale_n, a.sizes, a.rounds = [1, 2], 200_000, [1, 1_000, 100_000], 3
    meta = {"nclx": nclx.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "machine": platform.machine(),
            "cpu_count": os.cpu_count(), "default_threads": nclx.get_num_threads(),
            "rounds": a.rounds, "budget": a.budget}
    print(meta, flush=True)
    rows = []
    if a.only != "overhead":
        for op, dt in SCALING:
            for t in a.threads:
                rows.append(_case("scaling", op, dt, a.scale_n, t, a.rounds, a.budget))
    if a.only != "scaling":
        for n in a.sizes:
            rows.append(_case("control", "add", "float64", n, 1, a.rounds, a.budget,
                              enter_other=_stock))
            for op, dt in OVERHEAD:
                rows.append(_case("overhead", op, dt, n, 1, a.rounds, a.budget))
    nclx.set_num_threads(meta["default_threads"])
    scaling = [r for r in rows if r["table"] == "scaling"]
    if scaling:
        print(f"\nstock / nclx at {a.scale_n:.0e} elements, by nclx thread count\n")
        print(_markdown(scaling, lambda r: f"{r['op']} {r['dtype']}", "threads",
                        sorted({r["threads"] for r in scaling})))
    single = [r for r in rows if r["table"] in ("overhead", "control")]
    if single:
        print("\nstock / nclx, set_num_threads(1), by size (control: stock / stock)\n")
        print(_markdown(single, lambda r: f"{r['op']} {r['dtype']}"
                        + (" (control)" if r["table"] == "control" else ""), "n", a.sizes))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
