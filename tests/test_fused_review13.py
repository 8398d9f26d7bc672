"""Defects the thirteenth hostile review found in fused evaluation (each
test failed before its fix): a last block shorter than 64 elements went
through NumPy's add/multiply loop on its short path, which keeps the other
NaN of two operands (the last 1-7 float64, 1-15 float32 elements of
``x + y``, ``x * y`` and a product's steps)."""
import functools

import numpy as np
import pytest

import nclx
from nclx import _trace, fused
from nclx._ncl import blockexec


def _same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def _nans(n, dtype, payload, tail):
    """Ones, the last ``tail`` elements quiet NaNs carrying ``payload``."""
    u, quiet = (np.uint64, 0x7FF8000000000000) if dtype is np.float64 else \
        (np.uint32, 0x7FC00000)
    x = np.ones(n, dtype)
    x[n - tail:] = np.full(tail, quiet | payload, u).view(dtype)
    return x


@pytest.fixture(params=[1, 2], ids=lambda t: f"{t}thr")
def small_blocks(request):
    """Blocks of 1024 elements (both dtypes' programs), every size fused."""
    threads, bb, th = nclx.get_num_threads(), blockexec.block_bytes(), fused.fuse_threshold()
    nclx.set_num_threads(request.param)
    blockexec.block_bytes(3 * 8 * 1024)
    fused.fuse_threshold(1)
    yield request.param
    nclx.set_num_threads(threads)
    blockexec.block_bytes(bb)
    fused.fuse_threshold(th)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("ex", ["a + b", "a * b", "prod(a * b)", "a + s", "t * a"])
def test_a_short_last_block_keeps_numpys_nan(small_blocks, dtype, ex):
    a = _nans(10, dtype, 0x111, 1)
    B = blockexec.block_elements(_trace.trace(lambda a, b: a + b, [a, a])[0])
    bad = []
    for k in (2, 5):
        for r in range(1, 17):
            n = k * B + r
            a, b = _nans(n, dtype, 0x111, r), _nans(n, dtype, 0x222, r)
            s = _nans(1, dtype, 0x333, 1).reshape(())          # a 0-d NaN operand
            t = s[()]                                         # a NumPy scalar NaN
            got = nclx.evaluate(ex)
            want = np.prod(a * b) if ex.startswith("prod") else eval(ex)
            if not _same(got, want):
                bad.append(n)
    assert not bad, f"B={B}: differs at n={bad}"


def test_fused_function_short_last_block(small_blocks):
    f = nclx.fuse(lambda x, y: x * y + y)
    for r in range(1, 9):
        n = 3 * 1024 + r
        a, b = _nans(n, np.float64, 0x111, r), _nans(n, np.float64, 0x222, r)
        assert _same(f(a, b), a * b + b), r


def test_out_untouched_when_showwarning_raises():
    """A warning shown by a replaced ``warnings.showwarning`` that raises:
    NumPy's ``np.copyto(out, expr)`` leaves out as it was; evaluate had
    written it already."""
    import warnings
    a = np.linspace(-1, 1, 100_003)

    def boom(*args, **kw):
        raise RuntimeError("showwarning raised")
    for run in (lambda out: nclx.evaluate("log(a) * 2", {"a": a}, out=out),
                lambda out: nclx.fuse(lambda x, o: np.multiply(np.log(x), 2, out=o))(a, out)):
        out = np.full(a.size, 7.0)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = boom
            with pytest.raises(RuntimeError, match="showwarning raised"):
                run(out)
        assert (out == 7.0).all()


K = 2.0


def _scale(x, y, k=1.0):
    return x * K * k + y


class _Scaler:
    def __init__(self):
        self.k = 2.0

    def method(self, x, y):
        return x * self.k + y

    def __call__(self, x, y):
        return x * self.k + y


def test_fuse_of_a_partial_or_stateful_callable_sees_changes():
    """A trace of a functools.partial, a bound method or a callable object
    kept a global or attribute it read: changing it changed nothing."""
    global K
    a = b = np.ones(100_000)
    s = _Scaler()
    fns = [nclx.fuse(functools.partial(_scale)), nclx.fuse(functools.partial(_scale, k=3.0)),
           nclx.fuse(s.method), nclx.fuse(s)]
    plain = [functools.partial(_scale), functools.partial(_scale, k=3.0), s.method, s]
    before = K
    try:
        for f, p in zip(fns, plain):
            assert _same(f(a, b), p(a, b))
        K, s.k = 10.0, 5.0
        for f, p in zip(fns, plain):
            assert _same(f(a, b), p(a, b))
        assert fns[0].explain(a, b) == "fused"
        assert "not keyed" in fns[2].explain(a, b)
    finally:
        K = before


@pytest.mark.parametrize("text, kind, words", [
    (["a"], TypeError, "expression string"),
    ("-" * 100_000 + "a", SyntaxError, "nested too deeply"),
    ("\ud800", SyntaxError, "lone surrogate"),
])
def test_malformed_expressions_raise_clear_errors(text, kind, words):
    with pytest.raises(kind, match=words):
        nclx.evaluate(text, {"a": np.ones(3)}, {})
