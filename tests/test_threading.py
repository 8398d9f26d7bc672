"""The threader: thread-count control, and threaded results against
single-threaded ones across ops, dtypes, sizes, strides and reductions."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from conftest import run_script, stock_and_installed

OPS2 = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder",
        "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor",
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
OPS1 = ["negative", "absolute", "invert", "sqrt"]
DTYPES = ["bool", "int8", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"]
THRESHOLD = 2048


@pytest.fixture(autouse=True)
def _threaded():
    old_threads = nclx.get_num_threads()
    nclx.set_num_threads(2)
    nclx.set_threshold(THRESHOLD)
    hooks.reset()
    yield
    nclx.uninstall()
    hooks.reset()
    nclx.reset_thresholds()
    nclx.set_num_threads(old_threads)


def _data(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(n) < 0.5
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(n).astype(dtype) * 100
        x[::97] = 0.0
        return x
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _rejected(fn):
    """True when NumPy rejects the call with TypeError -- then nclx must too."""
    try:
        with np.errstate(all="ignore"):
            fn()
    except TypeError:
        with nclx.installed(), pytest.raises(TypeError):
            fn()
        return True
    return False


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        assert np.array_equal(nan, np.isnan(b))
        assert np.array_equal(a[~nan].view(f"u{a.itemsize}"), b[~nan].view(f"u{a.itemsize}"))
    else:
        assert np.array_equal(a, b)


def test_thread_count_api():
    nclx.set_num_threads(1)
    assert nclx.get_num_threads() == 1
    nclx.set_num_threads(2)
    assert nclx.get_num_threads() == 2
    with pytest.raises(ValueError, match=">= 1"):
        nclx.set_num_threads(0)
    with pytest.raises(ValueError, match="unknown op"):
        nclx.set_threshold(10, op="frobnicate")
    nclx.set_threshold(5000, op="sqrt")
    assert nclx.get_threshold("sqrt") == 5000 and nclx.get_threshold("add") == THRESHOLD


def test_thread_count_from_environment_variable():
    code = "import nclx; print(nclx.get_num_threads())"
    env = dict(os.environ, NCLX_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd="/", check=True).stdout
    assert out.strip() == "1"
    env = dict(os.environ, NCLX_NUM_THREADS="lots")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, cwd="/")
    assert proc.returncode != 0 and "NCLX_NUM_THREADS" in proc.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("NCLX_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd="/", check=True).stdout
    assert int(out) == len(os.sched_getaffinity(0))


def test_threadpoolctl_sees_and_limits_the_pool():
    from threadpoolctl import threadpool_info, threadpool_limits
    assert any(i["user_api"] == "openmp" for i in threadpool_info())
    nclx.set_num_threads(2)
    with threadpool_limits(limits=1, user_api="openmp"):
        assert nclx.get_num_threads() == 1
        with nclx.ledger.recording():
            x = np.arange(100_000.0)
            assert x.sum() == 4999950000.0
    assert nclx.get_num_threads() == 2


@pytest.mark.parametrize("op", OPS2)
@pytest.mark.parametrize("dtype", DTYPES)
def test_threaded_binary_results_match_stock(op, dtype):
    ufunc = getattr(np, op)
    n = 3 * THRESHOLD + 77                      # odd size: uneven chunks
    a, b = _data(dtype, n + 3, 1), _data(dtype, n + 3, 2)
    if op in ("floor_divide", "remainder", "true_divide") and dtype != "bool":
        b[b == 0] = 1
    if _rejected(lambda: ufunc(a[:2], b[:2])):
        return                                          # bool subtract etc.: both refuse
    cases = [lambda: ufunc(a[:n], b[:n]),
             lambda: ufunc(a[1:n + 1], b[3:n + 3]),     # misaligned starts
             lambda: ufunc(a[::-1], b[::-1]),           # negative strides
             lambda: ufunc(a[::2], b[1::2]),            # strided
             lambda: ufunc(a[:n], b[5])]                # broadcast scalar
    for case in cases:
        want, got, w0, w1 = stock_and_installed(case)
        _same_bits(want, got)
        assert w0 == w1


@pytest.mark.parametrize("op", OPS1)
@pytest.mark.parametrize("dtype", DTYPES)
def test_threaded_unary_results_match_stock(op, dtype):
    ufunc = getattr(np, op)
    a = _data(dtype, 4 * THRESHOLD + 5, 3)
    if _rejected(lambda: ufunc(a[:2])):
        return
    for case in (lambda: ufunc(a), lambda: ufunc(a[1:]), lambda: ufunc(a[::-3])):
        want, got, w0, w1 = stock_and_installed(case)
        _same_bits(want, got)
        assert w0 == w1


def test_threaded_in_place_and_out():
    a = np.arange(10 * THRESHOLD, dtype=np.int64)
    b = a.copy()
    want = a * 3 + 1
    with nclx.installed():
        b *= 3
        b += 1
        out = np.empty_like(a)
        np.multiply(a, 3, out=out)
    assert np.array_equal(b, want) and np.array_equal(out, a * 3)


def test_accumulate_is_not_split():
    a = np.arange(10 * THRESHOLD, dtype=np.int64) % 7
    want = np.cumsum(a)
    want_max = np.maximum.accumulate(a[::-1])
    with nclx.installed():
        assert np.array_equal(np.cumsum(a), want)
        assert np.array_equal(np.maximum.accumulate(a[::-1]), want_max)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint64", "int64"])
@pytest.mark.parametrize("op", ["add", "multiply", "maximum", "minimum",
                                "bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize("n", [THRESHOLD - 1, THRESHOLD, THRESHOLD + 1, 5 * THRESHOLD + 3])
def test_integer_reductions_across_the_threshold_are_exact(dtype, op, n):
    ufunc = getattr(np, op)
    a = _data(dtype, n + 1, 4)
    if dtype == "bool" and op in ("add", "multiply"):
        a = a.astype(np.int8)
    cases = [lambda: ufunc.reduce(a[:n]), lambda: ufunc.reduce(a[1:]),
             lambda: ufunc.reduce(a[::-1]), lambda: ufunc.reduce(a[:n], dtype=a.dtype)]
    for case in cases:
        want, got, w0, w1 = stock_and_installed(case)
        _same_bits(want, got)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [THRESHOLD - 1, THRESHOLD + 1, 50 * THRESHOLD + 11])
def test_float_sums_stay_within_numpy_accuracy(dtype, n):
    x = (np.random.default_rng(5).random(n + 1) * 1e3 + 1).astype(dtype)
    exact = math.fsum(x[1:].astype(np.float64))
    want = float(np.add.reduce(x[1:]))
    with nclx.installed():
        got = float(np.add.reduce(x[1:]))
        got_neg = float(np.add.reduce(x[::-1]))
    eps = np.finfo(dtype).eps
    # pairwise bound: a few ulps times log2(n) of the magnitude
    bound = max(abs(want - exact), 4 * eps * math.log2(n) * abs(exact))
    assert abs(got - exact) <= bound
    assert abs(got_neg - math.fsum(x[::-1].astype(np.float64))) <= bound * 1.5


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_float_max_min_reductions_propagate_nan_in_any_chunk(op):
    x = np.linspace(-1, 1, 6 * THRESHOLD)
    for pos in (0, THRESHOLD + 5, len(x) - 1):
        y = x.copy()
        y[pos] = np.nan
        with nclx.installed():
            assert np.isnan(getattr(np, op).reduce(y))
    with nclx.installed():
        assert np.maximum.reduce(x) == 1.0 and np.minimum.reduce(x) == -1.0


def test_floating_point_warnings_from_worker_threads_reach_the_caller():
    a = np.ones(8 * THRESHOLD)
    b = np.ones(8 * THRESHOLD)
    b[-1] = 0.0                      # in the last chunk: a worker's
    ia = np.ones(8 * THRESHOLD, dtype=np.int64)
    ib = ia.copy()
    ib[-1] = 0
    want, got, w0, w1 = stock_and_installed(lambda: (a / b, ia // ib, np.sqrt(-a)))
    assert w0 == w1 and any("divide by zero" in m for m in w1)
    with nclx.installed(), np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            a / b


def test_checked_overflow_in_a_worker_chunk_raises():
    a = np.ones(8 * THRESHOLD, dtype=np.int64)
    a[-1] = 2**62
    with pytest.raises(OverflowError, match="multiply"):
        with nclx.checked():
            a * 4
    with pytest.raises(OverflowError, match="add"):
        with nclx.checked():
            np.full(8 * THRESHOLD, 2**50).sum() * 1
            np.full(8 * THRESHOLD, 2**60).sum()


def test_hooks_see_the_chunks_when_threaded():
    seen = []

    def chunk_sizes(call):
        seen.append(call.n)
        call.next()

    with nclx.installed():
        hooks.register("kernel", ("add", "float64"), chunk_sizes)
        x = np.ones(10 * THRESHOLD)
        r = x + x
    assert np.array_equal(r, 2 * x)
    assert sum(seen) == x.size and len(seen) == 2


def test_funnel_hooks_see_whole_calls_before_the_threader():
    seen = []
    with nclx.installed():
        hooks.register("funnel", "binary", lambda c: (seen.append(c.n), c.next()))
        assert hooks.chain("funnel", "binary") == ["<lambda>", "threader", "kernel"]
        np.ones(10 * THRESHOLD) * 2
    assert seen == [10 * THRESHOLD]


def test_preferences_and_calibrate():
    from nclx._ncl import policy
    prefs = policy.preferences()
    assert prefs[("maximum", "ddd")][1] == (True, True)      # NumPy's SIMD max-reduce
    assert prefs[("add", "ddd")] == ((True, True), (True, False))    # NumPy whole and chunks (NaN bits)
    assert prefs[("add", "lll")] == ((True, False), (True, False))   # NumPy whole, nclx chunks
    assert prefs[("sqrt", "dd")][0] == (False, False)         # nclx's sqrt is faster
    try:
        ratios = nclx.calibrate(small=512, chunk=4096, reps=2)
        assert set(ratios) <= set(prefs) and all(len(v) == 2 for v in ratios.values())
        x = np.random.default_rng(0).random(10 * THRESHOLD)
        with nclx.installed():
            assert np.maximum.reduce(x) == x.max()
    finally:
        policy.reset_preferences()
    assert policy.preferences() == prefs


def test_thresholds_are_per_op_kind_and_dtype_and_reset_to_the_shipped_table():
    nclx.reset_thresholds()
    from nclx._ncl import spec
    shipped = nclx.get_threshold("add", "reduce", "float64")
    assert shipped == spec.split_threshold("add", "float64", True)
    nclx.set_threshold(1234, op="add", kind="reduce", dtype="float64")
    assert nclx.get_threshold("add", "reduce", "float64") == 1234
    assert nclx.get_threshold("add", "reduce", "float32") == spec.split_threshold("add", "float32", True)
    assert nclx.get_threshold("add", "elementwise", "float64") == spec.split_threshold("add", "float64", False)
    with pytest.raises(ValueError, match="kind"):
        nclx.set_threshold(10, kind="scan")
    nclx.reset_thresholds()
    assert nclx.get_threshold("add", "reduce", "float64") == shipped


def test_calibrated_thresholds_keep_results_exact():
    from nclx._ncl import calibrate
    got = calibrate.calibrate_thresholds(sizes=[4096, 65536], reps=1)
    assert set(got) >= {("add", "lll"), ("add", "ddd"), ("sqrt", "dd"), ("exp", "dd"),
                        ("fma", "dddd"), ("where", "?ddd"), ("cast", "ld")}
    for el, red in got.values():
        assert el in (16384, 65536, 1 << 62) or el == THRESHOLD
    x = np.random.default_rng(5).random(200_001)
    want = np.add.reduce(x)
    with nclx.installed():
        assert np.add.reduce(x) == want


def test_numpy_buffered_chunks_are_never_split_by_the_shipped_thresholds():
    nclx.reset_thresholds()
    seen = []
    a = np.arange(100_000, dtype=np.int32)
    with nclx.installed(), hooks.register("funnel", "binary", lambda c: (seen.append(c.n), c.next())[1],
                                          after="threader"):
        r = np.true_divide(a, 3)        # NumPy casts to float64 in 8,192-element buffers
    assert (r == a / 3).all()
    assert max(seen) <= 8192 and sum(seen) == 100_000
    assert len(seen) == -(-100_000 // max(seen))     # one call per buffer: none was split


# --------------------- fork, OpenMP, FP mode, thresholds: review regressions
# Regression tests for defects that reviews found; each failed on the code
# before its fix and runs under ``threaded_clean`` (conftest: two threads,
# every op split above 65,536 elements).
# A forked child (and a multiprocessing fork pool) must not hang on the
# parent's OpenMP team; set_num_threads must leave OpenMP's global count
# alone.  Second review of issue 21: OpenMP workers must compute under the
# caller's rounding mode; calibrating nclx's own ops (no NumPy loop) with
# NumPy preferred crashed.  Review of issue 21's first cut: where's
# thresholds are keyed by its value dtype.
FORK_SCRIPT = """
import os, sys, numpy as np, nclx
nclx.install()
nclx.set_num_threads(2)
a = np.arange(400_000, dtype=np.float64)
(a + a).sum()                                  # the parent's OpenMP team exists
pid = os.fork()
if pid == 0:
    ok = float((a + a).sum()) == float(np.add.reduce(a + a)) and float(np.sqrt(a).sum()) > 0
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
import multiprocessing as mp
ctx = mp.get_context("fork")
def work(k):
    x = np.arange(300_000, dtype=np.float64) + k
    return float((x * 2).sum())
