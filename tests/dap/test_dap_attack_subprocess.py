"""Attack scenarios of nclx.dap that can leave ranks waiting for ever or end
them: each runs under ``mpiexec -n K`` in a subprocess of its own session,
with a watchdog in every rank (WATCHDOG_S after the imports) and an outer
timeout (TIMEOUT_S) that kills the whole process group.

Each rank writes one line per step to ``rank<r>.txt``: ``OK <repr>`` or
``EXC <type>: <message>``, then ``END`` once every rank has passed a final
barrier, or ``HUNG`` when its watchdog fired.  The expectation throughout:
an error on one rank is raised on every rank (DapError or the original
error), never a rank left waiting in a collective; a result is NumPy's.

Every failing test here is a defect (see the docstrings); none is xfailed.
"""
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
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


def _mpiexec():
    path = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return path if os.path.exists(path) else shutil.which("mpiexec")


def _env():
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(nclx.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def _run(cmd, tmp_path):
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
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
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    script = tmp_path / "scenario.py"
    script.write_text(f"WATCHDOG_S = {WATCHDOG_S}\n" + PRELUDE + textwrap.dedent(body) + EPILOGUE)
    rc, out = _run([mpiexec, "-n", str(nranks), sys.executable, str(script)], tmp_path)
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
            assert any(line.startswith(f"EXC {t}:") for t in types), report


# ------------------------------------------------------ reductions
def test_floating_point_error_on_one_rank_inside_sum(tmp_path):
    """Defect: inf + -inf on the last rank's block under np.errstate(invalid='raise'):
    that rank raises FloatingPointError in its local reduction
    (reduce.py reduce_distarray: ``partial = fn.reduce(...)``) and the others
    wait for ever in the combining Reduce."""
    steps, ended, report = run_ranks(tmp_path, 3, """
        g = np.ones(4 * N)
        g[-1], g[-2] = np.inf, -np.inf           # the last rank's block
        a = dap.DistArray.from_global(g, comm=comm)
        with np.errstate(invalid="raise"):
            step(lambda: a.sum())
    """)
    assert_raised_everywhere(steps, ended, report)


def test_python_hook_raising_on_one_rank_during_a_reduction(tmp_path):
    """Defect: a "python"-level reduce hook that raises on one rank: that rank
    never reaches reduce_distarray (the chain runs first, nclx.aware.array_ufunc),
    the others wait in the collectives."""
    steps, ended, report = run_ranks(tmp_path, 3, """
        import nclx.hooks as hooks

        def flaky(call):
            if rank == N - 1:
                raise RuntimeError("hook failed on the last rank")
            return call.next()

        a = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm)
        with hooks.register("python", "reduce", flaky):
            step(lambda: a.sum())
    """)
    assert_raised_everywhere(steps, ended, report)


def test_max_where_without_initial_with_an_empty_block(tmp_path):
    """Defect: NumPy refuses maximum.reduce(where=...) without initial; the
    ranks with cells raise that ValueError, but a rank with an empty block
    skips the kernel (reduce.py: the identity-fill branch) and waits alone
    in the Allreduce."""
    steps, ended, report = run_ranks(tmp_path, 3, """
        g = np.array([1.0, 2.0])                 # 2 cells on 3 ranks: rank 2 is empty
        a = dap.DistArray.from_global(g, comm=comm)
        step(lambda: a.max(where=a > 1))
    """)
    assert_raised_everywhere(steps, ended, report)


def test_fmax_reduce_with_an_empty_block(tmp_path):
    """Defect: np.fmax has no identity and no neutral value in _identity_fill,
    so the empty rank raises DapError while the others wait in the pickled
    reduction.  NumPy's answer (2.0) on every rank, or a DapError on every rank."""
    steps, ended, report = run_ranks(tmp_path, 3, """
        a = dap.DistArray.from_global(np.array([1.0, 2.0]), comm=comm)
        step(lambda: float(np.fmax.reduce(a, axis=None)))
    """)
    assert all(ended), f"a rank was left waiting:\n{report}"
    assert all(s[:1] == ["OK 2.0"] for s in steps) or \
        all(s[:1] and s[0].startswith("EXC DapError") for s in steps), report


def test_checked_overflow_in_one_ranks_block(tmp_path):
    """Defect: under nclx.checked() an int64 sum that overflows within the last
    rank's block must raise OverflowError (NumPy on the global array does);
    today no rank raises (DistArray kernels ignore checked, the sum wraps),
    and a kernel that did raise on that rank alone would leave the others
    waiting in the Allreduce."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        g = np.ones(4 * N, dtype=np.int64)
        g[-2:] = 2**62                           # the last rank's block overflows
        a = dap.DistArray.from_global(g, comm=comm)
        with nclx.checked():
            step(lambda: int(a.sum()))
    """)
    assert_raised_everywhere(steps, ended, report, types=("OverflowError", "DapError"))


