"""Defects the twelfth review of nclx.dap found (each test failed on the
code before its fix): a read-only out= (or block) on one rank made it raise
alone, the others then waited in their next collective; nan-quantiles of
timedeltas kept NaT; every DistArray was true; an ndarray out= of another
dtype was assigned (a value where NumPy raises, "cannot convert float NaN
to integer" where NumPy writes); np.roll refused a tuple of shifts along
one axis; save_npy's errors lost their type."""
import os
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert, error_of, result_bits, shared_tmpdir

comm = MPI.COMM_WORLD
rank = comm.rank


def _outcomes(fn):
    """Every rank's outcome ('ok', 'ValueError' for any ValueError -- a
    DapError is one -- or the exception type), on every rank."""
    try:
        fn()
        mine = "ok"
    except ValueError:
        mine = "ValueError"
    except Exception as exc:  # noqa: BLE001 - compared collectively
        mine = type(exc).__name__
    return comm.allgather(mine)


@pytest.mark.parametrize("fn", [np.sum, np.std, np.var, np.nanmean, np.nanstd, np.median,
                                np.argmax, np.mean, np.max],
                         ids=lambda f: f.__name__)
def test_a_read_only_out_on_one_rank_raises_on_every_rank(fn):
    g = np.arange(12.0).reshape(3, 4)
    d = dap.DistArray.from_global(g, comm=comm)

    def call():
        o = np.zeros((), np.int64 if fn is np.argmax else np.float64)
        if rank == 0:
            o.flags.writeable = False
        fn(d, out=o)
    got = _outcomes(call)
    if comm.size == 1:
        collective_assert(got == ["ValueError"], got)
    else:
        collective_assert("ok" not in got, f"some ranks went on: {got}")
    # and the ranks are still together: a collective completes
    collective_assert(np.array_equal(d.gather(root=None), g), "gather after the error")


def test_blocks_read_only_on_some_ranks_are_refused_by_the_constructor():
    g = np.arange(24.0).reshape(6, 4)
    d = dap.DistArray.from_global(g, comm=comm)
    block = d._block.copy()
    if rank == 0:
        block.flags.writeable = False
    err = error_of(lambda: dap.DistArray(block, d.distribution, comm))
    if comm.size == 1:
        collective_assert(err[0] == "ok", err)          # read-only everywhere: allowed
    else:
        collective_assert(err[0] == "DapError" and "writeable" in err[1], err)
    ro = d._block.copy()
    ro.flags.writeable = False
    e = dap.DistArray(ro, d.distribution, comm)           # on every rank: allowed
    got = _outcomes(lambda: np.add(d, 1, out=e))
    collective_assert(got == ["ValueError"] * comm.size, got)


@pytest.mark.parametrize("call", [
    lambda x: np.nanmedian(x),
    lambda x: np.nanpercentile(x, 50),
    lambda x: np.nanquantile(x, [0, 1]),
    lambda x: np.nanpercentile(x, 50, method="lower"),
    lambda x: np.nanquantile(x, 0.3, method="nearest"),
])
def test_nan_quantiles_of_timedeltas_skip_nat(call):
    g = np.array([5, -3, "NaT", 7, 2, "NaT", 11], dtype="timedelta64[s]")
    d = dap.DistArray.from_global(g, comm=comm)
    want, got = result_bits(call, g), result_bits(call, d)
    collective_assert(got == want and want[0] == "ok", f"{got} != NumPy's {want}")


@pytest.mark.parametrize("values", [[0.0, 0.0, 0.0], [0.0], [2.0], [], [np.nan]])
def test_truth_value_as_numpy(values):
    g = np.array(values)
    d = dap.DistArray.from_global(g, comm=comm) if g.size else None
    if d is None:
        d = dap.DistArray.from_shape((0,), comm=comm)
    for x, y in ((g, d), (g > 1, d > 1)):
        want, got = error_of(lambda: bool(x)), error_of(lambda: bool(y))
        if want[0] == "ok":
            collective_assert(got[0] == "ok" and bool(y) == bool(x), (got, bool(x)))
        else:
            collective_assert(got == want, f"{got} != NumPy's {want}")


_OUT_CASES = [(np.sum, np.int32), (np.mean, np.int32), (np.max, np.int32),
              (np.nanstd, np.int32), (np.nanvar, np.int64), (np.nanmean, np.int64),
              (np.argmax, np.float64), (np.std, np.int32), (np.var, np.int32),
              (np.var, np.float32), (np.std, np.float32), (np.mean, np.float32),
              (np.nanmean, np.float32), (np.nanstd, np.float32), (np.prod, np.int16),
              (np.nansum, np.int32), (np.nanmax, np.int32), (np.argmin, np.int32),
              (np.mean, np.float16), (np.min, np.bool_)]


