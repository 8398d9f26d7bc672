"""nclx._timing: the one timer and plot helper of the benches and the demo."""
import ast
import os
import stat
import sys
import time

import pytest

from nclx import _timing


def test_timing_imports_nothing_from_nclx():
    """It is a layer under the subpackages: no nclx import of any kind."""
    with open(_timing.__file__) as f:
        tree = ast.parse(f.read())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n == "nclx" or n.startswith("nclx.")]


def test_samples_runs_before_untimed_once_per_round():
    calls = []
    times = _timing.samples(lambda: calls.append("fn"), 3, inner=2,
                            before=lambda: (calls.append("before"), time.sleep(0.05)))
    assert calls == ["before", "fn", "fn"] * 3
    assert len(times) == 3 and max(times) < 0.025   # the sleep in before() is not timed


def test_samples_divides_by_inner():
    times = _timing.samples(lambda: time.sleep(0.01), 2, inner=3)
    assert len(times) == 2 and all(0.009 < t < 0.05 for t in times)


def test_samples_releases_the_last_result_after_the_clock_stops():
    class Slow:
        def __del__(self):
            time.sleep(0.05)

    times = _timing.samples(Slow, 2)
    assert max(times) < 0.025


def test_median_time_is_the_median_call():
    durations = iter([0.0, 0.03, 0.0, 0.03, 0.0])
    t = _timing.median_time(lambda: time.sleep(next(durations)), repeat=5)
    assert t < 0.025


def test_budget_time_fills_the_budget_in_batches():
    count = []
    t = _timing.budget_time(lambda: count.append(1), 0.01, rounds=5)
    assert t > 0 and len(count) > 2 + 5   # warm-up, sizing call, then 5 batches of several


def test_interleaved_alternates_setups_and_gives_one_median_each():
    log = []
    state = {"mode": None}

    def fn():
        log.append(state["mode"])
        time.sleep(0.02 if state["mode"] == "slow" else 0.0)

    fast, slow = _timing.interleaved(
        fn, (lambda: state.update(mode="fast"), lambda: state.update(mode="slow")), 3,
        lambda f: _timing.median_time(f, 1))
    assert log == ["fast", "slow"] * 3
    assert fast < 0.015 < slow


def test_pyplot_without_matplotlib_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SystemExit, match="pip install matplotlib"):
        _timing.pyplot()


def test_find_mpiexec_prefers_the_one_beside_python(tmp_path, monkeypatch):
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert _timing.find_mpiexec() == str(fake)


def test_find_mpiexec_falls_back_to_path(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))   # none beside it
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert _timing.find_mpiexec() is None
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "mpiexec"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bindir) + os.pathsep + str(tmp_path / "nothing"))
    assert _timing.find_mpiexec() == str(fake)
