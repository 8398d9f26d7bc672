"""nclx.evaluate and @nclx.fuse: bit-identical to the same code run eagerly
by NumPy (values, dtypes, warnings, errors), fused or falling back."""
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx
from nclx import fused
from fused_fixtures import low, threads  # noqa: F401 - fixtures

EXPRESSIONS = ["2*a+b*b", "a*b+c", "(a-b)/(a+b)", "sqrt(a*a+b*b)", "exp(-a*a)", "sum(a*b)",
               "prod(a)", "a**2 + b", "-a + abs(b) - c // 3", "(a > b) & (c <= a)",
               "where(a>b,a,b)*2", "log1p(abs(a)) * 2.5", "arctan2(a, b) + 1"]
NUMPY = {"sqrt": np.sqrt, "exp": np.exp, "sum": np.sum, "prod": np.prod, "abs": np.absolute,
         "where": np.where, "log1p": np.log1p, "arctan2": np.arctan2}


def _eager(ex, **names):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = eval(ex, dict(NUMPY), names)
            err = None
        except Exception as exc:   # noqa: BLE001 - compared with nclx's
            r, err = None, exc
    return r, err, [(x.category, str(x.message)) for x in w]


def _nclx(ex, **names):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = nclx.evaluate(ex, local_dict=names)
            err = None
        except Exception as exc:   # noqa: BLE001
            r, err = None, exc
    return r, err, [(x.category, str(x.message)) for x in w]


def _same(ex, **names):
    r0, e0, w0 = _eager(ex, **names)
    r1, e1, w1 = _nclx(ex, **names)
    assert type(e0) is type(e1) and str(e0) == str(e1), (ex, e0, e1)
    assert w0 == w1, (ex, w0, w1)
    if e0 is None:
        assert type(r0) is type(r1), (ex, type(r0), type(r1))
        r0, r1 = np.asarray(r0), np.asarray(r1)
        assert r0.dtype == r1.dtype and r0.shape == r1.shape, (ex, r0.dtype, r1.dtype)
        assert r0.tobytes() == r1.tobytes(), ex


def _data(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return [rng.random(n) < 0.5 for _ in range(3)]
    if dtype == "int64":
        return [rng.integers(-1000, 1000, n) for _ in range(3)]
    return [(rng.standard_normal(n) * 3).astype(dtype) for _ in range(3)]


@pytest.mark.parametrize("ex", EXPRESSIONS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("n", [0, 1, 7, 8191, 8193, 65537, 100_003])
def test_bit_identical_to_eager(ex, dtype, n, low, threads):
    a, b, c = _data(dtype, n)
    _same(ex, a=a, b=b, c=c)


@pytest.mark.parametrize("ex", ["2*a+b*b", "sum(a*b)", "sqrt(a*a+b*b)"])
def test_specials_and_signed_zeros(ex, low, threads):
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e308, -1e-320, 5e-324, 1.0])
    rng = np.random.default_rng(3)
    a = vals[rng.integers(0, len(vals), 70_001)]
    b = vals[rng.integers(0, len(vals), 70_001)]
    _same(ex, a=a, b=b)


def test_nep50_scalars(low):
    a = np.arange(100_000, dtype=np.float32) / 7
    r = nclx.evaluate("a * 2.5")
    assert r.dtype == np.float32 and r.tobytes() == (a * 2.5).tobytes()
    i8 = np.ones(100_000, np.int8)
    _same("i8 + 300", i8=i8)                      # OverflowError, NumPy's message
    _same("i8 + 100", i8=i8)
    _same("a * x", a=a, x=np.float64(2.5))        # a NumPy scalar is strong: float64
    _same("a * x", a=a, x=np.array(2.5))
    _same("a * 1e300", a=a)                       # "overflow encountered in cast"
    _same("a * x", a=a, x=np.float64(1e300))
    _same("a + x", a=a, x=np.float64(np.nan))


@pytest.mark.parametrize("mode", ["ignore", "warn", "raise"])
@pytest.mark.parametrize("ex", ["log(a) + b", "a + b / z", "sqrt(a - 2) * b"])
def test_floating_point_errors_as_eager(mode, ex, low):
    a = np.linspace(-1, 5, 50_001)
    b = np.ones(50_001)
    z = np.zeros(50_001)
    NUMPY["log"] = np.log
    with np.errstate(all=mode):
        _same(ex, a=a, b=b, z=z)


def test_syntax_and_names():
    a = np.ones(3)
    with pytest.raises(SyntaxError, match="'and'/'or'"):
        nclx.evaluate("a and a")
    with pytest.raises(SyntaxError, match="chained comparison"):
        nclx.evaluate("0 < a < 2")
    with pytest.raises(TypeError, match="'open'"):
        nclx.evaluate("open(a)")
    with pytest.raises(SyntaxError, match="a call of anything but a function name"):
        nclx.evaluate("a.sum()")
    with pytest.raises(SyntaxError, match="Attribute"):
        nclx.evaluate("a.T + 1")
    with pytest.raises(SyntaxError, match="Subscript"):
        nclx.evaluate("a[0]")
    with pytest.raises(NameError, match="'nope'"):
        nclx.evaluate("a + nope")
    with pytest.raises(SyntaxError, match="cannot parse"):
        nclx.evaluate("a +")
    with pytest.raises(TypeError, match="expression string"):
        nclx.evaluate(3)
    assert nclx.evaluate("a + 1").tolist() == [2.0, 2.0, 2.0]     # caller's locals


