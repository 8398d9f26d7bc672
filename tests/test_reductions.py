"""reduce / accumulate / reduceat of nclx ufuncs against NumPy's, every ISA.

NumPy's reduction machinery drives nclx's loops: a binary kernel called with
the output aliasing its first input at stride 0 is a reduction.  Float add
must reduce pairwise with NumPy's association, so sums carry the same bits.
"""
import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from conftest import (BIG, BINARY_OPS, SPLIT, DTYPE_NAMES, FLOATS, TEST_DTYPES, Mismatches, assert_same,
                      compare_call, dtype_id, nclx_ufunc, run_recorded, sample_array,
                      stock_and_installed, warning_set)

SHAPE = (4, 5, 6)


def cube(dt, seed=0):
    return sample_array(dt, int(np.prod(SHAPE)), seed=seed).reshape(SHAPE)


def inputs(dt):
    """The same data in contiguous, transposed and negative-stride layouts."""
    a = cube(dt)
    big = cube(dt, seed=1)
    return {
        "contiguous": a,
        "transposed": a.transpose(2, 0, 1),
        "negative_stride": big[::-1, :, ::-2],
        "fortran": np.asfortranarray(a),
    }


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_reduce_over_axes_matches_numpy(op, dt, isa):
    m = Mismatches()
    for layout, a in inputs(dt).items():
        for axis in (None, 0, 1, 2, -1, (0, 2), (), (0, 1, 2)):
            for keepdims in (False, True):
                m.check(f"{layout} axis={axis} keepdims={keepdims}", compare_call, op, a, isa=isa,
                        method="reduce", axis=axis, keepdims=keepdims)
    m.assert_none()


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_reduce_with_initial_where_out_and_dtype_matches_numpy(op, dt, isa):
    a = cube(dt, seed=7)
    init = a.flat[3].item()
    mask = np.random.default_rng(3).random(SHAPE) < 0.6
    m = Mismatches()
    for axis in (None, 0, 2, (0, 1)):
        m.check(f"initial axis={axis}", compare_call, op, a, isa=isa, method="reduce", axis=axis,
                initial=init)
        m.check(f"where axis={axis}", compare_call, op, a, isa=isa, method="reduce", axis=axis,
                where=mask)
        m.check(f"where+initial axis={axis}", compare_call, op, a, isa=isa, method="reduce",
                axis=axis, where=mask, initial=init)
        m.check(f"where=False row axis={axis}", compare_call, op, a, isa=isa, method="reduce",
                axis=axis, where=np.zeros(6, bool), initial=init)
    for target in ("int64", "float64", "bool", "uint8"):
        m.check(f"dtype={target}", compare_call, op, a, isa=isa, method="reduce", axis=1, dtype=target)
    m.check("out=", compare_call, op, a, isa=isa, method="reduce", axis=1,
            out=lambda: np.zeros((4, 6), np.asarray(nclx_ufunc(op, isa).reduce(a[:1, :1], axis=1)).dtype)
            if _reduces(op, a) else np.zeros((4, 6), a.dtype))
    m.check("out= strided", compare_call, op, a, isa=isa, method="reduce", axis=0,
            out=lambda: np.zeros((5, 12), a.dtype)[:, ::2])
    m.assert_none()


def _reduces(op, a):
    try:
        with np.errstate(all="ignore"):
            nclx_ufunc(op, "baseline").reduce(a[:1, :1], axis=1)
        return True
    except (TypeError, ValueError):
        return False


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_reduce_of_empty_uses_identity_or_raises_like_numpy(op, dt, isa):
    m = Mismatches()
    for shape, axis in (((0,), 0), ((0,), None), ((3, 0), 1), ((3, 0), 0), ((0, 4), 0)):
        e = np.zeros(shape, dt)
        m.check(f"shape={shape} axis={axis}", compare_call, op, e, isa=isa, method="reduce", axis=axis)
        m.check(f"shape={shape} axis={axis} initial", compare_call, op, e, isa=isa,
                method="reduce", axis=axis, initial=1)
    m.assert_none()


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_accumulate_matches_numpy(op, dt, isa):
    m = Mismatches()
    for layout, a in inputs(dt).items():
        for axis in (0, 1, 2, -1):
            m.check(f"{layout} axis={axis}", compare_call, op, a, isa=isa, method="accumulate",
                    axis=axis)
    v = sample_array(dt, 301, seed=5)
    m.check("1-d", compare_call, op, v, isa=isa, method="accumulate")
    m.check("1-d reversed", compare_call, op, v[::-1], isa=isa, method="accumulate")
    for target in ("int64", "float64"):
        m.check(f"dtype={target}", compare_call, op, v, isa=isa, method="accumulate", dtype=target)
    m.check("out=", compare_call, op, v, isa=isa, method="accumulate",
            out=lambda: np.zeros(602, v.dtype)[::2])
    m.assert_none()


