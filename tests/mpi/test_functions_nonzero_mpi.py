"""np.nonzero, one-argument np.where, np.flatnonzero and np.argwhere of a
DistArray: NumPy's results on the gathered array, bit for bit (dtype and
shape included), 1-D DistArrays block-distributed over the communicator."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert, error_of, result_bits

comm = MPI.COMM_WORLD
P = comm.Get_size()
_rng = np.random.default_rng(5)

_CASES = {
    "ints 2-D": (np.arange(24).reshape(4, 6) % 3, {}),
    "bool 3-D sparse": (_rng.random((7, 5, 3)) > 0.6, {}),
    "no cells": (np.zeros((0, 3)), {}),
    "floats: -0.0 and NaN": (np.array([0.0, -0.0, np.nan, 1.0] * 5), {}),
    "cyclic": (np.arange(30) % 4, {"dist": ("c",)}),
    "2-D grid": (np.arange(60).reshape(6, 10) % 7 == 0, {"dist": ("b", "b")}),
    "columns distributed": (np.arange(60).reshape(6, 10) % 5, {"dist": ("n", "b")}),
    "strings": (np.array(["", "a", "", "bc"] * 3), {}),
    "block x cyclic": (np.ones((3, 4)), {"dist": ("b", "c")}),
    "padding": (np.arange(20) % 2, {"dist": ("b",), "padding": (1,)}),
    "all zero": (np.zeros((5, 4), np.int8), {}),
    "complex": (np.array([0, 1j, 0, -0.0 + 0j, 2] * 3), {}),
}


@pytest.mark.parametrize("name", sorted(_CASES))
@pytest.mark.parametrize("fn", [np.nonzero, np.where, np.flatnonzero, np.argwhere],
                         ids=["nonzero", "where", "flatnonzero", "argwhere"])
def test_nonzero_cells_are_numpys(name, fn):
    g, kw = _CASES[name]
    x = dap.DistArray.from_global(g, comm=comm, **kw)
    if fn in (np.nonzero, np.where):
        want = tuple(result_bits(lambda q=q: q) for q in fn(g))
        got = fn(x)
        collective_assert(isinstance(got, tuple) and len(got) == g.ndim and
                          all(isinstance(q, dap.DistArray) for q in got), f"{got!r}")
        got = tuple(result_bits(lambda q=q: q) for q in got)
    else:
        want, got = result_bits(fn, g), result_bits(fn, x)
    collective_assert(got == want, f"{name}: {got!r:.300} != NumPy's {want!r:.300}")


def test_the_result_is_block_distributed_over_the_communicator():
    g = np.arange(40).reshape(8, 5) % 3 == 0
    x = dap.DistArray.from_global(g, comm=comm)
    for r in np.nonzero(x) + (np.flatnonzero(x),):
        want = dap.Distribution.from_shape((int(np.count_nonzero(g)),), "b", nprocs=P)
        collective_assert(r.distribution == want and r.dtype == np.intp, f"{r.distribution}")
    w = np.argwhere(x)
    want = dap.Distribution.from_shape((int(np.count_nonzero(g)), 2), ("b", "n"), nprocs=P)
    collective_assert(w.distribution == want, f"{w.distribution}")


def test_where_with_x_alone_is_numpys_error():
    x = dap.DistArray.from_global(np.arange(4.0 * P), comm=comm)
    want = error_of(lambda: np.where(np.arange(4.0 * P), 1))
    got = error_of(lambda: np.where(x, 1))
    collective_assert(got == want and want[0] == "ValueError", f"{got} != NumPy's {want}")


@pytest.mark.skipif(P != 1, reason="a 0-d DistArray lives on one process")
def test_a_0d_array_is_numpys():
    for v in (np.array(3.0), np.array(0)):
        x = dap.DistArray.from_global(v, comm=comm)
        collective_assert(error_of(lambda: np.nonzero(x)) == error_of(lambda: np.nonzero(v)),
                          "np.nonzero of 0-d")
        for fn in (np.flatnonzero, np.argwhere):
            collective_assert(result_bits(fn, x) == result_bits(fn, v), f"{fn.__name__} of 0-d")
