"""Hooks used as a hostile caller would (found by review): a Ctrl-C while a
hook runs, an unraisablehook that raises, a Call handed to another thread,
hooks.reset() while checked() and ledger blocks are open or from inside a
hook.  Each test failed before its fix."""
import signal
import sys
import threading
import time

import numpy as np
import pytest

import nclx
import nclx.hooks as hooks
from nclx._ncl import install as _install


@pytest.fixture
def installed():
    nclx.install()
    try:
        yield
    finally:
        hooks.reset()
        nclx.uninstall()


@pytest.fixture
def sigint_default():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are handled on the main thread")   # pragma: no cover
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _depth():
    return getattr(_install._local, "depth", 0)


def test_keyboard_interrupt_in_a_funnel_hook_reaches_the_caller(installed, sigint_default):
    a = np.arange(1000, dtype=np.int64)
    r = np.zeros_like(a)

    def ctrl_c(call):
        raise KeyboardInterrupt        # what Ctrl-C while the hook runs raises

    h = hooks.register("funnel", "binary", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        np.add(a, a, out=r)
    h.remove()
    # the call completed (a failed hook does not lose the result), then the
    # interrupt came
    assert r.tobytes() == (2 * a).tobytes()
    assert h.errors == 1 and isinstance(h.last_error, KeyboardInterrupt)
    assert (a + a).tobytes() == (2 * a).tobytes()     # nothing pending


def test_keyboard_interrupt_from_a_signal_during_a_hook(installed, sigint_default):
    a = np.ones(1000)

    def slow(call):
        time.sleep(0.3)
        call.next()

    h = hooks.register("funnel", "binary", slow)
    old = signal.signal(signal.SIGALRM, signal.default_int_handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(KeyboardInterrupt):
            # (Python raises a pending interrupt where it next checks: after
            # a call or at a loop's jump, as with stock NumPy)
            np.add(a, a)
            for _ in range(3):
                pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        h.remove()


@pytest.mark.parametrize("level", ["funnel", "kernel"])
def test_an_unraisablehook_that_raises_loses_no_output_and_no_hook(installed, level):
    a = np.full(1000, 7, np.int64)
    r = np.full(1000, -1, np.int64)
    if level == "funnel":
        def bad(call):
            raise ValueError("boom")
        h = hooks.register("funnel", "binary", bad)
    else:
        class Bad(hooks.Kernel):
            def __call__(self, ins, out):
                raise ValueError("boom")
        h = hooks.register("kernel", ("add", "int64"), Bad())

    def unraisable(u):
        raise SystemExit(3)

    old = sys.unraisablehook
    sys.unraisablehook = unraisable
    try:
        np.add(a, a, out=r)
    finally:
        sys.unraisablehook = old
        h.remove()
    assert r.tobytes() == (2 * a).tobytes()
    assert h.errors == 1 and isinstance(h.last_error, ValueError)
    assert _depth() == 0
    seen = []
    with hooks.register("funnel", "binary", lambda c: (seen.append(c.op), c.next())):
        a + a
    assert seen == ["add"]
    with nclx.checked(), pytest.raises(OverflowError):
        np.array([2**62], np.int64) * 4


def test_a_call_handed_to_another_thread_ends_before_the_loop_returns(installed):
    n = 4_000_000
    a = np.ones(n)
    helpers, late = [], []

    def hook(call):
        t = threading.Thread(target=call.next)
        t.start()
        helpers.append(t)
        time.sleep(0.001)               # returns while the other thread runs the chain

    with hooks.register("funnel", "binary", hook):
        r = np.multiply(a, 3.0)
        got = r.tobytes()
    for t in helpers:
        t.join()
    assert got == np.full(n, 3.0).tobytes()

    # after the hook, the Call is dead in every thread
    kept = []
    with hooks.register("funnel", "binary", lambda c: (kept.append(c), c.next())):
        np.multiply(a[:10], 2.0)

    def later():
        try:
            kept[0].next()
        except RuntimeError as e:
            late.append(str(e))
    t = threading.Thread(target=later)
    t.start()
    t.join()
    assert late and "ended" in late[0]


def test_reset_keeps_the_nodes_of_open_checked_and_ledger_blocks(installed):
    a = np.array([2**62], np.int64)
    inside, done = threading.Event(), threading.Event()

    def other():
        with nclx.checked():
            inside.set()
            done.wait(30)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(30)
    try:
        with nclx.ledger.recording() as led:
            hooks.reset()
            a * 4
        assert [r.op for r in led.records()] == ["multiply"]
        with pytest.raises(OverflowError):
            with nclx.checked():
                a * 4
    finally:
        done.set()
        t.join()
    with pytest.raises(OverflowError):
        with nclx.checked():
            a * 4
    assert hooks.chains() == {} or all(
        not any(n.startswith(("nclx.checked", "ledger#")) for n in names)
        for names in hooks.chains().values())


def test_handle_removed_after_reset_from_inside_its_hook(installed):
    def rs(call):
        hooks.reset()
        call.next()

    h = hooks.register("funnel", "binary", rs)
    assert (np.arange(10) + 1).tobytes() == np.arange(1, 11).tobytes()
    assert h.removed
    h.remove()                                          # still idempotent
    assert (np.arange(10) + 1).tobytes() == np.arange(1, 11).tobytes()


def test_a_call_cannot_be_restarted_while_its_output_is_written_back(installed):
    # the hook used views(): after it returns the output's mirror is written
    # back (NumPy's copy releases the GIL); a thread holding the Call must
    # not start next() in that window
    n = 4_000_000
    a = np.ones(n)
    state = {}

    def helper(c):
        while True:
            try:
                c.next()
            except RuntimeError:
                return

    def hook(call):
        call.views()
        t = threading.Thread(target=helper, args=(call,))
        t.start()
        state["t"] = t
        time.sleep(0.02)

    with hooks.register("funnel", "binary", hook):
        for i in range(4):
            a[:] = i + 1
            r = np.multiply(a, 3.0)
            first = r.tobytes()
            state["t"].join()
            assert r.tobytes() == first == np.full(n, 3.0 * (i + 1)).tobytes()
