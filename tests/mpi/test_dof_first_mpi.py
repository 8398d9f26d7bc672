"""np.var / np.std (and np.nanvar / np.nanstd of data without NaNs, which
NumPy runs as np.var) into an ``out=`` where a complex dtype takes part and
no degree of freedom is left: NumPy warns "Degrees of freedom <= 0 for
slice" in Python before its casts' ComplexWarnings.  Before, nclx warned
the ComplexWarnings first (nclx.dap.complexcasts issues them before the
call's first collective), so under warnings turned into errors it raised a
ComplexWarning where NumPy raises the RuntimeWarning.  Compared with NumPy's
call on the global array: every warning, in order, and the error raised
under ``simplefilter("error")`` (NumPy's class and message), on every rank."""
import itertools
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import collective_assert

comm = MPI.COMM_WORLD


def _seen(fn, action):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter(action)
        try:
            fn()
            err = None
        except Exception as exc:  # noqa: BLE001 - compared with NumPy's
            err = exc
    return [(x.category.__name__, str(x.message)) for x in w], err


def _same(got, want):
    """The same warnings; the same error: NumPy's class (nclx raises a
    DapError subclass of it on every rank) with NumPy's message in it."""
    (gw, ge), (ww, we) = got, want
    if gw != ww or (ge is None) != (we is None):
        return False
    return ge is None or (isinstance(ge, type(we)) and str(we) in str(ge))


@pytest.mark.parametrize("f", [np.var, np.std, np.nanvar, np.nanstd])
def test_degrees_of_freedom_warned_before_complex_casts(f):
    bad = []
    cases = itertools.product(
        [np.float64, np.complex128, np.int64], [np.float64, np.complex128],
        [None, np.float64, np.complex128], [1, 30],
        [((comm.size,), None), ((comm.size,), 0), ((comm.size, 2), None)], ["always", "error"])
    for adt, odt, dt, ddof, (shape, axis), action in cases:
        g = np.arange(np.prod(shape), dtype=adt).reshape(shape)
        oshape = () if axis is None else shape[1:]
        want = _seen(lambda: f(g, axis=axis, dtype=dt, ddof=ddof, out=np.zeros(oshape, odt)),
                     action)
        d = dap.DistArray.from_global(g, comm=comm)
        got = _seen(lambda: f(d, axis=axis, dtype=dt, ddof=ddof, out=np.zeros(oshape, odt)),
                    action)
        if not _same(got, want):
            bad.append(f"{np.dtype(adt).name}->{np.dtype(odt).name} dtype={dt} ddof={ddof} "
                       f"{shape} axis={axis} {action}: {got} != {want}")
    collective_assert(not bad, "\n".join(bad[:6]) + f"\n({len(bad)} cases)")
