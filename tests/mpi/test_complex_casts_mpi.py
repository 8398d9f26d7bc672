"""Reductions of DistArrays into ``out=`` warn "Casting complex values to
real discards the imaginary part" as many times as NumPy's same call
(nclx.dap.complexcasts): for every reduction, operand dtype, ``dtype=``,
out dtype and axis -- before, 361 of these 1,392 calls warned another
number of times (none where NumPy warned twice, or twice where NumPy warned
once), and np.nanstd of integers into a float64 out= took its square root
in the variance's float32 (other bits than NumPy's).  The warnings come
before any floating-point warning, as NumPy's; under warnings turned into
errors every rank raises, also where the ranks disagree on out's dtype
(none is left waiting in the reduction's collective)."""
import itertools
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert

comm = MPI.COMM_WORLD
CW = np.exceptions.ComplexWarning

FUNCS = {
    "sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean,
    "var": np.var, "std": np.std, "any": np.any, "all": np.all,
    "nansum": np.nansum, "nanprod": np.nanprod, "nanmean": np.nanmean, "nanvar": np.nanvar,
    "nanstd": np.nanstd, "nanmax": np.nanmax, "nanmin": np.nanmin,
    "method sum": lambda x, **k: x.sum(**k), "method mean": lambda x, **k: x.mean(**k),
    "add.reduce": lambda x, **k: np.add.reduce(x, **k),
    "maximum.reduce": lambda x, **k: np.maximum.reduce(x, **k),
}
NO_DTYPE = {"max", "min", "any", "all", "nanmax", "nanmin", "maximum.reduce"}


