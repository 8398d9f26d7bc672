"""np.where fused: traced to nclx's own ``where`` ufunc, run by the block
executor as a 3-input step, bit-identical to eager ``np.where`` (values,
dtype, NEP 50 scalars), eager where np.where would cast or test != 0."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx
import nclx.ufuncs as nu
from nclx import fused
from nclx._fused_program import Program, Step
from nclx._ncl import blockexec as bx
from fused_fixtures import low, threads  # noqa: F401 - fixtures

DTYPES = ["bool", "int8", "uint16", "int64", "uint64", "float32", "float64"]


def _data(dtype, n, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(n) < 0.5, rng.random(n) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return tuple(rng.integers(info.min, info.max, n, dtype=dt, endpoint=True) for _ in "ab")
    specials = np.array([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 5e-324, 1.5], dt)
    a, b = (rng.standard_normal(n) * 3).astype(dt), (rng.standard_normal(n) * 3).astype(dt)
    a[::5] = specials[rng.integers(0, len(specials), a[::5].size)]
    b[::3] = specials[rng.integers(0, len(specials), b[::3].size)]
    # a NaN with a payload: a select copies bits
    a.view(np.uint8)[-dt.itemsize:] = np.frombuffer(np.array(np.nan, dt).tobytes(), np.uint8) \
        if n else a.view(np.uint8)[-dt.itemsize:]
    return a, b


def _bits(r, ref):
    assert type(r) is type(ref)
    assert r.dtype == ref.dtype and r.shape == ref.shape, (r.dtype, ref.dtype)
    assert r.tobytes() == ref.tobytes()


def test_nclx_where_equals_np_where():
    for dtype in DTYPES:
        a, b = _data(dtype, 1000)
        c = np.random.default_rng(1).random(1000) < 0.5
        _bits(nu.where(c, a, b), np.where(c, a, b))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 7, 127, 128, 129, 4095, 4096, 4097, 65535, 65537, 100_003])
def test_where_fused_bit_identical(dtype, n, low, threads):
    a, b = _data(dtype, n)
    f = nclx.fuse(lambda a, b: np.where(a > b, a, b))
    assert f.explain(a, b) == "fused"
    _bits(f(a, b), np.where(a > b, a, b))
    g = nclx.fuse(lambda a, b: np.where(a != b, b, a) == a)
    _bits(g(a, b), np.where(a != b, b, a) == a)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_evaluate_where_expressions(dtype, low, threads):
    a, b = _data(dtype, 70_001, seed=2)
    if a.dtype.kind == "f":          # NaNs of one sign (see test_sum_nan_sign_of_mixed_nans)
        a[np.isnan(a)] = np.nan
        b[np.isnan(b)] = np.nan
    c = np.random.default_rng(5).random(70_001) < 0.3
    for ex, ref in [("where(a>b,a,b)*2", lambda: np.where(a > b, a, b) * 2),
                    ("where(c,a,b)", lambda: np.where(c, a, b)),
                    ("where(c,a,b) + where(~c,b,a)", lambda: np.where(c, a, b) + np.where(~c, b, a)),
                    ("sum(where(c,a,b)*1)", lambda: np.sum(np.where(c, a, b) * 1))]:
        with warnings.catch_warnings(record=True) as w0:
            warnings.simplefilter("always")
            want = ref()
        with warnings.catch_warnings(record=True) as w1:
            warnings.simplefilter("always")
            got = nclx.evaluate(ex)
        assert [str(x.message) for x in w0] == [str(x.message) for x in w1]
        if isinstance(want, np.ndarray):
            _bits(got, want)
        else:
            assert type(got) is type(want) and np.asarray(got).tobytes() == np.asarray(want).tobytes()


def _wraps_or_raises():
    try:
        np.where(np.ones(2, bool), np.ones(2, np.int8), 300)
    except OverflowError:
        return "where"
    return "fused"


def test_where_scalars_nep50(low):
    f64 = np.linspace(-3, 3, 50_001)
    f32 = f64.astype(np.float32)
    i8 = (f64 * 40).astype(np.int8)
    u8 = (f64 * 40).astype(np.uint8)
    cases = [
        (lambda a: np.where(a > 0, a, 0), f64, "fused"),            # float64, 0 weak
        (lambda a: np.where(a > 0, a, 2.5), f32, "fused"),          # stays float32
        (lambda a: np.where(a > 0, 0.1, a), f32, "fused"),          # 0.1 rounded to float32
        (lambda a: np.where(a > 0, 1, 2.5), f32, "fused"),          # both scalars: float64
        (lambda a: np.where(True, a, 3), i8, "fused"),              # scalar condition
        # wraps as np.where does up to NumPy 2.4; 2.5 raises OverflowError (eager then)
        (lambda a: np.where(a > 0, a, 300), i8, _wraps_or_raises()),
        (lambda a: np.where(a > 5, a, -1), u8, _wraps_or_raises()),
        (lambda a: np.where(a > 0, a, np.float64(2.5)), f32, "casts"),   # strong: float64
        (lambda a: np.where(a > 0, a, np.array(2.5)), f32, "casts"),
        (lambda a: np.where(a > 0, a, 2.5), i8, "casts"),
        (lambda a: np.where(a, a, 1.0), f64, "condition"),          # tests a != 0
        (lambda a: np.where(a > 0, a, 1e300), f32, "overflow"),     # NumPy warns on the cast
        (lambda a: np.where(a > 0, a, 2 ** 70), i8, "where"),       # NumPy raises
        (lambda a: np.where(a > 0), f64, "three"),
        (lambda a: np.where(a > 0, a, [1.0]), f64, "list"),
    ]
    for fn, a, why in cases:
        f = nclx.fuse(fn)
        assert why in f.explain(a), (why, f.explain(a))
        with warnings.catch_warnings(record=True) as w0:
            warnings.simplefilter("always")
            try:
                want, e0 = fn(a), None
            except Exception as exc:     # noqa: BLE001 - compared below
                want, e0 = None, exc
        with warnings.catch_warnings(record=True) as w1:
            warnings.simplefilter("always")
            try:
                got, e1 = f(a), None
            except Exception as exc:     # noqa: BLE001
                got, e1 = None, exc
        assert type(e0) is type(e1) and str(e0) == str(e1)
        assert [(x.category, str(x.message)) for x in w0] == [(x.category, str(x.message)) for x in w1]
        if e0 is None:
            got, want = (np.asarray(x) for x in (got, want))
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), why


def test_where_views_and_zero_d(low):
    a, b = _data("float64", 90_001, seed=7)
    f = nclx.fuse(lambda c, a, b: np.where(c, a, b) * 2)
    c = a > b
    for args in [(c[1:], a[1:], b[:-1]), (c[::-1], a[::-1], b[::-1]),
                 (c, a, np.array(4.0)), (np.array(True), a, b), (c[::2], a[::2], b[::2])]:
        _bits(np.asarray(f(*args)), np.where(*args) * 2)
    F = np.asfortranarray(np.stack([a[:45000], b[:45000]], axis=1))
    _bits(f(F > 0, F, -F), np.where(F > 0, F, -F) * 2)


def test_blockexec_where_step_small_blocks(threads):
    n = 50_003
    a, b = _data("float64", n, seed=9)
    a[np.isnan(a)] = np.nan                    # one sign of NaN: see the xfail below
    b[np.isnan(b)] = np.nan
    p = Program([Step(np.greater, "dd?", (0, 1), 2), Step(nu.where, "?ddd", (2, 0, 1), 3)], 4, 2, 3)
    before = bx.block_bytes(1)                 # the smallest blocks (128 elements)
    try:
        _bits(bx.execute(p, [a, b]), np.where(a > b, a, b))
        s = Program(list(p.steps), 4, 2, 3, "sum", "ddd")
        assert np.asarray(bx.execute(s, [a, b])).tobytes() == \
            np.asarray(np.add.reduce(np.where(a > b, a, b))).tobytes()
    finally:
        bx.block_bytes(before)


def test_blockexec_fma_three_inputs():
    rng = np.random.default_rng(11)
    a, b, c = rng.random(70_000), rng.random(70_000), rng.random(70_000)
    p = Program([Step(nu.fma, "dddd", (0, 1, 2), 3)], 4, 3, 3)
    _bits(bx.execute(p, [a, b, c]), nu.fma(a, b, c))


def test_blockexec_where_bad_steps():
    with pytest.raises(ValueError, match="reads 3 slots, ins names 2"):
        bx.execute(Program([Step(nu.where, "?ddd", (0, 1), 2)], 3, 2, 2), [np.ones(4) > 0, np.ones(4)])
    with pytest.raises(TypeError, match="no loop"):
        bx.execute(Program([Step(nu.where, "?dfd", (0, 1, 2), 3)], 4, 3, 3),
                   [np.ones(4) > 0, np.ones(4), np.ones(4, np.float32)])
    with pytest.raises(TypeError, match="operand 0 has dtype float64, the program reads it as bool"):
        bx.execute(Program([Step(nu.where, "?ddd", (0, 1, 2), 3)], 4, 3, 3),
                   [np.ones(4), np.ones(4), np.ones(4)])


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 20_000), t=st.sampled_from([1, 2, 3, 7]),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2 ** 16), scalar=st.booleans())
def test_hypothesis_where(n, t, dtype, seed, scalar):
    a, b = _data(dtype, n, seed)
    before_t, before_f = nclx.get_num_threads(), fused.fuse_threshold()
    nclx.set_num_threads(t)
    fused.fuse_threshold(1)
    try:
        if scalar:
            f = nclx.fuse(lambda a: np.where(a == a, a, 1))
            assert f.explain(a) == "fused" or dtype == "bool"
            _bits(np.asarray(f(a)), np.where(a == a, a, 1))
        else:
            f = nclx.fuse(lambda a, b: np.where(a >= b, b, a))
            assert f.explain(a, b) == "fused"
            _bits(f(a, b), np.where(a >= b, b, a))
    finally:
        nclx.set_num_threads(before_t)
        fused.fuse_threshold(before_f)


def test_sum_nan_sign_of_mixed_nans(low, threads):
    """A fused sum over NaNs of both signs keeps the NaN np.sum keeps, at
    every block size (a NaN sum is NumPy's reduction of the whole result)."""
    x = np.zeros(70_001)
    x[::7] = np.nan
    x[3::7] = -np.nan
    x[5::11] = np.inf
    x[6::13] = -np.inf
    ref = np.sum(x * 1)
    got = []
    try:
        for bb in (1, 4096, 65536, 1 << 19):
            bx.block_bytes(bb)
            got.append(nclx.evaluate("sum(x*1)").tobytes())
    finally:
        bx.block_bytes(0)
    assert all(g == ref.tobytes() for g in got)
    y = -x                                      # the other NaN first
    assert nclx.evaluate("sum(y*1)").tobytes() == np.sum(y * 1).tobytes()
