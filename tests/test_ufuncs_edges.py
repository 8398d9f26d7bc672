"""Edge values and floating-point warnings, every ISA build, against NumPy.

All pairs of a dtype's edge values (limits, zeros, +-1, NaN, infinities,
subnormals) are compared at once in contiguous, strided, reversed and
outer-broadcast layouts; for operations that can raise floating-point flags
each pair is also tried on its own (so a warning is attributed to the
operands raising it): as a 33-element contiguous array (vector body and
tail), with a broadcast scalar operand on either side, and as one element.
Named tests pin the documented semantics explicitly as well as comparing
them with NumPy.
"""
import itertools
import operator
import warnings

import numpy as np
import pytest

from conftest import (BINARY_OPS, COMPARE_OPS, FLOATS, INTS, OPS, SIGNED,
                      TEST_DTYPES, UNSIGNED, Mismatches, assert_same, compare_call, dtype_id,
                      extreme_values, nclx_ufunc, numpy_reference_args, run_recorded,
                      warning_set)

REPEAT = 33
#: Ops that can raise floating-point flags on integer inputs.
INT_WARNING_OPS = ("floor_divide", "remainder", "true_divide", "sqrt")


def _whole_layouts(values, nin):
    """All combinations of ``values`` at once, in layouts reaching every kernel path."""
    if nin == 1:
        x = values
        return [("contiguous", (x,)), ("negative_stride", (np.repeat(x, 2)[::-2],)),
                ("tiled_contiguous", (np.tile(x, 3),))]
    x, y = (v.ravel().copy() for v in np.meshgrid(values, values, indexing="ij"))
    return [("contiguous", (x, y)),
            ("strided", (np.repeat(x, 2)[::2], np.repeat(y, 3)[::-3][::-1])),
            ("negative_stride", (x[::-1], y[::-1])),
            ("outer_broadcast", (values.reshape(-1, 1), values.reshape(1, -1)))]


def _pair_layouts(combo):
    """One combination of edge values alone: vectorised, broadcast scalar, single."""
    scalars = tuple(np.array(v) for v in combo)
    arrs = tuple(np.full(REPEAT, v, v.dtype) for v in scalars)
    yield "contiguous", arrs
    yield "single", tuple(a[:1] for a in arrs)
    if len(combo) == 2:
        yield "scalar_second", (arrs[0], scalars[1])
        yield "scalar_first", (scalars[0], arrs[1])


def _check_pairs(op, values, isa, per_pair=True):
    """Compare NumPy and nclx on all combinations of ``values``; report every mismatch.

    All combinations at once in several layouts (results bit for bit, the
    set of warnings); then, when ``per_pair``, each combination on its own
    so that each warning is attributed to the operands raising it.
    """
    nin = nclx_ufunc(op, isa).nin
    m = Mismatches()

    def check(label, args):
        m.check(label, compare_call, op, *args, isa=isa, np_args=numpy_reference_args(op, args))

    for layout, args in _whole_layouts(values, nin):
        check(f"[all combinations, {layout}]", args)
    if per_pair:
        for combo in itertools.product(values, repeat=nin):
            for layout, args in _pair_layouts(combo):
                check(f"[{layout}] {tuple(v.item() for v in combo)}", args)
    m.assert_none()


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", OPS)
def test_every_pair_of_edge_values_matches_numpy_with_warnings(op, dt, isa):
    per_pair = np.dtype(dt).kind == "f" or op in INT_WARNING_OPS
    _check_pairs(op, extreme_values(dt), isa, per_pair=per_pair)


# ------------------------------------------------------------------ integers
@pytest.mark.parametrize("dt", SIGNED + UNSIGNED + ("q", "Q"), ids=dtype_id)
def test_integer_arithmetic_wraps_around_like_numpy(dt, isa):
    info = np.iinfo(dt)
    hi = np.array([info.max] * 40, dt)
    lo = np.array([info.min] * 40, dt)
    one = np.array([1] * 40, dt)
    two = np.array([2] * 40, dt)
    got_add = compare_call("add", hi, one, isa=isa)
    got_sub = compare_call("subtract", lo, one, isa=isa)
    got_mul = compare_call("multiply", hi, two, isa=isa)
    got_neg = compare_call("negative", lo, isa=isa)
    got_abs = compare_call("absolute", lo, isa=isa)
    assert (got_add == info.min).all()          # max + 1 wraps to min
    assert (got_sub == info.max).all()          # min - 1 wraps to max
    assert (got_mul == np.array(info.max, dt) * np.array(2, dt)).all()
    assert (got_neg == info.min).all()          # -min == min (signed), -0 == 0 (unsigned)
    assert (got_abs == info.min).all()          # abs(min) == min for signed


