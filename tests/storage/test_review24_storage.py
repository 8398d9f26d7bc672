"""Review 24, storages as Python values: ``operator.index`` of a 0-d integer
storage as of a 0-d integer ndarray (``range(s)``, ``lst[s]``, ``hex(s)``),
the same TypeError otherwise; ``s ** e`` with a 0-d ndarray exponent runs
the ufunc ndarray's operator runs (NumPy 2.0 squares there)."""
import operator
import warnings

import numpy as np
import pytest

import nclx.storage as st

INDEX_CASES = {
    "int64": np.array(3), "int8": np.array(-5, np.int8), "uint64": np.array(2**63, np.uint64),
    "bool": np.array(True), "float64": np.array(3.0), "1-element": np.array([3]),
    "2-d": np.array([[3]]), "complex": np.array(1j),
}


def _outcome(fn, x):
    try:
        return ("value", fn(x))
    except Exception as exc:        # noqa: BLE001 -- the error is compared
        return ("raised", type(exc).__name__, str(exc))


@pytest.mark.parametrize("case", list(INDEX_CASES))
@pytest.mark.parametrize("use", ["index", "range", "list", "hex", "slice"])
def test_index_of_a_storage_as_of_an_ndarray(case, use):
    a = INDEX_CASES[case]
    s = st.as_storage(a)
    fn = {"index": operator.index, "range": lambda x: list(range(x))[:3],
          "list": lambda x: list(range(10**19))[x] if False else [7, 8, 9, 10, 11][x],
          "hex": hex, "slice": lambda x: [0, 1, 2, 3, 4, 5][x:]}[use]
    want = _outcome(fn, a)
    got = _outcome(fn, s)
    if got[0] == "raised":          # Python's message names the operand's type
        got = got[:2] + (got[2].replace(f"'{type(s).__name__}'", "'numpy.ndarray'"),)
    assert got == want


def _run(fn):
    with warnings.catch_warnings(record=True) as got, np.errstate(all="warn"):
        warnings.simplefilter("always")
        value = np.asarray(fn())
    return value, [str(w.message) for w in got]


@pytest.mark.parametrize("exponent", [np.array(2.0), np.array(2), np.array(0.5), np.array(-1.0),
                                      True, np.float32(0.5), np.int64(2)])
@pytest.mark.parametrize("dtype", ["float64", "int64", "complex128"])
def test_power_with_a_0d_or_numpy_scalar_exponent_as_ndarray(exponent, dtype):
    a = (np.array([0, 2**40, 3, -4]) if dtype == "int64"
         else np.array([-0.0, 1e300, 3.0, -4.0])).astype(dtype)
    s = st.as_storage(a)
    want, want_warn = _run(lambda: a ** exponent)
    got, got_warn = _run(lambda: s ** exponent)
    assert (got.dtype, got.tobytes()) == (want.dtype, want.tobytes())
    assert got_warn == want_warn
