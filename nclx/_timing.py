"""Timing and plotting for nclx's benchmarks and demo: one home for both.

A layer under the subpackages: it imports nothing from nclx, so
``nclx bench``, ``nclx bench halo`` (``nclx.dap.bench_halo``), ``nclx bench
ipc`` (``nclx.ipc.bench``), the demo and ``tools/storage_device_check.py``
share it without importing each other.

* :func:`samples`: seconds per call of ``repeat`` timed rounds;
* :func:`median_time`: the median of those;
* :func:`budget_time`: the median per-call time from enough calls to fill a
  time budget (short calls are timed in batches);
* :func:`interleaved`: the same call timed under several setups in turn,
  round after round, so that machine noise hits every setup alike;
* :func:`pyplot` and :func:`save`: matplotlib without a display (Agg) and
  a figure written to a file;
* :func:`find_mpiexec`: the ``mpiexec`` that goes with this Python;
* :func:`mpi_round` and :func:`slowest_medians`: a call timed on every rank
  after a barrier, and the medians over rounds of the slowest rank's times.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time


def samples(fn, repeat, *, inner=1, before=None):
    """Seconds per call of ``fn`` in each of ``repeat`` rounds of ``inner``
    calls; ``before()``, if given, runs untimed before each round (e.g. an MPI
    barrier).  The last result of a round is released after the clock stops,
    so freeing it (e.g. giving a leased buffer back) is not timed."""
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        t0 = time.perf_counter()
        for _ in range(inner - 1):
            fn()
        out = fn()
        times.append((time.perf_counter() - t0) / inner)
        del out
    return times


def median_time(fn, repeat=15, *, before=None):
    """Median seconds of one call of ``fn`` over ``repeat`` calls."""
    return statistics.median(samples(fn, repeat, before=before))


def budget_time(fn, budget, rounds=5):
    """Median seconds of one call, from enough calls to fill ``budget``
    seconds: one warm-up call, one call to size the batches, then ``rounds``
    batches of calls."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(budget / rounds / one))
    return statistics.median(samples(fn, rounds, inner=inner))


def interleaved(fn, setups, repeat, timer=median_time):
    """Median of ``timer(fn)`` under each of ``setups``: each of ``repeat``
    rounds runs every setup in turn and times ``fn`` after it, so that
    machine noise hits every setup alike.  Returns one median per setup."""
    times = [[] for _ in setups]
    for _ in range(repeat):
        for got, setup in zip(times, setups):
            setup()
            got.append(timer(fn))
    return [statistics.median(t) for t in times]


def pyplot():
    """matplotlib.pyplot on the Agg backend (files, no display); a clear
    SystemExit when matplotlib is not installed."""
    try:
        import matplotlib   # an optional dependency: only --plot needs it
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install matplotlib") from None
    return plt


def save(fig, path):
    """Lay ``fig`` out, write it to ``path`` (110 dpi) and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)


def mpi_round(comm, fn):
    """Seconds ``fn()`` takes on this rank, the ranks started together."""
    comm.Barrier()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def slowest_medians(comm, times):
    """``{key: median over rounds of the slowest rank's seconds}`` for
    ``times = {key: [this rank's seconds, one per round]}`` (collective)."""
    return {k: statistics.median(max(r) for r in zip(*comm.allgather(v)))
            for k, v in times.items()}


def find_mpiexec():
    """mpiexec beside this Python (the mpich wheel puts it in the venv's
    bin/), else the first one on PATH; None if there is none."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec")


def run_module_under_mpiexec(module, argv, ranks):
    """``python -m module argv`` on ``ranks`` MPI ranks; returns its stdout
    (RuntimeError without mpiexec, CalledProcessError when it fails)."""
    mpiexec = find_mpiexec()
    if mpiexec is None:
        raise RuntimeError("mpiexec not found: pip install 'nclx[mpi]'")
    cmd = [mpiexec, "-n", str(ranks), sys.executable, "-m", module] + list(argv)
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, env=os.environ.copy(),
                          capture_output=True, text=True, check=True).stdout