@pytest.mark.parametrize("fn,outdt", _OUT_CASES, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("data", ["finite", "nan"])
def test_an_out_of_another_dtype_as_numpy(fn, outdt, data):
    g = np.array([1.7, 2.9, -0.4, 3.3, 0.1, 5.5, 0.25, -7.75, 1e3])
    if data == "nan":
        g[4] = np.nan
    d = dap.DistArray.from_global(g, comm=comm)

    def call(x):
        o = np.zeros((), outdt)
        r = fn(x, out=o)
        return o if r is o else ("not out", r)
    with np.errstate(all="ignore"):
        want, got = result_bits(call, g), result_bits(call, d)
    if want[0] == "ok" or got[0] == "ok":
        collective_assert(got == want, f"{got} != NumPy's {want}")
    else:                     # NumPy's error type (a DapError[...] of it on other ranks)
        collective_assert(want[0] in got[0] or got[0] == want[0], f"{got} != NumPy's {want}")


def test_nan_into_an_integer_out_warns_as_numpy():
    g = np.array([1.5, np.nan, 2.5])
    d = dap.DistArray.from_global(g, comm=comm)

    def warned(x):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            o = np.zeros((), np.int32)
            np.sum(x, out=o)
        return sorted({(c.category.__name__, str(c.message)) for c in w}), o.tobytes()
    collective_assert(warned(d) == warned(g), (warned(d), warned(g)))


@pytest.mark.parametrize("kw", [dict(shift=(1, 2), axis=0), dict(shift=(1, 2)),
                                dict(shift=[1, 2], axis=-1), dict(shift=(1, -3), axis=(1, 1)),
                                dict(shift=[[1, 2]], axis=0), dict(shift=(1, 2, 3), axis=(0, 1))])
def test_roll_broadcasts_shifts_against_axes(kw):
    g = np.arange(20.0).reshape(5, 4)
    d = dap.DistArray.from_global(g, comm=comm)
    want, got = result_bits(lambda x: np.roll(x, **kw), g), result_bits(lambda x: np.roll(x, **kw), d)
    if want[0] == "ok":
        collective_assert(got == want, f"{got} != NumPy's {want}")
    else:
        collective_assert(got[0] == want[0] or want[0] in got[0], f"{got} != NumPy's {want}")


@pytest.fixture(scope="module")
def tmp():
    yield from shared_tmpdir("nclx-review12-")


def test_save_errors_keep_their_type(tmp):
    d = dap.DistArray.from_global(np.arange(8.0), comm=comm)
    path = os.path.join(tmp, "no-such-dir", "x.npy")
    err = None
    try:
        d.save_npy(path)
    except Exception as exc:  # noqa: BLE001 - checked collectively
        err = exc
    collective_assert(isinstance(err, OSError) and isinstance(err, dap.DapError),
                      f"{type(err).__name__}: {err}")


def test_an_empty_file_is_numpys_eoferror(tmp):
    path = os.path.join(tmp, "empty.npy")
    if rank == 0:
        open(path, "wb").close()
    comm.Barrier()
    err = None
    try:
        dap.load_npy(path, comm=comm)
    except Exception as exc:  # noqa: BLE001 - checked collectively
        err = exc
    collective_assert(isinstance(err, EOFError) and "No data left in file" in str(err),
                      f"{type(err).__name__}: {err}")


@pytest.mark.parametrize("weights,axis", [
    ("row", 1), ("col", 0), ("full", None), ("full", 1), ("row", -1), ("row", None),
    ("col", 1), ("bad2d", (0, 1)), ("col", (0,))])
@pytest.mark.parametrize("returned", [False, True])
def test_average_with_numpy_weights_as_numpy(weights, axis, returned):
    """Weights as a NumPy array of the operand's shape, or 1-D along the
    axis, as NumPy takes them (before: refused; found by review)."""
    g = np.arange(1.0, 25.0).reshape(6, 4) ** 1.5
    w = {"row": np.array([1.0, 2.0, 0.5, 3.0]), "col": np.arange(1.0, 7.0),
         "full": np.linspace(0.5, 3.0, 24).reshape(6, 4), "bad2d": np.ones((3, 4))}[weights]
    d = dap.DistArray.from_global(g, comm=comm)

    def call(x):
        r = np.average(x, axis=axis, weights=w, returned=returned)
        parts = r if returned else (r,)
        return tuple(p.gather(root=None) if isinstance(p, dap.DistArray) else np.asarray(p)
                     for p in parts)
    want, got = error_of(lambda: call(g)), error_of(lambda: call(d))
    if want[0] != "ok":
        collective_assert(got[0] == want[0] and got[1] == want[1], f"{got} != NumPy's {want}")
        return
    for r, gr in zip(call(d), call(g)):
        collective_assert(r.shape == gr.shape and r.dtype == gr.dtype
                          and np.allclose(r, gr, rtol=1e-12, atol=0), f"{r} != NumPy's {gr}")


@pytest.mark.parametrize("fn", [np.argmin, np.argmax, np.nanargmin, np.nanargmax],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("axis", [(0, 0), (0,), (0, 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_tuple_axes_of_arg_functions_raise_numpys_error(fn, axis, dtype):
    """NumPy's TypeError, or the nan-functions' ValueError for a repeated
    float axis (their mask's np.all meets it first); before: always a
    TypeError (found by review)."""
    g = np.arange(12.0).reshape(3, 4).astype(dtype)
    d = dap.DistArray.from_global(g, comm=comm)
    want, got = error_of(lambda: fn(g, axis=axis)), error_of(lambda: fn(d, axis=axis))
    collective_assert(got == want and want[0] != "ok", f"{got} != NumPy's {want}")


@pytest.mark.parametrize("wshape,axis,want", [((3,), None, "TypeError"), ((5,), 1, "ValueError"),
                                              ((6,), 0, "ok")])
def test_average_with_distarray_weights_of_another_shape(wshape, axis, want):
    """NumPy's TypeError / ValueError for weights that do not fit (was a
    DapError for both; found by review); weights that fit along an axis as
    a DistArray are taken, as NumPy takes them (they were refused:
    test_weights_along_axes_mpi.py)."""
    g = np.arange(1.0, 25.0).reshape(6, 4)
    d = dap.DistArray.from_global(g, comm=comm)
    w = dap.DistArray.from_global(np.ones(wshape), comm=comm)
    got = error_of(lambda: np.average(d, axis=axis, weights=w))
    collective_assert(got[0] == want, got)
