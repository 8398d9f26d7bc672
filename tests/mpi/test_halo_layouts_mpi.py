"""Halo exchange of every dtype and block layout (tests/test_mpi_suite.py runs
it under mpiexec -n 1, 2, 3, 4 and 6): numeric, boolean, complex, float16,
non-native byte order, datetime, strings and structured dtypes, through each
transport; Fortran-ordered and strided blocks imported zero-copy through
from_distarray.  Every communication-padding cell must hold its owner's value."""
import numpy as np
import pytest

import nclx.dap as dap
from mpi_helpers import (N, STRUCT, collective_assert, comm, exchange_and_check, grid2,
                         import_view)
from nclx.dap.distribution import dims_create


HALO_DTYPES = [
    ("i1", None), ("i1", "packed"), ("i1", "datatype"),
    ("?", None), ("?", "packed"), ("?", "datatype"),
    ("c16", None), ("c16", "packed"),
    ("f2", None), ("f2", "packed"),
    (">f8", None), (">i4", None),
    ("M8[s]", None),
    # defects: strings travel as one MPI character per element (silently wrong),
    # structured dtypes have no transport, non-native byte order / datetime
    # cannot use the packed transport (the one non-C-contiguous blocks get)
    ("U3", None), ("S3", None), ("struct", None),
    (">f8", "packed"), ("M8[s]", "packed"),
]

@pytest.mark.parametrize("dtype,method", HALO_DTYPES,
                         ids=[f"{d}-{m}" for d, m in HALO_DTYPES])
def test_halo_exchange_of_every_dtype_fills_every_padding_cell(dtype, method):
    dt = STRUCT if dtype == "struct" else np.dtype(dtype)
    g0, g1 = grid2()
    da = dap.DistArray.from_shape((4 * g0 + 3, 3 * g1 + 2), dtype=dt, comm=comm,
                                  grid_shape=(g0, g1), padding=[1, 2], periodic=[True, False])
    exchange_and_check(da, method, f"{dtype} method={method}")

@pytest.mark.parametrize("dtype", ["f8", "c16", "?", "i1", ">f8"])
def test_fortran_ordered_blocks_imported_through_from_distarray(dtype):
    """A Fortran-ordered block (packed transport); '>f8' fails: the packed
    transport cannot describe a non-native byte order."""
    grid = dims_create(N, 3)
    base = dap.DistArray.from_shape((3 * grid[0] + 2, 2 * grid[1] + 3, 2 * grid[2] + 1),
                                    dtype=dtype, comm=comm, grid_shape=grid,
                                    padding=[1, 2, 1], periodic=[True, False, True])
    buf = np.asfortranarray(base._block)
    da = import_view(base, buf)
    collective_assert(np.shares_memory(da._block, buf) and not buf.flags.c_contiguous,
                      "not a zero-copy Fortran-ordered import")
    exchange_and_check(da, None, f"F-ordered {dtype}")

def test_strided_view_block_imported_through_from_distarray():
    g0, g1 = grid2()
    base = dap.DistArray.from_shape((5 * g0, 4 * g1 + 1), comm=comm, grid_shape=(g0, g1),
                                    padding=[2, 1], periodic=[True, True])
    shape = base._block.shape
    big = np.zeros((shape[0], shape[1] * 3))
    buf = big[:, 1::3]
    da = import_view(base, buf)
    exchange_and_check(da, None, "strided view")
    collective_assert(np.all(big[:, 0::3] == 0) and np.all(big[:, 2::3] == 0),
                      "cells between the strided view's columns were written")
