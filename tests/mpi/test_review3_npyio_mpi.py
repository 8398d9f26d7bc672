"""Review of the one-node mapped save (runs under mpiexec -n 1..6): a path
that is no regular file saves as through MPI-IO."""
import os

import numpy as np
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, outcome
from nclx.dap import npymap

comm = MPI.COMM_WORLD


def test_a_save_to_dev_null_succeeds_as_through_mpi_io(monkeypatch):
    """A character device (the null device) cannot be cut to a length nor
    allocated: the mapped path leaves it to MPI-IO, which writes there as
    it did before the mapped path (was an OSError EINVAL on every rank)."""
    g = np.arange(4.0 * N * 3).reshape(4 * N, 3)
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1))
    results = {}
    for mapped in (False, True):
        monkeypatch.setattr(npymap, "MAPPED_WRITES", mapped)
        results[mapped] = outcome(a.save_npy, os.devnull)[0]
    every = comm.allgather(results)
    collective_assert(all(r == {False: "ok", True: "ok"} for r in every), f"{every}")
