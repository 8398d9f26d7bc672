"""Hostile operands of DistArray ufuncs (review of issue 25)."""
import numpy as np

from mpi_helpers import collective_assert, comm
from nclx.dap import DistArray


def test_other_communicator_is_named_in_the_error():
    # same Distribution, another (duplicated) communicator: the error said
    # "not identically distributed (D vs D)" with two identical D
    g = np.arange(24.0).reshape(6, 4)
    a = DistArray.from_global(g, comm=comm)
    dup = comm.Dup()
    try:
        b = DistArray.from_global(g, comm=dup)
        try:
            np.add(a, b)
            got = "no error"
        except Exception as exc:  # noqa: BLE001 - checked on every rank below
            got = f"{type(exc).__name__}: {exc}"
    finally:
        dup.Free()
    collective_assert(got.startswith("DapError") and "communicator" in got, got)
