#!/usr/bin/env python3
"""What bounds ``nclx.evaluate("2*a+b*b")`` at large sizes (issue 24's
many-thread target; docs/benchmarks.md section 10).

``--part stream``: the last step's non-temporal stores on and off
(``copying.tune(stream_bytes=)``, with nclx._ncl.streamprobe off), and as
the probes choose (after they decided), into a reused ``out=`` and into a
fresh result, stock in the same rounds (``--rounds`` rounds, each the best
of 2).
``--part floor``: programs that move the same bytes (one add, a scaled
copy, a dot product, installed ``np.copyto`` / ``np.add``), medians of 9,
with the rate of the bytes each must read and write.

    python tools/bench_fused_floor.py --n 1e8 --threads 16

Run it outside the source tree (the checkout's nclx/ would shadow the
installed package).
"""
import argparse
import statistics
import time

import numpy as np

import nclx
from nclx._ncl import copying, streamprobe

NEVER = (1 << 63) - 1        # stream_bytes no copy reaches: ordinary stores


def _best(fn, k=2):
    out = []
    for _ in range(k):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def _median(fn, k=9):
    fn()
    return statistics.median(_best(fn, 1) for _ in range(k))


def stream(a, b, out, rounds):
    v = dict(a=a, b=b)
    on = copying.tune()[2]

    def ev(bytes_, probed=False, **kw):
        def run():
            copying.tune(stream_bytes=bytes_)
            streamprobe.adapt(probed)
            nclx.evaluate("2*a+b*b", local_dict=v, **kw)
        return run

    cases = {"stock": lambda: 2 * a + b * b,
             "out= streamed": ev(on, out=out), "out= ordinary stores": ev(NEVER, out=out),
             "out= as probed": ev(on, True, out=out),
             "fresh streamed": ev(on), "fresh ordinary stores": ev(NEVER),
             "fresh as probed": ev(on, True)}
    times = {k: [] for k in cases}
    adapting = streamprobe.adapt()
    try:
        for _ in range(2 * streamprobe.PROBES + 1):    # the probes decide first
            ev(on, True, out=out)()
            ev(on, True)()
        for _ in range(rounds):
            for k, fn in cases.items():
                times[k].append(_best(fn))
    finally:
        copying.tune(stream_bytes=on)
        streamprobe.adapt(adapting)
    st = statistics.median(times["stock"])
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"  {k:24s} {m * 1e3:8.2f} ms  stock / this {st / m:6.2f}")


def floor(a, b, out):
    n = a.size
    v = dict(a=a, b=b)
    rows = [("evaluate 2*a+b*b out=", lambda: nclx.evaluate("2*a+b*b", local_dict=v, out=out), 24),
            ("evaluate a+b out=", lambda: nclx.evaluate("a+b", local_dict=v, out=out), 24),
            ("evaluate 2*a out=", lambda: nclx.evaluate("2*a", local_dict=v, out=out), 16),
            ("evaluate sum(a*b)", lambda: nclx.evaluate("sum(a*b)", local_dict=v), 16)]
    for name, fn, per in rows:
        m = _median(fn)
        print(f"  {name:32s} {m * 1e3:8.2f} ms  {per * n / m / 1e9:6.1f} GB/s ({per} B an element)")
    nclx.install()
    try:
        for name, fn, per in (("installed np.copyto(o, a)", lambda: np.copyto(out, a), 16),
                              ("installed np.add(a, b, out=o)", lambda: np.add(a, b, out=out), 24)):
            m = _median(fn)
            print(f"  {name:32s} {m * 1e3:8.2f} ms  {per * n / m / 1e9:6.1f} GB/s ({per} B an element)")
    finally:
        nclx.uninstall()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e8)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--part", choices=["stream", "floor"], nargs="+", default=["stream", "floor"])
    args = ap.parse_args(argv)
    if args.threads:
        nclx.set_num_threads(args.threads)
    n = int(args.n)
    rng = np.random.default_rng(1)
    a, b = rng.random(n), rng.random(n)
    out = np.zeros(n)
    print(f"n={n:.0e}, {nclx.get_num_threads()} threads, NumPy {np.__version__}")
    if "stream" in args.part:
        print("the last step's non-temporal stores on and off (medians of the rounds):")
        stream(a, b, out, args.rounds)
    if "floor" in args.part:
        print("programs moving the same bytes (medians of 9):")
        floor(a, b, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
