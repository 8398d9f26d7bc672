"""Review 16: np.mean of an empty slice into an out= that a complex cast
takes part in warns "Mean of empty slice" first, as NumPy's _mean does
before its sum: before, the ComplexWarnings came first and under an
"error" filter the ComplexWarning was raised where NumPy raises the
RuntimeWarning."""
import warnings

import numpy as np
import pytest

from nclx.dap import DistArray

CASES = [((0,), "c16", "f8"), ((0,), "c8", "f4"), ((0, 3), "c16", "f8"), ((0,), "f8", "c16"),
         ((0,), "i8", "f8"), ((0,), "c16", "c16"), ((5,), "c16", "f8")]


def _warnings(fn, x, do):
    o = np.zeros((), do)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn(x, out=o)
    return [(y.category.__name__, str(y.message)) for y in w], o.tobytes()


def _raised(fn, x, do):
    o = np.zeros((), do)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            fn(x, out=o)
        except Warning as exc:
            return type(exc).__name__, str(exc)
    return None


@pytest.mark.parametrize("fn", [np.mean, np.nanmean], ids=["mean", "nanmean"])
@pytest.mark.parametrize("shape,di,do", CASES)
def test_mean_of_an_empty_slice_warns_first(fn, shape, di, do):
    if fn is np.nanmean and np.dtype(di).kind in "fc":
        pytest.skip("np.nanmean of floats warns after its sums (NumPy's own order: "
                    "tests/mpi nan-function tests)")
    a = np.zeros(shape, di)
    d = DistArray.from_global(a)
    assert _warnings(fn, d, do) == _warnings(fn, a, do)
    assert _raised(fn, d, do) == _raised(fn, a, do)
