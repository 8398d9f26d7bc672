"""``python -m nclx.dap.bench_windows`` under mpiexec: moves that list
indices ('u' dimensions, cyclic pairs of other block sizes), in windows of
bounded memory (the default) against the same move in one window (one
``Alltoallw``, the index lists of the whole block at once).

Cases, a 1-d float64 array of ``--n`` elements: block -> 'u' (a random
partition), 'u' -> block, cyclic -> block-cyclic (block size 7).  Each
round times both settings, ranks synchronised by a barrier before each
call; a call's time is the slowest rank's; the figures are medians over
rounds.  One more call of each, under tracemalloc, gives the peak bytes
above the target block as a fraction of the source and target blocks
(the largest over the ranks).  The results are compared byte for byte.
"""
import argparse
import json
import sys
import tracemalloc

import numpy as np

from nclx._timing import mpi_round, run_module_under_mpiexec, slowest_medians
from nclx.dap import movewindows
from nclx.dap.distarray import DistArray
from nclx.dap.distribution import Distribution
from nclx.dap.redistribute import Layout

CASES = ["block->u", "u->block", "cyclic->block-cyclic"]


def _u(n, P):
    perm = np.random.default_rng(3).permutation(n)
    return Distribution.from_dim_data_per_rank(
        [({"dist_type": "u", "size": n, "indices": perm[r::P].astype(np.int64),
           "proc_grid_rank": r, "proc_grid_size": P},) for r in range(P)])


def _case(comm, n, case):
    """(source DistArray, target Distribution)."""
    P = comm.size
    g = np.arange(n, dtype=np.float64)
    src = {"block->u": Distribution.from_shape((n,), nprocs=P), "u->block": _u(n, P),
           "cyclic->block-cyclic": Distribution.from_shape((n,), dist="c", nprocs=P)}[case]
    dst = {"block->u": _u(n, P), "u->block": Distribution.from_shape((n,), nprocs=P),
           "cyclic->block-cyclic": Distribution.from_shape((n,), dist="c", block_size=[7],
                                                           nprocs=P)}[case]
    return DistArray.from_global(g, dist=src, comm=comm), dst


class _OneWindow:
    """Settings that put the whole move in one window (every rank alike)."""

    def __enter__(self):
        self.saved = movewindows.FRACTION
        movewindows.FRACTION = 1e12

    def __exit__(self, *exc):
        movewindows.FRACTION = self.saved


def _peak_fraction(comm, da, dst):
    """The largest rank's tracemalloc peak above the target block, as a
    share of its source and target blocks."""
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    out = da.redistribute(dst)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return max(comm.allgather((peak - out._block.nbytes)
                              / max(1, da._block.nbytes + out._block.nbytes)))


def measure(comm, n, repeats):
    """{case: {windows_ms, one_ms, ratio, windows, peak_windows, peak_one,
    same_bytes}} on every rank (collective; the slowest rank's medians)."""
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    results = {}
    for case in CASES:
        da, dst = _case(comm, n, case)
        a = da.redistribute(dst)                  # warm: the index tables, imports
        with _OneWindow():
            b = da.redistribute(dst)
        same = comm.allreduce(a._block.tobytes() == b._block.tobytes(), op=MPI.LAND)
        times = {"windows": [], "one": []}
        for _ in range(repeats):
            times["windows"].append(mpi_round(comm, lambda: da.redistribute(dst)))
            with _OneWindow():
                times["one"].append(mpi_round(comm, lambda: da.redistribute(dst)))
        med = slowest_medians(comm, times)
        frac_w = _peak_fraction(comm, da, dst)
        with _OneWindow():
            frac_1 = _peak_fraction(comm, da, dst)
        nwin = sum(1 for _ in movewindows.windows(Layout.of(da.distribution), Layout.of(dst),
                                                  0, comm.size, 8))
        results[case] = dict(windows_ms=med["windows"] * 1e3, one_ms=med["one"] * 1e3,
                             ratio=med["windows"] / med["one"], windows=nwin,
                             peak_windows=frac_w, peak_one=frac_1, same_bytes=bool(same))
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m nclx.dap.bench_windows")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print one JSON line (rank 0)")
    args = ap.parse_args(argv)
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    comm = MPI.COMM_WORLD
    results = measure(comm, args.n, args.repeats)
    if comm.rank == 0:
        if args.json:
            print(json.dumps(dict(ranks=comm.size, n=args.n, cases=results)))
        else:
            print(f"{comm.size} ranks, {args.n} float64; median of {args.repeats} rounds, "
                  f"slowest rank")
            for case, r in results.items():
                print(f"  {case}: {r['windows_ms']:.1f} ms in {r['windows']} windows, "
                      f"{r['one_ms']:.1f} ms in one: {r['ratio']:.2f}x; peak above the "
                      f"target block {100 * r['peak_windows']:.1f}% of the two blocks "
                      f"(one window {100 * r['peak_one']:.0f}%); same bytes: "
                      f"{r['same_bytes']}")
    return 0


def launch(argv, ranks=2):
    """Run this module under ``mpiexec -n ranks``; return its stdout."""
    return run_module_under_mpiexec("nclx.dap.bench_windows", argv, ranks)


if __name__ == "__main__":
    sys.exit(main())
