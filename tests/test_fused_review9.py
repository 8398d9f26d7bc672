"""Defects the ninth hostile review found in fused evaluation (each test
failed before its fix): a plan traced where the function's own errstate or
warning filters equalled the caller's served callers under others; out=
written before a warning the filters make an error was raised; steps on
scalars alone reporting their flags at the trace only; results of 0-d
arrays alone spread over the n-d arguments; thresholds on values read past
the probes frozen into the plan; signed zeros of complex and Decimal
globals sharing a plan; recycle_cap past a size_t an OverflowError."""
import decimal
import sys
import warnings

import numpy as np
import pytest

import nclx

N = 100_000


def _same(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


def _warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
    return r, [(x.category, str(x.message)) for x in w]


def _inner_errstate(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return a / b


def _inner_filters(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return a / b


@pytest.mark.parametrize("inner", [_inner_errstate, _inner_filters])
def test_a_plan_traced_under_one_state_does_not_serve_another(inner):
    f = nclx.fuse(inner)
    a, b = np.ones(N), np.zeros(N)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(a, b)                                        # traced where inner == outer
    got, gw = _warned(lambda: f(a, b))
    want, ww = _warned(lambda: inner(a, b))
    assert _same(got, want) and gw == ww
    with np.errstate(divide="raise"):
        if inner is _inner_errstate:
            assert _same(f(a, b), inner(a, b))         # the function's own errstate
        else:
            with pytest.raises(FloatingPointError):
                inner(a, b)
            with pytest.raises(FloatingPointError):
                f(a, b)


def test_out_is_untouched_when_a_warning_filter_raises():
    a, z = np.ones(N), np.zeros(N)
    out = np.full(N, 7.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="divide by zero encountered in divide"):
            nclx.evaluate("a / z", {"a": a, "z": z}, {}, out=out)
    assert (out == 7.0).all()


def test_a_step_on_scalars_alone_reports_on_every_call():
    a = np.ones(N)
    k = np.float64(0.0)
    for _ in range(3):
        got, gw = _warned(lambda: nclx.evaluate("a * log(k)", {"a": a, "k": k}))
        want, ww = _warned(lambda: a * np.log(k))
        assert _same(got, want) and gw == ww
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            nclx.evaluate("a * log(k)", {"a": a, "k": k})

    @nclx.fuse
    def g(x, s):
        return x * np.log(s)
    for _ in range(3):
        got, gw = _warned(lambda: g(a, 0.0))
        assert gw == [(RuntimeWarning, "divide by zero encountered in log")]
    assert "flags" in g.explain(a, 0.0)


def test_a_result_of_0d_arrays_alone_keeps_their_shape():
    a = np.ones(N)
    k = np.array(3.0)

    @nclx.fuse
    def scale_only(a, k):
        return k * 2.0

    @nclx.fuse
    def total(a, k):
        return np.sum(k * 2.0)

    for f in (scale_only, total):
        assert _same(f(a, k), f.__wrapped__(a, k))
        assert type(f(a, k)) is type(f.__wrapped__(a, k))
        assert "0-d arrays and scalars alone" in f.explain(a, k)

    @nclx.fuse
    def both(a, k):
        return a + k * 2.0                 # the 0-d part broadcasts: fused
    assert both.explain(a, k) == "fused" and _same(both(a, k), both.__wrapped__(a, k))


def test_thresholds_on_values_read_past_the_probes_run_eagerly():
    @nclx.fuse
    def checked_max(x):
        if np.asarray(x).max() > 100:
            raise ValueError("too big")
        return x * 2.0

    @nclx.fuse
    def signed(i):
        if np.asarray(i).min() >= 0:
            return i + 1
        return i - 1

    x = np.ones(N)
    x[-1] = 1000.0
    with pytest.raises(ValueError, match="too big"):
        checked_max(x)
    i = np.tile(np.array([5, -7, 5], np.int64), N // 3)
    assert _same(signed(i), signed.__wrapped__(i))


@pytest.mark.parametrize("zero,negzero", [(complex(0.0), complex(-0.0)),
                                          (decimal.Decimal("0"), decimal.Decimal("-0"))])
def test_signed_zero_globals_do_not_share_a_plan(zero, negzero):
    ns = {"np": np, "K": zero}
    exec("def f(a):\n    return a * (K.real if isinstance(K, complex) else float(K))\n", ns)
    f = nclx.fuse(ns["f"])
    a = np.ones(N)
    assert _same(f(a), ns["f"](a))
    ns["K"] = negzero
    assert _same(f(a), ns["f"](a)) and np.signbit(f(a)[0])


@pytest.mark.parametrize("value", [2 ** 64, 2 ** 70])
def test_recycle_cap_past_a_size_t_names_the_setting(value):
    before = nclx._ncl.recycle.cap()
    with pytest.raises(ValueError, match="recycle_cap"):
        nclx.config(recycle_cap=value)
    assert nclx._ncl.recycle.cap() == before
    with pytest.raises(ValueError, match="size_t"):
        nclx._ncl.recycle.cap(value)


def _located(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(x.filename, x.lineno, str(x.message)) for x in w]


def _div(a, z):
    return a / z + 1.0


def _sum_overflow(a):
    return np.sum(a * 1e308 * 10)


@pytest.mark.parametrize("fn,args", [(_div, "az"), (_sum_overflow, "a")])
def test_fused_warnings_name_the_line_eager_numpy_names(fn, args):
    """Found by review: every fused warning named nclx's own frame
    (fused.py), so the default action's once-per-location showed one per
    message for the whole process and module= filters missed them."""
    a, z = np.ones(N), np.zeros(N)
    vals = [{"a": a, "z": z}[c] for c in args]
    f = nclx.fuse(fn)
    assert f.explain(*vals) == "fused"
    want = _located(lambda: fn(*vals))
    assert want and all(w[0] != __file__ or w[1] > 0 for w in want)
    assert _located(lambda: f(*vals)) == want


def test_evaluate_warnings_name_the_calling_line_fused_or_eager():
    a, z = np.ones(N), np.zeros(N)
    small, zs = np.ones(10), np.zeros(10)
    line = sys._getframe().f_lineno + 1
    got = _located(lambda: nclx.evaluate("a / z", {"a": a, "z": z}))
    assert got == [(__file__, line, "divide by zero encountered in divide")]
    line = sys._getframe().f_lineno + 1
    got = _located(lambda: nclx.evaluate("small / zs", {"small": small, "zs": zs}))
    assert got == [(__file__, line, "divide by zero encountered in divide")]


def test_module_filters_see_fused_warnings():
    a, z = np.ones(N), np.zeros(N)
    f = nclx.fuse(_div)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f(a, z)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=__name__)
        f(a, z)
        nclx.evaluate("a / z", {"a": a, "z": z})
    assert w == []


# ------------------------------------------------ found reviewing the fixes above
def test_a_scalar_step_flagging_what_the_caller_ignores_still_fuses():
    """The recording errstate reported every flag, ignored ones too: under
    NumPy's default errstate (under='ignore') np.exp(-800.0) made the call
    eager for good."""
    a = np.ones(N)

    @nclx.fuse
    def boltzmann(a, e):
        return a * np.exp(-e)
    assert boltzmann.explain(a, 800.0) == "fused"
    got, gw = _warned(lambda: boltzmann(a, 800.0))
    want, ww = _warned(lambda: boltzmann.__wrapped__(a, 800.0))
    assert _same(got, want) and gw == ww == []
    with np.errstate(under="warn"):
        got, gw = _warned(lambda: boltzmann(a, 800.0))
        want, ww = _warned(lambda: boltzmann.__wrapped__(a, 800.0))
        assert _same(got, want) and gw == ww != []
    with np.errstate(all="ignore"):
        assert nclx.fuse(lambda a: a * np.log(0.0)).explain(a) == "fused"


def test_evaluate_reports_a_final_sum_where_numpy_does():
    a = np.full(N, 1e308)
    want = _located(lambda: np.sum(a * 1.0))
    got = _located(lambda: nclx.evaluate("sum(a * 1.0)", {"a": a}))
    assert want and got == want


def test_out_is_untouched_when_filters_change_in_place():
    """The verdict on the filters was kept while the list had the same
    identity, length and first entry: changed in place, out= was written
    before the warning turned error was raised."""
    a, z = np.ones(N), np.zeros(N)
    out = np.full(N, 7.0)
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.filterwarnings("ignore", category=UserWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning, append=True)
        with np.errstate(divide="ignore"):
            nclx.evaluate("a / z", {"a": a, "z": z}, out=np.empty(N))
        warnings.filters.pop()
        warnings.filterwarnings("error", category=RuntimeWarning, append=True)
        with pytest.raises(RuntimeWarning):
            nclx.evaluate("a / z", {"a": a, "z": z}, out=out)
    assert (out == 7.0).all()


def test_evaluate_keeps_no_callers_globals():
    """A cache of relocated functions held each calling module's globals."""
    import gc
    import weakref

    class Marker:
        pass
    for warn in (False, True):
        ns = {"nclx": nclx, "np": np, "marker": Marker(),
              "a": np.ones(N), "z": np.zeros(N) if warn else np.ones(N)}
        ref = weakref.ref(ns["marker"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec("r = nclx.evaluate('a / z')", ns)
        del ns
        gc.collect()
        assert ref() is None


def test_evaluate_from_no_python_frame():
    """evaluate read its caller's frame even with both dicts given: from a
    thread started on it directly it raised ValueError (call stack is not
    deep enough)."""
    import _thread
    import time
    a = np.ones(N)
    out = np.zeros(N)
    done = []
    _thread.start_new_thread(nclx.evaluate, ("a * 2.0", {"a": a}, {}, out))
    for _ in range(500):
        if (out == 2.0).all():
            done.append(True)
            break
        time.sleep(0.01)
    assert done


def test_seterr_inside_a_fused_function_stays_set():
    a = np.ones(N)

    def f(a):
        r = a * 2.0
        np.seterr(divide="ignore")          # after the last step: no step sees it
        return r
    with np.errstate(divide="warn"):
        nclx.fuse(f)(a)
        assert np.geterr()["divide"] == "ignore"


def test_a_raising_step_s_traceback_ends_at_its_line():
    """Under 'raise' the last traceback entry was nclx's compiled reporter
    (blockexec.pyx), after the step's line; eager NumPy's ends there."""
    import traceback
    a, z = np.ones(N), np.zeros(N)
    f = nclx.fuse(_div)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError) as want:
            _div(a, z)
        with pytest.raises(FloatingPointError) as got:
            f(a, z)
    last = traceback.extract_tb(got.value.__traceback__)[-1]
    ref = traceback.extract_tb(want.value.__traceback__)[-1]
    assert (last.filename, last.lineno, last.name) == (ref.filename, ref.lineno, ref.name)
