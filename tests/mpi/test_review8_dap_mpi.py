"""Defects found by the eighth review round of nclx.dap (each test failed on
the code before its fix)."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, collective_assert, rank
from mpi_helpers import error_of as _error_of

comm = MPI.COMM_WORLD


class _PickyBefore(dap.DistArray):
    """Refuses on rank 0 before joining DistArray's agreement."""
    def __init__(self, local, distribution, comm=None):
        if rank == 0:
            raise ValueError("rank 0 refuses this block")
        super().__init__(local, distribution, comm)


class _PickyAfter(dap.DistArray):
    """Joins DistArray's agreement everywhere, then refuses on the last rank."""
    def __init__(self, local, distribution, comm=None):
        super().__init__(local, distribution, comm)
        if rank == N - 1:
            raise ValueError("the last rank refuses this block")


@pytest.mark.skipif(N == 1, reason="needs a rank that refuses and one that does not")
@pytest.mark.parametrize("cls", [_PickyBefore, _PickyAfter])
@pytest.mark.parametrize("how", ["from_shape", "from_global", "from_global_root"])
def test_a_subclass_init_raising_on_one_rank_raises_everywhere(cls, how):
    """Found by review: from_shape/from_global call a subclass's __init__;
    one raising on one rank left the others waiting in the next collective
    (a hang)."""
    g = np.arange(4.0 * N)
    make = {"from_shape": lambda: cls.from_shape((4 * N,), comm=comm),
            "from_global": lambda: cls.from_global(g, comm=comm),
            "from_global_root": lambda: cls.from_global(g if rank == 0 else None, comm=comm,
                                                        root=0)}[how]
    kind, msg = _error_of(make)
    refusing = 0 if cls is _PickyBefore else N - 1
    collective_assert(kind in ("ValueError", "DapError") and
                      ("refuses" in msg or rank != refusing), f"{kind}: {msg}")
    # every rank goes on together afterwards
    x = dap.DistArray.from_global(g, comm=comm)
    collective_assert(x.gather(root=None).tobytes() == g.tobytes(), "after")


def _outcome(fn, *args, **kw):
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - compared with NumPy's
        return type(exc).__name__, str(exc)
    if isinstance(r, dap.DistArray):
        r = r.gather(root=None)
    return "ok", type(r).__name__, np.asarray(r).dtype.str, np.shape(r), np.asarray(r).tobytes()


@pytest.mark.parametrize("fn", [np.var, np.std, np.nanvar, np.nanstd])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.bool_])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_var_std_with_an_integer_dtype_are_numpys(fn, dtype, axis):
    """Found by review: an integer dtype= raised TypeError ("No loop matching
    ... divide") where NumPy divides in float64 and casts back (a scalar
    result) or raises its sqrt casting error (an array: std); nanvar of
    integers is NumPy's var (it was the NaN-dropping path: NaN where NumPy
    gives inf, other warnings)."""
    g = (np.arange(6 * N * 4, dtype=np.int64).reshape(6 * N, 4) * 37) % 101
    x = dap.DistArray.from_global(g, comm=comm)
    for ddof in (0, 1):
        want = _outcome(fn, g, axis=axis, dtype=dtype, ddof=ddof)
        got = _outcome(fn, x, axis=axis, dtype=dtype, ddof=ddof)
        collective_assert(got == want, f"ddof={ddof}: {got[:4]} != NumPy's {want[:4]}")


def test_nanvar_of_floats_refuses_an_integer_dtype_as_numpy():
    x = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm)
    for fn in (np.nanvar, np.nanstd):
        kind, msg = _error_of(lambda: fn(x, dtype=np.int64))
        collective_assert(kind == "TypeError" and "dtype must be inexact" in msg, f"{kind}: {msg}")



def _warned(fn, *args, **kw):
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn(*args, **kw)
    if isinstance(r, dap.DistArray):
        r = r.gather(root=None)
    return np.asarray(r).dtype.str, np.asarray(r).tobytes(), sorted({str(m.message) for m in w})


@pytest.mark.parametrize("fn", [np.nansum, np.nanprod])
@pytest.mark.parametrize("dtype", [np.int64, np.uint8, None])
def test_nansum_nanprod_replace_nans_as_numpy(fn, dtype):
    """Found by review: the NaN-skipping sums masked NaNs with where=, so an
    integer dtype= cast the NaNs ("invalid value encountered in reduce"
    where NumPy warns nothing)."""
    g = np.array([[np.nan, -0.0, 3.5, np.nan]] * (2 * N))
    g[::3, 1] = 2.0
    x = dap.DistArray.from_global(g, comm=comm)
    for axis in (None, 0, 1):
        got, want = _warned(fn, x, axis=axis, dtype=dtype), _warned(fn, g, axis=axis, dtype=dtype)
        collective_assert(got == want, f"axis={axis}: {got} != NumPy's {want}")


def test_nansum_of_negative_zeros_is_numpys():
    """A guard: with NaNs replaced instead of masked, the sign of zero stays NumPy's."""
    g = np.full(4 * N, -0.0)
    x = dap.DistArray.from_global(g, comm=comm)
    collective_assert(np.nansum(x).tobytes() == np.nansum(g).tobytes(),
                      f"{np.nansum(x)!r} != {np.nansum(g)!r}")


def test_mean_of_an_empty_float32_sum_warns_as_numpy():
    """NumPy divides by an np.intp count ("invalid value encountered in
    divide"); the count was a Python int ("... in scalar divide")."""
    g = np.zeros((4 * N, 0))
    x = dap.DistArray.from_global(g, comm=comm)
    for dtype in (np.float32, None):
        got, want = _warned(np.mean, x, dtype=dtype), _warned(np.mean, g, dtype=dtype)
        collective_assert(got == want, f"{got} != NumPy's {want}")


def test_average_of_an_empty_result_raises_numpys_zero_division():
    g = np.zeros((4 * N, 0))
    x = dap.DistArray.from_global(g, comm=comm)
    import warnings
    for axis in (0, None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # axis=None: "Mean of empty slice"
            want = _error_of(lambda: np.average(g, axis=axis))
            got = _error_of(lambda: np.average(x, axis=axis))
        collective_assert(got == want, f"axis={axis}: {got} != NumPy's {want}")
