"""out= and overwrite_input= of the order statistics of a DistArray
(np.median, np.quantile, np.percentile and the NaN-ignoring forms; they
were refused with DapError): NumPy's bits written into an out of the
result's dtype, out returned; another dtype or a tuple is refused (NumPy
computes its last steps in out's dtype, path by path: found by review);
a wrong out on any rank raises on every rank and no rank writes."""
import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert

comm = MPI.COMM_WORLD
rank = comm.Get_rank()

_G = np.arange(1.0, 25.0).reshape(4, 6)
_G[1, 2] = np.nan
_G[3, 5] = -0.0

_CALLS = {
    "median": lambda x, **k: np.median(x, **k),
    "nanmedian": lambda x, **k: np.nanmedian(x, **k),
    "quantile": lambda x, **k: np.quantile(x, [0.2, 0.7], **k),
    "percentile": lambda x, **k: np.percentile(x, 30, **k),
    "nanquantile": lambda x, **k: np.nanquantile(x, 0.5, method="nearest", **k),
    "nanpercentile": lambda x, **k: np.nanpercentile(x, [10, 90], **k),
}


def _data(nan):
    g = _G.copy() if nan else np.nan_to_num(_G, nan=7.5)
    return g, dap.DistArray.from_global(g, comm=comm)


@pytest.mark.parametrize("name", sorted(_CALLS))
@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("keepdims", [False, True])
def test_a_value_goes_into_out_as_numpys(name, nan, keepdims):
    g, a = _data(nan)
    fn = _CALLS[name]
    want_out = np.full(np.shape(fn(g, keepdims=keepdims)), 99.0)
    want = fn(g, out=want_out, keepdims=keepdims)
    out = np.full_like(want_out, 99.0)
    got = fn(a, out=out, keepdims=keepdims)
    ok = got is out and out.tobytes() == want_out.tobytes() and want is want_out
    collective_assert(ok, f"{name}: {out!r} != NumPy's {want_out!r}")


@pytest.mark.parametrize("name", sorted(_CALLS))
@pytest.mark.parametrize("data", ["float32", "int64", "uint8"])
def test_outs_of_the_results_dtype_for_other_inputs(name, data):
    """float32 data (a float32 result), integers (float64, or the data's
    dtype for method 'lower'): NumPy's bits."""
    g = np.arange(24, dtype=data).reshape(4, 6)[::-1]
    a = dap.DistArray.from_global(np.ascontiguousarray(g), comm=comm)
    for fn in (_CALLS[name], lambda x, **k: np.percentile(x, 30, method="lower", **k)):
        want = np.asarray(fn(g))
        out = np.full(want.shape, 99, want.dtype)
        got = fn(a, out=out)
        collective_assert(got is out and out.tobytes() == want.tobytes(),
                          f"{name} of {data}: {out!r} != NumPy's {want!r}")


@pytest.mark.parametrize("case", ["median into int64", "float32 data into float64",
                                  "nanmedian into complex", "a 1-tuple"])
def test_an_out_of_another_dtype_or_a_tuple_is_refused_everywhere(case):
    """NumPy computes in out's dtype (its bits differ from the result's) or
    refuses, path by path; nclx refuses such an out with TypeError on every
    rank and writes nothing (found by review: int out of a median was
    cast, float32 quantiles into float64 gave other bits)."""
    g = np.arange(1.0, 25.0).reshape(4, 6)
    call = np.median
    if case == "median into int64":
        out = np.full((), 5, np.int64)
    elif case == "float32 data into float64":
        g, call, out = g.astype(np.float32), lambda x, out: np.quantile(x, 0.3, out=out), \
            np.full((), 5.0)
    elif case == "nanmedian into complex":
        call, out = np.nanmedian, np.full((), 5 + 0j)
    else:
        out = (np.full((), 5.0),)
    a = dap.DistArray.from_global(g, comm=comm)
    before = np.array(out[0] if isinstance(out, tuple) else out).tobytes()
    exc = _raised(lambda: call(a, out=out))
    after = np.array(out[0] if isinstance(out, tuple) else out).tobytes()
    collective_assert(isinstance(exc, TypeError) and before == after, f"{case}: {exc!r}")


