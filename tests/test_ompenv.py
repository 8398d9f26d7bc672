"""libgomp's spin count under nclx (nclx/_ompenv.py): nclx asks for
GOMP_SPINCOUNT=10000 before its first module linked to libgomp loads, and
only then; the environment is the caller's again after ``import nclx``.

Why (docs/benchmarks.md, "Workers that spin"): with libgomp's default
(300,000 turns) a worker spins for milliseconds after each parallel region
and takes the time of the next runnable thread whenever another process
keeps a core busy; nclx.evaluate of 1e6 elements on 2 threads took 3-6 ms
against 1.5-1.8 ms with the lower count (two busy processes, 2-CPU VM)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _child(code, env_remove=(), **env):
    e = {k: v for k, v in os.environ.items() if k not in env_remove}
    e.update(env)
    # from this directory: the repository's source tree must not shadow nclx
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=e, cwd=HERE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip()


_PROBE = ("import os, nclx, nclx._ompenv as o\n"
          "print(o.applied(), '|', os.environ.get('GOMP_SPINCOUNT'), '|', o._libgomp_loaded())")
_CLEAN = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps (Linux)")
def test_nclx_sets_the_spin_count_for_libgomp_and_takes_it_out_again():
    out = _child(_PROBE, env_remove=_CLEAN)
    applied, left, loaded = [x.strip() for x in out.split("|")]
    import nclx._ncl._openmp as omp
    if not omp.openmp_enabled():
        pytest.skip("this nclx was built without OpenMP")       # pragma: no cover
    assert applied == "10000" and left == "None" and loaded == "True", out


@pytest.mark.parametrize("var, value", [("GOMP_SPINCOUNT", "7"), ("OMP_WAIT_POLICY", "passive")])
def test_the_users_setting_stands(var, value):
    out = _child(_PROBE + f"\nprint(os.environ[{var!r}])", env_remove=_CLEAN, **{var: value})
    first, last = out.splitlines()
    assert first.startswith("the user's setting") and last == value, out
    if var == "OMP_WAIT_POLICY":
        assert "| None |" in first, out        # nclx put no GOMP_SPINCOUNT beside it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps (Linux)")
def test_a_libgomp_loaded_before_nclx_keeps_its_settings():
    code = ("import ctypes\n"
            "try:\n    ctypes.CDLL('libgomp.so.1')\nexcept OSError:\n    print('none'); raise SystemExit\n"
            + _PROBE)
    out = _child(code, env_remove=_CLEAN)
    if out == "none":
        pytest.skip("no libgomp.so.1 on this machine to load first")   # pragma: no cover
    assert out.startswith("libgomp was loaded before nclx") and "| None |" in out, out


def test_child_processes_get_the_callers_environment():
    code = ("import os, subprocess, sys, nclx\n"
            "print(subprocess.run([sys.executable, '-c', "
            "\"import os; print(os.environ.get('GOMP_SPINCOUNT'))\"], capture_output=True, "
            "text=True).stdout.strip())")
    assert _child(code, env_remove=_CLEAN) == "None"
