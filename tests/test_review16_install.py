"""Review 16: uninstall() cut short between (or inside) its restore steps.

A Ctrl-C (or any exception) delivered while uninstall() put NumPy's sort
slots back left the copies and np.sort's combined entry swapped while
install's state said uninstalled; nothing put them back until the next
uninstall().
"""
import numpy as np
import pytest

import nclx
from nclx._ncl import copying, entries, install, sortcopy, sorting


class _Interrupting:
    """Stands for nclx._ncl.sorting in install.py: its swap_out raises
    KeyboardInterrupt once, before or after doing the real work."""

    def __init__(self, after):
        self.after = after
        self.calls = 0

    def __getattr__(self, name):
        return getattr(sorting, name)

    def swap_out(self):
        self.calls += 1
        if self.calls == 1:
            if self.after:
                sorting.swap_out()
            raise KeyboardInterrupt
        return sorting.swap_out()


@pytest.fixture
def restored():
    yield
    nclx.uninstall()
    assert not entries.installed_count()


@pytest.mark.parametrize("after", [False, True], ids=["inside", "between"])
def test_uninstall_interrupted_restores_everything(monkeypatch, restored, after):
    nclx.install(sorts=None, copies=None)
    had_sorts, had_copies = sorting.is_swapped(), copying.is_swapped()
    if not (had_sorts or had_copies):
        pytest.skip("this NumPy has neither nclx's sorts nor its copies "
                    f"(NumPy {np.__version__})")
    monkeypatch.setattr(install, "_sorting", _Interrupting(after))
    with pytest.raises(KeyboardInterrupt):
        nclx.uninstall()
    monkeypatch.undo()
    assert not nclx.is_installed()
    assert not sorting.is_swapped()
    assert not copying.is_swapped()
    assert not sortcopy.is_swapped()
    a = np.arange(10.0)[::-1].copy()
    assert np.sort(a).tobytes() == np.arange(10.0).tobytes()


def test_each_runs_every_part_and_raises_first():
    seen = []

    def bad():
        seen.append("bad")
        raise ValueError("first")

    def good():
        seen.append("good")
        return (1, 0)

    done = []
    with pytest.raises(ValueError, match="first"):
        install._each((bad, good), done)
    assert seen == ["bad", "bad", "good"]
    assert done == [(1, 0)]
