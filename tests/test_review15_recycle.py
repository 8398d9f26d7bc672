"""Review 15 of the recycling allocator (``nclx.install(recycle=True)``):
what a hostile user tried, and what failed before its fix.

Each test here failed on the code before review 15; crash- and hang-prone
scenarios run in a fresh Python (``run_script``).
"""
import numpy as np
import pytest

import nclx
from nclx._ncl import install as _install
from nclx._ncl import recycle

from conftest import run_script

MIB = 1 << 20
BIG = 2 * MIB // 8 + 3          # float64 elements: a recycled block (> 2 MiB)


@pytest.fixture
def clean():
    """NumPy's handler and nclx's state as they were, whatever the test did."""
    before = recycle.current_handler()
    cap = recycle.cap()
    yield before
    nclx.uninstall()
    recycle.set_handler(before)
    recycle.cap(cap)


def _consistent(before):
    """install state, NumPy's loops and the handler tell one story."""
    explicit = _install._state["explicit"]
    ours = recycle.current_handler() is recycle.handler()
    return (nclx.is_installed() == explicit and ours == explicit
            and (explicit or recycle.current_handler() is before))


# ------------------------------------------------- Ctrl-C during uninstall()

def test_an_interrupt_when_the_cache_is_unmapped_still_restores_numpy(clean, monkeypatch):
    """uninstall() unmaps the cache (milliseconds for a full one): a Ctrl-C
    arriving meanwhile is raised as the unmap returns.  That was before the
    handler and NumPy's loops were put back, so NumPy stayed swapped (and
    the recycler its handler) while nclx's state said uninstalled."""
    before = clean
    nclx.install(recycle=True)
    real = recycle.set_active

    def interrupted(flag):
        prev = real(flag)
        if not flag:
            raise KeyboardInterrupt      # the signal, delivered when the unmap returns
        return prev

    monkeypatch.setattr(_install._recycle, "set_active", interrupted)
    with pytest.raises(KeyboardInterrupt):
        nclx.uninstall()
    monkeypatch.undo()
    assert not nclx.is_installed()
    assert recycle.current_handler() is before
    assert not recycle.is_active() and recycle.stats()["cached_bytes"] == 0


_SIGINT_STORM = """
import signal, numpy as np, nclx
from nclx._ncl import install as I, recycle
signal.signal(signal.SIGALRM, signal.default_int_handler)
before = recycle.current_handler()
bad = kis = 0
for i in range(30):
    nclx.install(recycle=True)
    d = [np.ones(4 * 2**20 // 8) for _ in range(12)]; del d     # 48 MiB cached, touched
    signal.setitimer(signal.ITIMER_REAL, 0.0002 + 0.00005 * (i % 10))   # mostly in the unmap
    try:
        try:
            nclx.uninstall()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except KeyboardInterrupt:
        kis += 1
        ex = I._state["explicit"]
        ours = recycle.current_handler() is recycle.handler()
        if nclx.is_installed() != ex or ours != ex or (not ex and recycle.current_handler()
                                                         is not before):
            bad += 1
    nclx.uninstall()
print(bad, kis)
"""


def test_sigint_storm_during_uninstall_leaves_a_whole_state():
    """The same with real signals: SIGALRM raising KeyboardInterrupt at
    varying moments of uninstall() with a full cache (before the fix, most
    interrupts that hit left NumPy's loops swapped)."""
    r = run_script(_SIGINT_STORM, timeout=60)
    assert r.returncode == 0, r.stderr[-3000:]
    bad, kis = map(int, r.stdout.split())
    assert bad == 0, (bad, kis)



class _InterruptedUpdate(dict):
    """install's state, a Ctrl-C delivered as uninstall()'s update returns."""

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        raise KeyboardInterrupt


def test_an_interrupt_after_the_state_update_leaves_no_negative_holds(clean, monkeypatch):
    """uninstall() reset the holds of the blocks entered before it in one
    statement and moved to a new generation in the next: a Ctrl-C between
    them left the old generation, so such a block's exit took its hold off
    again (holds -1: later installed() blocks then ran on NumPy's loops) --
    and nothing was restored."""
    before = clean
    with nclx.installed():
        nclx.install(recycle=True)
        monkeypatch.setattr(_install, "_state", _InterruptedUpdate(_install._state))
        with pytest.raises(KeyboardInterrupt):
            nclx.uninstall()
        state = dict(_install._state)
        monkeypatch.undo()
        _install._state.update(state)
        assert not nclx.is_installed() and recycle.current_handler() is before
    assert _install._state["holds"] == 0
    with nclx.installed():
        assert nclx.is_installed()
    assert not nclx.is_installed()


# ------------------------------------------------- recycle_cap: int-likes

class _IndexOnly:
    """An int by Python's protocol (operator.index takes it) and nothing else."""

    def __init__(self, v):
        self.v = v

    def __index__(self):
        return self.v


def test_recycle_cap_takes_any_index_type(clean):
    """_check_bytes accepts a type with __index__, then compared the object
    itself with 0: an int-like that only has __index__ raised "'<' not
    supported between instances of '_IndexOnly' and 'int'", naming nothing."""
    nclx.config(recycle_cap=_IndexOnly(5 * MIB))
    assert recycle.cap() == 5 * MIB
    with pytest.raises(ValueError, match="'recycle_cap' must be >= 0"):
        nclx.config(recycle_cap=_IndexOnly(-1))
    assert recycle.cap() == 5 * MIB


def test_recycle_cap_refuses_an_array_naming_the_setting(clean):
    """ndarray has __index__ (for 0-d integer arrays): a 2-element array got
    NumPy's "truth value of an array ... is ambiguous" instead of the
    setting's own TypeError."""
    cap = recycle.cap()
    with pytest.raises(TypeError, match="'recycle_cap' takes a non-negative int"):
        nclx.config(recycle_cap=np.array([MIB, 2 * MIB]))
    assert recycle.cap() == cap
    nclx.config(recycle_cap=np.array(3 * MIB))        # a 0-d integer array is an index
    assert recycle.cap() == 3 * MIB