def test_axis_reductions_of_temporaries_do_not_leak_communicators(tmp_path):
    """Defect: every axis reduction of a new DistArray (a temporary such as
    ``(a * 1.0).sum(axis=0)`` in a time-step loop) makes two communicators
    with comm.Split (reduce.py _subcomms), cached on that DistArray and never
    freed: MPICH runs out of context ids after 1023 such reductions ('Other
    MPI error' on every rank)."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        a = dap.DistArray.from_global(np.arange(40.0 * N).reshape(4 * N, 10), comm=comm,
                                      grid_shape=(N, 1))

        def loop():
            for i in range(1100):
                try:
                    r = (a * 1.0).sum(axis=0)
                except Exception as exc:
                    raise RuntimeError(f"axis reduction {i}: {exc}") from exc
                del r
            return "ok"

        step(loop)
    """)
    assert all(ended), f"a rank was left waiting:\n{report}"
    assert all(s[:1] == ["OK 'ok'"] for s in steps), report


# ------------------------------------------------------ halo exchange
def test_read_only_export_on_one_rank(tmp_path):
    """Defect: DAP allows a read-only buffer; a rank whose imported block is
    read-only raises BufferError when its persistent receive is created
    (after the plan was agreed), the others wait for its messages for ever."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        base = dap.DistArray.from_shape((4 * N,), comm=comm, padding=[1], periodic=[True])
        buf = base._block.copy()
        if rank == 0:
            buf.flags.writeable = False
        export = {"__version__": "0.10.0", "buffer": buf,
                  "dim_data": base.__distarray__()["dim_data"]}
        a = dap.from_distarray(export, comm=comm)
        step(lambda: a.exchange_halos() and "ok")
    """)
    assert_raised_everywhere(steps, ended, report, types=("DapError",))


def test_method_datatype_with_one_fortran_ordered_block(tmp_path):
    """Was a hang: exchange_halos(da, 'datatype') when one rank's block is
    not C-contiguous raised on that rank after the plan was agreed, the
    others waited for its messages for ever.  Now a rank that cannot use
    datatypes sends the same bytes packed (docs/dap.md), so both complete."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        base = dap.DistArray.from_shape((4 * N, 6), comm=comm, grid_shape=(N, 1),
                                        padding=[1, 0], periodic=[True, False])
        buf = np.asfortranarray(base._block) if rank == 0 else base._block
        export = {"__version__": "0.10.0", "buffer": buf,
                  "dim_data": base.__distarray__()["dim_data"]}
        a = dap.from_distarray(export, comm=comm)
        step(lambda: a.exchange_halos() and "ok")            # default: works
        step(lambda: dap.exchange_halos(a, "datatype") or "ok")
    """)
    assert all(ended), f"a rank was left waiting:\n{report}"
    assert all(s == ["OK 'ok'", "OK 'ok'"] for s in steps), report