def test_fallbacks_equal_eager(low):
    rng = np.random.default_rng(1)
    a, b = rng.random(40_000), rng.random(40_000)
    _same("2*a+b*b", a=a[::2], b=b[::2])                        # strided
    _same("2*a+b*b", a=a.reshape(200, 200).T, b=b.reshape(200, 200))   # F-order
    _same("2*a+b*b", a=a.reshape(200, 200), b=b[:200])           # broadcasting
    _same("2*a+b*b", a=np.ma.masked_less(a, 0.3), b=b)            # a subclass
    _same("2*a+b*b", a=a.astype(np.float16), b=b)                # float16
    _same("2*a+b*b", a=a.astype(">f8"), b=b)                     # byte-swapped
    _same("a*b", a=a.astype(np.int32), b=b)                      # a cast: eager
    f = nclx.fuse(lambda a, b: 2 * a + b * b)
    assert f.explain(a, b) == "fused"
    assert "C-contiguous" in f.explain(a[::2], b[::2])
    assert "casts" in f.explain(a, b.astype(np.float32))
    assert "different shapes" in f.explain(a.reshape(200, 200), b[:200])


def test_hooks_see_every_call(low):
    a, b = np.ones(50_000), np.ones(50_000)
    seen = []

    def hook(call):
        seen.append(call.ufunc.__name__)
        return call.next()

    with nclx.installed(python_funnel=True), nclx.hooks.register("python", "binary", hook):
        r = nclx.evaluate("2*a+b*b")
    assert r.tobytes() == (2 * a + b * b).tobytes()
    assert seen.count("multiply") == 2 and seen.count("add") == 1


def test_out(low):
    rng = np.random.default_rng(2)
    a, b = rng.random(60_000), rng.random(60_000)
    ref = 2 * a + b * b
    out = np.empty_like(a)
    assert nclx.evaluate("2*a+b*b", out=out) is out and out.tobytes() == ref.tobytes()
    a2 = a.copy()
    nclx.evaluate("2*a+b*b", local_dict={"a": a2, "b": b}, out=a2)       # out is an input
    assert a2.tobytes() == ref.tobytes()
    o32 = np.empty(60_000, np.float32)
    nclx.evaluate("2*a+b*b", out=o32)                                     # same_kind cast
    assert o32.tobytes() == ref.astype(np.float32).tobytes()
    with pytest.raises(TypeError):
        nclx.evaluate("2*a+b*b", out=np.empty(60_000, np.int64))


def test_fuse_decorator(low):
    @nclx.fuse
    def f(a, b, k):
        return np.sqrt(a * a + b * b) * k

    rng = np.random.default_rng(4)
    a, b = rng.random(70_000), rng.random(70_000)
    for k in (2.0, 3.0, 2.0, 7):
        assert f(a, b, k).tobytes() == (np.sqrt(a * a + b * b) * k).tobytes()
    assert f(a, b, k=2.0).tobytes() == (np.sqrt(a * a + b * b) * 2.0).tobytes()

    @nclx.fuse
    def branchy(a):
        return a * 2 if a.sum() > 0 else a

    assert branchy(a).tobytes() == (a * 2).tobytes()
    assert "non-ufunc" in branchy.explain(a) or "reduction" in branchy.explain(a)
    with pytest.raises(TypeError, match="decorates a function"):
        nclx.fuse(3)


def test_fuse_scalar_keys_are_bits(low):
    """-0.0 and 0.0 (equal, same hash) and NaNs (never equal) are separate
    trace keys: a plan traced for 0.0 must not serve -0.0."""
    f = nclx.fuse(lambda a, k: a * k)
    a = np.ones(50_000)
    for k in (0.0, -0.0, np.float64(0.0), np.float64(-0.0), float("nan"), -float("nan")):
        assert f(a, k).tobytes() == (a * k).tobytes(), k
    assert len(f.plans.items) == 6


def test_python_threads_at_once(low):
    rng = np.random.default_rng(5)
    arrays = [(rng.random(80_000), rng.random(80_000)) for _ in range(6)]
    refs = [2 * a + b * b for a, b in arrays]
    errors = []

    def work(i):
        a, b = arrays[i]
        for _ in range(20):
            if nclx.evaluate("2*a+b*b").tobytes() != refs[i].tobytes():
                errors.append(i)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 20_000), st.sampled_from(EXPRESSIONS[:8]),
       st.sampled_from(["float32", "float64", "int64"]), st.integers(0, 2**32 - 1))
def test_hypothesis(n, ex, dtype, seed):
    before = fused.fuse_threshold()
    fused.fuse_threshold(1)
    try:
        a, b, c = _data(dtype, n, seed)
        _same(ex, a=a, b=b, c=c)
    finally:
        fused.fuse_threshold(before)


def test_threshold_validates():
    with pytest.raises(ValueError, match="fuse_threshold"):
        fused.fuse_threshold(0)