with ctx.Pool(2) as pool:
    got = pool.map(work, range(4))
assert got == [work(k) for k in range(4)], got
print("OK")
"""


@pytest.mark.usefixtures("threaded_clean")
def test_fork_child_and_multiprocessing_do_not_hang():
    proc = run_script(FORK_SCRIPT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "OK"


@pytest.mark.usefixtures("threaded_clean")
def test_set_num_threads_leaves_openmp_global_count_alone():
    threadpoolctl = pytest.importorskip(
        "threadpoolctl", reason="threadpoolctl (tools/requirements-test.txt) reads OpenMP's count")
    # the OpenMP runtimes' counts (nclx's own controller, internal API
    # "nclx", reports nclx's setting: nclx._tpctl)
    before = [i["num_threads"] for i in threadpoolctl.threadpool_info()
              if i["user_api"] == "openmp" and i["internal_api"] != "nclx"]
    assert before, "nclx's OpenMP runtime is not visible to threadpoolctl"
    nclx.set_num_threads(1)
    after = [i["num_threads"] for i in threadpoolctl.threadpool_info()
             if i["user_api"] == "openmp" and i["internal_api"] != "nclx"]
    assert after == before
    with threadpoolctl.threadpool_limits(1, user_api="openmp"):
        nclx.set_num_threads(2)
        assert nclx.get_num_threads() == 1


def _fesetround(mode):
    import ctypes
    libm = ctypes.CDLL(None)
    assert libm.fesetround(mode) == 0


@pytest.mark.usefixtures("threaded_clean")
@pytest.mark.skipif(sys.platform != "linux" or __import__("platform").machine() != "x86_64",
                    reason="FE_UPWARD's value (0x800) is x86's")
def test_worker_threads_compute_under_the_callers_rounding_mode():
    """OpenMP workers kept the FP mode they had when the team started: a
    split cast under FE_UPWARD differed from astype in ~half the elements."""
    nclx.set_num_threads(2)
    nclx.set_threshold(1000)
    x = np.random.default_rng(0).random(200_000) * 1e-3
    nclx.convert(x, np.float32)                 # the team has run, in the default mode
    try:
        _fesetround(0x800)                      # FE_UPWARD
        want = x.astype(np.float32)
        got = nclx.convert(x, np.float32)
        got2 = nclx.ufuncs.add(x, 1e-20)
        want2 = np.add(x, 1e-20)
    finally:
        _fesetround(0)                          # FE_TONEAREST
        nclx.reset_thresholds()
    assert got.tobytes() == want.tobytes()
    assert got2.tobytes() == want2.tobytes()


@pytest.mark.usefixtures("threaded_clean")
def test_calibrating_nclx_own_ops_with_numpy_preferred_does_not_crash():
    from nclx._ncl import calibrate, policy
    with pytest.raises(ValueError, match="nclx's own op"):
        policy.set_preference("cast", "dd", False, False, True)
    policy.prefer_everywhere(True)
    try:
        calibrate.calibrate_thresholds(sizes=[4096], reps=1)
        assert nclx.ufuncs.fma(2.0, 3.0, 1.0) == 7.0
    finally:
        policy.reset_preferences()
        nclx.reset_thresholds()


@pytest.mark.usefixtures("threaded_clean")
def test_where_thresholds_are_keyed_by_the_value_dtype():
    nclx.set_threshold(1234, op="where", dtype="float64")
    try:
        assert nclx.get_threshold("where", dtype="float64") == 1234
        assert nclx.get_threshold("where", dtype="int8") != 1234
    finally:
        nclx.reset_thresholds()

