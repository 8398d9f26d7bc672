"""NCLib's elementwise subsystems on the entry path: Unary math, IsUnary, the
further Binary ops and clip (NumPy's own loops per chunk), nclx's own fma,
where and cast, and nclx.ufuncs reaching the same entries.

Every installed result is compared with stock NumPy bit for bit (tobytes,
dtype, warnings), whole and split across threads."""
import fractions
import math
import re
import threading

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import nclx
import nclx.ufuncs as nu
from nclx._ncl import spec

from conftest import stock_and_installed
from test_ufuncs_hypothesis import laid_out

NUMPY_OPS = tuple(op for op in spec.OPS if op in spec.NUMPY_LOOPS)
N_SPLIT = 70_000          # above the test threshold below: split across threads


@pytest.fixture(autouse=True)
def _clean():
    nclx.uninstall()
    nclx.hooks.reset()
    nclx.reset_thresholds()
    nclx.set_num_threads(2)
    yield
    nclx.uninstall()
    nclx.hooks.reset()
    nclx.reset_thresholds()


def _edge(dt, n, seed=0):
    """n values of dtype ``dt``: random, plus the edges (nan, inf, -0.0,
    subnormals, huge; min/max/0/-1 for integers)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dt)
    if dt.kind == "f":
        fi = np.finfo(dt)
        edge = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, fi.tiny / 4, -fi.tiny / 4,
                         fi.max, -fi.max, 1.0, -1.0, 0.5, 2.0, 700.0, -700.0, 1e-300], dtype=dt)
        body = (rng.standard_normal(n) * rng.choice([1, 3, 100], n)).astype(dt)
    elif dt.kind == "b":
        edge = np.array([True, False])
        body = rng.integers(0, 2, n).astype(bool)
    else:
        ii = np.iinfo(dt)
        edge = np.array([ii.min, ii.max, 0, 1, ii.max // 2] + ([-1] if ii.min < 0 else []), dtype=dt)
        body = rng.integers(max(ii.min, -100), min(ii.max, 100), n, endpoint=True).astype(dt)
    out = np.concatenate([edge, body])[:n] if n >= len(edge) else edge[:n]
    return out


def _nin_dtypes(op):
    """(input dtypes) per loop of ``op`` that this NumPy has."""
    uf = spec.numpy_ufunc(op)
    have = {t.replace("->", "") for t in uf.types}
    out = []
    for chars in spec.char_signatures(op):
        if chars in have and chars[0] not in "qQ":
            out.append(tuple(np.dtype(c) for c in chars[:-1]))
    return out


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def _args(op, dts, n, seed=0):
    args = [_edge(dt, n, seed + i) for i, dt in enumerate(dts)]
    if op in ("left_shift", "right_shift"):
        bits = dts[1].itemsize * 8
        args[1] = (np.abs(args[1].astype(np.int64)) % (bits + 2)).astype(dts[1])
    if op == "power" and dts[0].kind in "iu":
        args[1] = (np.abs(args[1].astype(np.int64)) % 9).astype(dts[1])
    return args


@pytest.mark.parametrize("op", NUMPY_OPS)
@pytest.mark.parametrize("n", [1, 33, N_SPLIT])
def test_installed_equals_stock_bit_for_bit_with_warnings(op, n):
    nclx.set_threshold(4096)
    uf = spec.numpy_ufunc(op)
    for dts in _nin_dtypes(op):
        args = _args(op, dts, n)
        want, got, w0, w1 = stock_and_installed(lambda: uf(*args))
        _same_bits(want, got)
        assert w0 == w1, (op, dts)


@pytest.mark.parametrize("op", NUMPY_OPS)
def test_nclx_ufuncs_twin_equals_numpy_and_is_recorded(op):
    uf = spec.numpy_ufunc(op)
    twin = getattr(nu, op)
    for dts in _nin_dtypes(op):
        args = _args(op, dts, 300)
        with np.errstate(all="ignore"):
            want = uf(*args)
            with nclx.ledger.recording() as led:
                got = twin(*args)
        _same_bits(want, got)
        assert [r.op for r in led.records()] == [op], (op, dts)


@pytest.mark.parametrize("op", ["exp", "sin", "arctan2", "power", "isnan", "clip", "logical_and"])
def test_strided_overlapping_broadcast_out_where(op):
    nclx.set_threshold(1024)
    uf = spec.numpy_ufunc(op)
    base = np.linspace(-4, 4, 30_001)
    if op == "power":
        base = np.abs(base)
    nin = uf.nin
    cases = [
        lambda: uf(*([base[::-3]] * nin)),                                # negative stride
        lambda: uf(*([base[:20000].reshape(100, 200)] + [base[:200]] * (nin - 1))),  # broadcast
        lambda: uf(*([base[::2]] * nin), out=np.empty_like(base[::2], dtype=uf(*[base[:1]] * nin).dtype)),
        lambda: uf(*([base] * nin), where=base > 0),
        lambda: uf(*([np.float64(0.5)] * nin)),                          # 0-d
        lambda: uf(*([base[:0]] * nin)),                                  # empty
    ]
    for i, fn in enumerate(cases):
        want, got, w0, w1 = stock_and_installed(fn)
        if i == 3:       # where=: untouched elements are uninitialised memory
            mask = base > 0
            want, got = np.asarray(want)[mask], np.asarray(got)[mask]
        _same_bits(want, got)
        assert w0 == w1


def test_overlapping_in_place_unary_equals_stock():
    nclx.set_threshold(1024)

    def run():
        x = np.linspace(0, 3, 50_000)
        np.exp(x[:-7], out=x[7:])       # overlapping: NumPy buffers, result is defined
        return x
    want, got, _, _ = stock_and_installed(run)
    _same_bits(want, got)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_split_calls_are_bit_identical_at_every_thread_count(threads):
    nclx.set_num_threads(threads)
    nclx.set_threshold(1000)
    x = _edge("float64", 100_003, 7)
    y = _edge("float32", 100_003, 8)
    for op in ("exp", "log", "sin", "cos", "tanh", "cbrt", "expm1", "arcsinh"):
        for v in (x, y):
            want, got, w0, w1 = stock_and_installed(lambda: spec.numpy_ufunc(op)(v))
            _same_bits(want, got)
            assert w0 == w1


def test_ledger_names_each_subsystem():
    x = np.linspace(0.1, 2, 1000)
    with nclx.ledger.recording() as led:
        np.exp(x), np.isnan(x), np.arctan2(x, x), np.clip(x, 0.5, 1.5), x > 1
        nclx.convert(x, np.float32), nu.fma(x, x, x), nu.where(x > 1, x, -x)
    subs = {r.op: r.subsystem for r in led.records()}
    assert subs == {"exp": "unary", "isnan": "isunary", "arctan2": "binary", "clip": "ternary",
                    "greater": "compare", "cast": "convert", "fma": "ternary",
                    "where": "ternary", "negative": "unary"}
    assert "isunary" in led.table() and "convert" in led.table()
    assert set(nclx.hooks.SUBSYSTEMS) >= {"unary", "isunary", "binary", "ternary", "convert"}


def test_funnel_hook_sees_the_new_subsystems():
    seen = []

    def hook(call):
        seen.append((call.subsystem, call.op))
        return call.next()
    handles = [nclx.hooks.register("funnel", s, hook, name=f"t-{s}")
               for s in ("unary", "isunary", "binary", "ternary", "convert")]
    try:
        x = np.linspace(0.1, 2, 100)
        with nclx.installed():
            np.log(x), np.isinf(x), np.hypot(x, x), np.clip(x, 0, 1)
        nclx.convert(x, np.int32)
    finally:
        for h in handles:
            h.remove()
    assert ("unary", "log") in seen and ("isunary", "isinf") in seen
    assert ("binary", "hypot") in seen and ("ternary", "clip") in seen
    assert ("convert", "cast") in seen


# -------------------------------------------------------------- checked()

@pytest.mark.parametrize("dt", ["int8", "int32", "int64", "uint16", "uint64"])
def test_checked_square_power_shifts_raise_and_keep_numpy_values(dt):
    ii = np.iinfo(dt)
    big = np.array([ii.max // 2 + 1], dtype=dt)
    with nclx.checked():
        for fn in (lambda: np.square(big), lambda: np.power(big, 2),
                   lambda: np.left_shift(big, 2), lambda: np.right_shift(np.array([3], dt), 1),
                   lambda: nu.square(big)):
            with pytest.raises(OverflowError, match="integer overflow|bits lost in"):
                fn()
        # exact ones pass
        np.square(np.array([3], dt)), np.power(np.array([2], dt), 3)
        np.left_shift(np.array([1], dt), 3), np.right_shift(np.array([8], dt), 3)
    rng = np.random.default_rng(1)
    a = rng.integers(ii.min, ii.max, 500, endpoint=True, dtype=dt)
    s = rng.integers(0, ii.bits + 3, 500).astype(dt)
    e = rng.integers(0, 70, 500).astype(dt)
    for fn in (lambda: np.square(a), lambda: np.power(a, e), lambda: np.left_shift(a, s),
               lambda: np.right_shift(a, s)):
        want = fn()
        with nclx.checked(), np.errstate(over="ignore"):
            got = fn()
        _same_bits(want, got)


def test_checked_power_negative_exponent_raises_numpys_error():
    with nclx.checked(), pytest.raises(ValueError, match="negative integer powers"):
        np.power(np.array([2, 3]), np.array([1, -1]))


def test_checked_applies_to_nclx_ufuncs_directly():
    with nclx.checked(), pytest.raises(OverflowError):
        nu.multiply(np.array([2**62]), 4)
    with nclx.ledger.recording() as led:
        nu.multiply(np.arange(4.0), 4)
    assert [r.op for r in led.records()] == ["multiply"]


# ------------------------------------------------------ fma, where, cast

@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=3,
                max_size=3))
def test_fma_is_the_exactly_rounded_a_times_b_plus_c(vals):
    a, b, c = vals
    exact = fractions.Fraction(a) * fractions.Fraction(b) + fractions.Fraction(c)
    try:
        want = float(exact)
    except OverflowError:
        return
    with np.errstate(all="ignore"):
        got = nu.fma(np.float64(a), np.float64(b), np.float64(c))
    if want == 0:
        return     # the sign of an exact zero follows IEEE rules, checked below
    assert got == want


def test_fma_differs_from_two_roundings_and_threads():
    a = np.full(200_000, 0.1)
    nclx.set_threshold(1000)
    got = nu.fma(a, 10.0, -1.0)
    assert got[0] == 5.551115123125783e-17 and (a * 10.0 - 1.0)[0] == 0.0
    assert np.all(got == got[0])
    f = nu.fma(np.float32(1.5), np.float32(2), np.float32(-3))
    assert f.dtype == np.float32 and f == 0
    assert math.copysign(1, nu.fma(-0.0, 1.0, -0.0)) == -1


@pytest.mark.parametrize("dt", spec.ALL)
def test_where_equals_numpy_where(dt):
    nclx.set_threshold(1000)
    rng = np.random.default_rng(2)
    cond = rng.integers(0, 2, 100_003).astype(bool)
    x, y = _edge(dt, 100_003, 3), _edge(dt, 100_003, 4)
    _same_bits(np.where(cond, x, y), nu.where(cond, x, y))
    _same_bits(np.where(cond[::-1][:50_000], x[::2][:50_000], y[0]),
               nu.where(cond[::-1][:50_000], x[::2][:50_000], y[0]))


CAST_DTYPES = spec.ALL


@pytest.mark.parametrize("src", CAST_DTYPES)
def test_convert_equals_astype_values_and_warnings(src):
    nclx.set_threshold(1000)
    x = _edge(src, 20_000, 5)
    if np.dtype(src).kind == "f":
        x = np.concatenate([x, np.array([1e10, -1e10, 3e38, 255.5, -128.7, 2**63, 2**64, -2**63],
                                        dtype=src)])
    for dst in CAST_DTYPES:
        want, got, w0, w1 = stock_and_installed(lambda: x.astype(dst))
        with np.errstate(all="warn"), _Rec() as rec:
            mine = nclx.convert(x, dst)
        _same_bits(want, mine)
        assert rec.messages == w0, (src, dst)
        with np.errstate(all="ignore"):
            _same_bits(x[::-3].astype(dst), nclx.convert(x[::-3], dst))


class _Rec:
    def __enter__(self):
        import warnings
        self._cm = warnings.catch_warnings(record=True)
        self._w = self._cm.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self.messages = sorted(str(w.message) for w in self._w)
        return self._cm.__exit__(*exc)


def test_convert_shapes_layout_errors():
    a = np.arange(12.0).reshape(3, 4).T
    c = nclx.convert(a, np.int16)
    assert c.strides == a.astype(np.int16).strides and c.flags.f_contiguous
    z = nclx.convert(np.float64(2.5), np.int8)
    assert isinstance(z, np.ndarray) and z.shape == () and z == 2
    assert nclx.convert(np.empty((0, 3)), np.uint8).shape == (0, 3)
    with pytest.raises(TypeError, match="according to the rule 'safe'"):
        nclx.convert(a, np.int64, casting="safe")
    with pytest.raises(TypeError, match="float16"):
        nclx.convert(a, np.float16)
    with pytest.raises(ValueError) as mine:
        nclx.convert(a, np.int8, casting="loose")
    with pytest.raises(ValueError) as stock:
        a.astype(np.int8, casting="loose")
    assert str(mine.value) == str(stock.value)
    m = np.ma.array([1.5, 2.5], mask=[True, False])
    cm = nclx.convert(m, np.int32)
    assert isinstance(cm, np.ma.MaskedArray) and cm.mask.tolist() == [True, False]
    be = np.arange(5, dtype=">i4")
    _same_bits(be.astype(np.float64), nclx.convert(be, np.float64))


def test_new_ops_under_threads_hammering_install():
    nclx.set_threshold(2000)
    x = np.linspace(0.1, 5, 40_000)
    want = {op: spec.numpy_ufunc(op)(x) for op in ("exp", "log", "tanh")}
    errors = []

    def worker():
        try:
            for _ in range(20):
                for op, w in want.items():
                    if spec.numpy_ufunc(op)(x).tobytes() != w.tobytes():
                        errors.append(op)
        except Exception as exc:     # pragma: no cover - reported below
            errors.append(repr(exc))
    with nclx.installed():
        ts = [threading.Thread(target=worker) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
    assert not errors


def test_hook_that_raises_on_a_new_subsystem_loses_no_result(monkeypatch):
    import sys
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)

    def bad(call):
        raise RuntimeError("boom")
    h = nclx.hooks.register("funnel", "unary", bad, name="bad")
    try:
        with nclx.installed():
            r = np.exp(np.ones(10))
            c = np.clip(np.arange(5.0), 1, 3)        # ternary: not hooked, unaffected
    finally:
        h.remove()
    _same_bits(r, np.full(10, math.e))
    _same_bits(c, np.array([1.0, 1, 2, 3, 3]))
    assert h.errors == 1 and isinstance(h.last_error, RuntimeError) and len(seen) == 1
    assert not nclx.is_installed()


# ---------------------------------------- np.where on nclx-aware operands

def _where_case(case, f, n, rng):
    cases = {
        "same": lambda: (f > 0, f, -f),
        "int8-pyint": lambda: (f > 0, _edge("int8", n, 2), 0),
        "f32-pyfloat": lambda: (f > 0, f.astype(np.float32), 1.5),
        "int-cond": lambda: (rng.integers(-2, 3, n), f, 2.0),
        "nan-cond": lambda: (f, np.ones(n), np.zeros(n)),
        "mixed": lambda: (f > 0, rng.integers(0, 9, n).astype(np.int32), f),
        "broadcast": lambda: ((f > 0).reshape(-1, 1)[:300], f[:7], np.float64(-0.0)),
    }
    return cases[case]()


@pytest.mark.parametrize("case", ["same", "int8-pyint", "f32-pyfloat", "int-cond", "nan-cond",
                                  "mixed", "broadcast"])
def test_np_where_on_aware_operands_runs_the_ternary_chain(case):
    nclx.set_threshold(1000)
    rng = np.random.default_rng(3)
    n = 100_003
    f = _edge("float64", n, 1)
    with np.errstate(all="ignore"):
        args = _where_case(case, f, n, rng)
        want = np.where(*args)
        aware_args = tuple(nclx.hooks.aware(a) if isinstance(a, np.ndarray) else a for a in args)
        with nclx.ledger.recording() as led:
            got = np.where(*aware_args)
    assert isinstance(got, nclx.hooks.NclxArray)
    _same_bits(want, got.view(np.ndarray))
    assert "where" in {r.op for r in led.records()}


def test_np_where_on_storages_and_ragged_and_fallbacks():
    import nclx.storage as st
    from nclx.types import from_list
    s = st.zeros((5,), dtype=np.float64)
    w = np.where(s > -1, 5, s)
    assert type(w).__name__.endswith("Storage") and np.asarray(w).tolist() == [5.0] * 5
    r = from_list([[1, 2, 3], [4]])
    assert np.where(r > 1, r, 0).to_list() == [[0, 2, 3], [4]]
    a = nclx.hooks.aware(np.arange(4.0))
    # NumPy's own for the one-argument form and for dtypes nclx does not serve
    assert [x.tolist() for x in np.where(a)] == [[1, 2, 3]]
    h = np.where(a > 1, a.astype(np.float16), a.astype(np.float16))
    assert h.dtype == np.float16
    assert np.sum(s) == 0.0 and float(np.mean(a)) == 1.5      # other functions unchanged


# ------------------------------------------------------------- hypothesis

@st.composite
def _op_call(draw):
    """(op, operands, kwargs): an op served by NumPy's loops, operands of one
    of its loop dtypes with mutually broadcastable shapes (0-d and empty
    included), laid out as strided/reversed/transposed views, out= and
    where= sometimes."""
    op = draw(st.sampled_from(NUMPY_OPS))
    dts = draw(st.sampled_from(_nin_dtypes(op)))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=len(dts), max_dims=3, max_side=6))
    args = [draw(laid_out(dt, shape)) for dt, shape in zip(dts, shapes.input_shapes)]
    if op in ("left_shift", "right_shift", "power") and dts[0].kind in "iu":
        args[1] = np.abs(args[1].astype(np.int64) % 9).astype(dts[1])
    kw = {}
    if draw(st.booleans()) and shapes.result_shape:
        kw["where"] = draw(hnp.arrays(np.bool_, shapes.result_shape))
    return op, args, kw


@given(_op_call(), st.sampled_from([1, 2, 3]))
def test_hypothesis_installed_equals_stock(call, threads):
    op, args, kw = call
    nclx.set_num_threads(threads)
    nclx.set_threshold(1)          # split every call nclx may split
    uf = spec.numpy_ufunc(op)
    try:
        def run():
            res = uf(*args, **kw)
            return res if "where" not in kw else np.asarray(res)[np.asarray(kw["where"])]
        try:
            want, got, w0, w1 = stock_and_installed(run)
        except (ValueError, TypeError) as exc:
            # both must raise the same (NumPy's own loop raises it)
            with pytest.raises(type(exc)), nclx.installed():
                run()
            return
        _same_bits(want, got)
        assert w0 == w1
    finally:
        nclx.reset_thresholds()


def test_forked_child_runs_the_new_ops_after_the_parent_started_the_team():
    import os
    nclx.set_threshold(1000)
    x = np.linspace(0.1, 3, 50_000)
    want = np.exp(x).tobytes(), x.astype(np.float32).tobytes()
    with nclx.installed():
        np.exp(x)                      # the parent's team has run
        pid = os.fork()
        if pid == 0:                   # pragma: no cover - child
            ok = (np.exp(x).tobytes() == want[0]
                  and nclx.convert(x, np.float32).tobytes() == want[1]
                  and nclx.get_num_threads() == 1)
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _round_to(frac, dt):
    """The exactly rounded (nearest, ties to even) value of ``frac`` in ``dt``."""
    guess = dt.type(float(frac))
    best = None
    for cand in (np.nextafter(guess, dt.type(-np.inf)), guess, np.nextafter(guess, dt.type(np.inf))):
        if not np.isfinite(cand):
            continue
        err = abs(fractions.Fraction(float(cand)) - frac)
        key = (err, int(np.array(cand).view(np.uint32 if dt.itemsize == 4 else np.uint64)) & 1)
        if best is None or key < best[0]:
            best = (key, cand)
    return best[1]


def _exact_fma(a, b, c, dt):
    out = np.empty(np.broadcast(a, b, c).shape, dt)
    for idx in np.ndindex(out.shape):
        x, y, z = (float(np.broadcast_to(v, out.shape)[idx]) for v in (a, b, c))
        if not all(map(math.isfinite, (x, y, z))):
            out[idx] = dt.type(x) * dt.type(y) + dt.type(z)     # inf/nan: no rounding question
            continue
        exact = fractions.Fraction(x) * fractions.Fraction(y) + fractions.Fraction(z)
        if exact == 0:     # the sign of an exact zero: IEEE's rule, as plain arithmetic gives it
            out[idx] = dt.type(x) * dt.type(y) + dt.type(z) if x * y == 0 else dt.type(0.0)
            continue
        out[idx] = _round_to(exact, dt)
    return out


@given(st.data())
def test_hypothesis_fma_and_where_layouts_out_where(data):
    dt = np.dtype(data.draw(st.sampled_from(["float32", "float64"])))
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=2, max_side=5))
    a, b, c = (data.draw(laid_out(dt, s)) for s in shapes.input_shapes)
    for arr in (a, b, c):
        arr[...] = np.clip(np.nan_to_num(arr), -1e6, 1e6)
    with np.errstate(all="ignore"):
        got = nu.fma(a, b, c)
    want = _exact_fma(a, b, c, dt)      # a*b+c exact, rounded once in dt
    assert np.asarray(got).dtype == dt
    assert np.array_equal(np.asarray(got), want)
    cond = data.draw(hnp.arrays(np.bool_, shapes.result_shape))
    out = np.zeros(shapes.result_shape, dt)
    mask = data.draw(hnp.arrays(np.bool_, shapes.result_shape))
    nu.where(cond, a, b, out=out, where=mask)
    ref = np.zeros(shapes.result_shape, dt)
    np.copyto(ref, np.where(cond, a, b), where=mask)
    assert out.tobytes() == ref.tobytes()


@pytest.mark.parametrize("val,dst", [(1e300, np.float32), (np.nan, np.int32), (1e-300, np.float32),
                                     (-np.inf, np.uint8)])
@pytest.mark.parametrize("where", [0, -1])
def test_convert_reports_flags_raised_in_any_thread_chunk(val, dst, where):
    """A flag raised on a worker thread reaches the caller's MXCSR, where
    nclx.convert's fast path reads it (glibc's feraiseexcept put overflow
    and underflow in the x87 unit only)."""
    nclx.set_num_threads(2)
    nclx.set_threshold(1000)
    a = np.zeros(100_000)
    a[where] = val
    want, got, w0, w1 = stock_and_installed(lambda: a.astype(dst))
    with _Rec() as rec, np.errstate(all="warn"):
        mine = nclx.convert(a, dst)
    _same_bits(want, mine)
    assert rec.messages == w0 and w0
    kind = w0[0].split()[0]
    short = {"overflow": "over", "invalid": "invalid", "underflow": "under"}[kind]
    with np.errstate(**{short: "raise"}), pytest.raises(FloatingPointError, match="in cast"):
        nclx.convert(a, dst)


@pytest.mark.parametrize("op", NUMPY_OPS)
def test_mixed_dtypes_and_dtype_keyword_equal_stock(op):
    """Casting calls (NumPy buffers them in chunks) and dtype=/signature=,
    with errors: installed equals stock."""
    nclx.set_threshold(1000)
    uf = spec.numpy_ufunc(op)
    n = 40_000
    pools = [_edge("int32", n, 1), _edge("float32", n, 2), _edge("uint16", n, 3),
             _edge("int8", n, 4), _edge("float64", n, 5), _edge("bool", n, 6)]
    combos = [pools[i:i + uf.nin] for i in range(len(pools) - uf.nin + 1)]
    if op in ("left_shift", "right_shift", "power"):
        with np.errstate(invalid="ignore"):    # nan -> int in the exponent pools
            combos = [[c[0]] + [np.abs(x.astype(np.int64)) % 7 for x in c[1:]] for c in combos]
    calls = [lambda c=c: uf(*c) for c in combos]
    calls += [lambda c=c: uf(*c, dtype=np.float64) for c in combos[:2]]
    calls += [lambda c=c: uf(*c, dtype=np.float32, casting="unsafe") for c in combos[:2]]
    for fn in calls:
        try:
            want, got, w0, w1 = stock_and_installed(fn)
        except (TypeError, ValueError) as exc:
            with nclx.installed(), np.errstate(all="ignore"), pytest.raises(type(exc)):
                fn()
            continue
        _same_bits(want, got)
        assert w0 == w1


# ----------------------------------------------- issue 21 review regressions
# Regression tests for defects that reviews found; each failed on the code
# before its fix and runs under ``threaded_clean`` (conftest: two threads,
# every op split above 65,536 elements).
# First cut: integer power was split and a worker's ValueError lost (its
# piece unwritten); nclx.ufuncs' loop lists and identities must be NumPy's.
# Second review: np.where on aware operands takes odd operands as NumPy does;
# a bool->bool cast copies the byte as astype.
@pytest.mark.usefixtures("threaded_clean")
def test_integer_power_with_a_negative_exponent_raises_at_every_size_and_thread_count():
    """A ValueError NumPy's int power loop raised on a worker thread was lost
    (the rest of that piece unwritten): integer power is never split."""
    import nclx.ufuncs as nu
    a = np.full(200_000, 2, np.int64)
    b = np.ones_like(a)
    b[-1] = -1
    nclx.set_num_threads(2)
    nclx.set_threshold(1000)
    try:
        with pytest.raises(ValueError, match="negative integer powers"):
            nu.power(a, b)
        with nclx.installed(), pytest.raises(ValueError, match="negative integer powers"):
            np.power(a, b)
        with nclx.checked(), pytest.raises(ValueError, match="negative integer powers"):
            np.power(a, b)
    finally:
        nclx.reset_thresholds()


@pytest.mark.usefixtures("threaded_clean")
def test_nclx_ufuncs_resolve_like_numpy_float16_and_identities():
    import nclx.ufuncs as nu
    for op in ("exp", "sqrt", "arctan2", "reciprocal"):
        npf, mine = getattr(np, op), getattr(nu, op)
        assert mine.types == npf.types
        args = [np.array([1, 2], np.int8)] * npf.nin
        assert mine(*args).dtype == npf(*args).dtype
    assert nu.logical_and.identity is True and nu.logical_or.identity is False
    assert nu.hypot.identity == 0


@pytest.mark.usefixtures("threaded_clean")
def test_np_where_on_aware_operands_matches_numpy_for_odd_operands():
    a = nclx.hooks.aware(np.array([True, False, True]))
    u8 = np.array([1, 2, 3], np.uint8)
    i8 = np.array([1, 2, 3], np.int8)
    cases = [(a, None, 1), (a, u8, -1), (a, i8, 300), (a, np.arange(3), 2**63),
             (a, [1, 2, 3], 0.5), (a, "x", "y")]
    for c, x, y in cases:
        with np.errstate(all="ignore"):
            try:
                want = np.where(np.asarray(c), x, y)
            except (OverflowError, TypeError, ValueError) as exc:
                # NumPy 2.5 refuses a Python int that does not fit (2.4 wraps it)
                with pytest.raises(type(exc), match=re.escape(str(exc))):
                    np.where(c, x, y)
                continue
            got = np.where(c, x, y)
        assert np.asarray(got).dtype == want.dtype and np.asarray(got).tolist() == want.tolist()
    z = np.where(nclx.hooks.aware(np.array(True)), 1, 2)
    assert isinstance(z, np.ndarray) and z.shape == () and z == 1


@pytest.mark.usefixtures("threaded_clean")
def test_convert_bool_to_bool_copies_the_byte_as_astype():
    b = np.array([2, 255, 0, 1], np.uint8).view(bool)
    assert nclx.convert(b, bool).view(np.uint8).tolist() == b.astype(bool).view(np.uint8).tolist()

