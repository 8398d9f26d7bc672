#!/usr/bin/env python3
"""Split calls while other processes keep the cores busy: nclx's libgomp
spin count (nclx/_ompenv.py) against libgomp's default and its passive
policy (the measurement: nclx/bench_spin.py; asv ratios:
asv_bench/benchmarks/bench_spin.py).

Starts ``--busy`` processes that spin (plain Python loops), then times, in
a fresh interpreter per setting and round, ``nclx.evaluate("2*a+b*b")`` of
``--n`` float64 on 2 threads, numexpr's with 2 threads and stock NumPy's
expression (means of 100 calls after 5 warm-up calls), and prints them.

    python tools/bench_spin.py [--busy 2] [--rounds 2] [--n 1000000]

Run it outside the source tree (the checkout's nclx/ would shadow the
installed package).
"""
import argparse

from nclx.bench_spin import SETTINGS, busy_processes, time_setting

LABELS = {"nclx": "nclx's (10000)", "default": "libgomp's default (300000)",
          "passive": "passive"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--busy", type=int, default=2, help="busy processes to start")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--n", type=int, default=1_000_000)
    args = ap.parse_args(argv)
    with busy_processes(args.busy):
        for r in range(args.rounds):
            for name, _ in SETTINGS:
                ms = time_setting(name, args.n)
                row = "  ".join(f"{k} {v:6.2f}" for k, v in ms.items())
                print(f"round {r + 1}, {LABELS[name]:28s} {row} ms", flush=True)


if __name__ == "__main__":
    main()
