#!/usr/bin/env python3
"""The vector partition of 64-bit keys against the scalar one
(``nclx._ncl.sorting.vector_partition``): ``np.sort`` of 1e7 random keys,
stock / installed with each partition, per thread count.

Stock and both nclx variants run alternately in one process, ``--rounds``
rounds, each the best of 2 calls; the cell is the median per-round ratio
stock / nclx.  Run it outside the source tree.

    python tools/bench_vpart.py --threads 2 16
"""
import argparse
import os
import statistics
import time

import numpy as np

import nclx
from nclx._ncl import sorting


def _best(fn):
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[os.cpu_count()])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    data = {"float64": rng.standard_normal(args.n),
            "int64": rng.integers(-(1 << 62), 1 << 62, args.n),
            "uint64": rng.integers(0, 2**64 - 1, args.n, dtype=np.uint64, endpoint=True)}
    print(f"vector partition here: {sorting.vector_partition_here()}, numpy {np.__version__}, "
          f"{os.cpu_count()} cpus", flush=True)
    for t in args.threads:
        nclx.set_num_threads(t)
        for name, a in data.items():
            ratios = {True: [], False: []}
            for _ in range(args.rounds):
                nclx.uninstall()
                stock = _best(lambda: np.sort(a))
                nclx.install()
                for vec in (True, False):
                    sorting.vector_partition(vec)
                    ratios[vec].append(stock / _best(lambda: np.sort(a)))
                sorting.vector_partition(True)
                nclx.uninstall()
            print(f"{t:>3} threads {name:<8} stock/vector {statistics.median(ratios[True]):5.2f}  "
                  f"stock/scalar {statistics.median(ratios[False]):5.2f}", flush=True)


if __name__ == "__main__":
    main()
