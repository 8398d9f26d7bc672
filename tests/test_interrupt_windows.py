"""A Ctrl-C landing inside nclx's own bookkeeping (found by review): a
KeyboardInterrupt raised by a signal handler at any moment of entering or
leaving ``installed()`` / ``checked()``, during the first fused run's setup,
or while a fork waits for nclx's locks, leaves no state behind.  Each
failed before its fix (the storms leaked within a few thousand blocks)."""
import os
import threading

import numpy as np
import pytest

import nclx
from nclx._ncl import blockplan, forksafe
from nclx._ncl import install as _install
from conftest import run_script

STORM = """
import signal, numpy as np, nclx
from nclx._ncl import install as I
def onalarm(sig, frm):
    if frm is not None and frm.f_code.co_name == {frame!r}:
        raise KeyboardInterrupt
signal.signal(signal.SIGALRM, onalarm)
signal.setitimer(signal.ITIMER_REAL, 0.00005, 0.00005)
kis = 0
bad = None
for i in range({rounds}):
    try:
        with {block}:
            pass
    except KeyboardInterrupt:
        kis += 1
    if (nclx.is_installed() and not I._state["explicit"]) or nclx.checked.active():
        bad = i
        break
signal.setitimer(signal.ITIMER_REAL, 0, 0)
signal.signal(signal.SIGALRM, signal.SIG_IGN)
print(kis > 100, bad, nclx.is_installed(), I._state["holds"], nclx.checked.active())
"""


@pytest.mark.parametrize("frame, block", [("installed", "nclx.installed()"),
                                          ("checked", "nclx.checked()")])
def test_interrupts_while_entering_and_leaving_blocks_leave_no_state(frame, block):
    proc = run_script(STORM.format(frame=frame, block=block, rounds=60_000), timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "None", "False", "0", "False"], proc.stdout


def test_an_interrupted_first_plan_leaves_nothing_half_built(monkeypatch):
    a = np.arange(1000.0)
    want = (a * 2.0 + a).tobytes()
    assert nclx.evaluate("a*2.0+a").tobytes() == want
    monkeypatch.setattr(blockplan, "_ufunc_op", None)
    real = blockplan.entryloops.entry_loops
    calls = []

    def interrupted(op):
        calls.append(op)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(op)

    monkeypatch.setattr(blockplan.entryloops, "entry_loops", interrupted)
    with pytest.raises(KeyboardInterrupt):
        blockplan._loop(np.multiply, "ddd", "test")
    monkeypatch.setattr(blockplan.entryloops, "entry_loops", real)
    assert blockplan._ufunc_op is None
    assert blockplan._loop(np.multiply, "ddd", "test")[0] != 0
    for ex in ("a*3.0-a", "where(a>5.0, a, 0.0)*2.0"):
        got = nclx.evaluate(ex, {"a": a})
        assert got.tobytes() == eval(ex, {"where": np.where, "a": a}).tobytes()


class _Refusing:
    def acquire(self):
        raise KeyboardInterrupt

    def release(self):                                     # pragma: no cover
        raise AssertionError("never taken")


class _Owner:
    pass


def test_an_interrupted_fork_leaves_no_lock_taken():
    owner = _Owner()
    owner.lock = _Refusing()
    forksafe.guard(owner, "lock", _Refusing)     # taken after nclx's own locks
    try:
        pid = os.fork()     # the before-fork hook's exception is reported, not raised
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    finally:
        forksafe._owners.pop(owner, None)
    got = []

    def take():
        ok = _install._lock.acquire(timeout=5)
        got.append(ok)
        if ok:
            _install._lock.release()

    t = threading.Thread(target=take)
    t.start()
    t.join()
    assert got == [True]
    with nclx.installed():
        assert nclx.is_installed()
