"""Eager NumPy reuses an unnamed temporary of 256 KiB or more for ``+`` and
``*``, swapping the operands when it is on the right (``a + b*c`` runs as
``np.add(b*c, a, out=...)``): of two NaN operands the result keeps the
first one's payload, so a fused program must swap exactly where NumPy does
(nclx._elide; found by review: ``evaluate("a + b*c")`` kept a's NaN where
NumPy keeps b's).  Every case compares bits with the eager expression."""
import numpy as np
import pytest

import nclx
from nclx import _elide

FUNCS = {"sqrt": np.sqrt, "where": np.where, "sum": np.sum, "np": np}

EXPRESSIONS = [
    "x + y*z", "y*z + x", "x*(y+z)", "(x+y)*(y+z)", "x + y + z", "x + (y + z)",
    "2.5*(x+y)", "(x+y)*2.5", "q*(x+y)", "(x+y)*q", "q + y*z", "x + where(y > z, y, z)",
    "x + sqrt(y)", "sum(x + y*z)", "x*y + z*x", "-x + y", "y + -x", "x + (y - z)",
    "x * (y / z)", "(x - y) + z", "x + y*z*x",
]


def _nans(n, dtype, payload):
    a = np.empty(n, dtype)
    if np.dtype(dtype) == np.float64:
        a.view(np.uint64)[:] = 0x7FF8000000000000 | payload
    else:
        a.view(np.uint32)[:] = 0x7FC00000 | payload
    return a


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


def test_this_numpy_elides():
    # (NumPy elides where it has backtrace(): every machine these tests run on)
    assert _elide.active()


@pytest.mark.parametrize("ex", EXPRESSIONS)
@pytest.mark.parametrize("dtype,n", [("f8", 32_768), ("f8", 100_003), ("f4", 40_000),
                                     ("f4", 65_536), ("f4", 100_003)])
def test_nan_payloads_as_eager(ex, dtype, n):
    env = {"x": _nans(n, dtype, 0x111), "y": _nans(n, dtype, 0x222),
           "z": _nans(n, dtype, 0x333), "q": float("nan")}
    with np.errstate(all="ignore"):
        want = eval(ex, dict(FUNCS), dict(env))
        got = nclx.evaluate(ex, dict(env), dict(FUNCS))
    assert _same(got, want), ex


@pytest.mark.parametrize("dtypes", [("f4", "f8", "f8"), ("f8", "f4", "f4"), ("f4", "f4", "f8")])
def test_mixed_dtypes_as_eager(dtypes):
    n = 70_000
    env = {k: _nans(n, d, p) for k, d, p in zip("xyz", dtypes, (0x111, 0x222, 0x333))}
    for ex in ("x + y*z", "y*z + x", "x*(y+z)", "(x*x) + (y*z)", "(y*z) + (x*x)"):
        with np.errstate(all="ignore"):
            want = eval(ex, {}, dict(env))
            got = nclx.evaluate(ex, dict(env), {})
        assert _same(got, want), (ex, dtypes)


def _unnamed(x, y, z):
    return x + y * z


def _named(x, y, z):
    t = y * z
    return x + t


def _reflected(x, y, z):
    return np.float64("nan") * (y + z) + x


@pytest.mark.parametrize("fn", [_unnamed, _named, _reflected])
@pytest.mark.parametrize("n", [32_768, 200_001])
def test_fused_functions_as_eager(fn, n):
    """A temporary the function names is never reused by NumPy (two
    references): only the unnamed one swaps."""
    x, y, z = (_nans(n, "f8", p) for p in (0x111, 0x222, 0x333))
    f = nclx.fuse(fn)
    with np.errstate(all="ignore"):
        want = fn(x, y, z)
        assert _same(f(x, y, z), want)
        assert f.explain(x, y, z) == "fused"


def test_variants_follow_the_length():
    """float32 temporaries reach 256 KiB at 65,536 elements: below, NumPy
    does not reuse them and nothing is swapped."""
    f = nclx.fuse(_unnamed)
    for n in (40_000, 65_535, 65_536, 40_000, 300_000):
        x, y, z = (_nans(n, "f4", p) for p in (0x111, 0x222, 0x333))
        with np.errstate(all="ignore"):
            assert _same(f(x, y, z), _unnamed(x, y, z)), n


@pytest.mark.parametrize("ex", ["y + -s", "y + s*t", "(s*t) + (y*z)", "y*z + s*t", "s*t + y",
                                "y * (s+t)", "(s+t) * y", "-s + y", "y + (s*t)*2.0"])
@pytest.mark.parametrize("dtype,n", [("f8", 40_000), ("f8", 100_003), ("f4", 70_000)])
def test_temporaries_of_0d_operands_as_eager(ex, dtype, n):
    """A step of 0-d operands alone is eagerly a NumPy scalar: one value,
    read with stride 0 by the next loop (whose NaN choice differs for a
    stride-0 operand), never reused (found by review: computed as a full
    block, and swapped as a 256 KiB temporary)."""
    env = {"y": _nans(n, dtype, 0x222), "z": _nans(n, dtype, 0x333),
           "s": _nans(1, dtype, 0x444).reshape(()), "t": _nans(1, dtype, 0x555).reshape(())}
    with np.errstate(all="ignore"):
        want = eval(ex, {}, dict(env))
        got = nclx.evaluate(ex, dict(env), {})
    assert _same(got, want), ex


def test_explicit_calls_on_0d_temporaries_as_eager():
    n = 100_003
    y = _nans(n, "f8", 0x222)
    s, t = _nans(1, "f8", 0x444).reshape(()), _nans(1, "f8", 0x555).reshape(())
    for fn in (lambda y, s, t: np.add(y, s * t), lambda y, s, t: np.multiply(y, s + t),
               lambda y, s, t: np.add(-s, y)):
        with np.errstate(all="ignore"):
            want = fn(y, s, t)
            got = nclx.fuse(fn)(y, s, t)
        assert _same(got, want)
