"""Review 24 (nclx.dap), on 1-6 ranks:

- a DistArray answered ``len``, ``int``, ``float``, ``complex``,
  ``operator.index`` and ``x in da`` with "has no len()" / "not iterable" /
  "argument must be ... not 'DistArray'" where an ndarray of the global
  values answers (``len(da)`` is everyday NumPy code): each now answers as
  that ndarray does, on every rank, for any distribution and for empty,
  one-element and larger arrays (nclx.dap.pyvalue);
- ``da ** 2`` warned "overflow encountered in power" where an ndarray warns
  "... in square" (NumPy's operator fast path), and ``bool ** 2`` gave int64
  where NumPy gives int8 (nclx.dap.power)."""
import operator
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert, comm

# a 0-d DistArray exists on one rank only (more need a distributed dimension)
SHAPES = [(1,), (1, 1), (0,), (0, 3), (7,), (5, 4)] + ([()] if comm.size == 1 else [])
DISTS = {1: ["b", "c"], 2: [("b", "n"), ("c", "b"), ("n", "b")]}
CALLS = {"len": len, "int": int, "float": float, "complex": complex, "bool": bool,
         "index": operator.index, "in 3": lambda x: 3 in x, "in 2.5": lambda x: 2.5 in x,
         "in 0-d": lambda x: np.array(4) in x}


def _answer(fn, x):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a DeprecationWarning counts as an answer
        try:
            return "ok", repr(fn(x))
        except Exception as exc:  # noqa: BLE001 - compared with the ndarray's
            return type(exc).__name__, str(exc)


def _cases():
    for shape in SHAPES:
        for dist in DISTS.get(len(shape), [()]):
            for dtype in ("int64", "float64"):
                yield shape, dist, dtype


@pytest.mark.parametrize("shape, dist, dtype", list(_cases()), ids=str)
@pytest.mark.parametrize("call", list(CALLS))
def test_python_value_protocols_as_the_global_ndarray(shape, dist, dtype, call):
    g = (np.arange(int(np.prod(shape))) + 3).reshape(shape).astype(dtype)
    kw = {"dist": dist} if dist else {}
    d = dap.DistArray.from_global(g, comm=comm, **kw)
    fn = CALLS[call]
    want, got = _answer(fn, g), _answer(fn, d)
    collective_assert(got == want, f"{call} of {shape} {dist} {dtype}: {got} != {want}")


@pytest.mark.parametrize("exponent, name", [(2, "square"), (0.5, "sqrt"), (-1, "reciprocal"),
                                            (3, "power")])
def test_power_warns_in_numpys_ufunc_on_every_rank(exponent, name):
    g = np.array([1e300, -1.0, 0.0, 2.0] * 3)
    d = dap.DistArray.from_global(g, comm=comm)
    with warnings.catch_warnings(record=True) as seen, np.errstate(all="warn"):
        warnings.simplefilter("always")
        r = (d ** exponent).gather(root=None)
    with warnings.catch_warnings(record=True) as stock, np.errstate(all="warn"):
        warnings.simplefilter("always")
        w = g ** exponent
    # under 'warn' a rank warns for its own cells (docs/dap.md): the union
    names = sorted(set().union(*comm.allgather({str(x.message) for x in seen})))
    want = sorted({str(x.message) for x in stock})
    collective_assert(names == want and all(name in m for m in want),
                      f"{names} != {want}")
    collective_assert(r.tobytes() == w.tobytes() and r.dtype == w.dtype, "bits differ")


def test_bool_squared_is_int8_as_numpy():
    d = dap.DistArray.from_global(np.array([True, False, True]), comm=comm)
    r = (d ** 2).gather(root=None)
    collective_assert(r.dtype == np.int8, str(r.dtype))
