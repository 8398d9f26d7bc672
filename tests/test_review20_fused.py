"""Review 20: ``nclx.evaluate`` refused complex literals (``1j*a + 2``:
"the constant 1j is not supported"), which numexpr's language has; now
they evaluate as NumPy evaluates the same expression (bits, dtype,
warnings)."""
import warnings

import numpy as np
import pytest

import nclx

EXPRESSIONS = ["1j*a + 2", "1j*b", "i*2j", "a + (1+0j)", "sqrt(-1 + 0j*a)",
               "where(a > 2, 1j, a)", "1j", "sum(1j*a)", "a**2j", "exp(1j*a)",
               "(2.5-1j) / (a - 2)", "abs(3+4j) + a"]


def _numpy(ex, ns):
    env = {"sqrt": np.sqrt, "where": np.where, "sum": np.sum, "exp": np.exp, "abs": np.absolute}
    return eval(ex, env, dict(ns))      # noqa: S307 - the test's own expressions


@pytest.mark.parametrize("installed", [False, True])
@pytest.mark.parametrize("ex", EXPRESSIONS)
def test_complex_literals(ex, installed):
    ns = {"a": np.arange(-1.0, 6.0), "b": np.arange(7, dtype=np.float32), "i": np.arange(7)}
    with warnings.catch_warnings(record=True) as want_w:
        warnings.simplefilter("always")
        want = np.asarray(_numpy(ex, ns))
    if installed:
        nclx.install()
    try:
        with warnings.catch_warnings(record=True) as got_w:
            warnings.simplefilter("always")
            got = np.asarray(nclx.evaluate(ex, ns))
    finally:
        if installed:
            nclx.uninstall()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()
    assert [(w.category, str(w.message)) for w in got_w] == \
        [(w.category, str(w.message)) for w in want_w]
