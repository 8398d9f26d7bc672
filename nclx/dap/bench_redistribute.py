"""``python -m nclx.dap.bench_redistribute`` under mpiexec: nclx's
redistribution against a hand-written mpi4py ``Alltoallw`` doing the same
move with subarray datatypes (strided vectors for the cyclic side, resized
column types for the transpose: a column-vector type measured twice as slow
there), on an N x N float64 array over a balanced block grid.

Cases: block -> cyclic (``redistribute('c')``), block -> block on a (P, 1)
grid, and the 2-D transpose ``da.T`` (to the default layout of the
transposed shape; where the grid has one row or one column of ranks,
``da.T`` is a view with the other axis distributed, and the case then
times it redistributed to that default layout: the same move as the
reference).  Each round times both, ranks synchronised by a barrier
before each call; a call's time is the slowest rank's; the figures are the
medians over rounds.  The reference builds its datatypes and allocates its
result in every call, as a one-off redistribution does; "prebuilt" times
its Alltoallw alone, "after one Allreduce" adds the one small collective
nclx agrees on the target with.  The results are compared byte for byte.
"""
import argparse
import json
import subprocess
import sys

import numpy as np

from nclx._cliargs import positive_int
from nclx._timing import mpi_round, run_module_under_mpiexec, slowest_medians
from nclx.dap.distarray import DistArray
from nclx.dap.distribution import Distribution


