"""The loop entries' fast path opens only while no thread is in checked()
and no user node sits in a funnel or kernel chain (entries.gate)."""
import threading

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from nclx._ncl import entries


pytestmark = pytest.mark.usefixtures("installed_clean")


def _counting(log):
    def hook(call):
        log.append(call.op if hasattr(call, "op") else 1)
        call.next()
    return hook


def test_gate_is_open_with_no_user_node_and_no_mode():
    assert entries.gate() == 0


@pytest.mark.parametrize("level,target", [("funnel", "binary"), ("funnel", "reduce"),
                                          ("kernel", ("add", "float64")),
                                          ("kernel", ("sqrt", "float32"))])
def test_each_loop_level_user_node_closes_the_gate_until_removed(level, target):
    h = hooks.register(level, target, _counting([]))
    assert entries.gate() == 1
    h2 = hooks.register(level, target, _counting([]), name="second")
    assert entries.gate() == 2
    h.remove()
    assert entries.gate() == 1
    h2.remove()
    assert entries.gate() == 0


def test_python_level_nodes_leave_the_gate_open():
    h = hooks.register("python", "binary", _counting([]))
    assert entries.gate() == 0
    h.remove()


def test_reset_reopens_the_gate():
    for t in ("binary", "compare", "unary", "reduce"):
        hooks.register("funnel", t, _counting([]))
    hooks.register("kernel", ("add", "int64"), _counting([]))
    assert entries.gate() == 5
    hooks.reset()
    assert entries.gate() == 0


def test_checked_closes_the_gate_and_counts_each_thread_once():
    with nclx.checked():
        inside = entries.gate()      # the thread, plus checked's kernel nodes
        assert inside >= 1
        with nclx.checked():
            assert entries.gate() == inside
        seen = []

        def other():
            seen.append(entries.gate())
            with nclx.checked():
                seen.append(entries.gate())
            seen.append(entries.gate())

        t = threading.Thread(target=other)
        t.start(); t.join()
        assert seen == [inside, inside + 1, inside]
    assert entries.gate() == 0


def test_a_hook_on_another_op_does_not_change_results_of_small_calls():
    # the gate is shared: a hook anywhere sends every call through the
    # slow path, which must give the same bits as the fast one
    a = np.linspace(-3, 3, 37)
    b = a[::-1].copy()
    want = (a + b, np.sqrt(np.abs(a)), a.sum(), np.less(a, b))
    log = []
    h = hooks.register("kernel", ("multiply", "int8"), _counting(log))
    got = (a + b, np.sqrt(np.abs(a)), a.sum(), np.less(a, b))
    h.remove()
    for w, g in zip(want, got):
        np.testing.assert_array_equal(w, g)
    assert log == []


@pytest.mark.parametrize("n", [1, 7, 100, 1000])
def test_small_calls_under_a_user_node_anywhere_run_it(n):
    # before the gate, the fast path looked at the call's own chains; a hook
    # in the reduce chain must still run for a small sum and not for a + b
    log = []
    h = hooks.register("funnel", "reduce", _counting(log))
    a = np.arange(n, dtype=np.float64)
    a + a
    assert log == []
    a.sum()
    assert len(log) == 1
    h.remove()


def test_gate_counts_stay_exact_under_concurrent_register_remove_and_checked():
    a = np.arange(200, dtype=np.int64)
    want = a + a
    errors = []
    stop = threading.Event()

    def churn(level, target):
        try:
            for _ in range(200):
                h = hooks.register(level, target, _counting([]), name=f"c{threading.get_ident()}")
                h.remove()
        except Exception as e:      # pragma: no cover - reported below
            errors.append(e)

    def checker():
        try:
            for _ in range(200):
                with nclx.checked():
                    np.testing.assert_array_equal(a + a, want)
        except Exception as e:      # pragma: no cover
            errors.append(e)

    def caller():
        while not stop.is_set():
            if not np.array_equal(a + a, want):
                errors.append("wrong result")

    workers = [threading.Thread(target=churn, args=("funnel", "binary")),
               threading.Thread(target=churn, args=("kernel", ("add", "int64"))),
               threading.Thread(target=checker)]
    callers = [threading.Thread(target=caller) for _ in range(2)]
    for t in callers + workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    for t in callers:
        t.join()
    assert errors == []
    assert entries.gate() == 0
