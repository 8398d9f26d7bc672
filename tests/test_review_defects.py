"""Regression tests for the defects an adversarial review of the dispatch core
found (issue: trustworthy dispatch core).  Each test failed on the code before
its fix; crash- and hang-prone ones run in a subprocess with a timeout."""
import gc
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from conftest import stock_and_installed

BIG = 65_536 * 2 + 13       # above the default split threshold


@pytest.fixture(autouse=True)
def _clean():
    threads = nclx.get_num_threads()
    nclx.set_num_threads(2)
    nclx.set_threshold(65_536)      # split whatever the shipped table says
    hooks.reset()
    yield
    nclx.uninstall()
    hooks.reset()
    nclx.reset_thresholds()
    nclx.set_num_threads(threads)


def _bits(x):
    x = np.asarray(x)
    return x.dtype.str, x.shape, x.tobytes()


def _run_script(code, timeout=120):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd="/")
    return proc


# --------------------------------------------------------------- item 1
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


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


@pytest.mark.parametrize("op", COMPARE)
def test_bool_comparison_accumulate_equals_stock(op):
    x = np.random.default_rng(7).random(BIG) < 0.5
    want, got, _, _ = stock_and_installed(lambda: getattr(np, op).accumulate(x))
    assert _bits(want) == _bits(got)


def test_stride0_output_is_never_split_over_one_accumulator():
    # A reduction of a non-reorderable op: NumPy calls the loop with a stride-0
    # output; the threader must leave it whole.
    x = np.random.default_rng(1).random(BIG) < 0.5
    seen = []
    with nclx.installed(), hooks.register("funnel", "reduce", lambda c: (seen.append(c.n), c.next())):
        np.less.reduce(x)
    assert seen == [BIG - 1]


# --------------------------------------------------------------- item 2
def _wide_floats(dtype, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * np.exp(rng.uniform(-20, 20, n))
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [65_536, 65_536 * 3 + 5, 1_000_003, 2_500_017])
def test_threaded_float_sum_is_bit_identical(dtype, n):
    x = _wide_floats(dtype, n, n)
    for fn in (lambda: np.add.reduce(x), lambda: x.sum(), lambda: x[::3].sum(),
               lambda: np.sum(x, dtype=dtype)):
        want, got, w0, w1 = stock_and_installed(fn)
        assert _bits(want) == _bits(got)
        assert w0 == w1


def test_threaded_float_sum_really_splits():
    pieces = []
    x = _wide_floats("float64", 700_001, 1)
    with nclx.installed(), hooks.register("funnel", "reduce", lambda c: (pieces.append(c.n), c.next())[1],
                                          after="threader"):
        got = np.add.reduce(x)
    assert len(pieces) == 2 and sum(pieces) == 700_001
    assert _bits(got) == _bits(np.add.reduce(x))


@pytest.mark.parametrize("threads", [1, 2, 3, 4, 5, 8])
def test_float_sum_bit_identical_for_any_thread_count(threads):
    x = _wide_floats("float64", 700_001, threads)
    want = np.add.reduce(x)
    nclx.set_num_threads(threads)
    with nclx.installed():
        got = np.add.reduce(x)
    assert _bits(want) == _bits(got)


def test_float_sum_overflow_warning_matches_stock():
    x = np.full(BIG, 1e304)
    want, got, w0, w1 = stock_and_installed(lambda: x.sum())
    assert _bits(want) == _bits(got)
    assert w0 == w1
    assert np.isinf(got)


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


def test_reassociate_opt_in_threads_float_products():
    x = (1 + np.random.default_rng(4).standard_normal(BIG) * 1e-3)
    want = np.prod(x)
    with nclx.config(reassociate=True), nclx.installed():
        got = np.prod(x)
    assert got == pytest.approx(want, rel=1e-12)


# --------------------------------------------------------------- item 3
KEEP_SCRIPT = """
import gc, numpy as np, nclx, nclx.hooks as hooks
kept = []
class Keep(hooks.Kernel):
    def __call__(self, inputs, out):
        np.add(inputs[0], inputs[1], out=out)
        kept.append(out); kept.append(inputs[0]); kept.append(out[1:5]); kept.append(memoryview(out))
        return None
    def reduce(self, values, acc):
        return NotImplemented
nclx.set_num_threads(1)
with nclx.installed(), hooks.register("kernel", ("add", "float64"), Keep()):
    a = np.arange(3_000_000, dtype=np.float64)
    c = a + 1.0
expected = c[:5].copy()
del a, c
gc.collect()
junk = [np.full(3_000_000, 7.0) for _ in range(4)]   # reuse whatever was freed
out, inp, part, mv = kept[:4]
assert out[:5].tolist() == expected.tolist(), out[:5]
assert inp[:3].tolist() == [0.0, 1.0, 2.0], inp[:3]
assert part.tolist() == expected[1:5].tolist(), part
assert float(np.asarray(mv)[2]) == expected[2]
print("OK", float(out.sum()))
"""


