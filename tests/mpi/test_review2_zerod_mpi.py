"""Review 2 (issue 25): 0-d DistArrays (each rank's own, on COMM_SELF) and
ranks holding no cell, against NumPy on the global array, on 1..6 ranks."""
import numpy as np
from mpi4py import MPI

import nclx.dap as dap
from fn_helpers import compare
from mpi_helpers import N, collective_assert, outcome


def test_scans_of_a_0d_distarray_along_axis_0_or_minus_1():
    """``np.cumsum(x, axis=0)`` and ``np.cumprod(x, axis=-1)`` of a 0-d array
    are NumPy's ``array([x])`` (the axis of the 1-D view); axis 1 is NumPy's
    AxisError (a DapError naming it).  Before: a DapError (AxisError) for axis 0 and -1."""
    g = np.array(2.5)
    bad = []
    for tag, f in [("cumsum 0", lambda x: np.cumsum(x, axis=0)),
                   ("cumprod -1", lambda x: np.cumprod(x, axis=-1)),
                   ("cumsum int64 0", lambda x: np.cumsum(x, axis=np.int64(0)))]:
        kind, got = outcome(lambda: f(dap.DistArray.from_global(g, comm=MPI.COMM_SELF)))
        bad.append(f"{tag}: raised {got}" if kind == "exc" else compare(tag, got, f(g)))
    kind, got = outcome(lambda: np.cumsum(dap.DistArray.from_global(g, comm=MPI.COMM_SELF),
                                          axis=1))
    if kind != "exc":
        bad.append(f"cumsum axis 1: {kind} {got}")
    bad = [b for b in bad if b]
    collective_assert(not bad, "; ".join(bad))


def test_nan_quantiles_with_a_rank_holding_no_column():
    """``np.nanquantile``/``np.nanpercentile`` with an array ``q`` along an
    axis held whole, where a rank holds no cell of the other axis: NumPy's
    nan-quantiles of an empty block drop q's dimensions (they return
    ``np.nanmean``'s result), so that rank's part had the wrong shape; it
    raised a ValueError alone and the other ranks waited for ever (also
    ``test_quantiles_along_a_distributed_axis_are_numpys_bits`` on 6 ranks)."""
    g = np.arange(4.0 * max(N - 1, 1)).reshape(4, -1)
    g[1, 0] = np.nan
    bad = []
    for tag, f in [("nanquantile", lambda x: np.nanquantile(x, [0.25, 0.75], axis=0)),
                   ("nanpercentile keepdims",
                    lambda x: np.nanpercentile(x, [[10.0], [90.0]], axis=0, keepdims=True)),
                   ("nanquantile axis -2", lambda x: np.nanquantile(x, [0.5], axis=-2))]:
        kind, got = outcome(lambda: f(dap.DistArray.from_global(g, comm=MPI.COMM_WORLD,
                                                                grid_shape=(1, N))))
        bad.append(f"{tag}: raised {got}" if kind == "exc" else compare(tag, got, f(g)))
    bad = [b for b in bad if b]
    collective_assert(not bad, "; ".join(bad))
