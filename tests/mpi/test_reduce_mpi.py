"""Reductions of DistArrays across ranks (runs under mpiexec -n 1..6):
values equal NumPy's on the global array, axis reductions return
DistArrays over the remaining grid dimensions, float sums are the same
bits on every rank and every run."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap

comm = MPI.COMM_WORLD


def everyone_same(value):
    vals = comm.allgather(np.asarray(value).tobytes())
    return all(v == vals[0] for v in vals)


def global_of(result):
    """The global array of an axis-reduction result (on every rank)."""
    full = result.gather(root=0)
    return result.comm.bcast(full, root=0)


GRIDS = {1: [(1, 1)], 2: [(2, 1), (1, 2)], 3: [(3, 1), (1, 3)], 4: [(2, 2), (4, 1)],
         5: [(5, 1)], 6: [(2, 3), (3, 2)]}


@pytest.mark.parametrize("grid", GRIDS.get(comm.size, [(comm.size, 1)]), ids=str)
@pytest.mark.parametrize("padding", [(0, 0), (1, 2)], ids=str)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all", "mean"])
def test_full_and_axis_reductions_equal_numpy(grid, padding, name):
    rng = np.random.default_rng(3)
    g = rng.integers(1, 4, size=(13, 11)).astype(np.float64)
    if name in ("any", "all"):
        g = g > 1
    a = dap.DistArray.from_global(g, comm=comm, grid_shape=grid, padding=list(padding),
                                  periodic=[True, False])
    f = getattr(np, name)
    full = f(a)
    assert np.allclose(full, f(g), rtol=1e-12) and everyone_same(full)
    for axis in (0, 1, -1):
        r = f(a, axis=axis)
        assert isinstance(r, dap.DistArray)
        kept = 1 - (axis % 2)
        assert r.shape == (g.shape[kept],)
        got = global_of(r)
        assert np.allclose(got, f(g, axis=axis), rtol=1e-12)
    rk = a.sum(axis=0, keepdims=True)
    assert rk.shape == (1, 11) and np.allclose(global_of(rk), g.sum(axis=0, keepdims=True))
    assert np.allclose(np.add.reduce(a, axis=(0, 1)), g.sum())


def test_communication_padding_is_never_counted():
    g = np.arange(40.0).reshape(8, 5)
    a = dap.DistArray.from_global(g, comm=comm, padding=[2, 1], periodic=[True, True])
    block = np.asarray(a.local)
    owned = a.distribution.owned_slices(comm.rank)
    mask = np.ones(block.shape, bool)
    mask[owned] = False
    block[mask] = 1e9                 # garbage in communication padding
    assert a.sum() == g.sum() and a.max() == g.max()
    assert np.allclose(global_of(a.sum(axis=1)), g.sum(axis=1))


def test_float_sums_are_the_same_bits_everywhere_and_every_time():
    rng = np.random.default_rng(11)
    g = rng.standard_normal((301, 7)) * 10.0 ** rng.integers(-8, 8, size=(301, 7))
    a = dap.DistArray.from_global(g, comm=comm, padding=[1, 0])
    first = a.sum()
    for _ in range(5):
        again = a.sum()
        assert np.asarray(again).tobytes() == np.asarray(first).tobytes()
    assert everyone_same(first)
    col = a.sum(axis=0)
    assert everyone_same(global_of(col))


def test_initial_where_dtype_and_empty():
    g = np.arange(12.0).reshape(4, 3)
    a = dap.DistArray.from_global(g, comm=comm)
    assert a.sum(initial=100.0) == g.sum(initial=100.0)
    assert a.max(initial=50.0) == 50.0
    assert a.sum(dtype=np.int64) == int(g.sum())
    w = a > 4
    assert a.sum(where=w) == g.sum(where=g > 4)
    e = dap.DistArray.from_shape((0, 3), comm=comm)
    assert e.sum() == 0.0
    with pytest.raises(ValueError, match="identity"):
        e.max()
    nan = g.copy()
    nan[2, 1] = np.nan
    n = dap.DistArray.from_global(nan, comm=comm)
    assert np.isnan(n.max()) and np.isnan(n.min())