def _counts(n, P):
    c = [n // P + (1 if i < n % P else 0) for i in range(P)]
    return c, [sum(c[:i]) for i in range(P)]


def _block_ranges(n, P):
    c, o = _counts(n, P)
    return [(o[i], o[i] + c[i]) for i in range(P)]


CASES = ("block->cyclic", "block->block (P,1)", "transpose")


def _coords(rank, grid):
    return divmod(rank, grid[1])


class Reference:
    """Hand-written send/receive datatypes of one 2-D move (float64)."""

    def __init__(self, comm, n, case):
        from mpi4py import MPI
        self.MPI, self.comm, self.n, self.case = MPI, comm, n, case
        P = comm.size
        self.src_grid = Distribution.from_shape((n, n), nprocs=P).grid_shape
        self.dst_grid = {"block->cyclic": self.src_grid, "block->block (P,1)": (P, 1),
                         "transpose": Distribution.from_shape((n, n), nprocs=P).grid_shape}[case]

    def _mine(self):
        i, j = _coords(self.comm.rank, self.src_grid)
        r = _block_ranges(self.n, self.src_grid[0])[i]
        c = _block_ranges(self.n, self.src_grid[1])[j]
        return r, c

    def out_shape(self):
        i, j = _coords(self.comm.rank, self.dst_grid)
        if self.case == "block->cyclic":
            return tuple(len(range(c, self.n, g)) for c, g in zip((i, j), self.dst_grid))
        r = _block_ranges(self.n, self.dst_grid[0])[i]
        c = _block_ranges(self.n, self.dst_grid[1])[j]
        return (r[1] - r[0], c[1] - c[0])

    def types(self):
        """(send counts, displs, types), (recv ...): built now; free with :meth:`free`."""
        D, P, n = self.MPI.DOUBLE, self.comm.size, self.n
        (r0, r1), (c0, c1) = self._mine()
        ncol = c1 - c0
        out = self.out_shape()
        send, recv, made = [[0] * P, [0] * P, [D] * P], [[0] * P, [0] * P, [D] * P], []

        def put(side, p, t, disp):
            t.Commit()
            made.append(t)
            side[0][p], side[1][p], side[2][p] = 1, disp, t
        for p in range(P):
            ti, tj = _coords(p, self.dst_grid)
            si, sj = _coords(p, self.src_grid)
            sr = _block_ranges(n, self.src_grid[0])[si]
            sc = _block_ranges(n, self.src_grid[1])[sj]
            if self.case == "block->cyclic":
                G0, G1 = self.dst_grid
                f0, f1 = r0 + (ti - r0) % G0, c0 + (tj - c0) % G1
                k0, k1 = len(range(f0, r1, G0)), len(range(f1, c1, G1))
                if k0 and k1:
                    row = D.Create_vector(k1, 1, G1)
                    t = row.Create_resized(0, ncol * 8).Create_hvector(k0, 1, G0 * ncol * 8)
                    row.Free()
                    put(send, p, t, ((f0 - r0) * ncol + f1 - c0) * 8)
                # from p: my cyclic indices inside p's block, a contiguous range each way
                me0, me1 = _coords(self.comm.rank, self.dst_grid)
                a0 = [len(range(me0, x, G0)) for x in sr]
                a1 = [len(range(me1, x, G1)) for x in sc]
                if a0[1] > a0[0] and a1[1] > a1[0]:
                    put(recv, p, D.Create_subarray(list(out), [a0[1] - a0[0], a1[1] - a1[0]],
                                                   [a0[0], a1[0]]), 0)
                continue
            tr = _block_ranges(n, self.dst_grid[0])[ti]
            tc = _block_ranges(n, self.dst_grid[1])[tj]
            me = _coords(self.comm.rank, self.dst_grid)
            mr = _block_ranges(n, self.dst_grid[0])[me[0]]
            mc = _block_ranges(n, self.dst_grid[1])[me[1]]
            if self.case == "block->block (P,1)":
                ys, xs = (max(r0, tr[0]), min(r1, tr[1])), (max(c0, tc[0]), min(c1, tc[1]))
                if ys[1] > ys[0] and xs[1] > xs[0]:
                    put(send, p, D.Create_subarray([r1 - r0, ncol], [ys[1] - ys[0], xs[1] - xs[0]],
                                                   [ys[0] - r0, xs[0] - c0]), 0)
                ys, xs = (max(mr[0], sr[0]), min(mr[1], sr[1])), (max(mc[0], sc[0]), min(mc[1], sc[1]))
                if ys[1] > ys[0] and xs[1] > xs[0]:
                    put(recv, p, D.Create_subarray(list(out), [ys[1] - ys[0], xs[1] - xs[0]],
                                                   [ys[0] - mr[0], xs[0] - mc[0]]), 0)
                continue
            # transpose: T[x, y] = A[y, x]; the receiver's order is x outer, y inner
            ys, xs = (max(r0, tc[0]), min(r1, tc[1])), (max(c0, tr[0]), min(c1, tr[1]))
            if ys[1] > ys[0] and xs[1] > xs[0]:
                # one element every row (a column), then the next column 8 bytes on
                step = D.Create_resized(0, ncol * 8)
                col = step.Create_contiguous(ys[1] - ys[0])
                colr = col.Create_resized(0, 8)
                t = colr.Create_contiguous(xs[1] - xs[0])
                for x in (step, col, colr):
                    x.Free()
                put(send, p, t, ((ys[0] - r0) * ncol + xs[0] - c0) * 8)
            xs, ys = (max(mr[0], sc[0]), min(mr[1], sc[1])), (max(mc[0], sr[0]), min(mc[1], sr[1]))
            if ys[1] > ys[0] and xs[1] > xs[0]:
                put(recv, p, D.Create_subarray(list(out), [xs[1] - xs[0], ys[1] - ys[0]],
                                               [xs[0] - mr[0], ys[0] - mc[0]]), 0)
        return send, recv, made

    def run(self, block, prebuilt=None):
        send, recv, made = prebuilt if prebuilt is not None else self.types()
        out = np.empty(self.out_shape())
        self.comm.Alltoallw([block, (send[0], send[1]), send[2]],
                            [out, (recv[0], recv[1]), recv[2]])
        if prebuilt is None:
            for t in made:
                t.Free()
        return out


def _nclx(da, case):
    if case == "block->cyclic":
        return da.redistribute("c")
    if case == "block->block (P,1)":
        return da.redistribute(grid_shape=(da.comm.size, 1))
    t = da.T
    if np.shares_memory(t._block, da._block):
        # one distributed axis: da.T is a view, the other axis distributed;
        # the reference moves to the default layout, so move there too
        return t.redistribute()
    return t


def filled(comm, n):
    """An n x n float64 DistArray in the default layout, element (i, j) =
    i * n + j."""
    g_rows = np.arange(n, dtype=np.float64)
    da = DistArray.from_shape((n, n), comm=comm)
    i0, i1 = (m.global_indices() for m in da.distribution.maps(comm.rank))
    da._block[...] = g_rows[i0][:, None] * n + i1[None, :]
    return da


def measure(comm, n, repeats):
    """{case: {nclx_ms, ref_ms, prebuilt_ms, agreed_ms, ratio, same_bytes}}
    on every rank (collective; the slowest rank's medians)."""
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    da = filled(comm, n)
    results = {}
    for case in CASES:
        ref = Reference(comm, n, case)
        ok = _nclx(da, case)._block.tobytes() == ref.run(da._block).tobytes()
        ok = comm.allreduce(ok, op=MPI.LAND)
        pre = ref.types()
        times = {"nclx": [], "ref": [], "prebuilt": [], "agreed": []}
        flag, flags = np.zeros(3, np.int64), np.empty(3, np.int64)

        def agreed():      # the reference plus the one Allreduce nclx agrees with
            comm.Allreduce(flag, flags, op=MPI.MAX)
            ref.run(da._block)
        for _ in range(repeats):
            times["nclx"].append(mpi_round(comm, lambda: _nclx(da, case)))
            times["ref"].append(mpi_round(comm, lambda: ref.run(da._block)))
            times["prebuilt"].append(mpi_round(comm, lambda: ref.run(da._block, pre)))
            times["agreed"].append(mpi_round(comm, agreed))
        for t in pre[2]:
            t.Free()
        med = slowest_medians(comm, times)
        results[case] = dict(nclx_ms=med["nclx"] * 1e3, ref_ms=med["ref"] * 1e3,
                             prebuilt_ms=med["prebuilt"] * 1e3, agreed_ms=med["agreed"] * 1e3,
                             ratio=med["nclx"] / med["ref"], same_bytes=bool(ok))
    return results


def _parser():
    ap = argparse.ArgumentParser(prog="python -m nclx.dap.bench_redistribute")
    ap.add_argument("--n", type=positive_int, default=2000)
    ap.add_argument("--repeats", type=positive_int, default=30)
    ap.add_argument("--json", action="store_true", help="print one JSON line (rank 0)")
    return ap


def main(argv=None):
    args = _parser().parse_args(argv)
    from mpi4py import MPI   # optional dependency: the launcher runs without it
    comm = MPI.COMM_WORLD
    results = measure(comm, args.n, args.repeats)
    if comm.rank == 0:
        if args.json:
            print(json.dumps(dict(ranks=comm.size, n=args.n, cases=results)))
        else:
            print(f"{comm.size} ranks, {args.n} x {args.n} float64; median of {args.repeats} "
                  f"rounds, slowest rank")
            for case, r in results.items():
                print(f"  {case}: nclx {r['nclx_ms']:.3f} ms, hand-written Alltoallw "
                      f"{r['ref_ms']:.3f} ms: {r['ratio']:.2f}x (its types prebuilt "
                      f"{r['prebuilt_ms']:.3f} ms; after one Allreduce {r['agreed_ms']:.3f} ms); "
                      f"same bytes: {r['same_bytes']}")
    return 0


def launch(argv, ranks=4):
    """Run this module under ``mpiexec -n ranks``; return its stdout."""
    return run_module_under_mpiexec("nclx.dap.bench_redistribute", argv, ranks)


def cli(argv):
    """``python -m nclx bench redistribute [--ranks 4] [bench options]``."""
    ap = argparse.ArgumentParser(prog="python -m nclx bench redistribute")
    ap.add_argument("--ranks", type=positive_int, default=4)
    known, rest = ap.parse_known_args(argv)
    _parser().parse_args(rest)           # its errors before mpiexec starts the ranks
    try:
        print(launch(rest, known.ranks), end="")
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
