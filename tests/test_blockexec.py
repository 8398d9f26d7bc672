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


# ------------------------------------------------- floating-point reporting

N_FP = 70_001
CATEGORIES = {          # category: (ufunc, a value, b value) raising it
    "divide": (np.true_divide, 1.0, 0.0),
    "over": (np.multiply, 1e308, 10.0),
    "under": (np.multiply, 1e-308, 1e-100),
    "invalid": (np.subtract, np.inf, np.inf),
}


def _fp_case(cat, where):
    """(program, operands, eager(out)) with ``cat`` raised by the first or the last step."""
    uf, x, y = CATEGORIES[cat]
    a = np.full(N_FP, 1.5)
    b = np.full(N_FP, 2.0)
    a[N_FP - 3], b[N_FP - 3] = x, y
    c = np.zeros(N_FP)
    if where == "first":
        steps = [Step(uf, "ddd", (0, 1), 3), Step(np.add, "ddd", (3, 2), 4)]

        def eager(out):
            return np.add(uf(a, b), c, out=out)
    else:
        steps = [Step(np.add, "ddd", (0, 2), 3), Step(uf, "ddd", (3, 1), 4)]

        def eager(out):
            return uf(np.add(a, c), b, out=out)
    return Program(steps, 5, 3, 4), [a, b, c], eager


def _observe(fn, out):
    """(outcome, out's bytes, warnings, callback calls) of fn(out)."""
    calls = []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        old = np.seterrcall(lambda msg, flag: calls.append((msg, flag)))
        try:
            res = fn(out)
            outcome = ("ok", None if out is not None else res.tobytes())
        except FloatingPointError as e:
            outcome = ("raise", str(e))
        finally:
            np.seterrcall(old)
    got_w = [(x.category, str(x.message)) for x in w]
    return outcome, None if out is None else out.tobytes(), got_w, calls


@pytest.mark.parametrize("cat", list(CATEGORIES))
@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("mode", ["ignore", "warn", "raise", "call"])
@pytest.mark.parametrize("with_out", [False, True])
def test_errstate_modes_as_eager(cat, where, mode, with_out):
    """out= is written as np.copyto(out, result) would (nclx.evaluate's
    out=): a step that raises, the last one included, leaves it untouched
    (found by review: a raise in the last step, or in a one-step program,
    wrote out first, as a ufunc's own out= would)."""
    program, ops, eager = _fp_case(cat, where)

    def copied(out):
        result = eager(None)
        if out is None:
            return result
        np.copyto(out, result)
        return out
    results = []
    for fn in (copied, lambda out: bx.execute(program, ops, out=out, threads=3)):
        out = np.full(N_FP, -7.0) if with_out else None
        with np.errstate(all="ignore", **{cat: mode}):
            results.append(_observe(fn, out))
    assert results[1] == results[0]
    if mode == "raise" and with_out:
        assert results[1][1] == np.full(N_FP, -7.0).tobytes(), "out was written"


@pytest.mark.parametrize("threads", [1, 3])
def test_a_one_step_program_that_raises_leaves_out_untouched(threads):
    a = np.arange(100_000.0)
    b = np.ones(100_000)
    b[7] = 0.0
    out = np.full(100_000, -7.0)
    program = Program([Step(np.true_divide, "ddd", (0, 1), 2)], 3, 2, 2)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        bx.execute(program, [a, b], out=out, threads=threads)
    assert out.tobytes() == np.full(100_000, -7.0).tobytes()


@pytest.mark.parametrize("threads", THREADS)
def test_one_warning_per_step_in_order(threads):
    a = np.array([1.0, 0.0, np.inf, 1e300] * 40_000)
    b = np.array([0.0, 0.0, np.inf, 1e300] * 40_000)
    program = Program([Step(np.true_divide, "ddd", (0, 1), 2), Step(np.multiply, "ddd", (1, 1), 3),
                       Step(np.subtract, "ddd", (2, 3), 4), Step(np.sqrt, "dd", (4,), 5)], 6, 2, 5)

    def eager(out):
        return np.sqrt(np.subtract(np.true_divide(a, b), np.multiply(b, b)))
    ref = _observe(eager, None)
    got = _observe(lambda out: bx.execute(program, [a, b], threads=threads), None)
    assert got == ref
    assert len(ref[2]) >= 3


