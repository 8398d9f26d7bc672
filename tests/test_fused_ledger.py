"""nclx.ledger and fused runs: while ledgers record (and nothing else is
linked) a run stays fused, unchanged in its results, and adds one row per
step -- one call of n elements per step per run, as the same code run
eagerly records one call per ufunc call."""
import threading

import numpy as np
import pytest

import nclx
import nclx.ledger
from nclx import fused
from fused_fixtures import low  # noqa: F401 - fixtures


def _rows(led):
    # without NumPy's copies (the copy op): an eager reduction copies its
    # first element into the result, a fused one writes the result directly
    return sorted((r.op, r.kind, r.dtypes, r.calls, r.elements) for r in led.records()
                  if r.op != "copy")


def _data(n=70_001):
    rng = np.random.default_rng(0)
    return rng.random(n), rng.random(n)


def test_recording_keeps_runs_fused(low):
    a, b = _data()
    with nclx.ledger.recording() as led:
        why, ledgers = fused._why_not_now((a, b))
        assert why is None and ledgers == (led,)
        r, why = fused._run(lambda a, b: 2 * a + b * b, (a, b), fused._Plans(), None)
        assert why is None
    assert r.tobytes() == (2 * a + b * b).tobytes()
    assert fused._why_not_now((a, b)) == (None, ())


@pytest.mark.parametrize("ex,n_threads", [("2*a+b*b", 1), ("2*a+b*b", 2), ("sum(a*b)", 3),
                                          ("sqrt(a*a+b*b)", 7), ("(a-b)/(a+b)", 2)])
def test_rows_equal_eager_rows(ex, n_threads, low):
    a, b = _data()
    before = nclx.get_num_threads()
    nclx.set_num_threads(n_threads)
    try:
        ref = nclx.evaluate(ex)                       # traced before recording
        with nclx.ledger.recording() as fz:
            got = nclx.evaluate(ex)
            got2 = nclx.evaluate(ex)
        fused.fuse_threshold(10 ** 9)                 # the same code, eagerly
        with nclx.ledger.recording() as eager:
            nclx.evaluate(ex)
            nclx.evaluate(ex)
    finally:
        nclx.set_num_threads(before)
    assert np.asarray(got).tobytes() == np.asarray(ref).tobytes() == np.asarray(got2).tobytes()
    assert _rows(fz) == _rows(eager) and _rows(fz)
    assert all(r.ns > 0 for r in fz.records())


def test_where_row_and_reduce_row(low):
    a, b = _data()
    nclx.evaluate("sum(where(a>b,a,b)*2)")
    with nclx.ledger.recording() as led:
        nclx.evaluate("sum(where(a>b,a,b)*2)")
    n = a.size
    # the loop calls eager NumPy makes for a sum of n (one, or one per
    # buffer-sized chunk on NumPy 2.0), read from its own ledger rows
    before = fused.fuse_threshold()
    fused.fuse_threshold(10 ** 9)
    try:
        with nclx.ledger.recording() as eager:
            nclx.evaluate("sum(a)")
    finally:
        fused.fuse_threshold(before)
    (sum_calls,) = [r.calls for r in eager.records() if r.kind == "reduce"]
    assert _rows(led) == sorted([
        ("greater", "elementwise", ("float64", "float64", "bool"), 1, n),
        ("where", "elementwise", ("bool", "float64", "float64", "float64"), 1, n),
        ("multiply", "elementwise", ("float64", "float64", "float64"), 1, n),
        ("add", "reduce", ("float64", "float64", "float64"), sum_calls, n)])
    assert {r.subsystem for r in led.records()} == {"compare", "ternary", "binary", "reduce"}
    led.clear()
    assert led.records() == []


