"""Reductions over a 'u' layout that is no partition (review of issue 25):
an index held by two ranks and another by none has no global array, so a
reduction refuses it on every rank, as gather and redistribute do (it
summed the blocks: index 0 twice, the last index never)."""
import numpy as np
import pytest

from mpi_helpers import collective_assert, comm, rank, N
from nclx.dap import DistArray
from nclx.dap import from_distarray


class _Export:
    def __init__(self, block, dims):
        self.block, self.dims = block, dims

    def __distarray__(self):
        return {"__version__": "0.10.0", "buffer": self.block, "dim_data": self.dims}


@pytest.mark.skipif(N < 2, reason="needs an index held on two ranks")
@pytest.mark.parametrize("call", ["sum", "sum0", "max"])
def test_reduction_refuses_a_u_dimension_that_is_no_partition(call):
    n = 2 * N
    idx = [2 * rank, 2 * rank + 1] if rank != N - 1 else [2 * rank, 0]   # 0 twice, n-1 never
    dims = ({"dist_type": "u", "size": n, "proc_grid_size": N, "proc_grid_rank": rank,
             "indices": np.array(idx)},
            {"dist_type": "b", "size": 3, "proc_grid_size": 1, "proc_grid_rank": 0,
             "start": 0, "stop": 3})
    a = from_distarray(_Export(np.arange(6.0).reshape(2, 3) + 10 * rank, dims), comm=comm)
    try:
        {"sum": lambda: a.sum(), "sum0": lambda: a.sum(axis=0),
         "max": lambda: np.max(a)}[call]()
        got = "no error"
    except Exception as exc:  # noqa: BLE001 - checked on every rank below
        got = f"{type(exc).__name__}: {exc}"
    collective_assert(got.startswith("DapError") and "global index 0" in got, got)


def test_a_u_partition_still_reduces():
    n = 2 * N
    dims = ({"dist_type": "u", "size": n, "proc_grid_size": N, "proc_grid_rank": rank,
             "indices": np.array([2 * rank + 1, 2 * rank])},
            {"dist_type": "b", "size": 3, "proc_grid_size": 1, "proc_grid_rank": 0,
             "start": 0, "stop": 3})
    a = from_distarray(_Export(np.arange(6.0).reshape(2, 3) + 10 * rank, dims), comm=comm)
    g = a.gather(root=None)
    collective_assert(a.sum() == g.sum() and np.array_equal(
        a.sum(axis=0).gather(root=None), g.sum(axis=0)), "u partition reduction differs")