def test_integer_divide_by_zero_reported_as_numpy():
    a = np.arange(100_000, dtype=np.int64)
    b = a % 7
    program = Program([Step(np.floor_divide, "lll", (0, 1), 2), Step(np.remainder, "lll", (0, 1), 3),
                       Step(np.add, "lll", (2, 3), 4)], 5, 2, 4)
    ref = _observe(lambda out: np.add(a // b, a % b), None)
    got = _observe(lambda out: bx.execute(program, [a, b], threads=2), None)
    assert got == ref and ref[2]


@pytest.mark.parametrize("mode", ["warn", "raise"])
def test_reduction_reports_as_reduce(mode):
    a = np.full(100_000, 1e300)
    program = Program([Step(np.multiply, "ddd", (0, 0), 1)], 2, 1, 1, "sum", "ddd")
    with np.errstate(all=mode):
        ref = _observe(lambda out: np.add.reduce(a * a), None)
        got = _observe(lambda out: bx.execute(program, [a], threads=2), None)
    assert got == ref
    b = np.full(100_000, 1e306)       # each b + b finite, their sum not
    with np.errstate(all=mode):
        ref = _observe(lambda out: np.add.reduce(b + b), None)
        got = _observe(lambda out: bx.execute(Program([Step(np.add, "ddd", (0, 0), 1)], 2, 1, 1,
                                                      "sum", "ddd"), [b], threads=3), None)
    assert got == ref and "reduce" in str(ref)


def test_flags_left_from_before_are_not_reported():
    program, eager, _ = two_a_plus_bb("f8")
    ops = [np.ones(100), np.ones(100), np.array(2.0)]
    _quiet(np.multiply, np.float64(1e308), np.float64(10))    # leaves overflow set
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            bx.execute(program, ops)


# ------------------------------------------------------ bad programs, bad operands

def _p(*steps, nslots=4, ninputs=2, result=None, reduce=None, rc=None):
    return Program(steps, nslots, ninputs, steps[-1].out if result is None and steps else result,
                   reduce, rc)


BAD_PROGRAMS = [
    ("not a program", (np.add, "ddd", (0, 1), 2), TypeError, "Program"),
    ("ufunc", _p(Step(len, "ddd", (0, 1), 2)), TypeError, "step 0: ufunc"),
    ("nin", _p(Step(np.add, "ddd", (0,), 2)), ValueError, "reads 2 slots"),
    ("chars length", _p(Step(np.add, "dd", (0, 1), 2)), ValueError, "3 type characters"),
    ("float16", _p(Step(np.add, "eee", (0, 1), 2)), TypeError, "'e'"),
    ("divmod", _p(Step(np.divmod, "dddd", (0, 1), 2)), ValueError, "outputs"),
    ("no loop", _p(Step(np.isnan, "dd", (0,), 2)), TypeError, "no loop"),
    ("slot range", _p(Step(np.add, "ddd", (0, 9), 2)), ValueError, "input slot 1"),
    ("read first", _p(Step(np.add, "ddd", (0, 3), 2), Step(np.add, "ddd", (2, 2), 3)),
     ValueError, "reads slot 3 before"),
    ("write twice", _p(Step(np.add, "ddd", (0, 1), 2), Step(np.add, "ddd", (0, 1), 2)),
     ValueError, "already written"),
    ("write operand", _p(Step(np.add, "ddd", (0, 1), 1)), ValueError, "output slot"),
    ("dtypes disagree", _p(Step(np.add, "ddd", (0, 1), 2), Step(np.add, "fff", (2, 2), 3)),
     TypeError, "reads slot 2 as float32"),
    ("result", _p(Step(np.add, "ddd", (0, 1), 2), Step(np.add, "ddd", (0, 1), 3), result=2),
     ValueError, "result is slot 2"),
    ("reduce kind", _p(Step(np.add, "ddd", (0, 1), 2), reduce="max", rc="ddd"), ValueError, "reduce"),
    ("reduce chars", _p(Step(np.add, "ddd", (0, 1), 2), reduce="sum", rc="fff"), TypeError,
     "reduce_chars"),
    ("bool sum", _p(Step(np.logical_and, "???", (0, 1), 2), reduce="sum", rc="???"), TypeError,
     "without a cast"),
    ("no steps", Program([], 2, 2, 0), ValueError, "without steps"),
    ("too many slots", Program([], 65, 1, 0, "sum", "ddd"), ValueError, "nslots"),
]


@pytest.mark.parametrize("name,program,exc,text", BAD_PROGRAMS, ids=[b[0] for b in BAD_PROGRAMS])
def test_bad_programs_raise_clearly(name, program, exc, text):
    with pytest.raises(exc, match=text):
        bx.execute(program, [np.ones(4), np.ones(4)])


def _misaligned(n):
    raw = np.zeros(n * 8 + 1, np.uint8)
    return raw[1:].view(np.float64)


BAD_OPERANDS = [
    ("count", lambda a: [a], {}, ValueError, "takes 2 operands"),
    ("list", lambda a: [a, [1.0] * 10], {}, TypeError, "operand 1 must be a numpy.ndarray"),
    ("2-d", lambda a: [a, np.ones((2, 5))], {}, ValueError, "operand 1 must be 0-d or 1-d"),
    ("dtype", lambda a: [a.astype(np.float32), a], {}, TypeError, "operand 0 has dtype float32"),
    ("strided", lambda a: [a, np.ones(20)[::2]], {}, ValueError, "operand 1 is not contiguous"),
    ("byte order", lambda a: [a, a.astype(">f8")], {}, TypeError, "operand 1"),
    ("misaligned", lambda a: [_misaligned(10), a], {}, ValueError, "operand 0 is not aligned"),
    ("length", lambda a: [a, np.ones(11)], {}, ValueError, "operand 1 has length 11"),
    ("subclass", lambda a: [a, np.ma.ones(10)], {}, TypeError, "operand 1"),
    ("out length", lambda a: [a, a], {"out": np.ones(9)}, ValueError, "out has length 9"),
    ("out dtype", lambda a: [a, a], {"out": np.ones(10, np.float32)}, TypeError, "out has dtype"),
    ("out read-only", lambda a: [a, a], {"out": np.broadcast_to(np.ones(1), (10,))}, ValueError,
     "out"),
    ("threads", lambda a: [a, a], {"threads": 0}, ValueError, "threads"),
    ("no length", lambda a: [np.array(1.0), np.array(2.0)], {}, ValueError, "no 1-d operand"),
]


@pytest.mark.parametrize("name,make,kw,exc,text", BAD_OPERANDS, ids=[b[0] for b in BAD_OPERANDS])
def test_bad_operands_raise_clearly(name, make, kw, exc, text):
    program = _p(Step(np.add, "ddd", (0, 1), 2), nslots=3)
    with pytest.raises(exc, match=text):
        bx.execute(program, make(np.ones(10)), **kw)


def test_reduction_refuses_out():
    with pytest.raises(ValueError, match="out must be None"):
        bx.execute(sum_ab("f8"), [np.ones(4), np.ones(4)], out=np.ones(4))


def test_settings_validate():
    with pytest.raises(ValueError):
        bx.threshold(-1)
    with pytest.raises(ValueError):
        bx.block_bytes(-1)


# ------------------------------------------------------------ threads, fork

def test_python_threads_at_once():
    cases = [two_a_plus_bb("f8"), hypot_expr("f4"), a_minus_b_over_a_plus_b("i8")]
    jobs = []
    for (program, eager, _), dt in zip(cases, ["f8", "f4", "i8"]):
        ops = _operands(eager, dt, 150_001)
        jobs.append((program, ops, _quiet(eager, *ops)))
    jobs.append((sum_ab("f8"), [_data("f8", 150_001), _data("f8", 150_001, 3)], None))
    jobs[-1] = (jobs[-1][0], jobs[-1][1], _quiet(np.add.reduce, _quiet(np.multiply, *jobs[-1][1])))
    errors = []

    def work(job):
        program, ops, ref = job
        try:
            for _ in range(15):
                _same(_quiet(bx.execute, program, ops, threads=2), ref)
        except BaseException as e:     # reported on the main thread
            errors.append(e)
    ths = [threading.Thread(target=work, args=(jobs[i % len(jobs)],)) for i in range(6)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert not errors, errors


def _child(conn):
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 200_001)
    got = _quiet(bx.execute, program, ops, threads=2)
    s = _quiet(bx.execute, sum_ab("f8"), ops[:2], threads=2)
    conn.send((got.tobytes() == _quiet(eager, *ops).tobytes(),
               s.tobytes() == _quiet(np.add.reduce, ops[0] * ops[1]).tobytes()))
    conn.close()


def test_fork_after_threaded_run():
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 200_001)
    _same(_quiet(bx.execute, program, ops, threads=2), _quiet(eager, *ops))
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    p = ctx.Process(target=_child, args=(child,))
    p.start()
    assert parent.poll(60)
    assert parent.recv() == (True, True)
    p.join(30)
    assert p.exitcode == 0


def test_release_then_run_again():
    program, eager, _ = two_a_plus_bb("f8")
    ops = _operands(eager, "f8", 100_000)
    bx.release()
    _same(_quiet(bx.execute, program, ops, threads=2), _quiet(eager, *ops))
    bx.release()
    _same(_quiet(bx.execute, program, ops, threads=3), _quiet(eager, *ops))
