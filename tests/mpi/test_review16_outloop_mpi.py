"""Review 16: a DistArray reduction into an ``out=`` of another dtype runs
NumPy's loop for that out= (NumPy takes out's dtype into the resolution
when dtype=None): before, the ranks reduced in the operand's dtype and cast
the result, so ``np.sum`` of 2 x 6e4 float16 into a complex64 out= was inf
with an overflow warning where NumPy gives 1.2e5."""
import itertools
import warnings

import numpy as np
import pytest

from nclx.dap import DistArray

FUNCS = [np.sum, np.prod, np.max, np.min, np.nansum, np.nanprod, np.nanmax, np.nanmin,
         np.nanmean]
PAIRS = [("f2", "c8"), ("f2", "f4"), ("f2", "f8"), ("i8", "f8"), ("u8", "i8"), ("i1", "u1"),
         ("?", "i1"), ("f8", "f4"), ("i1", "i8"), ("u1", "i2"), ("f4", "c16")]


def _values(dt, n=12):
    base = np.array([6e4, 3.5, -2.0, 250.0, 1.25, 7.0, 6e4, 0.5, 2.0, 9.0, 100.0, 3.0])[:n]
    if np.dtype(dt).kind == "u" and np.dtype(dt).itemsize == 8:
        return np.array([2**63, 3, 5, 2**62, 7, 1, 9, 11, 2, 4, 6, 8][:n], dtype=dt)
    if np.dtype(dt).kind == "i" and np.dtype(dt).itemsize == 8:
        return np.array([2**60 + 1, 3, -5, 2**59 + 7, 1, 1, 9, -11, 2, 4, 6, 8][:n], dtype=dt)
    if dt == "?":
        return (np.arange(n) % 3 > 0)
    with np.errstate(all="ignore"):
        a = base.astype(dt)
    if np.dtype(dt).kind == "f":
        a[5] = np.nan
    return a


def _run(fn, a, o):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            fn(a, out=o)
            err = None
        except Exception as exc:            # noqa: BLE001 - compared with NumPy's
            err = (type(exc).__name__, str(exc))
    return o.tobytes(), [(x.category.__name__, str(x.message)) for x in w], err


def _cases():
    for fn, pair in itertools.product(FUNCS, PAIRS):
        marks = ()
        if pair == ("u8", "i8"):
            # NumPy's loop for uint64 into an int64 out= is float64 for add,
            # int64 for maximum (resolve_dtypes says float64 for both): not
            # followed yet, the ranks reduce in uint64 and cast (known gap)
            marks = pytest.mark.xfail(strict=True, reason="uint64 into int64 out=: NumPy's "
                                      "loop is not followed (known gap, docs/dap.md)")
        yield pytest.param(fn, pair, marks=marks,
                           id=f"{fn.__name__}-{pair[0]}-{pair[1]}")


@pytest.mark.parametrize("fn,pair", list(_cases()))
def test_reduction_into_another_dtype_is_numpys(fn, pair):
    di, do = pair
    if fn is np.nanmean and np.dtype(di).kind not in "fc":
        pytest.skip("np.nanmean of integers is np.mean (covered by tests/mpi mean tests)")
    a = _values(di)
    d = DistArray.from_global(a)
    want = _run(fn, a, np.zeros((), do))
    got = _run(fn, d, np.zeros((), do))
    if want[2] is not None:
        assert got[2] is not None and got[2][0] == want[2][0], (want, got)
        return
    assert got[2] is None, (fn.__name__, di, do, got)
    assert got[0] == want[0], (fn.__name__, di, do, np.frombuffer(want[0], do),
                               np.frombuffer(got[0], do))
    assert got[1] == want[1]


def test_the_float16_sum_that_overflowed():
    a = np.full(2, 6e4, np.float16)
    d = DistArray.from_global(a)
    o = np.zeros((), np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.sum(d, out=o)
    assert o == 1.2e5