@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
@pytest.mark.parametrize("dt", INTS + ("q", "Q"), ids=dtype_id)
def test_integer_division_by_zero_gives_zero_and_divide_by_zero_warning(op, dt, isa):
    info = np.iinfo(dt)
    a = np.array([info.min, info.max, 0, 1, 7] * 8, dt)
    z = np.zeros_like(a)
    for args in ((a, z), (a, np.array(0, dt)), (a[::-3], z[::3]), (a[:1], z[:1])):
        got = compare_call(op, *args, isa=isa)
        assert (got == 0).all()
        _, _, rec = run_recorded(nclx_ufunc(op, isa), *args)
        assert warning_set(rec, nclx_ufunc(op, isa)) == {
            (RuntimeWarning, "divide by zero encountered in <ufunc>")}
    # and under errstate(divide='raise') it is an error, as in NumPy
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            getattr(np, op)(a, z)
        with pytest.raises(FloatingPointError):
            nclx_ufunc(op, isa)(a, z)


@pytest.mark.parametrize("dt", INTS + ("q", "Q"), ids=dtype_id)
def test_integer_true_divide_by_zero_gives_inf_nan_like_numpy(dt, isa):
    a = np.array([0, 1, np.iinfo(dt).max, np.iinfo(dt).min], dt)
    for x in a:
        compare_call("true_divide", np.full(20, x, dt), np.zeros(20, dt), isa=isa)


@pytest.mark.parametrize("dt", SIGNED + ("q",), ids=dtype_id)
def test_signed_min_floor_divide_minus_one_gives_min_and_overflow_warning(dt, isa):
    info = np.iinfo(dt)
    for n in (1, 3, 40):
        a = np.full(n, info.min, dt)
        m1 = np.full(n, -1, dt)
        for args in ((a, m1), (a, np.array(-1, dt)), (np.array(info.min, dt), m1)):
            got = compare_call("floor_divide", *args, isa=isa)
            assert (np.asarray(got) == info.min).all()
            _, _, rec = run_recorded(nclx_ufunc("floor_divide", isa), *args)
            assert warning_set(rec, nclx_ufunc("floor_divide", isa)) == {
                (RuntimeWarning, "overflow encountered in <ufunc>")}
        # MIN % -1 is 0 and silent
        got = compare_call("remainder", a, m1, isa=isa)
        assert (got == 0).all()
        _, _, rec = run_recorded(nclx_ufunc("remainder", isa), a, m1)
        assert not rec


SIGN_RULE_VALUES = [-9, -7, -2, -1, 0, 1, 2, 3, 7, 9]


@pytest.mark.parametrize("dt", SIGNED + ("q",) + FLOATS, ids=dtype_id)
def test_floor_divide_and_remainder_follow_python_sign_rules(dt, isa):
    a, b = np.array(list(itertools.product(SIGN_RULE_VALUES, SIGN_RULE_VALUES)), dt).T
    keep = b != 0
    a, b = a[keep].copy(), b[keep].copy()
    q = compare_call("floor_divide", a, b, isa=isa)
    r = compare_call("remainder", a, b, isa=isa)
    for x, y, qq, rr in zip(a.tolist(), b.tolist(), q.tolist(), r.tolist()):
        assert qq == x // y and rr == x % y, (x, y, qq, rr)
        # the remainder takes the sign of the divisor (a zero too, for floats)
        if np.dtype(dt).kind == "f" and rr == 0:
            assert np.signbit(rr) == (y < 0), (x, y, rr)


