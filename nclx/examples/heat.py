"""2-D heat equation, Jacobi 5-point stencil, on a block-block DistArray
with one cell of padding refreshed by halo exchange each step.

    mpiexec -n 4 python -m nclx.examples.heat --n 2000 --steps 200 [--periodic]

Fixed (default): the n x n field is zero except its first row (1.0); the
four edges are held, and each step replaces every interior cell by the
mean of its four neighbours.  ``--periodic``: both dimensions wrap, the
field starts as sin(2 pi x) sin(2 pi y) at cell centres x = (i + 0.5) / n,
and every cell is updated.  Rank 0 prints the time of each step and, last,
``checksum <repr of the sum of the whole field>``.  :func:`serial` is the
same definition in plain NumPy (the tests compare the two).
"""
import argparse
import sys
import time

import numpy as np

from nclx.dap import DistArray, dims_create


def initial(gi, gj, n, periodic):
    """The initial field at global indices (broadcast arrays)."""
    if periodic:
        return np.sin(2 * np.pi * (gi + 0.5) / n) * np.sin(2 * np.pi * (gj + 0.5) / n)
    return np.where(gi == 0, 1.0, 0.0) + 0.0 * gj


def serial(n, steps, periodic=False):
    """The same computation on one process, plain NumPy."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    u = initial(i, j, n, periodic).astype(np.float64)
    for _ in range(steps):
        if periodic:
            u = 0.25 * (np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1))
        else:
            new = u.copy()
            new[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
            u = new
    return u


BLOCK_CELLS = 16384     # cells per row block of the update: its five streams stay in L2


def update(x, y, box, scratch):
    """y[box] = 0.25 * (north + south + west + east) of x, row block by row
    block through ``scratch`` (rows x width): the same additions in the same
    order as the one-expression form (the same bits), but each block's
    operands stay in cache instead of four full-size temporaries going
    through memory."""
    a0, b0, a1, b1 = box
    rows = scratch.shape[0]
    for r0 in range(a0, b0, rows):
        r1 = min(r0 + rows, b0)
        t = scratch[:r1 - r0]
        np.add(x[r0 - 1:r1 - 1, a1:b1], x[r0 + 1:r1 + 1, a1:b1], out=t)
        np.add(t, x[r0:r1, a1 - 1:b1 - 1], out=t)
        np.add(t, x[r0:r1, a1 + 1:b1 + 1], out=t)
        np.multiply(0.25, t, out=y[r0:r1, a1:b1])


def _updated_range(m, n, periodic):
    """Local [lo, hi) of the cells this rank updates along one dimension."""
    lo, hi = m.comm_padding[0], m.local_size - m.comm_padding[1]
    if not periodic:
        g = m.global_from_local(np.arange(lo, hi)) if hi > lo else np.array([], int)
        inner = np.nonzero((g > 0) & (g < n - 1))[0]
        if inner.size == 0:
            return lo, lo
        return lo + int(inner[0]), lo + int(inner[-1]) + 1
    return lo, hi


def run(n, steps, periodic=False, comm=None, report=print, parts=None):
    """Run the distributed stencil; returns (DistArray, per-step seconds).
    ``parts``, a list: each step appends this rank's (halo exchange, update)
    seconds."""
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    if n < 3:
        raise ValueError(f"--n {n}: the field needs at least 3 x 3 cells")
    if steps < 0:
        raise ValueError(f"--steps {steps}: the number of steps cannot be negative")
    grid = dims_create(comm.Get_size(), 2)
    if min(n // g for g in grid) < 1:
        raise ValueError(f"--n {n}: {comm.Get_size()} ranks form a {grid[0]} x {grid[1]} grid, "
                         f"which leaves some rank without a row or column; use --n >= "
                         f"{max(grid)} or fewer ranks")
    u = DistArray.from_shape((n, n), comm=comm, padding=[1, 1], periodic=[periodic] * 2)
    v = DistArray.from_shape((n, n), comm=comm, padding=[1, 1], periodic=[periodic] * 2)
    maps = u.distribution.maps(comm.Get_rank())
    gi = maps[0].global_from_local(np.arange(maps[0].local_size))[:, None]
    gj = maps[1].global_from_local(np.arange(maps[1].local_size))[None, :]
    u._block[...] = initial(gi, gj, n, periodic)
    v._block[...] = u._block
    (a0, b0), (a1, b1) = (_updated_range(m, n, periodic) for m in maps)
    scratch = np.empty((max(1, min(b0 - a0, BLOCK_CELLS // max(b1 - a1, 1))), max(b1 - a1, 0)))
    times = []
    for step in range(steps):
        comm.Barrier()
        t0 = time.perf_counter()
        u.exchange_halos()
        t1 = time.perf_counter()
        if b0 > a0 and b1 > a1:
            update(u._block, v._block, (a0, b0, a1, b1), scratch)
        t2 = time.perf_counter()
        u, v = v, u
        comm.Barrier()
        times.append(time.perf_counter() - t0)
        if parts is not None:
            parts.append((t1 - t0, t2 - t1))
        if report is not None and comm.Get_rank() == 0:
            report(f"step {step + 1}/{steps}: {times[-1] * 1e3:.3f} ms")
    return u, times


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m nclx.examples.heat", description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="cells per side (default 2000)")
    ap.add_argument("--steps", type=int, default=200, help="Jacobi steps (default 200)")
    ap.add_argument("--periodic", action="store_true", help="both dimensions wrap")
    ap.add_argument("--quiet", action="store_true", help="no per-step lines")
    ap.add_argument("--profile", action="store_true",
                    help="also the median halo exchange and update times, slowest rank")
    args = ap.parse_args(argv)
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    parts = [] if args.profile else None
    try:
        u, times = run(args.n, args.steps, args.periodic, comm,
                       report=None if args.quiet else print, parts=parts)
    except ValueError as exc:          # the same verdict on every rank
        if comm.Get_rank() == 0:
            ap.error(str(exc))
        return 2
    total = u.sum()
    if parts:
        mine = np.median(np.array(parts), axis=0)
        slowest = comm.allreduce(tuple(mine), op=lambda x, y, dt=None: tuple(map(max, x, y)))
    if comm.Get_rank() == 0:
        if parts:
            print(f"slowest rank's median: halo exchange {slowest[0] * 1e3:.3f} ms, "
                  f"update {slowest[1] * 1e3:.3f} ms")
        if times:
            print(f"{comm.Get_size()} rank(s), {args.n} x {args.n}, {args.steps} steps: median "
                  f"{np.median(times) * 1e3:.3f} ms per step")
        print(f"checksum {float(total)!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