@pytest.mark.parametrize("dt", TEST_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_reduceat_matches_numpy(op, dt, isa):
    m = Mismatches()
    a = cube(dt, seed=9)
    for axis, idx in ((0, [0, 2, 1, 3]), (1, [0, 0, 4, 1, 2]), (2, [5, 0, 3]), (-1, [0])):
        m.check(f"axis={axis} indices={idx}", compare_call, op, a, np.array(idx), isa=isa,
                method="reduceat", axis=axis)
    v = sample_array(dt, 200, seed=2)
    idx = np.array([0, 10, 10, 150, 3, 199])
    m.check("1-d", compare_call, op, v, idx, isa=isa, method="reduceat")
    m.check("1-d strided", compare_call, op, v[::-2], idx // 2, isa=isa, method="reduceat")
    m.assert_none()


# ------------------------------------------------------------------ pairwise
PAIRWISE_LENGTHS = list(range(0, 301)) + [511, 512, 513, 1023, 8191, 8192, 8193, 10**5 + 3]


def _wide_range(dt, n, seed):
    """Values over many orders of magnitude and both signs: association matters."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 6, n)).astype(dt)


@pytest.mark.parametrize("dt", FLOATS)
def test_float_add_reduce_is_bit_identical_to_numpy_pairwise_sum(dt, isa):
    add = nclx_ufunc("add", isa)
    m = Mismatches()
    for n in PAIRWISE_LENGTHS:
        v = _wide_range(dt, 3 * n, seed=n)
        for label, x in (("contiguous", v[:n]), ("stride 3", v[::3]), ("stride -1", v[:n][::-1]),
                         ("stride -2", v[::-2][:n])):
            assert x.shape == (n,)
            m.check(f"n={n} {label}", lambda x=x: assert_same(np.add.reduce(x), add.reduce(x)))
    m.assert_none()


@pytest.mark.parametrize("dt", FLOATS)
def test_float_add_reduce_association_is_observable(dt, isa):
    # the data of the pairwise test is such that a plain left-to-right sum
    # differs from NumPy's: a non-pairwise kernel could not pass that test
    add = nclx_ufunc("add", isa)
    differs = 0
    for n in (100, 200, 300, 10**5 + 3):
        x = _wide_range(dt, n, seed=n)
        naive = np.zeros((), dt)
        for v in x[:2000]:
            naive = naive + v
        if n <= 2000 and naive.tobytes() != np.add.reduce(x).tobytes():
            differs += 1
        assert_same(np.add.reduce(x), add.reduce(x))
    assert differs >= 1


@pytest.mark.parametrize("dt", FLOATS)
def test_float_add_reduce_along_axes_matches_numpy_sum(dt, isa):
    m = Mismatches()
    a = _wide_range(dt, 37 * 300, seed=4).reshape(37, 300)
    for axis in (0, 1, None):
        m.check(f"axis={axis}", compare_call, "add", a, isa=isa, method="reduce", axis=axis)
        m.check(f"axis={axis} F-order", compare_call, "add", np.asfortranarray(a), isa=isa,
                method="reduce", axis=axis)
        m.check(f"axis={axis} where", compare_call, "add", a, isa=isa, method="reduce", axis=axis,
                where=(np.arange(300) % 3 != 0))
    # float32 summed in float64 (the iterator buffers casts), and np.sum itself
    m.check("float32 as float64", compare_call, "add", a.astype(np.float32), isa=isa,
            method="reduce", axis=1, dtype=np.float64)
    big = _wide_range(dt, 10**5 + 3, seed=8)
    m.check("sum == np.sum", lambda: assert_same(np.sum(big), nclx_ufunc("add", isa).reduce(big)))
    m.check("-0.0 sums", compare_call, "add", np.full(5, -0.0, dt), isa=isa, method="reduce")
    m.check("-0.0 sums long", compare_call, "add", np.full(300, -0.0, dt), isa=isa, method="reduce")
    m.assert_none()


# ---------------------------------------------------------------- upcasting
@pytest.mark.parametrize("op", ["add", "multiply"])
@pytest.mark.parametrize("dt", ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32",
                                "int64", "uint64", "q", "Q"], ids=dtype_id)
def test_add_multiply_reduce_of_small_ints_upcast_like_numpy(op, dt, isa):
    # np.add.reduce on bool gives int64, on int8 int64, on uint8 uint64 ...
    v = (np.arange(1000) % 3 + 1).astype(dt)
    got = compare_call(op, v, isa=isa, method="reduce")
    exp = getattr(np, op).reduce(v)
    assert got.dtype == exp.dtype
    if np.dtype(dt).itemsize < 8:
        assert got.dtype.itemsize == 8  # the point of the upcast: no int8 wrap-around
    if op == "add":
        assert int(got) == int(v.astype(np.int64).sum())
    compare_call(op, v.reshape(10, 100), isa=isa, method="reduce", axis=1)
    compare_call(op, v, isa=isa, method="accumulate")


def test_add_reduce_of_bool_gives_int64(isa):
    b = np.array([True, False, True, True])
    got = nclx_ufunc("add", isa).reduce(b)
    assert got.dtype == np.int64 and got == 3
    assert np.add.reduce(b).dtype == got.dtype


# ------------------------------------------------------- values and warnings
@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("dt", FLOATS)
def test_maximum_minimum_reduce_propagate_nan_like_numpy(op, dt, isa):
    m = Mismatches()
    for n in (1, 2, 3, 8, 9, 17, 64, 1000):
        for pos in sorted({0, n // 2, n - 1}):
            v = np.linspace(-1, 1, n).astype(dt)
            v[pos] = np.nan
            m.check(f"n={n} nan at {pos}", compare_call, op, v, isa=isa, method="reduce")
            m.check(f"n={n} nan at {pos} strided", compare_call, op, np.repeat(v, 2)[::-2],
                    isa=isa, method="reduce")
            m.check(f"n={n} nan at {pos} accumulate", compare_call, op, v, isa=isa,
                    method="accumulate")
        z = np.array([0.0, -0.0] * n, dt)
        m.check(f"n={n} signed zeros", compare_call, op, z, isa=isa, method="reduce")
        m.check(f"n={n} signed zeros reversed", compare_call, op, z[::-1], isa=isa, method="reduce")
    m.assert_none()


@pytest.mark.parametrize("op", ["floor_divide", "remainder"])
@pytest.mark.parametrize("dt", ["int8", "int64", "uint32", "q"], ids=dtype_id)
def test_integer_division_reduce_by_zero_warns_like_numpy(op, dt, isa):
    v = np.array([100, 7, 0, 3], dt)
    got = compare_call(op, v, isa=isa, method="reduce")
    assert got == 0
    # NumPy names the method in the message of a reduction's warning
    _, _, rec = run_recorded(nclx_ufunc(op, isa).reduce, v)
    assert warning_set(rec, nclx_ufunc(op, isa)) == {
        (RuntimeWarning, "divide by zero encountered in reduce")}
    compare_call(op, v, isa=isa, method="accumulate")


@pytest.mark.parametrize("dt", ["int8", "int16", "int32", "int64", "q"], ids=dtype_id)
def test_signed_min_floor_divide_reduce_overflow_like_numpy(dt, isa):
    v = np.array([np.iinfo(dt).min, -1, 1], dt)
    compare_call("floor_divide", v, isa=isa, method="reduce")
    compare_call("floor_divide", v, isa=isa, method="accumulate")


@pytest.mark.parametrize("op", BINARY_OPS)
def test_reduce_of_bool_bytes_other_than_0_and_1_matches_numpy(op, isa):
    raw = np.array([2, 255, 1, 0, 128, 3, 2, 2], np.uint8)
    m = Mismatches()
    for n in (1, 3, 8, 40):
        b = np.resize(raw, n).view(bool)
        m.check(f"reduce n={n}", compare_call, op, b, isa=isa, method="reduce")
        m.check(f"accumulate n={n}", compare_call, op, b, isa=isa, method="accumulate")
    m.assert_none()


@pytest.mark.parametrize("dt", DTYPE_NAMES)
def test_float_and_int_add_reduce_with_extreme_values_matches_numpy(dt, isa):
    # wrap-around in integer sums, overflow to inf and NaN in float sums
    m = Mismatches()
    for n in (2, 7, 8, 9, 16, 129, 1000):
        v = sample_array(dt, n, seed=n)
        for op in ("add", "multiply", "maximum", "minimum"):
            m.check(f"{op} n={n}", compare_call, op, v, isa=isa, method="reduce")
            m.check(f"{op} n={n} keep dtype", compare_call, op, v, isa=isa, method="reduce",
                    dtype=v.dtype)
    m.assert_none()


# ----------------------------------- threaded reductions: review regressions
# Regression tests for defects that reviews found; each failed on the code
# before its fix and runs under ``threaded_clean`` (conftest: two threads,
# every op split above 65,536 elements).
# Threaded compare reductions of bools raced (differently wrong from run to
# run); a stride-0 output must never be split over one accumulator.
def _bits(x):
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("op", COMPARE)
@pytest.mark.parametrize("layout", ["1d", "axis1", "axis0"])
def test_bool_comparison_reduce_equals_stock(op, layout):
    rng = np.random.default_rng(COMPARE.index(op))
    if layout == "1d":
        x = rng.random(BIG) < 0.5
        fn = lambda: getattr(np, op).reduce(x)        # noqa: E731
    elif layout == "axis1":
        x = rng.random((3, BIG)) < 0.5
        fn = lambda: getattr(np, op).reduce(x, axis=1)  # noqa: E731
    else:
        x = rng.random((BIG, 3)) < 0.5
        fn = lambda: getattr(np, op).reduce(x, axis=0)  # noqa: E731
    for _ in range(5):   # the defect was a race: differently wrong from run to run
        want, got, w0, w1 = stock_and_installed(fn)
        assert _bits(want) == _bits(got)
        assert w0 == w1


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("op", COMPARE)
def test_bool_comparison_accumulate_equals_stock(op):
    x = np.random.default_rng(7).random(BIG) < 0.5
    want, got, _, _ = stock_and_installed(lambda: getattr(np, op).accumulate(x))
    assert _bits(want) == _bits(got)


def _reduce_calls(fn):
    """(calls NumPy makes to the loop, pieces after the threader) of ``fn``:
    NumPy hands a reduction to the loop whole (2.4 and later here) or in
    buffer-sized chunks (2.0), which the threader then may split."""
    before, after = [], []

    def numpy_call(c):
        before.append(c.n)
        return c.next()

    def piece(c):
        after.append(c.n)
        return c.next()
    with nclx.installed(), hooks.register("funnel", "reduce", numpy_call), \
            hooks.register("funnel", "reduce", piece, after="threader"):
        fn()
    return before, after


@pytest.mark.usefixtures("threaded_clean")
def test_stride0_output_is_never_split_over_one_accumulator():
    # A reduction of a non-reorderable op: NumPy calls the loop with a stride-0
    # output; the threader must leave each call whole.
    x = np.random.default_rng(1).random(BIG) < 0.5
    before, after = _reduce_calls(lambda: np.less.reduce(x))
    assert sum(before) == BIG - 1
    assert after == before
    if np.lib.NumpyVersion(np.__version__) >= "2.4.0":
        assert before == [BIG - 1]          # one call, above the split threshold


# ----------------------------------- threaded float sums: review regressions
# Threaded float sums were not bit-identical to NumPy's pairwise sum (for
# every size, layout and thread count, warnings included); float products
# must not be reassociated unless config(reassociate=True) asks for it.
def _wide_floats(dtype, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * np.exp(rng.uniform(-20, 20, n))
    return x.astype(dtype)


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [65_536, 65_536 * 3 + 5, 1_000_003, 2_500_017])
def test_threaded_float_sum_is_bit_identical(dtype, n):
    x = _wide_floats(dtype, n, n)
    for fn in (lambda: np.add.reduce(x), lambda: x.sum(), lambda: x[::3].sum(),
               lambda: np.sum(x, dtype=dtype)):
        want, got, w0, w1 = stock_and_installed(fn)
        assert _bits(want) == _bits(got)
        assert w0 == w1


@pytest.mark.usefixtures("threaded_clean")
def test_threaded_float_sum_really_splits():
    x = _wide_floats("float64", 700_001, 1)
    got = []
    before, after = _reduce_calls(lambda: got.append(np.add.reduce(x)))
    assert sum(before) == sum(after) == 700_001
    # each call NumPy makes at or above the split threshold goes to both
    # threads; NumPy 2.0 hands the sum over in 8,192-element buffers, which
    # stay whole
    assert len(after) == len(before) + sum(1 for n in before if n >= SPLIT)
    if np.lib.NumpyVersion(np.__version__) >= "2.4.0":
        assert before == [700_001] and len(after) == 2
    assert _bits(got[0]) == _bits(np.add.reduce(x))


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("threads", [1, 2, 3, 4, 5, 8])
def test_float_sum_bit_identical_for_any_thread_count(threads):
    x = _wide_floats("float64", 700_001, threads)
    want = np.add.reduce(x)
    nclx.set_num_threads(threads)
    with nclx.installed():
        got = np.add.reduce(x)
    assert _bits(want) == _bits(got)


@pytest.mark.usefixtures("threaded_clean")
def test_float_sum_overflow_warning_matches_stock():
    x = np.full(BIG, 1e304)
    want, got, w0, w1 = stock_and_installed(lambda: x.sum())
    assert _bits(want) == _bits(got)
    assert w0 == w1
    assert np.isinf(got)


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_product_is_not_reassociated(dtype):
    rng = np.random.default_rng(3)
    x = (1 + rng.standard_normal(BIG) * 1e-3).astype(dtype)
    want, got, w0, w1 = stock_and_installed(lambda: np.multiply.reduce(x))
    assert _bits(want) == _bits(got)
    # sequentially the running product underflows only at the end; reassociated
    # chunks would not raise the same flags
    y = np.concatenate([np.full(BIG // 2, 1e-5), np.full(BIG - BIG // 2, 1e5)]).astype(dtype)
    want, got, w0, w1 = stock_and_installed(lambda: np.prod(y))
    assert _bits(want) == _bits(got)
    assert w0 == w1


@pytest.mark.usefixtures("threaded_clean")
def test_reassociate_opt_in_threads_float_products():
    x = (1 + np.random.default_rng(4).standard_normal(BIG) * 1e-3)
    want = np.prod(x)
    with nclx.config(reassociate=True), nclx.installed():
        got = np.prod(x)
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_pairwise_sum_keeps_numpys_nan_sign_and_payload(dtype, threads):
    """Review (issue 21): a threaded float add.reduce of 65K-140K elements
    with NaN and +-inf gave the other NaN (sign bit) than stock in 83 of 200
    arrays: x86 keeps an add's first NaN operand, and NumPy's compiled
    recursion orders operands its own way.  A NaN sum is now redone whole
    by NumPy's loop."""
    rng = np.random.default_rng(0)
    nclx.set_num_threads(threads)
    try:
        for _ in range(200):
            n = int(rng.integers(65_000, 140_000))
            a = rng.standard_normal(n).astype(dtype)
            k = int(rng.integers(1, 6))
            a[rng.integers(0, n, k)] = rng.choice(
                np.array([np.nan, np.inf, -np.inf, -np.nan], dtype=dtype), k)
            want, got, w0, w1 = stock_and_installed(lambda: np.add.reduce(a))
            assert np.asarray(want).tobytes() == np.asarray(got).tobytes(), n
            assert w0 == w1
            want, got, _, _ = stock_and_installed(lambda: a.reshape(-1, 1).sum(axis=0))
            assert want.tobytes() == got.tobytes()
    finally:
        nclx.set_num_threads(2)

