"""Defects noticed in the eleventh stop's review of nclx.dap (each test
failed on the code before its fix): a tuple given as the out= of a
reduction method."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert, result_bits

comm = MPI.COMM_WORLD


@pytest.mark.parametrize("fn", [np.sum, np.prod, np.max, np.min, np.any, np.all, np.mean,
                                np.amax, np.amin],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("box", [tuple, list])
def test_a_tuple_out_is_refused_as_numpy_refuses_it(fn, box):
    """``np.sum(a, out=(o,))`` is NumPy's TypeError "return arrays must be
    of ArrayType" (its methods take one array); a DistArray's reduction
    methods passed the tuple on to ufunc.reduce, which takes it, and
    answered (found by review)."""
    g = np.arange(1.0, 13.0).reshape(4, 3)
    a = dap.DistArray.from_global(g, comm=comm)
    dt = bool if fn in (np.any, np.all) else np.float64

    def call(x):
        o = np.zeros((), dt)
        return fn(x, out=box([o]))

    want, got = result_bits(call, g), result_bits(call, a)
    collective_assert(got == want and want[0] == "TypeError", f"{got} != NumPy's {want}")


def test_ufunc_reduce_still_takes_a_tuple_out():
    g = np.arange(1.0, 13.0).reshape(4, 3)
    a = dap.DistArray.from_global(g, comm=comm)

    def call(x):
        o = np.zeros(())
        r = np.add.reduce(x, axis=None, out=(o,))
        return float(r), float(o)

    want, got = result_bits(call, g), result_bits(call, a)
    collective_assert(got == want, f"{got} != NumPy's {want}")
