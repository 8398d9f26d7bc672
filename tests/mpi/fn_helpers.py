"""Shared by the tests of NumPy functions on DistArrays (tests/mpi/test_functions_*):
layouts to run each function on, and comparisons with NumPy's result on the
gathered global array (bit for bit, or to 1e-12 relative)."""
import warnings

import numpy as np
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import N, as_global, same_bits_everywhere

comm = MPI.COMM_WORLD

# (name, Distribution.from_shape keywords) for a 2-D global array
LAYOUTS2 = [("block", dict()), ("block padded periodic", dict(padding=[1, 1], periodic=[True, False])),
            ("cyclic rows", dict(dist=("c", "n"))), ("column grid", dict(grid_shape=(1, N)))]
LAYOUTS1 = [("block", dict()), ("cyclic", dict(dist=("c",))), ("padded", dict(padding=[1]))]


def make(g, **kw):
    return dap.DistArray.from_global(g, comm=comm, **kw)


def compare(tag, got, want, exact=True, rtol=None):
    """None, or why ``got`` (a DistArray or a value) is not NumPy's ``want``
    (``rtol``: 1e-12 for float64, 1e-5 for float32 results)."""
    got = as_global(got)
    got, want = np.asarray(got), np.asarray(want)
    if rtol is None:
        rtol = 1e-12 if want.dtype.itemsize >= 8 or want.dtype.kind not in "fc" else 1e-5
    if got.dtype != want.dtype or got.shape != want.shape:
        return f"{tag}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
    if exact or want.dtype.kind not in "fc":
        if got.tobytes() != want.tobytes() and not (
                want.dtype.kind in "fc" and np.array_equal(got, want, equal_nan=True)
                and not np.any(np.isnan(want))):
            return f"{tag}: {got!r} != {want!r}"
    elif not np.allclose(got, want, rtol=rtol, atol=0, equal_nan=True):
        return f"{tag}: {got!r} != {want!r} (rtol {rtol})"
    if not same_bits_everywhere(got):
        return f"{tag}: not the same bits on every rank"
    return None


def caught(fn):
    """(result, warning messages, exception text) of fn()."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            r = fn()
            r = as_global(r) if isinstance(r, dap.DistArray) else r
            return r, sorted({str(w.message) for w in rec}), None
        except Exception as exc:  # noqa: BLE001 - compared collectively
            return None, sorted({str(w.message) for w in rec}), f"{type(exc).__name__}: {exc}"
