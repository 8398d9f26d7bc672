"""Defects found in the twentieth look at nclx.dap (each test failed on the
code before its fix, at the rank counts it says):

- R1: an imported array with a cyclic dimension and an irregular block
  split (6 rows as 4 + 2 on 2 ranks: DAP allows any ``start``/``stop``)
  was saved through MPI's darray type, which deals BLOCK rows evenly: the
  file held rows shifted, lost and zero-filled, silently, and ``load_npy``
  of the same layout failed "read 96 of its 128 bytes" or (Fortran order)
  returned wrong blocks.  darray is now used only where every coordinate
  owns MPI's BLOCK range; other layouts take the indexed type (2+ ranks).
"""
import os

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank, shared_tmpdir
from nclx.dap.iotypes import IOPlan

comm = MPI.COMM_WORLD


@pytest.fixture(scope="module")
def tmp():
    yield from shared_tmpdir("nclx-review20-")


def _counts(kind):
    """Rows per rank of an irregular split of 2 * N rows (N % N == 0)."""
    if kind == "uneven":
        return [3] + [2] * (N - 2) + [1]
    return [2 * N] + [0] * (N - 1)            # every row on rank 0


def _imported(kind, cols, block_size, dtype):
    counts = _counts(kind)
    n = sum(counts)
    g = (np.arange(n * cols) * 7 % 23).astype(dtype).reshape(n, cols)
    start = sum(counts[:rank])
    stop = start + counts[rank]
    dd0 = dict(dist_type="b", size=n, proc_grid_size=N, proc_grid_rank=rank,
               start=start, stop=stop)
    dd1 = dict(dist_type="c", size=cols, proc_grid_size=1, proc_grid_rank=0, start=0,
               block_size=block_size)
    export = {"__version__": "0.10.0", "buffer": g[start:stop].copy(), "dim_data": (dd0, dd1)}
    return g, dap.from_distarray(export, comm)


@pytest.mark.skipif(N < 2, reason="needs 2+ ranks: an irregular block split")
@pytest.mark.parametrize("kind, block_size", [("uneven", 1), ("uneven", 2), ("all_on_one", 3)])
@pytest.mark.parametrize("dtype", ["f8", "i2"])
def test_r1_irregular_block_split_beside_a_cyclic_dim(tmp, kind, block_size, dtype):
    g, a = _imported(kind, 5, block_size, dtype)
    collective_assert(np.array_equal(a.gather(root=None), g), "the import itself is wrong")
    path = os.path.join(tmp, f"r1-{kind}-{block_size}-{dtype}.npy")
    a.save_npy(path)
    comm.Barrier()
    got = np.load(path)
    collective_assert(got.tobytes() == g.tobytes() and got.dtype == g.dtype,
                      f"saved file differs:\n{got}\nwant\n{g}")
    for order in ("C", "F"):
        src = os.path.join(tmp, f"r1-src-{kind}-{block_size}-{dtype}-{order}.npy")
        if rank == 0:
            np.save(src, np.asfortranarray(g) if order == "F" else g)
        comm.Barrier()
        b = dap.load_npy(src, a.distribution, comm)
        collective_assert(np.asarray(b.owned).tobytes() == np.asarray(a.owned).tobytes(),
                          f"{order}-ordered load: block {np.asarray(b.owned).tolist()} "
                          f"want {np.asarray(a.owned).tolist()}")


@pytest.mark.skipif(N < 2, reason="needs 2+ ranks: a distributed block dimension")
def test_r1_balanced_layouts_keep_the_darray_type():
    # the guard does not send MPI's own layouts to the slower indexed type
    dist = dap.Distribution.from_shape((2 * N, 6), dist=("b", "c"), grid_shape=(N, 1))
    block = np.zeros(dist.local_shape(rank))
    plan = IOPlan(dist, rank, block, write=True)
    try:
        collective_assert(plan.kind == "darray", f"kind {plan.kind}")
    finally:
        plan.free()