def _raised(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - compared collectively
        return exc
    return None


@pytest.mark.parametrize("case", ["int out of a quantile", "wrong shape", "read-only",
                                  "a list", "a DistArray for a value"])
def test_a_wrong_out_raises_on_every_rank_and_nothing_is_written(case):
    g, a = _data(False)
    out = np.full((2,), 5.0)
    kind = TypeError
    if case == "int out of a quantile":
        out = np.full((2,), 5, np.int64)
    elif case == "wrong shape":
        out, kind = np.full((3,), 5.0), ValueError
    elif case == "read-only":
        out.flags.writeable = False
        kind = ValueError
    elif case == "a list":
        out = [5.0, 5.0]
    elif case == "a DistArray for a value":
        out = dap.DistArray.from_global(np.full(2, 5.0), comm=comm)
    before = np.array(out.gather(root=None) if isinstance(out, dap.DistArray) else out)
    exc = _raised(lambda: _CALLS["quantile"](a, out=out))
    after = np.array(out.gather(root=None) if isinstance(out, dap.DistArray) else out)
    collective_assert(isinstance(exc, kind) and after.tobytes() == before.tobytes(),
                      f"{case}: {exc!r}, out {before} -> {after}")


def test_one_ranks_wrong_out_raises_everywhere_and_no_rank_writes():
    """Every rank passes an out of the right shape but rank 0's is int64:
    every rank raises, and the others' out keeps its bytes (checked, agreed,
    only then written)."""
    g, a = _data(False)
    out = np.full((), 5, np.int64) if rank == 0 else np.full((), 5.0)
    exc = _raised(lambda: np.quantile(a, 0.5, out=out))
    collective_assert(exc is not None and float(out) == 5.0, f"{exc!r}, out {out!r}")


@pytest.mark.parametrize("name", ["median", "quantile", "nanpercentile"])
@pytest.mark.parametrize("axis", [0, 1, (0, 1)])
def test_along_an_axis_into_a_distarray_of_any_distribution(name, axis):
    """A DistArray result goes into a DistArray out of its global shape,
    moved to out's distribution where it differs; out is returned."""
    g, a = _data(True)
    fn = _CALLS[name]
    want = np.asarray(fn(g, axis=axis))
    ref = fn(a, axis=axis)
    if not isinstance(ref, dap.DistArray):        # every axis: a value
        out = np.zeros(want.shape)
    else:
        out = dap.DistArray.from_global(np.zeros(want.shape), comm=comm)
    got = fn(a, axis=axis, out=out)
    back = out.gather(root=None) if isinstance(out, dap.DistArray) else out
    collective_assert(got is out and np.asarray(back).tobytes() == want.tobytes(),
                      f"{name} axis={axis}: {back!r} != {want!r}")


def test_overwrite_input_is_accepted_and_the_input_kept():
    g, a = _data(True)
    before = a.gather(root=None).tobytes()
    got = np.median(a, overwrite_input=True)
    after = a.gather(root=None).tobytes()
    collective_assert(np.asarray(got).tobytes() == np.asarray(np.median(g)).tobytes()
                      and before == after, f"{got!r}")


def test_out_on_some_ranks_only_raises_on_every_rank():
    g, a = _data(False)
    exc = _raised(lambda: np.median(a, out=None if rank == 0 else np.zeros(())))
    collective_assert(exc is not None or comm.Get_size() == 1, repr(exc))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("name", ["nanmedian", "nanquantile", "nanpercentile"])
@pytest.mark.parametrize("axis,keepdims", [(0, False), (1, False), (0, True)])
def test_nan_forms_of_an_empty_array_along_an_axis_into_a_distarray(dtype, name, axis, keepdims):
    """NumPy writes its NaNs (np.nanmean of the empty slices); the NaN result
    lived on another communicator and out= was refused with DapError on
    every rank (found by review)."""
    fn = _CALLS[name]
    g = np.zeros((0, 3), dtype)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.asarray(fn(g, axis=axis, keepdims=keepdims))
        a = dap.DistArray.from_global(g, comm=comm)
        out = dap.DistArray.from_global(np.full(want.shape, 5, want.dtype), comm=comm,
                                        dist="c" if want.ndim == 1 else None)
        exc = _raised(lambda: fn(a, axis=axis, keepdims=keepdims, out=out))
    back = out.gather(root=None)
    collective_assert(exc is None and back.tobytes() == want.tobytes(),
                      f"{exc!r}: {back!r} != NumPy's {want!r}")
