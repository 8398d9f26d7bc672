"""``python -m nclx.dap.bench_reduce`` under mpiexec: the latency of small
reductions on a DistArray (1,000 elements over the ranks), where the fold
record's one ``Allreduce`` and the Python around it are the whole cost.

Each case runs ``--calls`` times per round, ranks synchronised by a
barrier before each round; a round's time per call is the slowest rank's;
the figure is the median over ``--rounds`` rounds, in microseconds.  With
``--json``, rank 0 prints one JSON line (asv ``bench_dap_reduce``).
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

from nclx._timing import run_module_under_mpiexec
from nclx.dap.distarray import DistArray
from nclx.dap.fold import agree

CASES = ["agree", "np.sum float64", "np.sum int64", "np.max", "np.linalg.norm", "sum(axis=0)"]


def _cases(comm):
    f = DistArray.from_global(np.arange(1000.0), comm=comm)
    i = DistArray.from_global(np.arange(1000), comm=comm)
    m = DistArray.from_global(np.arange(1000.0).reshape(10, 100), comm=comm)
    return {"agree": lambda: agree(comm, "bench"), "np.sum float64": lambda: np.sum(f),
            "np.sum int64": lambda: np.sum(i), "np.max": lambda: np.max(f),
            "np.linalg.norm": lambda: np.linalg.norm(f), "sum(axis=0)": lambda: m.sum(axis=0)}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m nclx.dap.bench_reduce")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print one JSON line (rank 0)")
    args = ap.parse_args(argv)
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    comm = MPI.COMM_WORLD
    out = {}
    for name, fn in _cases(comm).items():
        fn()
        per_call = []
        for _ in range(args.rounds):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(args.calls):
                fn()
            per_call.append(comm.allreduce((time.perf_counter() - t0) / args.calls, op=MPI.MAX))
        out[name] = statistics.median(per_call) * 1e6
    if comm.rank == 0:
        if args.json:
            print(json.dumps(dict(ranks=comm.size, us=out)))
        else:
            print(f"{comm.size} ranks; microseconds a call, median of {args.rounds} rounds of "
                  f"{args.calls}, slowest rank")
            for name, us in out.items():
                print(f"  {name:16s} {us:8.1f}")
    return 0


def launch(argv, ranks=2):
    """Run this module under ``mpiexec -n ranks``; return its stdout."""
    return run_module_under_mpiexec("nclx.dap.bench_reduce", argv, ranks)


if __name__ == "__main__":
    sys.exit(main())
