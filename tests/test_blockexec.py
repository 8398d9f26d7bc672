"""nclx._ncl.blockexec: programs of ufunc steps run in blocks equal the eager
NumPy expression bit for bit (values, dtype, warnings, errors), for any
thread count and block size."""
import multiprocessing
import threading
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nclx.ufuncs
from nclx._fused_program import Program, Step
from nclx._ncl import blockexec as bx

THREADS = (1, 2, 3, 7)
SIZES = (0, 1, 7, 8, 127, 128, 129, 8191, 8192, 8193, 65535, 65536, 65537, 99991)


@pytest.fixture(autouse=True)
def _settings():
    """Every test runs with threading from 0 elements; settings restored after."""
    old_t = bx.threshold(0)
    old_b = bx.block_bytes()
    yield
    bx.threshold(old_t)
    bx.block_bytes(0)
    assert bx.block_bytes() == old_b


@pytest.fixture(params=["default", "small"])
def blocks(request):
    """Default blocks (L2-sized) and the smallest (128 elements: many blocks)."""
    if request.param == "small":
        bx.block_bytes(1)
    return request.param


def _c(dt):
    return np.dtype(dt).char


# ---------------------------------------------------------------- programs
# each: (program, eager function of the operands); operands: 1-d a, b then 0-d

def two_a_plus_bb(dt):
    c = _c(dt) * 3
    return (Program([Step(np.multiply, c, (0, 2), 3), Step(np.multiply, c, (1, 1), 4),
                     Step(np.add, c, (3, 4), 5)], 6, 3, 5),
            lambda a, b, two: two * a + b * b, True)


def a_minus_b_over_a_plus_b(dt):
    c = _c(dt) * 3
    div = np.true_divide if np.dtype(dt).kind == "f" else np.floor_divide
    return (Program([Step(np.subtract, c, (0, 1), 2), Step(np.add, c, (0, 1), 3),
                     Step(div, c, (2, 3), 4)], 5, 2, 4),
            lambda a, b: div(a - b, a + b), False)


def hypot_expr(dt):
    c = _c(dt)
    return (Program([Step(np.multiply, c * 3, (0, 0), 2), Step(np.multiply, c * 3, (1, 1), 3),
                     Step(np.add, c * 3, (2, 3), 4), Step(np.sqrt, c * 2, (4,), 5)], 6, 2, 5),
            lambda a, b: np.sqrt(a * a + b * b), False)


def exp_neg_aa(dt):
    c = _c(dt)
    return (Program([Step(np.negative, c * 2, (0,), 1), Step(np.multiply, c * 3, (1, 0), 2),
                     Step(np.exp, c * 2, (2,), 3)], 4, 1, 3),
            lambda a: np.exp(-a * a), False)


def greater_times(dt):
    c = _c(dt)
    return (Program([Step(np.greater, c * 2 + "?", (0, 1), 2),
                     Step(nclx.ufuncs.cast, "?" + c, (2,), 3),
                     Step(np.multiply, c * 3, (3, 0), 4)], 5, 2, 4),
            lambda a, b: (a > b) * a, False)


def bool_logic(dt):
    return (Program([Step(np.logical_and, "???", (0, 1), 2),
                     Step(np.logical_xor, "???", (2, 0), 3)], 4, 2, 3),
            lambda a, b: np.logical_xor(np.logical_and(a, b), a), False)


def sum_ab(dt, kind="sum"):
    c = _c(dt) * 3
    return Program([Step(np.multiply, c, (0, 1), 2)], 3, 2, 2, kind, c)


CASES = [(two_a_plus_bb, "f8"), (two_a_plus_bb, "f4"), (two_a_plus_bb, "i8"),
         (a_minus_b_over_a_plus_b, "f8"), (a_minus_b_over_a_plus_b, "f4"),
         (a_minus_b_over_a_plus_b, "i8"), (hypot_expr, "f8"), (hypot_expr, "f4"),
         (exp_neg_aa, "f8"), (exp_neg_aa, "f4"), (greater_times, "f8"), (bool_logic, "?")]


