"""Review 19 of nclx.evaluate / @nclx.fuse: steps on the NumPy scalar that
an earlier step on 0-d arrays alone gives.

Eager NumPy returns a NumPy scalar from a ufunc on 0-d arrays alone, and the
next operation on that scalar (with Python or NumPy scalars) runs NumPy's
scalar math: it checks integer overflow ("overflow encountered in scalar
multiply") and names float flags "scalar remainder".  The fused plan ran
such steps as ufunc steps: the integer overflow was silent (no error under
``errstate(over='raise')``) and the float messages lost "scalar".  Such a
function now runs eagerly for that signature (``explain`` says why).
"""
import warnings

import numpy as np
import pytest

import nclx
from nclx import fused


@pytest.fixture(autouse=True)
def _fuse_small_calls():
    old = fused.fuse_threshold(1)         # the small cases fuse too
    yield
    fused.fuse_threshold(old)


def _run(fn, mode):
    with warnings.catch_warnings(record=True) as rec, np.errstate(all=mode):
        warnings.simplefilter("always")
        try:
            r = fn()
        except FloatingPointError as exc:
            return ("raise", str(exc))
    return ("ok", r.dtype.str, r.tobytes(), [str(w.message) for w in rec])


CASES = [
    ("a + (z + z) * 2", np.zeros(100_000, np.int8), np.array(50, np.int8)),
    ("a + (z * z) * 3", np.zeros(1, np.int64), np.array(2 ** 40, np.int64)),
    ("a + (z * 1) % 0", np.ones(100_000, np.float32), np.array(0.5, np.float32)),
    ("a - (z + 1) / 0", np.ones(7, np.float64), np.array(1.0)),
]


@pytest.mark.parametrize("expr, a, z", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("mode", ["warn", "raise", "ignore"])
def test_scalar_math_after_a_0d_step_is_numpys(expr, a, z, mode):
    want = _run(lambda: eval(expr, {}, {"a": a, "z": z}), mode)
    got = _run(lambda: nclx.evaluate(expr, {"a": a, "z": z}, {}), mode)
    assert got == want

    f = nclx.fuse(eval(f"lambda a, z: {expr}"))
    assert _run(lambda: f(a, z), mode) == want
    assert "scalar" in f.explain(a, z)


def test_a_0d_step_with_an_array_still_fuses():
    # (z + z) * a: the scalar meets an array, a ufunc call in eager NumPy too
    a = np.arange(100_000, dtype=np.float64)
    z = np.array(1.5)
    f = nclx.fuse(lambda a, z: (z + z) * a + 1.0)
    assert f(a, z).tobytes() == ((z + z) * a + 1.0).tobytes()
    assert f.explain(a, z) == "fused"