def _run(fn, x, **kw):
    """(value or None, exception type name or None, ComplexWarnings, the
    other warnings' types in order)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            r, err = fn(x, **kw), None
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            r, err = None, type(exc).__name__
    cw = sum(1 for w in seen if issubclass(w.category, CW))
    others = [w.category.__name__ for w in seen if not issubclass(w.category, CW)]
    if isinstance(r, dap.DistArray):
        r = r.gather(root=None)
    return r, err, cw, others


def _bits(r):
    return None if r is None else (np.asarray(r).dtype.str, np.asarray(r).tobytes())


@pytest.mark.parametrize("name", list(FUNCS))
def test_complex_warnings_as_numpy(name):
    fn = FUNCS[name]
    base = np.arange(1, 13, dtype=np.int64).reshape(4, 3)
    wrong = []
    for idt, dt, odt, axis in itertools.product(["i8", "f8", "c16"], [None, "f8", "f4", "c16"],
                                                [None, "f8", "c16", "i8"], [0, None]):
        if dt is not None and name in NO_DTYPE:
            continue
        x = base.astype(idt)
        kw = {"axis": axis} if dt is None else {"axis": axis, "dtype": dt}
        shape = (3,) if axis == 0 else ()
        if odt is not None:
            kw["out"] = np.zeros(shape, odt)
        ref = _run(fn, x, **kw)
        da = dap.DistArray.from_global(x, comm=comm)
        if odt is not None and axis == 0:
            kw["out"] = np.zeros_like(da.sum(axis=0), dtype=odt)
        got = _run(fn, da, **kw)
        if ref[1:] != got[1:] or _bits(ref[0]) != _bits(got[0]):
            wrong.append(f"{idt} dtype={dt} out={odt} axis={axis}: NumPy {ref[1:]} "
                         f"{_bits(ref[0])}, nclx {got[1:]} {_bits(got[0])}")
    collective_assert(not wrong, "\n".join(wrong[:5]))


@pytest.mark.parametrize("axis", [None, 0])
@pytest.mark.parametrize("fn,kw", [(np.sum, {"dtype": np.float64}), (np.mean, {}),
                                   (np.nansum, {"dtype": np.float64}), (np.var, {})],
                         ids=["sum", "mean", "nansum", "var"])
def test_complex_warnings_come_before_fp_warnings(fn, kw, axis):
    xc = np.full((4, 3), 1e308, complex)        # the sums overflow
    shape = () if axis is None else (3,)
    ref = _run(fn, xc, axis=axis, out=np.zeros(shape), **kw)
    da = dap.DistArray.from_global(xc, comm=comm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = np.zeros(shape) if axis is None else np.zeros_like(da.sum(axis=0), dtype="f8")
    got = _run(fn, da, axis=axis, out=out, **kw)
    collective_assert(ref[1:] == got[1:], f"NumPy {ref[1:]}, nclx {got[1:]}")


def _raised_with_errors(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - checked by the caller
            return exc
    return None


@pytest.mark.parametrize("call", [
    lambda da, o: np.nanmax(da, axis=None, out=o),
    lambda da, o: np.sum(da, axis=None, dtype=np.float64, out=o),
    lambda da, o: np.add.reduce(da, axis=None, dtype=np.float64, out=(o,)),
    lambda da, o: np.mean(da, axis=None, out=o),
    lambda da, o: np.nanmean(da, axis=None, out=o),
    lambda da, o: np.nansum(da, axis=None, out=o),
], ids=["nanmax", "sum", "add.reduce", "mean", "nanmean", "nansum"])
def test_warnings_as_errors_raise_on_every_rank(call):
    da = dap.DistArray.from_global(np.arange(12.0).reshape(4, 3) * (1 + 1j), comm=comm)
    exc = _raised_with_errors(lambda: call(da, np.zeros(())))
    collective_assert(isinstance(exc, CW), f"raised {exc!r}")
    # the ranks disagree on out's dtype: rank 0 complex (nothing to warn),
    # the others real (a ComplexWarning raised there): every rank raises,
    # none is left in the reduction's collective
    exc = _raised_with_errors(lambda: call(da, np.zeros((), complex if comm.rank == 0
                                                        else float)))
    collective_assert(exc is not None or comm.size == 1, "returned")


def test_nanstd_of_integers_takes_the_root_in_out():
    x = np.arange(1, 13, dtype=np.int64).reshape(4, 3)
    da = dap.DistArray.from_global(x, comm=comm)
    for axis in (0, None):
        for odt in ("f8", "c16"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")          # the complex out='s
                ref = np.nanstd(x, axis=axis, dtype=np.float32,
                                out=np.zeros((3,) if axis == 0 else (), odt))
                out = np.zeros_like(da.sum(axis=0), dtype=odt) if axis == 0 else np.zeros((), odt)
                got = np.nanstd(da, axis=axis, dtype=np.float32, out=out)
            assert got is out
            got = got.gather(root=None) if isinstance(got, dap.DistArray) else got
            collective_assert(ref.tobytes() == got.tobytes(), f"{axis} {odt}: {ref} {got}")


@pytest.mark.parametrize("call", [
    lambda da, o: np.nansum(da, axis=None, out=o),
    lambda da, o: np.nanmean(da, axis=None, out=o),
    lambda da, o: np.nanmax(da, axis=None, out=o),
    lambda da, o: np.sum(da, axis=None, dtype=np.float64, out=o),
    lambda da, o: np.mean(da, axis=None, out=o),
], ids=["nansum", "nanmean", "nanmax", "sum", "mean"])
def test_filters_differing_between_ranks_raise_everywhere(call):
    """The last rank makes ComplexWarning an error, the others ignore it:
    every rank raises (before, the nan-functions left the others waiting in
    their collective; found by review)."""
    da = dap.DistArray.from_global(np.arange(12.0).reshape(4, 3) * (1 + 1j), comm=comm)
    with warnings.catch_warnings():
        warnings.simplefilter("error" if comm.rank == comm.size - 1 else "ignore")
        try:
            call(da, np.zeros(()))
            exc = None
        except Exception as e:  # noqa: BLE001 - checked below
            exc = e
    collective_assert(isinstance(exc, CW), repr(exc))
    collective_assert(comm.allreduce(1) == comm.size, "out of step")
