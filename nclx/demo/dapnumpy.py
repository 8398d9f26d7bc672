"""Section 6b of ``python -m nclx demo``: plain NumPy code on a DistArray
(nclx.dap) on RANKS MPI ranks: ``np.where``, ``np.nonzero``, ``np.histogram(bins='auto')``,
``np.median(out=)``, ``np.linalg.norm``, a
redistribution block -> cyclic, one of a 'u' (unstructured) array in
windows of bounded memory, and ``save_npy``/``load_npy`` through
MPI-IO.  :func:`run` starts ``mpiexec -n RANKS python -m nclx
demo-dap-numpy``; each of those ranks runs :func:`run_rank`."""
import os
import re
import shutil
import tempfile
import tracemalloc

import numpy as np

import nclx.dap as dap
from nclx.demo._common import RANKS, run_mpiexec, section

_DONE = re.compile(r"^all (\d+) ranks agree with NumPy$", re.M)


def run(mpiexec):
    """Run :func:`run_rank` under mpiexec (``mpiexec`` from section 6);
    returns the exit status (1 when the ranks failed or disagreed)."""
    section(f"6b. plain NumPy code on a DistArray, {RANKS} MPI ranks")
    print(f"mpiexec -n {RANKS} python -m nclx demo-dap-numpy: A = DistArray.from_global(g, "
          f"root=0) with g = np.arange(48.0).reshape(8, 6) on rank 0 only; NumPy functions on A")
    rc, out = run_mpiexec(mpiexec, ["-m", "nclx", "demo-dap-numpy"])
    print(out.rstrip())
    done = _DONE.search(out)
    if rc != 0 or not done or int(done.group(1)) != RANKS:
        print(f"mpiexec exited with {rc}")
        return 1
    return 0


def _rows(da, comm):
    """'rank r: rows [...]' for every rank, on rank 0 (None elsewhere)."""
    rows = da.distribution.maps(comm.rank)[0].global_indices().tolist()
    return comm.gather(f"  rank {comm.rank}: global rows {rows}", root=0)


def _unstructured_move(comm, say):
    """A 'u' (random partition) array to blocks, in windows of bounded memory."""
    from mpi4py import MPI   # the mpi extra: only the ranks mpiexec starts need it

    n, P = 400_000, comm.size
    perm = np.random.default_rng(0).permutation(n)
    d = dap.Distribution.from_dim_data_per_rank(
        [({"dist_type": "u", "size": n, "indices": perm[r::P], "proc_grid_rank": r,
           "proc_grid_size": P},) for r in range(P)])
    g = np.arange(n, dtype=np.float64)
    U = dap.DistArray.from_global(g, dist=d, comm=comm)
    dap.redistribute(U, "b")        # builds the Distribution's index tables, kept with it
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    V = dap.redistribute(U, "b")
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    share = comm.allreduce((peak - V._block.nbytes) / (U._block.nbytes + V._block.nbytes),
                           op=MPI.MAX)
    same = V.gather(root=None).tobytes() == g.tobytes()
    say(f"dap.redistribute(U, 'b') of {n:,} float64 on a random 'u' partition (in windows, "
        f"one Alltoallw each): equals NumPy: {same}; memory above the new block at most "
        f"{100 * share:.1f}% of the two blocks (tracemalloc, a second move; bound: 5%)")
    return same and share <= 0.05


