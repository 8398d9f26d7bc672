"""Defects found in the thirteenth look at nclx.dap (each test failed on the
code before its fix): a reduction of complex values with a real ``dtype=``
warned "Casting complex values to real" twice on its first call (the
result-dtype probe warned too), once on later calls."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
import nclx.dap.reduce as dap_reduce
from mpi_helpers import collective_assert

comm = MPI.COMM_WORLD


def _warned(fn, *args, **kw):
    """(result or the exception's type, the warnings) of ``fn(*args, **kw)``."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        try:
            r = fn(*args, **kw)
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            r = type(exc)
    return r, [(w.category, str(w.message)) for w in got]


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.std, np.var, np.prod],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_complex_to_real_dtype_warns_as_numpy_first_call_and_later(fn, axis):
    g = (np.arange(12.0) + 1j).reshape(3, 4)
    d = dap.DistArray.from_global(g, comm=comm)
    ref, ref_w = _warned(fn, g, axis=axis, dtype=np.uint8)
    for round_ in range(2):
        if round_ == 0:
            dap_reduce._DTYPES.clear()          # the first call of its kind
        r, w = _warned(fn, d, axis=axis, dtype=np.uint8)
        r = r.gather(root=None) if isinstance(r, dap.DistArray) else r
        collective_assert(w == ref_w, f"round {round_}: warned {w}, NumPy {ref_w}")
        if isinstance(ref, type):
            collective_assert(r is ref, f"round {round_}: {r!r}, NumPy raised {ref!r}")
            continue
        collective_assert(np.asarray(r).tobytes() == np.asarray(ref).tobytes()
                          and np.asarray(r).dtype == np.asarray(ref).dtype,
                          f"round {round_}: {r!r} against NumPy's {ref!r}")


_SPECIAL = [0.0, -0.0, np.nan, -np.nan, 1.0, -1.0,
            np.array([0x7FF8000000000123], np.int64).view(np.float64)[0]]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dist", ["b", "c"])
def test_unique_of_complex_keeps_numpys_bits_for_equal_values(dtype, seed, dist):
    """NumPy 2.3+'s values-only unique keeps the first cell in C order of
    equal values with other bits (both zeros, every NaN): the DistArray's
    result had the sorted-first NaN and either zero."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 40))
    parts = rng.choice(np.array(_SPECIAL), size=(n, 2))
    g = (parts[:, 0] + 0j).astype(dtype)
    g.imag = parts[:, 1]
    d = dap.DistArray.from_global(g, comm=comm, dist=(dist,))
    ref = np.unique(g)
    got = np.unique(d)
    collective_assert(got.dtype == ref.dtype and got.tobytes() == ref.tobytes(),
                      f"{got!r} against NumPy's {ref!r} for {g!r}")


def _compare(fn, g, d, dt, kw):
    """NumPy's (bits, dtype, warnings) or error type against the DistArray's,
    for an out= like the result, of dtype ``dt``."""
    seen = []
    for arr in (d, g):
        like = fn(arr, **kw)
        o = np.zeros_like(like, dtype=dt)

        def call(arr=arr, o=o):
            r = fn(arr, out=o, **kw)
            collective_assert(r is o, "out is returned")
            r = r.gather(root=None) if isinstance(r, dap.DistArray) else r
            return r.tobytes(), r.dtype
        seen.append(_warned(call))
    return seen


# NumPy accumulates a max/min in such an out= itself (its first element cast,
# then kept): documented in docs/dap.md; prod's NaN into complex likewise
_OUT_FNS = [np.sum, np.mean, np.std, np.var, np.nansum, np.nanmean, np.nanstd, np.nanvar,
            np.argmax, np.any]


@pytest.mark.parametrize("fn", _OUT_FNS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", [np.int32, np.float32, np.bool_, np.complex64, np.uint8,
                                np.float16])
@pytest.mark.parametrize("dist", [("b", "n"), ("n", "b"), ("c", "b")])
def test_distarray_out_of_another_dtype_gets_numpys_steps(fn, dt, dist):
    """An axis reduction into a DistArray out= of another dtype: NumPy's
    values, warnings ("in reduce", not "in cast") and errors (np.std into an
    integer out= raises, the mean divided in out=): before, the result in its
    own dtype was assigned."""
    g = np.arange(30.0).reshape(5, 6) * 1.5 - 5      # exact sums in any order
    g[1, 2] = np.nan
    g[2, 3] = 1e39            # beyond float32 and float16 (its square is not beyond float64)
    g[:, 5] = np.nan
    d = dap.DistArray.from_global(g, comm=comm, dist=dist)
    for axis in (0, 1):
        mine, ref = _compare(fn, g, d, dt, {"axis": axis})
        collective_assert(mine == ref, f"{fn.__name__} axis={axis} into {np.dtype(dt)}: "
                                       f"{mine} against NumPy's {ref}")


def test_a_flag_met_on_one_rank_raises_on_every_rank():
    """The cast into out= meets a NaN on one rank only: under
    np.errstate(invalid='raise') every rank raises (the flags are agreed)."""
    g = np.arange(float(4 * max(comm.size, 2))).reshape(-1, 4)
    g[0, 1] = np.nan
    d = dap.DistArray.from_global(g, comm=comm, dist=("n", "b"))
    o = np.zeros_like(np.sum(d, axis=0), dtype=np.int32)
    try:
        with np.errstate(invalid="raise"):
            np.sum(d, axis=0, out=o)
        mine = "ok"
    except FloatingPointError as exc:
        mine = str(exc)
    got = comm.allgather(mine)
    collective_assert(got == ["invalid value encountered in reduce"] * comm.size, got)
