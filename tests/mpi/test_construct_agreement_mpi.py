"""Creating a DistArray is collective: its ranks agree on its Distribution and
dtype (one Allreduce), so no rank holds a layout the others do not.

Before, each rank kept whatever Distribution it was given: an elementwise
call between two arrays decided on each rank alone whether an operand needed
redistributing, so a rank whose Distribution differed entered a
redistribution the others never joined (a hang), and a rank whose block had
the wrong shape raised while the others went on.
"""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank
from mpi_helpers import error_of as _error_of

comm = MPI.COMM_WORLD


def _same_everywhere(kind, msg):
    everyone = comm.allgather((kind, msg))
    collective_assert(all(e == everyone[0] for e in everyone),
                      f"not the same error on every rank: {everyone}")


def _needs_two():
    if N == 1:
        pytest.skip("one rank cannot disagree with another (checked on 2-6 ranks)")


def test_ranks_holding_different_distributions_raise_everywhere_naming_the_dimension():
    _needs_two()
    pads = [1 if r < N // 2 else 2 for r in range(N)]
    d = dap.Distribution.from_shape((4 * N, 3), nprocs=N, grid_shape=(N, 1),
                                    padding=[pads[rank], 0], periodic=[True, False])
    kind, msg = _error_of(lambda: dap.DistArray(np.zeros(d.local_shape(rank)), d, comm))
    lo = N // 2
    first = "rank 0" if lo == 1 else f"ranks 0-{lo - 1}"
    collective_assert(kind == "DapError" and "dimension 0" in msg and "dimension 1" not in msg
                      and f"{first} see padding [(1, 1)" in msg, f"{kind}: {msg}")
    _same_everywhere(kind, msg)


def test_an_elementwise_call_on_a_per_rank_layout_cannot_hang():
    """Two arrays that are the same on some ranks and differ on others: the
    elementwise call redistributed on one side only (a hang) before."""
    _needs_two()
    a = dap.DistArray.from_shape((6 * N,), comm=comm)
    dist = "c" if rank == N - 1 else "b"          # the last rank alone sees a cyclic layout
    d = dap.Distribution.from_shape((6 * N,), dist=dist, nprocs=N)
    kind, msg = _error_of(lambda: a + dap.DistArray(np.ones(d.local_shape(rank)), d, comm))
    collective_assert(kind == "DapError" and "dimension 0" in msg, f"{kind}: {msg}")
    _same_everywhere(kind, msg)


def test_from_shape_with_per_rank_arguments_raises_everywhere():
    _needs_two()
    kind, msg = _error_of(lambda: dap.DistArray.from_shape(
        (8 * N,), dist="c" if rank == 0 else "b", comm=comm))
    collective_assert(kind == "DapError" and "DistArray.from_shape" in msg
                      and "dimension 0" in msg, f"{kind}: {msg}")
    _same_everywhere(kind, msg)


def test_per_rank_dtypes_raise_everywhere():
    _needs_two()
    d = dap.Distribution.from_shape((4 * N,), nprocs=N)
    dt = np.float32 if rank == 0 else np.float64
    kind, msg = _error_of(lambda: dap.DistArray(np.zeros(d.local_shape(rank), dt), d, comm))
    collective_assert(kind == "DapError" and "dtype" in msg and "rank 0: dtype('float32')" in msg,
                      f"{kind}: {msg}")
    _same_everywhere(kind, msg)


def test_a_bad_block_on_one_rank_raises_on_every_rank():
    d = dap.Distribution.from_shape((4 * N, 2), nprocs=N)
    bad = N - 1
    shape = (1, 1) if rank == bad else d.local_shape(rank)
    kind, msg = _error_of(lambda: dap.DistArray(np.zeros(shape), d, comm))
    collective_assert(kind == "DapError" and f"rank {bad}: DapError: rank {bad}: local block "
                      f"has shape (1, 1)" in msg, f"{kind}: {msg}")
    _same_everywhere(kind, msg)
    # the communicator is usable afterwards: the same call on every rank works
    ok = dap.DistArray(np.full(d.local_shape(rank), 2.0), d, comm)
    collective_assert(float(np.sum(ok)) == 8.0 * N * 2, "sum after the failure")


def test_from_shape_memory_error_on_one_rank_raises_everywhere():
    kind, msg = _error_of(lambda: dap.DistArray.from_shape(
        (4 * N,), dtype="f8" if rank != N - 1 else "V1000000000000000", comm=comm))
    collective_assert(kind != "ok" and f"rank {N - 1}" in msg, f"{kind}: {msg}")
    _same_everywhere(kind, msg)


def test_agreed_construction_costs_one_collective_and_keeps_the_layout():
    d = dap.Distribution.from_shape((5 * N, 3), dist=("c", "n"), nprocs=N)
    a = dap.DistArray(np.arange(np.prod(d.local_shape(rank)), dtype=np.int16).reshape(
        d.local_shape(rank)), d, comm)
    collective_assert(a.distribution is d and a.dtype == np.int16, "kept")
    b = a + a                                   # a result: no construction agreement
    collective_assert(b.distribution is d, "the result shares the Distribution")


@pytest.mark.skipif(N == 1, reason="needs two ranks that disagree")
@pytest.mark.parametrize("op", ["create", "gather", "redistribute"])
def test_records_of_one_size_and_other_fields_are_told_apart(op):
    """Both dtypes read '|V8': before, ranks moved each other's bytes."""
    dt = [("a", "<i4"), ("b", "<f4")] if rank == 0 else [("b", "<f4"), ("a", "<i4")]
    if op == "create":
        kind, msg = _error_of(lambda: dap.DistArray.from_shape((4 * N,), dtype=dt, comm=comm))
    else:
        d = dap.Distribution.from_shape((4 * N,), nprocs=N)
        a = dap.DistArray._of(np.zeros(d.local_shape(rank), dt), d, comm)   # past creation
        kind, msg = _error_of(a.gather if op == "gather" else lambda: a.redistribute("c"))
    collective_assert(kind == "DapError" and "dtype" in msg, f"{kind}: {msg}")


@pytest.mark.skipif(N == 1, reason="needs two ranks that disagree")
@pytest.mark.parametrize("other", ["from_distarray", "gather", "redistribute", "np.roll",
                                   "from_global"])
def test_creation_on_one_rank_and_another_call_elsewhere_raise_everywhere(other):
    """Before: from_distarray hung (another collective first); the others
    raised an AttributeError on the creating rank."""
    a = dap.DistArray.from_global(np.arange(8.0 * N), comm=comm)
    calls = {"from_distarray": lambda: dap.from_distarray(a, comm),
             "gather": lambda: a.gather(root=0),
             "redistribute": lambda: a.redistribute("c"),
             "np.roll": lambda: np.roll(a, 1),
             "from_global": lambda: dap.DistArray.from_global(np.arange(8.0 * N), comm=comm)}
    kind, msg = _error_of(lambda: dap.DistArray.from_shape((8 * N,), comm=comm) if rank == 0
                          else calls[other]())
    collective_assert(kind == "DapError" and "another operation" in msg, f"{kind}: {msg}")