def run_rank():
    """One rank of section 6b: every step is collective; rank 0 prints."""
    from mpi4py import MPI   # the mpi extra: only the ranks mpiexec starts need it

    comm = MPI.COMM_WORLD
    g = np.arange(48.0).reshape(8, 6)
    A = dap.DistArray.from_global(g if comm.rank == 0 else None, root=0, comm=comm,
                                  dist=("b", "n"))
    say = print if comm.rank == 0 else (lambda *a: None)
    ok = True

    w = np.where(A > 20, A, 0)
    wg = w.gather(root=0)
    say(f"np.where(A > 20, A, 0) -> {type(w).__name__}; gathered:\n{wg}")
    if comm.rank == 0:
        ok &= wg.tobytes() == np.where(g > 20, g, 0).tobytes()

    rows, cols = np.nonzero(A % 7 == 0)     # global indices, block-distributed
    rg, cg = rows.gather(root=0), cols.gather(root=0)
    say(f"np.nonzero(A % 7 == 0) -> rows {rg}, columns {cg}")
    if comm.rank == 0:
        want = np.nonzero(g % 7 == 0)
        ok &= rg.tobytes() == want[0].tobytes() and cg.tobytes() == want[1].tobytes()

    h, edges = np.histogram(A, bins="auto")  # NumPy's estimator over the global values
    wh, we = np.histogram(g, bins="auto")
    say(f"np.histogram(A, bins='auto') -> {h.size} bins, counts {h.tolist()}")
    ok &= h.tobytes() == wh.tobytes() and edges.tobytes() == we.tobytes()

    n = np.linalg.norm(A)
    say(f"np.linalg.norm(A) = {n!r} (NumPy on the global array: {np.linalg.norm(g)!r})")
    ok &= bool(np.isclose(n, np.linalg.norm(g), rtol=1e-12, atol=0))

    try:
        np.asarray(A)
    except TypeError as exc:
        say(f"np.asarray(A) -> TypeError: {str(exc)[:96]}...")
    else:
        ok = False

    u = np.unique(A // 12, axis=0)          # rows as records, no gather
    q = np.quantile(A, [0.25, 0.5], method="inverted_cdf", weights=A)
    say(f"np.unique(A // 12, axis=0) -> {u.shape[0]} distinct rows; np.quantile(A, [0.25, 0.5], "
        f"method='inverted_cdf', weights=A) = {q}")
    ok &= u.tobytes() == np.unique(g // 12, axis=0).tobytes()
    ok &= q.tobytes() == np.quantile(g, [0.25, 0.5], method="inverted_cdf", weights=g).tobytes()

    med = np.empty(())
    got = np.median(A, out=med)             # out= of the result's dtype, written on every rank
    say(f"np.median(A, out=med) -> med is the result: {got is med}, {float(med)!r} "
        f"(NumPy: {float(np.median(g))!r})")
    ok &= got is med and med.tobytes() == np.asarray(np.median(g)).tobytes()

    if comm.size > 1:
        try:
            np.roll(A, comm.rank)          # a per-rank argument: every rank is told, none hangs
        except dap.DapError as exc:
            say(f"np.roll(A, rank) -> DapError on every rank: "
                f"{str(exc).splitlines()[0][:70]}...")
        else:
            ok = False

    before = _rows(A, comm)
    C = dap.redistribute(A, dist=("c", "n"))
    after = _rows(C, comm)
    say("A's rows per rank (block):\n" + "\n".join(before or []))
    say("dap.redistribute(A, ('c', 'n')): rows per rank (cyclic, one MPI_Alltoallw):\n"
        + "\n".join(after or []))
    cg = C.gather(root=0)
    if comm.rank == 0:
        ok &= cg.tobytes() == g.tobytes()

    ok &= _unstructured_move(comm, say)

    tmp = comm.bcast(tempfile.mkdtemp(prefix="nclx-demo-") if comm.rank == 0 else None, root=0)
    try:
        path = os.path.join(tmp, "a.npy")
        C.save_npy(path)
        comm.Barrier()
        if comm.rank == 0:
            ok &= np.load(path).tobytes() == g.tobytes()
        B = dap.load_npy(path, dist=("b", "n"), comm=comm)
        say(f"C.save_npy(path) (MPI-IO, each rank writes its rows) -> np.load(path) equals g: "
            f"{comm.rank != 0 or np.load(path).tobytes() == g.tobytes()}; "
            f"dap.load_npy(path, dist=('b', 'n')) -> owned blocks "
            f"{comm.gather(B.owned.shape, root=0)}")
        bg = B.gather(root=0)
        if comm.rank == 0:
            ok &= bg.tobytes() == g.tobytes()
        rows = os.path.join(tmp, "rows.npy")
        A.save_npy(rows)                    # block rows, ranks on one node: a shared mapping
        comm.Barrier()
        if comm.rank == 0:
            ok &= np.load(rows).tobytes() == g.tobytes()
        say(f"A.save_npy(path) (block rows, ranks on one node: stores into a shared mapping "
            f"of the file) -> np.load(path) equals g: "
            f"{comm.rank != 0 or np.load(rows).tobytes() == g.tobytes()}")
    finally:
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)
    agree = comm.allreduce(int(bool(ok)), op=MPI.SUM)
    if agree == comm.size:
        say(f"all {comm.size} ranks agree with NumPy")
    return 0 if agree == comm.size else 1