def _data(dt, n, seed=0):
    rng = np.random.default_rng(seed + n)
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind == "i":
        return rng.integers(-1000, 1000, n).astype(dt)
    x = rng.standard_normal(n).astype(dt)
    if n > 8:
        x[:8] = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30, 3.0], dt)
    return x


def _operands(fn, dt, n):
    nargs = fn.__code__.co_argcount
    ops = [_data(dt, n, 0), _data(dt, n, 1)][: min(nargs, 2)]
    if nargs == 3:
        ops.append(np.array(2, dt))
    return ops


def _same(got, ref):
    assert type(got) is type(ref)
    assert got.dtype == ref.dtype
    assert got.shape == ref.shape
    assert got.tobytes() == ref.tobytes()


def _quiet(fn, *args, **kw):
    with np.errstate(all="ignore"):
        return fn(*args, **kw)


# ------------------------------------------------------------ elementwise

@pytest.mark.parametrize("case,dt", CASES, ids=lambda x: getattr(x, "__name__", x))
@pytest.mark.parametrize("n", SIZES)
def test_elementwise_equals_eager(case, dt, n, blocks):
    program, eager, _ = case(dt)
    ops = _operands(eager, dt, n)
    ref = _quiet(eager, *ops)
    for t in THREADS:
        _same(_quiet(bx.execute, program, ops, threads=t), ref)


@pytest.mark.parametrize("case,dt", CASES[:4], ids=lambda x: getattr(x, "__name__", x))
def test_large_and_default_threads(case, dt):
    program, eager, _ = case(dt)
    ops = _operands(eager, dt, 1_000_003)
    ref = _quiet(eager, *ops)
    for t in (None, 2, 3):
        _same(_quiet(bx.execute, program, ops, threads=t), ref)


def test_below_threshold_default_threshold():
    bx.threshold(1 << 16)
    program, eager, _ = two_a_plus_bb("f8")
    for n in (65535, 65536, 65537):
        ops = _operands(eager, "f8", n)
        _same(_quiet(bx.execute, program, ops, threads=2), _quiet(eager, *ops))


def test_block_elements_fit_half_l2():
    program, _, _ = two_a_plus_bb("f8")
    B = bx.block_elements(program)
    assert B % 8 == 0 and B >= 128
    assert B * 8 * 6 <= bx.block_bytes()        # six float64 slots live per element
    bx.block_bytes(1)
    assert bx.block_elements(program) == 128


def test_out_given_and_written_in_place():
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 100_003)
    out = np.full(100_003, 7.0)
    got = _quiet(bx.execute, program, ops, out=out, threads=3)
    assert got is out
    _same(out, _quiet(eager, *ops))


@pytest.mark.parametrize("which", [0, 1])
def test_out_is_an_operand(which):
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 70_001)
    ref = _quiet(eager, *ops)
    got = _quiet(bx.execute, program, ops, out=ops[which], threads=3)
    assert got is ops[which]
    _same(ops[which], ref)


@pytest.mark.parametrize("shift", [1, -1, 8, -8])
def test_out_partially_overlaps_an_operand(shift):
    program, eager, _ = two_a_plus_bb("f8")
    n = 50_000
    buf = _data("f8", n + 8)
    if shift > 0:
        a, out = buf[:n], buf[shift:shift + n]
    else:
        a, out = buf[-shift:-shift + n], buf[:n]
    b = _data("f8", n, 5)
    work = buf.copy()
    wa = work[: n] if shift > 0 else work[-shift:-shift + n]
    wout = work[shift:shift + n] if shift > 0 else work[:n]
    with np.errstate(all="ignore"):
        np.add(np.multiply(np.float64(2), wa), b * b, out=wout)  # NumPy's eager semantics
        bx.execute(program, [a, b, np.array(2.0)], out=out, threads=3)
    assert buf.tobytes() == work.tobytes()


