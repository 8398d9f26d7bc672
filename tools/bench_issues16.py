#!/usr/bin/env python3
"""The many-thread column of issues 23 and 24 (sort, mask, RNG; fused
evaluation against numexpr), for a lent many-core machine.

Each cell times the peer (stock NumPy with nclx uninstalled, numexpr, or
NumPy's PCG64 generator) and nclx alternately in one process, ``--rounds``
rounds, each side the best of 2 single calls per round; the cell is the
median of the per-round ratios peer time / nclx time (> 1: nclx faster),
with the median times.  nclx's thread count (and numexpr's) is set to
each of ``--threads``.  Raw rows come out as JSON with ``--json``.

    python tools/bench_issues16.py --threads 2 16 --json out.json

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
import nclx.mask
import nclx.random

try:
    import numexpr
except ImportError:
    numexpr = None


def _once(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def alternate(peer, ours, rounds, enter_peer=None, enter_ours=None):
    """(median ratio, median peer s, median ours s), alternating."""
    for enter, fn in ((enter_peer, peer), (enter_ours, ours)):
        if enter:
            enter()
        fn()
    ratios, tp, to = [], [], []
    for _ in range(rounds):
        if enter_peer:
            enter_peer()
        p = min(_once(peer) for _ in range(2))
        if enter_ours:
            enter_ours()
        o = min(_once(ours) for _ in range(2))
        ratios.append(p / o)
        tp.append(p)
        to.append(o)
    if enter_peer:
        enter_peer()
    return statistics.median(ratios), statistics.median(tp), statistics.median(to)


def _sort_data(dtype, pattern, n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n) if dtype == "float64" else rng.integers(-(1 << 62), 1 << 62, n)
    if pattern == "sorted":
        a.sort()
    elif pattern == "dups":
        a = a[rng.integers(0, 100, n)]
    return a


def installed_cases(n):
    """(name, fn): the same call, stock against nclx.install()."""
    out = []
    for dtype in ("int64", "float64"):
        for pattern in ("random", "sorted", "dups"):
            for kind in ("quicksort", "stable"):
                a = _sort_data(dtype, pattern, n)
                out.append((f"np.sort {dtype} {pattern} {kind}",
                            lambda a=a, k=kind: np.sort(a, kind=k)))
        a = _sort_data(dtype, "random", n)
        out.append((f"np.argsort {dtype} random", lambda a=a: np.argsort(a)))
    m = np.random.default_rng(1).standard_normal((1000, n // 1000))
    out.append((f"np.sort (1000, {n // 1000}) axis=1", lambda: np.sort(m, axis=1)))
    # copies (the copy leaves and the whole/split probes of issue 23's last stop)
    c = np.random.default_rng(2).standard_normal(n)
    dst = np.empty_like(c)
    out += [("a.copy() float64", lambda: c.copy()),
            ("np.copyto(out, a) float64", lambda: np.copyto(dst, c)),
            ("a[::-1].copy() float64", lambda: c[::-1].copy())]
    return out


def peer_cases(n):
    """(name, peer fn, nclx fn)."""
    rng = np.random.default_rng(0)
    a = rng.random(n)
    m = rng.random(n) < 0.5
    pcg = np.random.Generator(np.random.PCG64(1))
    ours = nclx.random.Generator(1)
    out = [
        ("a[m] / nclx.mask.compress", lambda: a[m], lambda: nclx.mask.compress(m, a)),
        ("PCG64 / nclx standard_normal", lambda: pcg.standard_normal(n),
         lambda: ours.standard_normal(n)),
        ("PCG64 / nclx random", lambda: pcg.random(n), lambda: ours.random(n)),
    ]
    return out


RECYCLE = "recycle"          # the nclx side runs under install(recycle=True)


def fused_cases(n):
    rng = np.random.default_rng(0)
    v = {"a": rng.random(n), "b": rng.random(n) + 0.5}
    a, b = v["a"], v["b"]
    out = []
    res = np.empty(n)
    for ex, fn in (("2*a+b*b", lambda: 2 * a + b * b),
                   ("sqrt(a*a+b*b)", lambda: np.sqrt(a * a + b * b))):
        out.append((f"stock / nclx.evaluate {ex}", fn, lambda ex=ex: nclx.evaluate(ex, local_dict=v)))
        out.append((f"stock / nclx.evaluate {ex} recycle", fn,
                     lambda ex=ex: nclx.evaluate(ex, local_dict=v), RECYCLE))
        out.append((f"stock / nclx.evaluate {ex} out=", fn,
                     lambda ex=ex: nclx.evaluate(ex, local_dict=v, out=res)))
        if numexpr is not None:
            out.append((f"numexpr / nclx.evaluate {ex}", lambda ex=ex: numexpr.evaluate(ex, local_dict=v),
                        lambda ex=ex: nclx.evaluate(ex, local_dict=v)))
            out.append((f"stock / numexpr {ex}", fn, lambda ex=ex: numexpr.evaluate(ex, local_dict=v)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[os.cpu_count()])
    ap.add_argument("--n", type=int, default=10_000_000, help="sort/mask/RNG size")
    ap.add_argument("--fused-n", type=int, nargs="+", default=[10_000_000, 100_000_000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=["install", "peer", "fused"], nargs="+",
                    default=["install", "peer", "fused"])
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    meta = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "numpy": np.__version__, "numexpr": getattr(numexpr, "__version__", None),
            "python": platform.python_version()}
    print(json.dumps(meta), flush=True)

    def emit(row):
        rows.append(row)
        print(f"{row['threads']:>3} thr  {row['case']:<44} {row['ratio']:6.2f}  "
              f"peer {row['peer_s'] * 1e3:8.2f} ms  nclx {row['nclx_s'] * 1e3:8.2f} ms", flush=True)

    for t in args.threads:
        nclx.set_num_threads(t)
        if numexpr is not None:
            numexpr.set_num_threads(t)
        if "fused" in args.only:
            for fn_n in args.fused_n:
                for name, peer, ours, *mode in fused_cases(fn_n):
                    enter = (lambda: nclx.install(recycle=True)) if mode else None
                    r, p, o = alternate(peer, ours, args.rounds, nclx.uninstall if mode else None, enter)
                    emit({"threads": t, "case": f"{name} n={fn_n:.0e}", "n": fn_n, "ratio": r,
                          "peer_s": p, "nclx_s": o})
        if "peer" in args.only:
            for name, peer, ours in peer_cases(args.n):
                r, p, o = alternate(peer, ours, args.rounds)
                emit({"threads": t, "case": name, "n": args.n, "ratio": r, "peer_s": p, "nclx_s": o})
        if "install" in args.only:
            for name, fn in installed_cases(args.n):
                r, p, o = alternate(fn, fn, args.rounds, nclx.uninstall, nclx.install)
                emit({"threads": t, "case": name, "n": args.n, "ratio": r, "peer_s": p, "nclx_s": o})
        nclx.uninstall()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
