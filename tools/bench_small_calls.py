#!/usr/bin/env python3
"""The smallest sorts and copies under nclx.install() against stock NumPy:
what install() adds to a call too small to split (the getters and loops
nclx puts in NumPy's sort methods on NumPy 2.5 and in its copy methods).

Each round times every case stock, installed, then stock again (5,000
calls each, the mean a call); the ratio of a round is the mean of the two
stock times over the installed time (> 1: nclx is faster).  Printed: the
median times and the median and quartiles of the ratios over --rounds.

    python tools/bench_small_calls.py [--rounds 25]

Run it outside the source tree (the checkout's nclx/ would shadow the
installed package).
"""
import argparse
import time

import numpy as np

import nclx


def _mean_ns(f, k):
    t0 = time.perf_counter_ns()
    for _ in range(k):
        f()
    return (time.perf_counter_ns() - t0) / k


def cases():
    out = []
    rng = np.random.default_rng(0)
    for n in (1, 10, 100, 1000):
        a = rng.standard_normal(n)
        out.append((f"np.sort {n}", lambda a=a: np.sort(a)))
        out.append((f"np.argsort {n}", lambda a=a: np.argsort(a)))
        out.append((f"a.copy() {n}", lambda a=a: a.copy()))
    m = rng.standard_normal((8, 12))
    out.append(("np.sort (8, 12) axis=1", lambda: np.sort(m, axis=1)))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=25)
    p.add_argument("--calls", type=int, default=5000)
    args = p.parse_args()
    cs = cases()
    ratios = {name: [] for name, _ in cs}
    times = {name: ([], []) for name, _ in cs}
    for _ in range(args.rounds):
        for name, f in cs:
            s = _mean_ns(f, args.calls)
            with nclx.installed():
                i = _mean_ns(f, args.calls)
            s2 = _mean_ns(f, args.calls)
            ratios[name].append((s + s2) / 2 / i)
            times[name][0].append((s + s2) / 2)
            times[name][1].append(i)
    print(f"NumPy {np.__version__}, nclx {nclx.__version__}, {args.rounds} rounds")
    print(f"{'case':24s} {'stock ns':>9s} {'nclx ns':>9s} {'ratio':>6s} {'q25':>6s} {'q75':>6s}")
    for name, r in ratios.items():
        r = np.array(r)
        print(f"{name:24s} {np.median(times[name][0]):9.0f} {np.median(times[name][1]):9.0f} "
              f"{np.median(r):6.3f} {np.quantile(r, .25):6.3f} {np.quantile(r, .75):6.3f}")


if __name__ == "__main__":
    main()