def test_views_kept_after_a_kernel_returns_stay_valid():
    proc = _run_script(KEEP_SCRIPT)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert proc.stdout.startswith("OK")


# --------------------------------------------------------------- item 4
@pytest.mark.parametrize("ctx", ["installed", "checked", "recording"])
def test_contexts_are_counted_across_threads(ctx):
    make = {"installed": nclx.installed, "checked": nclx.checked,
            "recording": nclx.ledger.recording}[ctx]
    a_in, a_out, b_done = threading.Event(), threading.Event(), threading.Event()
    result = {}

    def thread_a():
        with make():
            a_in.set()
            a_out.wait(10)

    def thread_b():
        a_in.wait(10)
        with make() as led:
            a_out.set()
            ta.join(10)          # A has left its block
            result["installed"] = nclx.is_installed()
            x = np.full(10, 2**62, dtype=np.int64)
            try:
                x * 4
                result["raised"] = False
            except OverflowError:
                result["raised"] = True
            if ctx == "recording":
                result["recorded"] = any(r.op == "multiply" for r in led.records())
        b_done.set()

    ta = threading.Thread(target=thread_a)
    tb = threading.Thread(target=thread_b)
    ta.start(); tb.start(); tb.join(20)
    assert b_done.is_set()
    assert result["installed"]
    if ctx == "checked":
        assert result["raised"]
    if ctx == "recording":
        assert result["recorded"]
    assert not nclx.is_installed()


def test_uninstall_inside_a_block_wins_and_the_block_exit_is_harmless():
    with nclx.installed():
        nclx.uninstall()
        assert not nclx.is_installed()
    assert not nclx.is_installed()
    nclx.install()
    with nclx.installed():
        pass
    assert nclx.is_installed()       # an explicit install() outlives blocks
    nclx.uninstall()
    assert not nclx.is_installed()


# --------------------------------------------------------------- item 5
def test_checked_stale_record_does_not_turn_float_overflow_into_overflowerror():
    big = np.full(4, 2**62, dtype=np.int64)
    f = np.full(4, 1e308)
    with nclx.checked():
        with np.errstate(over="ignore"):
            big * 4                       # silenced integer overflow
        with pytest.warns(RuntimeWarning, match="overflow encountered in multiply"):
            f * 10.0