def test_zero_d_operand_overlapping_out_is_copied():
    program, eager, _ = two_a_plus_bb("f8")
    a = _data("f8", 1000)
    b = _data("f8", 1000, 3)
    out = np.zeros(1000)
    two = out[5:6].reshape(())       # 0-d view into out
    out[5] = 2.0
    ref = _quiet(lambda: 2.0 * a + b * b)
    with np.errstate(all="ignore"):
        bx.execute(program, [a, b, two], out=out, threads=2)
    _same(out, ref)


def test_all_zero_d_operands_with_out():
    program, _, _ = two_a_plus_bb("f8")
    out = np.empty(1000)
    bx.execute(program, [np.array(3.0), np.array(4.0), np.array(2.0)], out=out)
    assert (out == 22.0).all()


# -------------------------------------------------------------- reductions

SUM_SIZES = (0, 1, 7, 8, 127, 128, 129, 8191, 8192, 8193, 65535, 65536, 65537, 1_000_003)


@pytest.mark.parametrize("dt", ["f8", "f4", "i8"])
@pytest.mark.parametrize("n", SUM_SIZES)
def test_sum_equals_add_reduce(dt, n, blocks):
    program = sum_ab(dt)
    rng = np.random.default_rng(n)
    a = _data(dt, n)
    b = _data(dt, n, 1)
    if dt != "i8":
        b = (b * 10.0 ** rng.uniform(-8, 8, n)).astype(dt)     # many magnitudes: order matters
        a[:8] = 1.0
    ref = _quiet(np.add.reduce, _quiet(np.multiply, a, b))
    for t in range(1, 8):
        _same(_quiet(bx.execute, program, [a, b], threads=t), ref)


@pytest.mark.parametrize("values", [[-0.0], [-0.0] * 7, [-0.0] * 300, [np.nan] + [1.0] * 200,
                                    [np.inf] * 130, [-np.inf] * 70 + [np.inf] * 70,
                                    [1e308] * 300, []])
@pytest.mark.parametrize("dt", ["f8", "f4"])
def test_sum_special_values(values, dt):
    a = _quiet(np.array, values, dt)
    program = Program([], 1, 1, 0, "sum", _c(dt) * 3)
    ref = _quiet(np.add.reduce, a)
    for t in THREADS:
        _same(_quiet(bx.execute, program, [a], threads=t), ref)


def test_int64_sum_wraps():
    a = np.full(100_001, 2**62, np.int64)
    _same(bx.execute(Program([], 1, 1, 0, "sum", "lll"), [a], threads=3), np.add.reduce(a))


@pytest.mark.parametrize("dt", ["f8", "f4", "i8"])
@pytest.mark.parametrize("n", [0, 1, 129, 70_001])
def test_prod_equals_multiply_reduce(dt, n):
    a = (1.0 + _data("f8", n) * 1e-3).astype(dt) if dt != "i8" else _data(dt, n) % 3 + 1
    b = np.ones(n, dt)
    program = sum_ab(dt, "prod")
    ref = _quiet(np.multiply.reduce, a * b)
    for t in THREADS:
        _same(_quiet(bx.execute, program, [a, b], threads=t), ref)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 40_000), t=st.integers(1, 7), bb=st.sampled_from([0, 1, 5000]),
       dt=st.sampled_from(["f8", "f4"]), seed=st.integers(0, 2**32 - 1))
def test_hypothesis_sum_and_elementwise(n, t, bb, dt, seed):
    bx.block_bytes(bb)
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 6, n)).astype(dt)
    b = rng.standard_normal(n).astype(dt)
    _same(_quiet(bx.execute, sum_ab(dt), [a, b], threads=t), _quiet(np.add.reduce, a * b))
    program, eager, _ = two_a_plus_bb(dt)
    two = np.array(2, dt)
    _same(_quiet(bx.execute, program, [a, b, two], threads=t), _quiet(eager, a, b, two))
