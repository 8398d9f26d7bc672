"""Review 24, nclx.dap on one rank: a DistArray's ``**`` runs the ufunc an
ndarray's does (NumPy's scalar fast path: ``square`` / ``reciprocal`` /
``sqrt`` for a float or complex base and the exponents 2, -1, 0.5), so its
warnings carry the same names and its bits are the same."""
import warnings

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap

COMM = MPI.COMM_SELF

BASES = {
    "float64": np.array([-0.0, -np.inf, 1e300, 0.0, -4.0, np.nan]),
    "float32": np.array([-0.0, -np.inf, 1e38, 0.0, -4.0, 1e-40], np.float32),
    "float16": np.array([-0.0, 6e4, 0.0, -4.0], np.float16),
    "complex128": np.array([0j, 1e300 + 1e300j, complex(np.inf, np.nan), -4 + 0j]),
    "longdouble": np.array([-0.0, 0.0, -4.0], np.longdouble),
    "int64": np.array([0, 2, -3]),
    "bool": np.array([True, False]),
}
EXPONENTS = {
    "2": 2, "-1": -1, "0.5": 0.5, "1": 1, "0": 0, "True": True, "2.0": 2.0, "-1.0": -1.0,
    "np.int64(2)": np.int64(2), "np.float64(0.5)": np.float64(0.5), "0-d 2": np.array(2),
    "3": 3, "huge": 2 ** 80, "np.float32(0.5)": np.float32(0.5), "1.0": 1.0, "0.0": 0.0,
    "0-d 0.5": np.array(0.5),
}


def _run(fn):
    with warnings.catch_warnings(record=True) as got, np.errstate(all="warn"):
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception as exc:        # noqa: BLE001 -- the error itself is compared
            return ("raised", type(exc).__name__, str(exc)), []
    return value, [(w.category.__name__, str(w.message)) for w in got]


def _same(expected, got):
    if isinstance(expected, tuple):
        assert got == expected
        return
    got = got.gather()
    assert got.dtype == expected.dtype
    if got.dtype == np.longdouble and np.dtype(np.longdouble).itemsize > 8:
        # x87 extended precision: 10 bytes of value in 16, the rest unspecified
        bits = np.finfo(np.longdouble).nmant + np.finfo(np.longdouble).nexp + 1
        width = -(-bits // 8)
        assert [x.tobytes()[:width] for x in got] == [x.tobytes()[:width] for x in expected]
        return
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize("exponent", list(EXPONENTS))
def test_power_operator_names_and_bits_as_ndarray(base, exponent):
    a, e = BASES[base], EXPONENTS[exponent]
    d = dap.DistArray.from_global(a, comm=COMM)
    want, want_warn = _run(lambda: a ** e)
    got, got_warn = _run(lambda: d ** e)
    _same(want, got)
    assert got_warn == want_warn


@pytest.mark.parametrize("base", ["float64", "float32", "complex128", "int64", "bool"])
@pytest.mark.parametrize("exponent", ["2", "-1", "0.5", "3", "np.int64(2)", "2.0", "0", "1"])
def test_inplace_power_names_and_bits_as_ndarray(base, exponent):
    a, e = BASES[base].copy(), EXPONENTS[exponent]
    d = dap.DistArray.from_global(a, comm=COMM)

    def inplace(x):
        x **= e
        return x

    want, want_warn = _run(lambda: inplace(a))
    got, got_warn = _run(lambda: inplace(d))
    _same(want, got)
    assert got_warn == want_warn


def test_reflected_power_stays_power():
    a = BASES["float64"]
    d = dap.DistArray.from_global(a, comm=COMM)
    want, want_warn = _run(lambda: 0.5 ** a)
    got, got_warn = _run(lambda: 0.5 ** d)
    _same(want, got)
    assert got_warn == want_warn