def test_big_endian_with_one_fortran_ordered_block(tmp_path):
    """Defect: a '>f8' block that is not C-contiguous takes the packed
    transport, whose Irecv cannot describe a non-native byte order
    (BufferError) -- raised on that rank only, after the plan was agreed,
    while the C-contiguous ranks wait for its messages."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        g = np.arange(4.0 * N * 5).reshape(4 * N, 5).astype(">f8")
        base = dap.DistArray.from_global(g, comm=comm, grid_shape=(N, 1), padding=[1, 0],
                                         periodic=[True, False])
        buf = np.asfortranarray(base._block) if rank == 0 else base._block
        export = {"__version__": "0.10.0", "buffer": buf,
                  "dim_data": base.__distarray__()["dim_data"]}
        a = dap.from_distarray(export, comm=comm)
        want = a._block.copy()
        pad = np.ones(want.shape, bool)
        pad[a.distribution.owned_slices(rank)] = False
        a._block[pad] = -1.0
        step(lambda: (a.exchange_halos(), bool(np.array_equal(a._block, want)))[1])
    """)
    assert all(ended), f"a rank was left waiting:\n{report}"
    assert all(s[:1] == ["OK True"] for s in steps) or \
        all(s[:1] and s[0].startswith("EXC DapError") for s in steps), report


def test_from_distarray_with_different_dtypes_on_the_ranks(tmp_path):
    """Defect: from_distarray exchanges and checks only the dim_data, not the
    dtype (from_global checks both): a float32 block on rank 0 and float64
    blocks elsewhere make a DistArray whose sum() fails with 'Message
    truncated' on rank 0 and leaves the others waiting."""
    steps, ended, report = run_ranks(tmp_path, 2, """
        base = dap.DistArray.from_global(np.arange(4.0 * N), comm=comm, padding=[1],
                                         periodic=[True])
        buf = base._block.astype(np.float32 if rank == 0 else np.float64)
        export = {"__version__": "0.10.0", "buffer": buf,
                  "dim_data": base.__distarray__()["dim_data"]}
        a = step(lambda: dap.from_distarray(export, comm=comm))
        if a is not None:
            step(lambda: float(a.sum()))
    """)
    assert_raised_everywhere(steps, ended, report, types=("DapError",))


# --------------------------------------------------------------- heat CLI
def _heat(tmp_path, nranks, *args):
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("mpiexec not found (pip install mpich)")
    return _run([mpiexec, "-n", str(nranks), sys.executable, "-m", "nclx.examples.heat",
                 *args], tmp_path)


def test_heat_zero_steps_prints_the_initial_checksum(tmp_path):
    from nclx.examples.heat import serial
    rc, out = _heat(tmp_path, 3, "--n", "5", "--steps", "0")
    assert rc == 0, out[-3000:]
    lines = out.strip().splitlines()
    assert lines[-1].startswith("checksum "), out
    assert not any(ln.startswith("step ") for ln in lines), out
    assert float(lines[-1].split()[1]) == serial(5, 0).sum()


def test_heat_negative_steps_is_a_usage_error(tmp_path):
    """Defect: --steps -3 runs zero steps and prints a checksum (exit 0)."""
    rc, out = _heat(tmp_path, 2, "--n", "8", "--steps", "-3")
    assert rc != 0 and "--steps" in out, out[-3000:]


def test_heat_more_ranks_than_rows_names_the_option(tmp_path):
    """Defect: --n 4 on 5 ranks (a 5 x 1 grid: one rank gets no row) dies in
    every rank with a traceback of Distribution.from_shape's DapError
    ('padding[0] = 1 is wider than the smallest block (0 elements)'),
    which names neither --n nor the rank count (--n 2 names --n)."""
    rc, out = _heat(tmp_path, 5, "--n", "4", "--steps", "2")
    assert rc != 0, out[-3000:]
    assert "--n 4" in out, out[-3000:]
