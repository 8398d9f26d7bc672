"""Review 22: a NumPy function the registry does not implement, called on
some ranks while the others call a registered one.

- R1: ``np.ptp(da)`` / ``np.nancumsum(da)`` (not registered) raised their
  TypeError at once on the ranks calling them, with no collective, while
  the others waited for them in the registered function's agreement
  (``np.max``, ``np.cumsum``): a hang.  The refusal now meets the others
  in that agreement: a DapError on every rank, the ranks left in step; on
  ranks that all call the unregistered function it is the same TypeError
  as before, on every rank (each test failed on the code before at 2 and
  3 ranks: a hang; at 1 rank the calls cannot differ)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank, within


@pytest.mark.parametrize("unregistered, registered", [
    (lambda a: np.ptp(a), lambda a: np.max(a)),
    (lambda a: np.nancumsum(a, axis=0), lambda a: np.cumsum(a, axis=0)),
    (lambda a: np.ptp(a, axis=0), lambda a: np.sum(a, axis=0)),
], ids=["ptp-max", "nancumsum-cumsum", "ptp-sum-axis"])
def test_r1_an_unregistered_call_meets_a_registered_one(unregistered, registered):
    comm = MPI.COMM_WORLD.Dup()
    try:
        a = dap.DistArray.from_global(np.arange(24.0).reshape(6, 4), comm=comm)

        def body():
            fn = unregistered if rank == 0 else registered
            try:
                fn(a)
                first = "ok"
            except dap.DapError as exc:
                first = f"DapError: {exc}"
            except TypeError as exc:
                first = f"TypeError: {exc}"
            return first, float(np.max(a))         # the ranks are in step after it
        kind, got = within(body)
        collective_assert(kind == "ok", f"{kind}: {got}")
        first, after = got
        if N == 1:
            collective_assert(first.startswith("TypeError") and "is not implemented" in first,
                              first)
        else:
            collective_assert(first.startswith("DapError"), first)
        collective_assert(after == 23.0, after)
    finally:
        comm.Free()


def test_r1_every_rank_calling_it_gets_the_plain_refusal():
    a = dap.DistArray.from_global(np.arange(12.0), comm=MPI.COMM_WORLD)
    try:
        np.ptp(a)
        got = "ok"
    except TypeError as exc:
        got = f"{type(exc).__name__}: {exc}"
    collective_assert(got.startswith("TypeError: np.ptp is not implemented for "
                                     "nclx.dap.DistArray"), got)