def test_two_ledgers_both_record(low):
    a, b = _data()
    nclx.evaluate("a*b+a")
    with nclx.ledger.recording() as outer:
        with nclx.ledger.recording() as inner:
            assert fused._why_not_now((a, b))[1] == (outer, inner)
            nclx.evaluate("a*b+a")
        nclx.evaluate("a*b+a")
    assert [r.calls for r in inner.records()] == [1, 1]
    assert sorted(r.calls for r in outer.records()) == [2, 2]


def test_raise_records_the_steps_that_ran(low):
    a = np.linspace(-1, 1, 50_001)
    z = np.zeros_like(a)
    with np.errstate(all="ignore"):
        nclx.evaluate("(a / z) * 2 + a")
    with np.errstate(divide="raise", invalid="raise"), nclx.ledger.recording() as led:
        with pytest.raises(FloatingPointError):
            nclx.evaluate("(a / z) * 2 + a")
    assert [(r.op, r.calls) for r in led.records()] == [("true_divide", 1)]


def test_hooks_or_checked_with_a_ledger_run_eagerly(low):
    a, b = _data()
    nclx.evaluate("2*a+b*b")
    seen = []

    def hook(call):
        seen.append(call.op)
        return call.next()

    with nclx.ledger.recording() as led, nclx.hooks.register("funnel", "binary", hook):
        assert fused._why_not_now((a, b))[0] == "hooks or checked() are active"
        r = nclx.evaluate("2*a+b*b")
    assert r.tobytes() == (2 * a + b * b).tobytes() and len(seen) == 3
    with nclx.ledger.recording(), nclx.checked():
        assert fused._why_not_now((a, b))[0] == "hooks or checked() are active"
    with nclx.ledger.recording(), nclx.installed(python_funnel=True), \
            nclx.hooks.register("python", "binary", lambda call: call.next()):
        assert fused._why_not_now((a, b))[0] == "hooks or checked() are active"
    assert [r.calls for r in led.records() if r.op == "multiply"] == [2]


def test_python_threads_record_every_run(low):
    a, b = _data()
    ref = (2 * a + b * b).tobytes()
    nclx.evaluate("2*a+b*b")
    bad = []

    def work():
        for _ in range(5):
            if nclx.evaluate("2*a+b*b", local_dict={"a": a, "b": b}).tobytes() != ref:
                bad.append(1)

    with nclx.ledger.recording() as led:
        ts = [threading.Thread(target=work) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not bad
    assert sorted((r.op, r.calls) for r in led.records()) == [("add", 20), ("multiply", 40)]


def test_first_trace_inside_a_ledger_records_only_the_fused_run(low):
    # tracing runs each ufunc once on one-element probes: those calls are
    # not the user's and no ledger counts them (they did before the mute)
    a, b = _data()
    with nclx.ledger.recording() as led:
        nclx.fuse(lambda a, b: a * b - b)(a, b)
    assert sorted((r.op, r.calls, r.elements) for r in led.records()) == \
        [("multiply", 1, a.size), ("subtract", 1, a.size)]


def test_probe_mute_is_per_thread_and_balanced(low):
    from nclx._ncl import ledger as cledger
    with pytest.raises(RuntimeError, match="unmuted more often"):
        cledger.mute(-1)
    with pytest.raises(ValueError):
        cledger.mute(2)
    x = np.arange(10.0)
    cledger.mute(1)
    try:
        with nclx.ledger.recording() as led:
            t = threading.Thread(target=lambda: np.add(x, x))
            t.start()
            t.join()
            np.multiply(x, x)           # this thread is muted: not counted
    finally:
        cledger.mute(-1)
    assert [(r.op, r.calls) for r in led.records()] == [("add", 1)]


def test_a_trace_that_raises_leaves_the_ledger_unmuted(low):
    a, b = _data()

    def bad(a, b):
        raise ZeroDivisionError("in the traced function")
    with nclx.ledger.recording() as led:
        with pytest.raises(ZeroDivisionError):
            nclx.fuse(bad)(a, b)
        np.add(a, b)
    assert [(r.op, r.calls) for r in led.records()] == [("add", 1)]
