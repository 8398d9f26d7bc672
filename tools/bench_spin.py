#!/usr/bin/env python3
"""Split calls while other processes keep the cores busy: nclx's libgomp
spin count (nclx/_ompenv.py) against libgomp's default and its passive
policy.

Starts ``--busy`` processes that spin (plain Python loops), then times, in
a fresh interpreter per setting and round, ``nclx.evaluate("2*a+b*b")`` of
``--n`` float64 on 2 threads, numexpr's with 2 threads and stock NumPy's
expression (means of 100 calls after 5 warm-up calls), and prints them.
Settings: nclx's own (GOMP_SPINCOUNT=10000, set by ``import nclx``),
GOMP_SPINCOUNT=300000 (libgomp's default), OMP_WAIT_POLICY=passive.

    python tools/bench_spin.py [--busy 2] [--rounds 2] [--n 1000000]

Run it outside the source tree (the checkout's nclx/ would shadow the
installed package).
"""
import argparse
import os
import subprocess
import sys

CHILD = r"""
import sys, time, numpy as np, nclx
n = int(sys.argv[1])
a = np.random.default_rng(0).random(n); b = np.random.default_rng(1).random(n)
nclx.set_num_threads(2)
def t(f, k=100):
    for _ in range(5): f()
    t0 = time.perf_counter()
    for _ in range(k): f()
    return (time.perf_counter() - t0) / k * 1e3
row = [f"evaluate {t(lambda: nclx.evaluate('2*a+b*b')):6.2f}"]
try:
    import numexpr
    numexpr.set_num_threads(2)
    row.append(f"numexpr {t(lambda: numexpr.evaluate('2*a+b*b')):6.2f}")
except ImportError:
    row.append("numexpr   (not installed)")
row.append(f"stock {t(lambda: 2*a+b*b):6.2f} ms")
print("  ".join(row))
"""

SETTINGS = [("nclx's (10000)", {}), ("libgomp's default (300000)", {"GOMP_SPINCOUNT": "300000"}),
            ("passive", {"OMP_WAIT_POLICY": "passive"})]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, default=2, help="busy processes to start")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--n", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    try:
        for r in range(args.rounds):
            for name, extra in SETTINGS:
                env = {k: v for k, v in os.environ.items()
                       if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
                env.update(extra)
                out = subprocess.run([sys.executable, "-c", CHILD, str(args.n)], env=env,
                                     capture_output=True, text=True, timeout=600)
                print(f"round {r + 1}, {name:28s} {out.stdout.strip() or out.stderr[-300:]}",
                      flush=True)
    finally:
        for p in busy:
            p.kill()


if __name__ == "__main__":
    main()
