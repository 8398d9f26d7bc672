"""Defects found by the eighth review round of nclx.dap (each test failed on
the code before its fix)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank
from mpi_helpers import error_of as _error_of

comm = MPI.COMM_WORLD


class _PickyBefore(dap.DistArray):
    """Refuses on rank 0 before joining DistArray's agreement."""
    def __init__(self, local, distribution, comm=None):
        if rank == 0:
            raise ValueError("rank 0 refuses this block")
        super().__init__(local, distribution, comm)


class _PickyAfter(dap.DistArray):
    """Joins DistArray's agreement everywhere, then refuses on the last rank."""
    def __init__(self, local, distribution, comm=None):
        super().__init__(local, distribution, comm)
        if rank == N - 1:
            raise ValueError("the last rank refuses this block")


@pytest.mark.skipif(N == 1, reason="needs a rank that refuses and one that does not")
@pytest.mark.parametrize("cls", [_PickyBefore, _PickyAfter])
@pytest.mark.parametrize("how", ["from_shape", "from_global", "from_global_root"])
def test_a_subclass_init_raising_on_one_rank_raises_everywhere(cls, how):
    """Found by review: from_shape/from_global call a subclass's __init__;
    one raising on one rank left the others waiting in the next collective
    (a hang)."""
    g = np.arange(4.0 * N)
    make = {"from_shape": lambda: cls.from_shape((4 * N,), comm=comm),
            "from_global": lambda: cls.from_global(g, comm=comm),
            "from_global_root": lambda: cls.from_global(g if rank == 0 else None, comm=comm,
                                                        root=0)}[how]
    kind, msg = _error_of(make)
    refusing = 0 if cls is _PickyBefore else N - 1
    collective_assert(kind in ("ValueError", "DapError") and
                      ("refuses" in msg or rank != refusing), f"{kind}: {msg}")
    # every rank goes on together afterwards
    x = dap.DistArray.from_global(g, comm=comm)
    collective_assert(x.gather(root=None).tobytes() == g.tobytes(), "after")
