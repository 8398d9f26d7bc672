"""Defect (issue 25, item 6): a DistArray whose ranks hold Distributions that
disagree on communication padding.  Each rank's halo plan followed its own
view, so a rank received more cells than its plan expected (an MPI status
error on some ranks) while the others received fewer and raised nothing.
Every rank now raises the same DapError naming the dimension and the groups
of ranks and the padding each group sees (the plan's one agreement carries
every rank's view of the layout)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank

comm = MPI.COMM_WORLD


def _exchange(pads):
    """exchange_halos on a DistArray built by each rank from its own padding."""
    d = dap.Distribution.from_shape((4 * N, 3), nprocs=N, grid_shape=(N, 1),
                                    padding=[pads[rank], 0], periodic=[True, False])
    # past the constructor's own agreement (tests/mpi/test_construct_agreement_mpi.py):
    # the halo plan's agreement still catches it
    a = dap.DistArray._of(np.zeros(d.local_shape(rank)), d, comm)
    try:
        a.exchange_halos()
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return type(exc).__name__, str(exc)
    return "ok", ""


def test_ranks_disagreeing_on_padding_raise_the_same_dap_error_everywhere():
    if N == 1:
        pytest.skip("one rank cannot disagree with another (checked on 2-6 ranks)")
    pads = [1 if r < N // 2 else 2 for r in range(N)]
    kind, msg = _exchange(pads)
    lo, hi = N // 2, N - 1
    first = f"rank 0" if lo == 1 else f"ranks 0-{lo - 1}"
    second = f"rank {lo}" if lo == hi else f"ranks {lo}-{hi}"
    ok = (kind == "DapError" and "dimension 0" in msg and f"{first} see padding [(1, 1)" in msg
          and f"{second} see padding [(2, 2)" in msg)
    collective_assert(ok, f"{kind}: {msg}")
    everyone = comm.allgather(msg)
    collective_assert(all(m == everyone[0] for m in everyone), "not the same message everywhere")


def test_ranks_agreeing_on_padding_exchange():
    kind, msg = _exchange([2] * N)
    collective_assert(kind == "ok", f"{kind}: {msg}")
