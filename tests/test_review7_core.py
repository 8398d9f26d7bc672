"""Defects a hostile review found in the core (each test failed before its
fix): a Python hook that wrote part of its output and then raised had that
output written back before the rest of the chain recomputed (in-place
calls, reductions and overlapping copies read it as input), and
``nclx.checked()`` broke the "call" and "log" errstate modes of the other
floating-point categories."""
import sys

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks


@pytest.fixture
def quiet_unraisable(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u))
    return seen


def _half_then_raise(call):
    ins, out = call.views()
    out[:] = 1000
    raise ValueError("bug in hook")


@pytest.fixture
def installed():
    nclx.install()
    try:
        yield
    finally:
        nclx.uninstall()


@pytest.mark.parametrize("n", [5, 100_003])
def test_in_place_call_after_a_failing_hook(installed, quiet_unraisable, n):
    h = hooks.register("funnel", "binary", _half_then_raise)
    try:
        a = np.arange(float(n))
        a += np.ones(n)
    finally:
        h.remove()
    assert a.tobytes() == (np.arange(float(n)) + 1).tobytes()   # before: 1001 everywhere
    assert quiet_unraisable                          # the hook's error is reported


def test_reduction_after_a_failing_hook(installed, quiet_unraisable):
    h = hooks.register("funnel", "reduce", _half_then_raise)
    try:
        got = np.arange(5.0).sum()
    finally:
        h.remove()
    assert got == 10.0                               # before: 1010.0


def test_overlapping_copy_after_a_failing_hook(installed, quiet_unraisable):
    def zero_then_raise(call):
        ins, out = call.views()
        out[:] = 0
        raise ValueError("bug in hook")
    h = hooks.register("funnel", "convert", zero_then_raise)
    try:
        x = np.arange(8.0)
        x[1:] = x[:-1]
    finally:
        h.remove()
    assert x.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


# ------------------------------------------------------ checked() errstate
def _stock_and_checked(fn):
    """fn() as stock NumPy gives it, and inside nclx.checked()."""
    def outcome(inside):
        try:
            if inside:
                with nclx.checked():
                    return "ok", fn()
            return "ok", fn()
        except Exception as exc:  # noqa: BLE001 - compared
            return type(exc).__name__, str(exc)
    return outcome(False), outcome(True)


def test_divide_call_mode_inside_checked():
    seen = {False: [], True: []}
    a = np.array([1.0])
    for inside in (False, True):
        def cb(kind, flag, _s=seen[inside]):
            _s.append((kind, flag))
        with np.errstate(divide="call", call=cb):
            if inside:
                with nclx.checked():
                    a / 0                     # before: TypeError '_Writer' is not callable
            else:
                a / 0
    assert seen[True] == seen[False] == [("divide by zero", 1)]


def test_divide_log_mode_inside_checked_with_over_raise():
    logs = {False: [], True: []}
    a = np.array([1.0])
    for inside in (False, True):
        class Log:
            def write(self, m, _l=logs[inside]):
                _l.append(m)
        with np.errstate(divide="log", over="raise", call=Log()):
            if inside:
                with nclx.checked():
                    a / 0                     # before: FloatingPointError
            else:
                a / 0
    assert logs[True] == logs[False] and len(logs[False]) == 1


def test_overflow_call_mode_gets_numpys_flags_inside_checked():
    seen = {False: [], True: []}
    x, y = np.array([1e308, np.inf]), np.array([10.0, 0.0])
    for inside in (False, True):
        def cb(kind, flag, _s=seen[inside]):
            _s.append((kind, flag))
        with np.errstate(over="call", invalid="ignore", call=cb):
            if inside:
                with nclx.checked():
                    x * y
            else:
                x * y
    assert seen[True] == seen[False]             # before: flag 2 where NumPy gives 10


def test_integer_overflow_still_raises_under_every_surrounding_over_mode():
    big = np.array([2 ** 62], dtype=np.int64)
    for mode in ("ignore", "warn", "raise", "call", "log", "print"):
        class Log:
            def write(self, m):
                pass
        with np.errstate(over=mode, call=(lambda k, f: None) if mode == "call" else Log()):
            with pytest.raises(OverflowError, match="integer overflow in multiply"):
                with nclx.checked():
                    big * 4


def test_a_non_callable_call_target_fails_as_numpy_does():
    class Log:
        def write(self, m):
            pass
    a = np.array([1.0])
    with np.errstate(divide="call", call=Log()):
        stock, inside = _stock_and_checked(lambda: a / 0)
    assert stock == inside and stock[0] == "TypeError"


@pytest.mark.parametrize("runner", ["run_numpy", "run_nclx", "next"])
def test_a_hook_that_ran_the_loop_then_raised_is_not_computed_twice(installed,
                                                                      quiet_unraisable, runner):
    """Found by review of the fix above: run_numpy() wrote the real output
    (for `a += b` the input too), then the chain recomputed from it."""
    def run_then_raise(call):
        getattr(call, runner)()
        raise ValueError("bug")
    h = hooks.register("funnel", "binary", run_then_raise)
    try:
        a = np.arange(5.0)
        a += np.ones(5)
    finally:
        h.remove()
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]          # before: [2, 3, 4, 5, 6]
    h = hooks.register("funnel", "reduce", run_then_raise)
    try:
        got = np.arange(5.0).sum()
    finally:
        h.remove()
    assert got == 10.0                                       # before: 20.0