@pytest.mark.parametrize("dt", UNSIGNED + ("Q",), ids=dtype_id)
def test_unsigned_floor_divide_and_remainder_of_large_values(dt, isa):
    info = np.iinfo(dt)
    vals = np.array([info.max, info.max - 1, info.max // 2, 1, 2, 3, 255], dt)
    a, b = (v.copy() for v in np.array(list(itertools.product(vals, vals)), dt).T)
    q = compare_call("floor_divide", a, b, isa=isa)
    r = compare_call("remainder", a, b, isa=isa)
    for x, y, qq, rr in zip(a.tolist(), b.tolist(), q.tolist(), r.tolist()):
        assert (qq, rr) == divmod(x, y)


# -------------------------------------------------------------------- floats
FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 2.5, -7.0, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
@pytest.mark.parametrize("dt", FLOATS)
def test_float_floor_divide_remainder_of_specials_match_numpy_bitwise(op, dt, isa):
    vals = np.array(FLOAT_SPECIALS + [1e-300 if dt == "float64" else 1e-40, 1e300 if dt == "float64" else 3e38], dt)
    _check_pairs(op, vals, isa)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("dt", FLOATS)
def test_maximum_minimum_propagate_nan_without_warning(op, dt, isa):
    # NumPy propagates a NaN from either side and raises no FP warning
    nan, one = np.array(np.nan, dt), np.array(1.0, dt)
    for n in (1, 2, 3, 4, 8, 9, 16, 33):
        a = np.full(n, nan)
        b = np.full(n, one)
        for args in ((a, b), (b, a), (a, a), (a, one), (one, a), (b, nan), (nan, b)):
            got = compare_call(op, *args, isa=isa)
            assert np.isnan(got).all()
            _, _, rec = run_recorded(nclx_ufunc(op, isa), *args)
            assert not rec, (f"{op}({args[0].dtype}[{np.shape(args[0])}], ...) with NaN "
                             f"warned: {[str(w.message) for w in rec]}")


@pytest.mark.parametrize("op", COMPARE_OPS)
@pytest.mark.parametrize("dt", FLOATS)
def test_float_comparisons_with_nan_are_quiet_and_false(op, dt, isa):
    # IEEE quiet predicates: NaN compares unordered (only != is True), no warning
    for n in (1, 4, 8, 16, 17, 64):
        a = np.full(n, np.nan, dt)
        b = np.linspace(-2, 2, n).astype(dt)
        for args in ((a, b), (b, a), (a, a), (a[::-1], b[::2].repeat(2)[:n])):
            got = compare_call(op, *args, isa=isa)
            assert (got == (op == "not_equal")).all()
            _, _, rec = run_recorded(nclx_ufunc(op, isa), *args)
            assert not rec, f"{op} on NaN warned: {[str(w.message) for w in rec]} (n={n})"


SIGNED_ZERO_CASES = [
    ("add", -0.0, -0.0), ("add", 0.0, -0.0), ("add", -0.0, 0.0), ("subtract", -0.0, 0.0),
    ("subtract", 0.0, 0.0), ("subtract", -0.0, -0.0), ("multiply", -0.0, 5.0),
    ("multiply", 0.0, -5.0), ("true_divide", 1.0, -np.inf), ("true_divide", -0.0, 3.0),
    ("floor_divide", -0.0, 1.0), ("floor_divide", 0.0, -1.0), ("floor_divide", 1.0, np.inf),
    ("floor_divide", -1.0, -np.inf), ("remainder", -0.0, 1.0), ("remainder", 0.0, -1.0),
    ("remainder", 4.0, -2.0), ("remainder", -4.0, 2.0), ("maximum", 0.0, -0.0),
    ("maximum", -0.0, 0.0), ("minimum", 0.0, -0.0), ("minimum", -0.0, 0.0),
    ("negative", 0.0), ("negative", -0.0), ("absolute", -0.0), ("sqrt", -0.0), ("sqrt", 0.0),
]


@pytest.mark.parametrize("case", SIGNED_ZERO_CASES, ids=lambda c: f"{c[0]}{c[1:]}")
@pytest.mark.parametrize("dt", FLOATS)
def test_sign_of_zero_results_matches_numpy(case, dt, isa):
    op, *vals = case
    expected = getattr(np, op)(*(np.array(v, dt) for v in vals))
    assert expected == 0  # every case has a zero result: its sign is the point
    for n in (1, 5, 32):
        arrs = tuple(np.full(n, v, dt) for v in vals)
        got = compare_call(op, *arrs, isa=isa)
        assert (np.signbit(got) == np.signbit(expected)).all()
    # the 0-d / scalar path too
    got = compare_call(op, *(np.array(v, dt) for v in vals), isa=isa)
    assert np.signbit(got) == np.signbit(expected)


FP_WARNING_CASES = [
    # (op, a, b, the warning NumPy gives)
    ("multiply", "max", 2.0, "overflow"),
    ("add", "max", "max", "overflow"),
    ("subtract", "-max", "max", "overflow"),
    ("multiply", "tiny", "tiny", "underflow"),
    ("true_divide", "tiny", "max", "underflow"),
    ("true_divide", 1.0, 0.0, "divide by zero"),
    ("true_divide", 0.0, 0.0, "invalid value"),
    ("add", np.inf, -np.inf, "invalid value"),
    ("subtract", np.inf, np.inf, "invalid value"),
    ("multiply", 0.0, np.inf, "invalid value"),
    ("sqrt", -1.0, None, "invalid value"),
    ("sqrt", -np.inf, None, "invalid value"),
    ("remainder", np.inf, 2.0, "invalid value"),
    ("remainder", 1.0, 0.0, "invalid value"),
    ("floor_divide", 1.0, 0.0, "divide by zero"),
    ("floor_divide", 0.0, 0.0, "invalid value"),
]


def _fval(v, dt):
    fi = np.finfo(dt)
    return {"max": fi.max, "-max": -fi.max, "tiny": fi.tiny}.get(v, v) if isinstance(v, str) else v


@pytest.mark.parametrize("case", FP_WARNING_CASES, ids=lambda c: f"{c[0]}-{c[3]}")
@pytest.mark.parametrize("dt", FLOATS)
def test_floating_point_warning_is_raised_like_numpy(case, dt, isa):
    op, a, b, kind = case
    vals = [np.array(_fval(a, dt), dt)] + ([] if b is None else [np.array(_fval(b, dt), dt)])
    for n in (1, 17):
        arrs = tuple(np.full(n, v) for v in vals)
        compare_call(op, *arrs, isa=isa)
        _, _, rec = run_recorded(nclx_ufunc(op, isa), *arrs)
        assert (RuntimeWarning, f"{kind} encountered in <ufunc>") in warning_set(rec, nclx_ufunc(op, isa))
        # errstate(all='raise') turns it into FloatingPointError on both sides
        with np.errstate(all="raise"):
            with pytest.raises(FloatingPointError):
                getattr(np, op)(*arrs)
            with pytest.raises(FloatingPointError):
                nclx_ufunc(op, isa)(*arrs)
        # and errstate(all='ignore') silences both
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(all="ignore"):
                nclx_ufunc(op, isa)(*arrs)


# ------------------------------------------------------------ dtype behaviour
@pytest.mark.parametrize("dt", ["bool", "int8", "uint8"])
def test_sqrt_of_bool_int8_uint8_is_float32_where_numpy_gives_float16(dt, isa):
    # documented difference: nclx has no float16 loops, so NumPy's float16
    # result becomes float32, equal to NumPy's sqrt of the float32 cast
    x = np.array([0, 1, 2, 3, 4, 100, 127] + ([] if dt == "bool" else [-1 if dt == "int8" else 255]))
    x = x.astype(dt)
    with np.errstate(invalid="ignore"):  # sqrt(-1)
        assert np.sqrt(x).dtype == np.float16
        got = nclx_ufunc("sqrt", isa)(x)
    assert got.dtype == np.float32
    compare_call("sqrt", x, isa=isa, np_args=(x.astype(np.float32),))


def test_sqrt_of_wider_ints_matches_numpy_dtype(isa):
    for dt in ("int16", "uint16", "int32", "uint32", "int64", "uint64", "q", "Q"):
        x = np.arange(0, 50, 7).astype(dt)
        got = compare_call("sqrt", x, isa=isa)
        assert got.dtype == np.sqrt(x).dtype


def test_integer_true_divide_computes_in_float64_like_numpy(isa):
    for dt in ("bool", "int8", "uint8", "int16", "int32", "uint64", "q"):
        a = np.arange(1, 9).astype(dt)
        got = compare_call("true_divide", a, a[::-1], isa=isa)
        assert got.dtype == np.float64


@pytest.mark.parametrize("op", OPS)
def test_mixed_dtype_promotion_matches_numpy(op, isa):
    # every pair of NumPy type characters nclx serves, as NumPy promotes them
    nin = nclx_ufunc(op, isa).nin
    chars = "?bBhHiIlLqQfd"
    for combo in itertools.product(chars, repeat=nin):
        args = tuple(np.array([1, 0, 1, 1, 0, 1, 1], c) * np.array(3).astype(c) if c != "?" else
                     np.array([1, 0, 1, 1, 0, 1, 1], c) for c in combo)
        compare_call(op, *args, isa=isa, np_args=numpy_reference_args(op, args))


MIXED_INT_VALUES = [np.iinfo(np.int64).min, -(2**62), -2, -1, 0, 1, 2**53 + 1, 2**62,
                    np.iinfo(np.int64).max]
MIXED_UINT_VALUES = [0, 1, 2**53, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2,
                     2**64 - 1]


@pytest.mark.parametrize("op", COMPARE_OPS)
@pytest.mark.parametrize("chars", ["lL", "qQ", "lQ", "qL"])
def test_mixed_int64_uint64_comparison_is_exact(op, chars, isa):
    pairs = list(itertools.product(MIXED_INT_VALUES, MIXED_UINT_VALUES))
    i = np.array([p[0] for p in pairs], chars[0])
    u = np.array([p[1] for p in pairs], chars[1])
    pyop = getattr(operator, {"equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le",
                              "greater": "gt", "greater_equal": "ge"}[op])
    for a, b, py in ((i, u, [pyop(x, y) for x, y in pairs]),
                     (u, i, [pyop(y, x) for x, y in pairs])):
        for layout in (lambda v: v, lambda v: v[::-1], lambda v: np.repeat(v, 2)[::2]):
            aa, bb = layout(a), layout(b)
            got = compare_call(op, aa, bb, isa=isa)
            exp = layout(np.array(py))
            assert got.tolist() == exp.tolist()
        # the broadcast scalar paths
        for k in (0, len(pairs) // 2, len(pairs) - 1):
            compare_call(op, a, b[k:k + 1].reshape(()), isa=isa)
            compare_call(op, a[k:k + 1].reshape(()), b, isa=isa)


def test_mixed_int64_uint64_comparison_uses_the_exact_loop(isa):
    sigs = nclx_ufunc("less", isa).types
    assert "qQ->?" in sigs and "Qq->?" in sigs
    # a value float64 cannot tell apart from its neighbour
    a = np.array([2**63 - 1], np.int64)
    b = np.array([2**63], np.uint64)
    assert nclx_ufunc("less", isa)(a, b).tolist() == [True]
    assert nclx_ufunc("equal", isa)(a, b).tolist() == [False]
    assert nclx_ufunc("equal", isa)(np.array([-1]), np.array([2**64 - 1], np.uint64)).tolist() == [False]


# ------------------------------------------------------------ odd bool bytes
def odd_bools(n=40, seed=0):
    """A bool array holding bytes other than 0 and 1 (2, 255, 128, ...)."""
    raw = np.array([0, 1, 2, 255, 128, 3, 0, 64], np.uint8)
    rng = np.random.default_rng(seed)
    return rng.choice(raw, n).astype(np.uint8).view(bool)


@pytest.mark.parametrize("op", OPS)
def test_bool_arrays_with_bytes_other_than_0_and_1_match_numpy(op, isa):
    nin = nclx_ufunc(op, isa).nin
    arrs = [odd_bools(40, seed=k) for k in range(nin)]
    assert (arrs[0].view(np.uint8) > 1).any()
    layouts = [tuple(arrs), tuple(a[::-2] for a in arrs), tuple(a[:1] for a in arrs)]
    if nin == 2:
        # every ordered pair of the odd bytes
        raw = np.array([0, 1, 2, 255], np.uint8)
        x, y = (v.copy().view(bool) for v in np.array(list(itertools.product(raw, raw)), np.uint8).T)
        layouts.append((np.tile(x, 3), np.tile(y, 3)))
    for args in layouts:
        compare_call(op, *args, isa=isa, np_args=numpy_reference_args(op, args))


def _normalised(x):
    return (np.asarray(x).view(np.uint8) != 0).reshape(np.shape(x))


@pytest.mark.parametrize("op", [o for o in OPS if o in BINARY_OPS])
def test_odd_bool_bytes_against_a_0d_bool_read_nonzero_as_true(op, isa):
    # NumPy 2.4 itself is inconsistent here: np.equal(a, s) for bool arrays
    # holding byte 2 against a 0-d bool holding 2 gives True for the first
    # 32 elements and False after (its SIMD and scalar paths disagree).
    # nclx reads every nonzero byte as True, so the reference is NumPy on
    # the same values stored as canonical 0/1 bools.
    arr = odd_bools(40, seed=7)
    for args in [(arr, np.array([2], np.uint8).view(bool).reshape(())),
                 (np.array([255], np.uint8).view(bool).reshape(()), arr)]:
        ref = tuple(_normalised(a) for a in args)
        compare_call(op, *args, isa=isa, np_args=numpy_reference_args(op, ref))


# ----------------------------------------------------- scalars and promotion
PY_SCALARS = [0, 1, -1, 127, 200, 2**31, -(2**40), 2**63 - 1, 2**64 - 1, 2**70, 0.5, -0.0,
              float("inf"), float("nan"), 1e300, True, False]


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_python_scalar_operand_promotes_weakly_like_numpy(op, dt, isa):
    # NEP 50: int8 array + 1 stays int8; out-of-range Python ints raise
    # OverflowError; Python floats make integer arrays float64
    a = np.array([0, 1, 2, 3, 5, 7, 100], np.int64).astype(dt)
    m = Mismatches()
    for s in PY_SCALARS:
        m.check(f"array op {s!r}", compare_call, op, a, s, isa=isa)
        m.check(f"{s!r} op array", compare_call, op, s, a, isa=isa)
        m.check(f"numpy scalar op {s!r}", compare_call, op, a[1], s, isa=isa)
        m.check(f"0-d array op {s!r}", compare_call, op, np.array(a[1]), s, isa=isa)
    m.assert_none()


def test_int8_array_plus_python_int_stays_int8(isa):
    a = np.array([1, 2, 127], np.int8)
    got = nclx_ufunc("add", isa)(a, 1)
    assert got.dtype == np.int8
    assert got.tolist() == [2, 3, -128]
    assert nclx_ufunc("add", isa)(a, 1.0).dtype == np.float64
    assert nclx_ufunc("add", isa)(np.float32([1]), 1.0).dtype == np.float32
    with pytest.raises(OverflowError):
        np.add(a, 300)
    with pytest.raises(OverflowError):
        nclx_ufunc("add", isa)(a, 300)


def test_python_scalars_only_call_matches_numpy(isa):
    m = Mismatches()
    for op in OPS:
        nin = nclx_ufunc(op, isa).nin
        for vals in [(3, -2), (3.5, -2.0), (True, False), (7, 2.0), (-1, 0), (2**63, 1),
                     (2**64 - 1, -1), (-(2**63), 2**63)]:
            args = vals[:nin]
            m.check(f"{op}{args}", compare_call, op, *args, isa=isa,
                    np_args=numpy_reference_args(op, args))
    m.assert_none()


# ------------------------------------------------------------------- errors
REJECTED = [
    ("subtract", ("bool", "bool")),
    ("negative", ("bool",)),
    ("bitwise_and", ("float64", "float64")),
    ("bitwise_or", ("float32", "float32")),
    ("bitwise_xor", ("float64", "int64")),
    ("invert", ("float64",)),
    ("invert", ("float32",)),
]


@pytest.mark.parametrize("case", REJECTED, ids=lambda c: f"{c[0]}-{'-'.join(c[1])}")
def test_operation_numpy_rejects_raises_same_exception(case, isa):
    op, dts = case
    args = tuple(np.array([1, 0, 1], dt) for dt in dts)
    with pytest.raises(TypeError) as np_err:
        getattr(np, op)(*args)
    with pytest.raises(TypeError) as nx_err:
        nclx_ufunc(op, isa)(*args)
    assert type(nx_err.value) is type(np_err.value)
    # the 0-d and scalar forms too
    compare_call(op, *(a[0] for a in args), isa=isa)
    compare_call(op, *(np.array(a[0]) for a in args), isa=isa)


def test_casting_error_on_out_matches_numpy(isa):
    a = np.arange(5, dtype=np.float64)
    compare_call("add", a, a, isa=isa, out=lambda: np.zeros(5, np.int64))
    compare_call("sqrt", a, isa=isa, out=lambda: np.zeros(5, np.int32))
    compare_call("add", a, a, isa=isa, out=lambda: np.zeros(5, np.int64), casting="unsafe")
    compare_call("add", a, a, isa=isa, out=lambda: np.zeros(4))  # wrong shape: ValueError


# --------------------------------------------------------- __array_ufunc__
class Recorder:
    """Defers every ufunc to itself and records what it was called with."""

    def __init__(self):
        self.calls = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self.calls.append((ufunc, method, inputs, kwargs))
        return "overridden"


@pytest.mark.parametrize("op", OPS)
def test_array_ufunc_override_is_called_with_the_nclx_ufunc(op, isa):
    uf = nclx_ufunc(op, isa)
    r = Recorder()
    args = (r,) if uf.nin == 1 else (np.arange(3), r)
    assert uf(*args) == "overridden"
    (called, method, inputs, _kw), = r.calls
    assert called is uf and called is not getattr(np, op)
    assert method == "__call__"
    assert inputs[-1] is r
    if uf.nin == 2:
        assert uf.reduce(r, axis=0) == "overridden"
        assert r.calls[-1][0] is uf and r.calls[-1][1] == "reduce"
        assert uf.accumulate(r) == "overridden" and r.calls[-1][1] == "accumulate"
        assert uf.outer(r, 1) == "overridden" and r.calls[-1][1] == "outer"
        # an override passed as out= is consulted as well
        assert uf(np.arange(3), 1, out=(r,)) == "overridden"
        assert r.calls[-1][3]["out"] == (r,)


def test_array_ufunc_none_makes_nclx_ufunc_raise_typeerror(isa):
    class Opaque:
        __array_ufunc__ = None

    with pytest.raises(TypeError):
        np.add(np.arange(3), Opaque())
    with pytest.raises(TypeError):
        nclx_ufunc("add", isa)(np.arange(3), Opaque())


def test_ndarray_subclass_is_preserved_like_numpy(isa):
    class Sub(np.ndarray):
        pass

    a = np.arange(6, dtype=np.float64).view(Sub)
    for op in ("add", "less", "sqrt"):
        nin = nclx_ufunc(op, isa).nin
        exp = getattr(np, op)(*([a] * nin))
        got = nclx_ufunc(op, isa)(*([a] * nin))
        assert type(got) is type(exp) is Sub
        assert_same(exp.view(np.ndarray), got.view(np.ndarray))


# ------------------------------------------- the comparison itself can fail
def test_assert_same_tells_apart_what_the_suite_relies_on():
    # the sign of zero, the type character, 0-d vs scalar, bool bytes, NaN
    cases = [
        (np.array([0.0]), np.array([-0.0])),
        (np.array([1], "l"), np.array([1], "q")),
        (np.array(1.0), np.float64(1.0)),
        (np.array([1], np.uint8).view(bool), np.array([2], np.uint8).view(bool)),
        (np.array([np.nan]), np.array([1.0])),
        (np.array([1.0], np.float32), np.array([1.0])),
        (np.zeros((2, 1)), np.zeros((1, 2))),
    ]
    for expected, actual in cases:
        with pytest.raises(AssertionError):
            assert_same(expected, actual)
    # NaN equals NaN whatever the payload and sign
    assert_same(np.array([np.nan]), np.array([-np.nan]))


def test_compare_call_detects_wrong_results_and_warnings(monkeypatch):
    import conftest

    def quiet_sqrt(x):  # NumPy's result, without its warning
        with np.errstate(all="ignore"):
            return np.sqrt(x)

    fake = {"add": np.subtract, "sqrt": quiet_sqrt}
    monkeypatch.setattr(conftest, "nclx_ufunc", lambda op, isa: fake[op])
    with pytest.raises(AssertionError, match="differ"):
        compare_call("add", np.arange(3.0), np.ones(3))
    with pytest.raises(AssertionError, match="warnings differ"):
        compare_call("sqrt", np.array([-0.0, -1.0]))
