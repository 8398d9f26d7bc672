"""Parallel .npy I/O against per-rank NumPy I/O: ``load_npy`` / ``save_npy``
of one global float64 array on every rank of ``mpiexec``, against every
rank's ``np.load`` / ``np.save`` of its own block to a file of its own in
the same directory (the same bytes to the same disk, at the same time);
``save_mpiio`` is ``save_npy`` with the one-node shared mapping turned off
(:data:`nclx.dap.npymap.MAPPED_WRITES`), every byte through MPI-IO.

Run as ``mpiexec -n 4 python -m nclx.dap.bench_npyio --mb 1000``; each
timing is the slowest rank's median of ``--repeats`` rounds (ranks meet at a
barrier before each; the five operations take turns within a round, nclx
and NumPy first in alternate rounds, and each ratio is the median of the
rounds' ratios).  By default files stay in the page cache between
rounds (the machine's memory permitting) and nothing is synced to the
disk, and each save overwrites the file of the round before (``--fresh``:
each file is removed first, untimed, so saves make new files); ``--cold``
times each write with its fsync and starts each read with
the file dropped from the page cache (``posix_fadvise``): both sides are
timed alike.  ``--json`` prints one JSON line (for asv).
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

from nclx.dap import npymap, npyread
from nclx.dap.distarray import DistArray
from nclx.dap.distribution import Distribution
from nclx.dap.npyio import load_npy

LAYOUTS = {"rows": lambda nprocs: [nprocs, 1], "grid": lambda nprocs: None,
           "cyclic": lambda nprocs: [nprocs, 1], "cyclic-cols": lambda nprocs: [1, nprocs],
           "u": lambda nprocs: [nprocs, 1]}


def _layout(comm, n, layout):
    """The Distribution of an ``(n, n)`` array in ``layout``: 'rows' and
    'grid' blocks, 'cyclic' rows ('cyclic-cols' columns: a cell a piece)
    dealt round-robin, 'u' rows given to the ranks by a random permutation
    (the same on every rank)."""
    P = comm.Get_size()
    grid = LAYOUTS[layout](P)
    if layout in ("rows", "grid"):
        return Distribution.from_shape((n, n), grid_shape=grid, nprocs=P)
    if layout in ("cyclic", "cyclic-cols"):
        dist = ("c", "n") if layout == "cyclic" else ("n", "c")
        return Distribution.from_shape((n, n), dist=dist, grid_shape=grid, nprocs=P)
    parts = np.array_split(np.random.default_rng(7).permutation(n), P)
    return Distribution.from_dim_data_per_rank(
        [(dict(dist_type="u", size=n, proc_grid_size=P, proc_grid_rank=q, indices=parts[q]),
          dict(dist_type="b", size=n, proc_grid_size=1, proc_grid_rank=0, start=0, stop=n))
         for q in range(P)])


def _drop(path):
    """Write ``path``'s dirty pages to the disk and drop its pages from the
    page cache (that file's only)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def measure(comm, mb, layout, repeats, where, cold=False, fresh=False):
    """{'save': s, 'np_save': s, 'load': s, 'np_load': s} for an ``mb`` MB
    square float64 array in ``layout`` (:data:`LAYOUTS`).  ``cold``: each
    write is timed with its fsync, each read starts with the file out of
    the page cache.  The four are timed in turn, round after round (the
    slowest rank's time of each), so that machine noise hits them alike;
    ``ratio_*`` are medians of the per-round ratios."""
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    n = int((mb * 1e6 / 8) ** 0.5)
    rank = comm.Get_rank()
    dist = _layout(comm, n, layout)
    da = DistArray(np.zeros(dist.local_shape(rank)), dist, comm)
    da._block[...] = rank + np.arange(da._block.shape[-1])
    path = os.path.join(where, f"bench-{layout}.npy")
    own = os.path.join(where, f"bench-{layout}-rank{rank}.npy")
    block = da._block

    def save():
        da.save_npy(path)
        if cold and rank == 0:      # after save_npy every rank has closed the file
            _drop(path)

    def save_mpiio():           # the same through MPI-IO (no shared mapping)
        npymap.MAPPED_WRITES = False
        try:
            save()
        finally:
            npymap.MAPPED_WRITES = True

    def np_save():
        np.save(own, block)
        if cold:
            _drop(own)

    def before_load(name):
        def before():
            if cold and (rank == 0 or name == own):
                _drop(name)
            comm.Barrier()
        return before

    def before_save(name):
        def before():
            if fresh and (rank == 0 or name == own) and os.path.exists(name):
                os.remove(name)         # a new file, not one to overwrite
            comm.Barrier()
        return before

    def load_mpiio():           # the same through MPI-IO's views (no chunked reads)
        npyread.CHUNKED_READS = False
        try:
            load_npy(path, comm=comm, dist=dist)
        finally:
            npyread.CHUNKED_READS = True

    ops = [("save", save, before_save(path)), ("np_save", np_save, before_save(own)),
           ("save_mpiio", save_mpiio, before_save(path)),
           ("load", lambda: load_npy(path, comm=comm, dist=dist), before_load(path)),
           ("np_load", lambda: np.load(own), before_load(own)),
           ("load_mpiio", load_mpiio, before_load(path))]
    times = {name: [] for name, _, _ in ops}
    for rnd in range(repeats + 1):          # round 0 warms up, untimed
        # nclx first in odd rounds, NumPy first in even ones (ABBA)
        for name, fn, before in (ops if rnd % 2 else
                                 [ops[1], ops[2], ops[0], ops[4], ops[5], ops[3]]):
            before()
            t0 = time.perf_counter()
            fn()
            t = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
            if rnd:
                times[name].append(t)
    out = {"shape": [n, n], "grid": list(da.distribution.grid_shape), "cold": cold,
           "fresh": fresh}
    out.update({name: statistics.median(ts) for name, ts in times.items()})
    for op, ref in (("save", "np_save"), ("load", "np_load"), ("save_mpiio", "np_save"),
                    ("load_mpiio", "np_load")):
        out[f"ratio_{op}"] = statistics.median(
            a / b for a, b in zip(times[op], times[ref]))
    back = load_npy(path, comm=comm, dist=dist)
    ok = comm.allreduce(bool(np.array_equal(back._block, block)))
    out["correct"] = bool(ok == comm.Get_size())
    comm.Barrier()
    os.remove(own)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m nclx.dap.bench_npyio")
    ap.add_argument("--mb", type=float, default=256.0, help="global array size in MB (1e6 B)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--layouts", default="rows,grid")
    ap.add_argument("--dir", default=None, help="directory for the files (default: a new "
                    "temporary one)")
    ap.add_argument("--cold", action="store_true", help="time writes with their fsync and "
                    "reads from outside the page cache")
    ap.add_argument("--fresh", action="store_true", help="remove each file before its save "
                    "(untimed): saves make new files instead of overwriting the last round's")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    comm = MPI.COMM_WORLD
    made = None
    if comm.Get_rank() == 0:
        made = args.dir or tempfile.mkdtemp(prefix="nclx-bench-npyio-")
    where = comm.bcast(made, root=0)
    try:
        results = {lay: measure(comm, args.mb, lay, args.repeats, where, args.cold,
                               args.fresh)
                   for lay in args.layouts.split(",")}
    finally:
        comm.Barrier()
        if comm.Get_rank() == 0 and args.dir is None:
            shutil.rmtree(where, ignore_errors=True)
    if comm.Get_rank() == 0:
        if args.json:
            print(json.dumps({"ranks": comm.Get_size(), "mb": args.mb, "results": results}))
        else:
            print(f"{comm.Get_size()} ranks, {args.mb:g} MB float64; median of {args.repeats}, "
                  f"slowest rank; " + ("cold: writes with fsync, reads from the disk" if args.cold
                                       else "warm: the page cache, no fsync") +
                  ("; every save makes a new file" if args.fresh else
                   "; saves overwrite the last round's files"))
            for lay, r in results.items():
                print(f"  {lay} (shape {tuple(r['shape'])}, grid {tuple(r['grid'])}, "
                      f"{'correct' if r['correct'] else 'WRONG'}):")
                for op, ref in (("save", "np_save"), ("save_mpiio", "np_save"),
                                ("load", "np_load"), ("load_mpiio", "np_load")):
                    print(f"    {op.replace('_', '_npy ', 1) if '_' in op else op + '_npy'} "
                          f"{r[op]:.3f} s, per-rank np.{ref[3:]} of own block "
                          f"{r[ref]:.3f} s: {r['ratio_' + op]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
