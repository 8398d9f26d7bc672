"""DistArray's ufunc contract (nclx.aware's, on one rank): an operand of a
foreign array type makes ``__array_ufunc__`` return NotImplemented (NumPy
then asks that type, or raises its own TypeError); ``out=`` is taken in
either spelling; reductions come from ``nclx.dap.reduce.reduce_block`` as
parts (block, Distribution, communicator) that DistArray wraps."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
import nclx.storage
from nclx.dap import DapError
from nclx.dap.reduce import reduce_block

COMM = MPI.COMM_SELF


class Foreign:
    """An array type with its own __array_ufunc__ that handles every call."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("foreign", ufunc.__name__, method)


def arange(n=6, **kw):
    return dap.DistArray.from_global(np.arange(float(n)), comm=COMM, **kw)


@pytest.mark.parametrize("where", ["input", "out", "where"])
def test_a_foreign_operand_anywhere_gives_notimplemented(where):
    a, f = arange(), Foreign()
    inputs, kw = (a, 1.0), {}
    if where == "input":
        inputs = (a, f)
    elif where == "out":
        kw["out"] = (f,)
    else:
        kw["where"] = f
    assert a.__array_ufunc__(np.add, "__call__", *inputs, **kw) is NotImplemented
    assert a.__array_ufunc__(np.add, "reduce", *(inputs[1:] if where == "input" else (a,)),
                             **kw) is NotImplemented


def test_the_foreign_type_is_asked_and_its_answer_returned():
    a, f = arange(), Foreign()
    assert np.add(a, f) == ("foreign", "add", "__call__")
    assert np.multiply(f, a) == ("foreign", "multiply", "__call__")
    assert (a - f) == ("foreign", "subtract", "__call__")
    assert np.negative(a, out=(f,)) == ("foreign", "negative", "__call__")
    assert np.add.reduce(a, where=f) == ("foreign", "add", "reduce")


def test_a_storage_operand_is_numpys_typeerror_not_a_dap_error():
    """Neither type serves the other: NumPy's TypeError (before: DapError
    'cannot combine a DistArray with a CPUStorage')."""
    a = arange()
    s = nclx.storage.zeros((6,))
    with pytest.raises(TypeError, match="NotImplemented") as info:
        np.add(a, s)
    assert not isinstance(info.value, DapError)


def test_plain_operands_are_still_unwrapped_or_refused_with_a_dap_error():
    a = arange()
    assert np.array_equal((a + np.float64(2.0)).gather(), np.arange(6.0) + 2.0)
    assert np.array_equal((a * np.array(3.0)).gather(), np.arange(6.0) * 3.0)
    with pytest.raises(DapError, match="cannot combine a DistArray with a list"):
        a + [1.0] * 6
    with pytest.raises(DapError, match=r"add: out= must be an identically distributed "
                                       r"DistArray, not ndarray"):
        np.add(a, 1.0, out=np.empty(6))


@pytest.mark.parametrize("spelling", ["bare", "tuple"])
def test_out_in_either_spelling(spelling):
    a = arange(padding=[1])
    o = dap.DistArray.from_shape((6,), comm=COMM, padding=[1], fill=-1.0)
    r = np.multiply(a, 2.0, out=o if spelling == "bare" else (o,))
    assert r is o and np.array_equal(o.gather(), np.arange(6.0) * 2)
    z = np.empty(())
    r = np.add.reduce(a, axis=None, out=z if spelling == "bare" else (z,))
    assert r is z and z[()] == 15.0
    g = np.arange(12.0).reshape(3, 4)
    b = dap.DistArray.from_global(g, comm=COMM)
    col = b.sum(axis=0) * 0.0
    r = np.add.reduce(b, axis=0, out=col if spelling == "bare" else (col,))
    assert r is col and np.array_equal(col.gather(), g.sum(axis=0))
    wrong = dap.DistArray.from_shape((4,), dist="c", comm=COMM, block_size=[2])
    with pytest.raises(DapError, match=r"add.reduce: out= must be a DistArray distributed like "
                                       r"the result"):
        np.add.reduce(b, axis=0, out=wrong if spelling == "bare" else (wrong,))


def test_where_of_another_type_is_refused_naming_it():
    a = arange()
    with pytest.raises(DapError, match=r"add.reduce: where= must be a DistArray distributed "
                                       r"like the operand or a scalar, not list"):
        np.add.reduce(a, where=[True] * 6)
    assert a.sum(where=np.True_) == 15.0 and a.sum(where=False) == 0.0


def test_reduce_block_returns_the_parts_that_distarray_wraps():
    g = np.arange(12, dtype=np.int64).reshape(3, 4)
    a = dap.DistArray.from_global(g, comm=COMM, padding=[1, 0], periodic=[True, False])
    value, dist, comm = reduce_block(a._block, a.distribution, COMM, np.add, axis=None)
    assert (value, dist, comm) == (g.sum(), None, None) and type(value) is np.int64
    value, dist, comm = reduce_block(a._block, a.distribution, COMM, np.add, axis=None,
                                     keepdims=True)
    assert dist is None and value.shape == (1, 1) and value[0, 0] == g.sum()
    block, dist, comm = reduce_block(a._block, a.distribution, COMM, np.maximum, axis=0)
    assert isinstance(dist, dap.Distribution) and dist.shape == (4,)
    assert comm.Get_size() == 1
    assert np.array_equal(block[dist.owned_slices(0)], g.max(axis=0))
    wrapped = np.maximum.reduce(a, axis=0)
    assert wrapped.distribution == dist and np.array_equal(wrapped.gather(), g.max(axis=0))
    mask = a > 5
    value, _, _ = reduce_block(a._block, a.distribution, COMM, np.add, axis=None,
                               where=mask._block)
    assert value == g.sum(where=g > 5)


def test_out_tuple_with_none_allocates_that_output():
    """``np.divmod(da, 4, out=(None, db))``: the first result is allocated
    (a DistArray), the second written into db, as for ndarrays."""
    a = dap.DistArray.from_global(np.arange(10.0), comm=COMM)
    b = dap.DistArray.from_global(np.zeros(10), comm=COMM)
    q, r = np.divmod(a, 4, out=(None, b))
    assert r is b and isinstance(q, dap.DistArray)
    want_q, want_r = np.divmod(np.arange(10.0), 4)
    assert np.asarray(q.gather()).tobytes() == want_q.tobytes()
    assert np.asarray(b.gather()).tobytes() == want_r.tobytes()


def test_operators_defer_to_a_type_that_refuses_ufuncs():
    """``__array_ufunc__ = None``: binary operators return NotImplemented so
    the other type's reflected operator runs (NumPy's rule)."""
    class Refuses:
        __array_ufunc__ = None

        def __radd__(self, other):
            return "radd"

        def __rmul__(self, other):
            return "rmul"
    a = arange()
    assert a + Refuses() == "radd" and a * Refuses() == "rmul"
