"""``python -m nclx bench halo``: nclx's halo exchange against a hand-written
mpi4py exchange of the same cells, on a block-block 2-D array.

The launcher starts ``mpiexec -n RANKS python -m nclx.dap.bench_halo``;
each rank times (median of ``--repeats`` rounds, ranks synchronised by a
barrier before each) ``exchange_halos`` with packed buffers and with MPI
subarray datatypes, and the reference: per dimension, ``Sendrecv`` of whole
rows, then of whole columns (packed), which fills corners too.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

from nclx._cliargs import positive_int
from nclx._timing import find_mpiexec, median_time
from nclx.dap.distarray import DistArray
from nclx.dap.halo import exchange_halos


def _timed(comm, fn, repeats):
    """The slowest rank's median seconds of ``fn`` (ranks meet at a barrier
    before each call)."""
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    return comm.allreduce(median_time(fn, repeats, before=comm.Barrier), op=MPI.MAX)


def hand_written(comm, block, coords, grid, w):
    """Per-dimension Sendrecv of the padding cells (the reference)."""
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    ranks = {}
    for d in range(2):
        for step in (-1, 1):
            c = list(coords)
            c[d] += step
            ranks[d, step] = (c[0] * grid[1] + c[1]) if 0 <= c[d] < grid[d] else MPI.PROC_NULL
    n0, n1 = block.shape
    lo0 = w if coords[0] > 0 else 0
    hi0 = w if coords[0] < grid[0] - 1 else 0
    lo1 = w if coords[1] > 0 else 0
    hi1 = w if coords[1] < grid[1] - 1 else 0
    bufs = {k: np.empty((w, n1)) for k in ("s-", "s+", "r-", "r+")}
    cbufs = {k: np.empty((n0, w)) for k in ("s-", "s+", "r-", "r+")}

    def run():
        # rows (contiguous)
        comm.Sendrecv(block[lo0:lo0 + w] if lo0 or ranks[0, -1] == MPI.PROC_NULL else block[0:w],
                      ranks[0, -1], 1, bufs["r+"], ranks[0, 1], 1)
        if hi0:
            block[n0 - w:] = bufs["r+"]
        comm.Sendrecv(block[n0 - hi0 - w:n0 - hi0] if n0 - hi0 - w >= 0 else block[0:w],
                      ranks[0, 1], 2, bufs["r-"], ranks[0, -1], 2)
        if lo0:
            block[:w] = bufs["r-"]
        # columns (packed), whole height: corners come along
        np.copyto(cbufs["s-"], block[:, lo1:lo1 + w])
        comm.Sendrecv(cbufs["s-"], ranks[1, -1], 3, cbufs["r+"], ranks[1, 1], 3)
        if hi1:
            block[:, n1 - w:] = cbufs["r+"]
        np.copyto(cbufs["s+"], block[:, n1 - hi1 - w:n1 - hi1])
        comm.Sendrecv(cbufs["s+"], ranks[1, 1], 4, cbufs["r-"], ranks[1, -1], 4)
        if lo1:
            block[:, :w] = cbufs["r-"]
    return run


def _parser():
    ap = argparse.ArgumentParser(prog="python -m nclx.dap.bench_halo")
    ap.add_argument("--n", type=positive_int, default=2000)
    ap.add_argument("--width", type=positive_int, default=1)
    ap.add_argument("--repeats", type=positive_int, default=200)
    return ap


def main(argv=None):
    args = _parser().parse_args(argv)
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    comm = MPI.COMM_WORLD
    da = DistArray.from_shape((args.n, args.n), comm=comm, padding=[args.width] * 2)
    grid = da.distribution.grid_shape
    coords = da.distribution.coords_from_rank(comm.rank)
    da.exchange_halos()
    rows = []
    packed = _timed(comm, lambda: exchange_halos(da, "packed"), args.repeats)
    dtype = _timed(comm, lambda: exchange_halos(da, "datatype"), args.repeats)
    ref_block = da._block.copy()
    ref = _timed(comm, hand_written(comm, ref_block, coords, grid, args.width), args.repeats)
    rows = [("nclx exchange_halos, packed buffers", packed), ("nclx exchange_halos, subarray "
            "datatypes", dtype), ("hand-written mpi4py Sendrecv (rows, then packed columns)", ref)]
    if comm.rank == 0:
        print(f"{comm.size} ranks, grid {grid}, {args.n} x {args.n} float64, width {args.width}; "
              f"median of {args.repeats}, slowest rank")
        for name, t in rows:
            print(f"  {name}: {t * 1e3:.4f} ms ({t / ref:.2f}x the hand-written exchange)")
    return 0


def launch(argv):
    """``python -m nclx bench halo [--ranks 4] [bench options]``: run this
    module under mpiexec and print its table."""
    ap = argparse.ArgumentParser(prog="python -m nclx bench halo", add_help=True)
    ap.add_argument("--ranks", type=positive_int, default=4)
    known, rest = ap.parse_known_args(argv)
    _parser().parse_args(rest)           # its errors before mpiexec starts the ranks
    mpiexec = find_mpiexec()
    if mpiexec is None:
        print("mpiexec not found: pip install 'nclx[mpi]'", file=sys.stderr)
        return 2
    cmd = [mpiexec, "-n", str(known.ranks), sys.executable, "-m", "nclx.dap.bench_halo"] + rest
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, env=os.environ.copy()).returncode


if __name__ == "__main__":
    sys.exit(main())
