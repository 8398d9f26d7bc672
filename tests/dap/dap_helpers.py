"""Running a scenario under ``mpiexec -n K`` in a subprocess of its own
session, for the scenarios that can leave ranks waiting for ever or end
them: a watchdog in every rank (WATCHDOG_S after the imports) and an outer
timeout (TIMEOUT_S) that kills the whole process group.

Each rank writes one line per step to ``rank<r>.txt``: ``OK <repr>`` or
``EXC <type>: <message>``, then ``END`` once every rank has passed a final
barrier, or ``HUNG`` when its watchdog fired.  The expectation throughout:
an error on one rank is raised on every rank (DapError or the original
error), never a rank left waiting in a collective; a result is NumPy's.
"""
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

import nclx

TIMEOUT_S = 60
WATCHDOG_S = 10

PRELUDE = textwrap.dedent("""
    import gc, os, sys, threading
    import numpy as np
    from mpi4py import MPI
    import nclx
    import nclx.dap as dap

    comm = MPI.COMM_WORLD
    rank, N = comm.Get_rank(), comm.Get_size()
    log = open(f"rank{rank}.txt", "w", buffering=1)

    def _hung():
        log.write("HUNG\\n")
        log.flush()
        os._exit(7)

    _watchdog = threading.Timer(WATCHDOG_S, _hung)
    _watchdog.daemon = True
    _watchdog.start()

    def step(fn):
        try:
            value = fn()
        except Exception as exc:
            text = " | ".join(str(exc).splitlines())
            log.write(f"EXC {type(exc).__name__}: {text}\\n")
            return None
        log.write(f"OK {value!r}\\n")
        return value
""")

EPILOGUE = textwrap.dedent("""
    comm.Barrier()
    _watchdog.cancel()
    log.write("END\\n")
""")


def mpiexec():
    path = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return path if os.path.exists(path) else shutil.which("mpiexec")


def env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(nclx.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def run(cmd, tmp_path):
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{' '.join(cmd[-6:])}: no end after {TIMEOUT_S} s (process group "
                    f"killed):\n{out[-3000:]}")
    return proc.returncode, out


def run_ranks(tmp_path, nranks, body):
    """Run ``body`` on ``nranks`` ranks; return (per-rank step lines, ended, output)."""
    launcher = mpiexec()
    if launcher is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    script = tmp_path / "scenario.py"
    script.write_text(f"WATCHDOG_S = {WATCHDOG_S}\n" + PRELUDE + textwrap.dedent(body) + EPILOGUE)
    rc, out = run([launcher, "-n", str(nranks), sys.executable, str(script)], tmp_path)
    steps, ended = [], []
    for r in range(nranks):
        path = tmp_path / f"rank{r}.txt"
        lines = path.read_text().splitlines() if path.exists() else []
        steps.append([ln for ln in lines if ln.startswith(("OK ", "EXC "))])
        ended.append("END" in lines and "HUNG" not in lines)
    return steps, ended, f"rc {rc}\n" + "\n".join(
        f"rank {r}: {s} ended={e}" for r, (s, e) in enumerate(zip(steps, ended))) + \
        f"\n{out[-2000:]}"


def assert_raised_everywhere(steps, ended, report, nsteps=1, types=None):
    """Every rank finished and its step ``nsteps - 1`` raised (of ``types``)."""
    assert all(ended), f"a rank was left waiting (or was ended):\n{report}"
    for r, s in enumerate(steps):
        assert len(s) >= nsteps, f"rank {r} did not report:\n{report}"
        line = s[nsteps - 1]
        assert line.startswith("EXC "), f"rank {r} did not raise:\n{report}"
        if types:
            # a DapError raised for another rank's failure is also of its
            # type: DapError[OverflowError] is a DapError and an OverflowError
            assert any(line.startswith((f"EXC {t}:", f"EXC DapError[{t}]:")) or
                       (t == "DapError" and line.startswith("EXC DapError["))
                       for t in types), report


def assert_calls_raise_then_in_step(tmp_path, nranks, setup, calls, final, want):
    """Run ``setup``, then each of ``calls`` (expressions; the ranks call
    differently) as a step, then ``final`` (the same call everywhere):
    every rank must finish, raise a DapError at each call, and give
    ``OK want`` at the final step (the ranks stay in step)."""
    body = textwrap.dedent(setup)
    for call in calls:
        body += f"step(lambda: {call})\n"
    body += f"step(lambda: {final})\n"
    steps, ended, report = run_ranks(tmp_path, nranks, body)
    assert all(ended), f"a rank was left waiting (or was ended):\n{report}"
    for r, lines in enumerate(steps):
        assert len(lines) == len(calls) + 1, f"rank {r} did not report every step:\n{report}"
        for call, line in zip(calls, lines):
            assert line.startswith("EXC DapError:"), f"{call}: rank {r}: {line}\n{report}"
        assert lines[-1] == f"OK {want!r}", report