def test_checked_does_not_leak_into_other_threads():
    inside, done = threading.Event(), threading.Event()
    box = {}

    def other():
        inside.wait(10)
        with warnings.catch_warnings(record=True) as w, np.errstate(all="raise"):
            warnings.simplefilter("always")
            try:
                r = np.full(8, 2**62, dtype=np.int64) * 4
                box["result"] = r
            except Exception as exc:     # noqa: BLE001 - record what leaked
                box["error"] = exc
        box["warnings"] = [str(x.message) for x in w]
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with nclx.checked():
        inside.set()
        done.wait(20)
    t.join(10)
    assert "error" not in box, box
    assert box["warnings"] == []
    with np.errstate(over="ignore"):
        assert (box["result"] == np.int64(2**62) * np.int64(4)).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_checked_sum_overflow_does_not_depend_on_thread_count(threads):
    n = 300_000
    x = np.zeros(n, dtype=np.int64)
    x[0] = np.iinfo(np.int64).max
    x[n // 2 + 100] = 1          # sequentially MAX + 1 overflows...
    x[n // 2 + 101] = -1         # ...a per-thread partial (1 - 1) would not
    nclx.set_num_threads(threads)
    with pytest.raises(OverflowError, match="add"):
        with nclx.checked():
            x.sum()


def test_checked_unsigned_negative_raises_for_nonzero_values():
    with nclx.checked():
        assert (-np.zeros(5, dtype=np.uint8) == 0).all()
        for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
            with pytest.raises(OverflowError, match="negative"):
                -np.array([0, 1], dtype=dt)


def test_checked_float_warnings_keep_the_ufunc_name():
    with nclx.checked(), pytest.warns(RuntimeWarning) as rec:
        np.full(3, 1e308) * 10.0
        np.full(3, 1.0) / 0.0
    msgs = {str(w.message) for w in rec}
    assert "overflow encountered in multiply" in msgs
    assert "divide by zero encountered in divide" in msgs


def test_checked_errstate_raise_outside_gives_floatingpointerror_with_name():
    with np.errstate(over="raise"), nclx.checked():
        with pytest.raises(FloatingPointError, match="overflow encountered in multiply"):
            np.full(3, 1e308) * 10.0


# --------------------------------------------------------------- item 6
def _rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_hooks_that_raise_then_go_leave_no_memory_behind():
    def bad(call):
        tmp = np.ones(1024)                     # 8 KB the exception's frame keeps
        raise ValueError(f"boom {tmp.size}")

    old = sys.unraisablehook
    sys.unraisablehook = lambda u: None
    try:
        with nclx.installed():
            x = np.arange(4.0)
            for _ in range(300):                # warm up allocators
                with hooks.register("funnel", "binary", bad):
                    x + x
            gc.collect()
            before = _rss_kb()
            for _ in range(5000):
                with hooks.register("funnel", "binary", bad) as h:
                    x + x
                assert h.errors == 1
            gc.collect()
            grown = _rss_kb() - before
    finally:
        sys.unraisablehook = old
    assert grown < 8_000, f"RSS grew by {grown} KB over 5000 raise/remove cycles"


# --------------------------------------------------------------- item 7
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


def test_fork_child_and_multiprocessing_do_not_hang():
    proc = _run_script(FORK_SCRIPT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "OK"


# --------------------------------------------------------------- item 8
@pytest.mark.parametrize("n", [10, BIG])
def test_hook_after_the_threader_runs(n):
    seen = []

    def late(call):
        seen.append(call.n)
        call.next()

    x = np.arange(n, dtype=np.int64)
    with nclx.installed(), hooks.register("funnel", "binary", late, after="threader"):
        assert hooks.chain("funnel", "binary").index("late") == 1
        r = x + x
    assert (r == 2 * x).all()
    assert sum(seen) == n


# --------------------------------------------------------------- item 9
def test_position_before_without_anchor_is_a_valueerror():
    with pytest.raises(ValueError, match="before="):
        hooks.register("funnel", "binary", lambda c: c.next(), position="before")
    with pytest.raises(ValueError, match="after="):
        hooks.register("funnel", "binary", lambda c: c.next(), position="after")


@pytest.mark.parametrize("target", [("add", None), ("add", 3), ("add",), None, ("nope", "int64")])
def test_bad_kernel_targets_are_rejected(target):
    with pytest.raises((TypeError, ValueError)) as info:
        hooks.register("kernel", target, hooks.Kernel())
    if target == ("add", None):
        assert info.type is TypeError or issubclass(info.type, TypeError)


def test_long_hook_names_are_kept_whole():
    name = "profiler." + "x" * 120
    with hooks.register("funnel", "binary", lambda c: c.next(), name=name) as h:
        assert name in hooks.chain("funnel", "binary")
        assert h.name == name
    with hooks.register("funnel", "unary", lambda c: c.next(), name=name + "a"):
        with pytest.raises(ValueError, match="already has a node named"):
            hooks.register("funnel", "unary", lambda c: c.next(), name=name + "a")


# ------------------------------------------------------- threads / OpenMP
def test_set_num_threads_leaves_openmp_global_count_alone():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [i["num_threads"] for i in threadpoolctl.threadpool_info()
              if i["user_api"] == "openmp"]
    assert before, "nclx's OpenMP runtime is not visible to threadpoolctl"
    nclx.set_num_threads(1)
    after = [i["num_threads"] for i in threadpoolctl.threadpool_info()
             if i["user_api"] == "openmp"]
    assert after == before
    with threadpoolctl.threadpool_limits(1, user_api="openmp"):
        nclx.set_num_threads(2)
        assert nclx.get_num_threads() == 1


def test_handle_remove_after_reset_touches_nothing_freed():
    keep = hooks.register("funnel", "binary", lambda c: c.next(), name="old")
    hooks.reset()
    hooks.collect()
    assert keep.removed
    fresh = [hooks.register("funnel", "binary", lambda c: c.next(), name=f"new{i}")
             for i in range(50)]                 # may reuse the freed node's address
    keep.remove()                                # must not unlink one of the new nodes
    assert hooks.chain("funnel", "binary")[:50] == [f"new{i}" for i in reversed(range(50))]
    for h in fresh:
        h.remove()


def test_checked_and_plain_threads_side_by_side_many_times():
    errors = []
    big = np.full(70_000, 2**62, dtype=np.int64)

    def checked_worker():
        for _ in range(20):
            try:
                with nclx.checked():
                    big * 4
                errors.append("checked thread did not raise")
            except OverflowError:
                pass

    def plain_worker():
        for _ in range(20):
            try:
                with nclx.installed(), np.errstate(all="raise"):
                    r = big * 4
            except Exception as exc:       # noqa: BLE001 - a leaked checked mode
                errors.append(f"plain thread: {exc!r}")
                continue
            if r[0] != np.int64(0):
                errors.append(f"plain thread got {r[0]}")

    threads = [threading.Thread(target=f) for f in (checked_worker, plain_worker) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert not nclx.is_installed()


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


# ---------------------------------------------- review of issue 21's first cut

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


def test_where_thresholds_are_keyed_by_the_value_dtype():
    nclx.set_threshold(1234, op="where", dtype="float64")
    try:
        assert nclx.get_threshold("where", dtype="float64") == 1234
        assert nclx.get_threshold("where", dtype="int8") != 1234
    finally:
        nclx.reset_thresholds()


def test_nclx_ufuncs_resolve_like_numpy_float16_and_identities():
    import nclx.ufuncs as nu
    for op in ("exp", "sqrt", "arctan2", "reciprocal"):
        npf, mine = getattr(np, op), getattr(nu, op)
        assert mine.types == npf.types
        args = [np.array([1, 2], np.int8)] * npf.nin
        assert mine(*args).dtype == npf(*args).dtype
    assert nu.logical_and.identity is True and nu.logical_or.identity is False
    assert nu.hypot.identity == 0


def test_aware_twins_by_identity_not_by_name():
    from nclx.aware import nclx_ufunc
    import nclx.ufuncs as nu
    fake = np.frompyfunc(lambda x: x, 1, 1)
    assert nclx_ufunc(np.cbrt) is nu.cbrt and nclx_ufunc(fake) is fake
    assert nclx_ufunc(np.logical_and) is np.logical_and    # NumPy's promoters
    from nclx.types import Ragged
    r = Ragged.from_list([[1, 0, 3], [4]])
    got = np.logical_or(r, np.array(0, np.uint64))        # NumPy's promoter: int64 | uint64
    assert got.to_list() == [[True, False, True], [True]]


def test_uninstall_gives_nclx_ufuncs_back_the_loops_of_import_time():
    from nclx._ncl import entries
    k = entries.signatures().index(("exp", "dd"))
    nclx.install()
    nclx.uninstall()
    import nclx.ufuncs as nu
    x = np.linspace(0, 1, 10)
    assert nu.exp(x).tobytes() == np.exp(x).tobytes()
    assert entries.original_address(k) == 0


# ------------------------------------------- second review of issue 21's work

def _fesetround(mode):
    import ctypes
    libm = ctypes.CDLL(None)
    assert libm.fesetround(mode) == 0


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


def test_array_function_defers_to_foreign_array_types_and_like():
    import nclx.storage as st

    class Other:
        def __array_function__(self, func, types, args, kwargs):
            return "Other handled"
    s = st.zeros((3,), dtype=np.float64)
    assert np.concatenate([s, Other()]) == "Other handled"
    with pytest.raises(TypeError):
        np.asarray([1, 2], like=s)
    assert np.concatenate([s, s]).shape == (6,)


def test_np_where_on_aware_operands_matches_numpy_for_odd_operands():
    a = nclx.hooks.aware(np.array([True, False, True]))
    u8 = np.array([1, 2, 3], np.uint8)
    i8 = np.array([1, 2, 3], np.int8)
    cases = [(a, None, 1), (a, u8, -1), (a, i8, 300), (a, np.arange(3), 2**63),
             (a, [1, 2, 3], 0.5), (a, "x", "y")]
    for c, x, y in cases:
        with np.errstate(all="ignore"):
            want = np.where(np.asarray(c), x, y)
            got = np.where(c, x, y)
        assert np.asarray(got).dtype == want.dtype and np.asarray(got).tolist() == want.tolist()
    z = np.where(nclx.hooks.aware(np.array(True)), 1, 2)
    assert isinstance(z, np.ndarray) and z.shape == () and z == 1


def test_twins_fall_back_to_numpy_for_loops_outside_the_legacy_list():
    from nclx.aware import nclx_ufunc, run_unwrapped
    u = np.array(["a", "b"])
    got = run_unwrapped(np.equal, "__call__", (u, u), {}, lambda v: v, kernels=nclx_ufunc)
    assert got.tolist() == [True, True]


def test_convert_bool_to_bool_copies_the_byte_as_astype():
    b = np.array([2, 255, 0, 1], np.uint8).view(bool)
    assert nclx.convert(b, bool).view(np.uint8).tolist() == b.astype(bool).view(np.uint8).tolist()
