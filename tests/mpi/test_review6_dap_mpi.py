"""Defects a hostile review of nclx.dap's collective functions found (each
test failed before its fix -- a hang, ranks going different ways, or a
wrong result), run under mpiexec -n 1..6 (tests/test_mpi_suite.py):

- DistArray's methods with arguments (reshape, ravel, swapaxes,
  transpose(axes)) skipped the agreement NumPy's functions make: ranks
  passing different shapes got different arrays, or met in different
  collectives;
- a result (or the records a sample sort exchanges, a halo plan's buffers)
  allocated after the call's agreement: a MemoryError on one rank left the
  others in the data collective;
- reductions and save_npy did not agree on the layout: ranks holding the
  array in different layouts combined wrong sums or left cells unwritten.
"""
import importlib
import os

import numpy as np
import pytest

from mpi_helpers import N, collective_assert, comm, rank, raised_everywhere, shared_tmpdir
from nclx import dap

last = N - 1
rearrange = importlib.import_module("nclx.dap.functions.rearrange")
samplesort = importlib.import_module("nclx.dap.functions._samplesort")
uniques = importlib.import_module("nclx.dap.functions.uniques")
layout = importlib.import_module("nclx.dap.layout")
gather = importlib.import_module("nclx.dap.gather")
halo = importlib.import_module("nclx.dap.halo")


@pytest.fixture(scope="module")
def tmpdir_shared():
    yield from shared_tmpdir("nclx-review6-")


@pytest.mark.skipif(N == 1, reason="needs two ranks that disagree")
@pytest.mark.parametrize("call", ["reshape", "ravel", "swapaxes", "transpose"])
def test_method_arguments_that_differ_between_ranks_raise_everywhere(call):
    g = np.arange(24.0).reshape(6, 4)
    a = dap.DistArray.from_global(g, comm=comm)
    other = rank == last
    fn = {"reshape": lambda: a.reshape((3, 8) if other else (4, 6)),
          "ravel": lambda: a.ravel("F" if other else "C"),
          "swapaxes": lambda: a.swapaxes(0, 0 if other else 1),
          "transpose": lambda: a.transpose((0, 1) if other else (1, 0))}[call]
    msg = raised_everywhere(fn)
    assert "disagree" in msg, msg
    same = a.reshape(4, 6).gather(root=None)
    collective_assert(same.tobytes() == g.reshape(4, 6).tobytes(), "after")


class _Numpy:
    """numpy, except on the last rank: ``name`` raises MemoryError for the
    calls ``when(args)`` picks."""

    def __init__(self, name, when):
        self.name, self.when = name, when

    def __getattr__(self, attr):
        real = getattr(np, attr)
        if attr != self.name or rank != last:
            return real

        def failing(*args, **kw):
            if self.when(args):
                raise MemoryError(f"simulated: np.{attr} on rank {rank}")
            return real(*args, **kw)
        return failing


def _big(size):
    return lambda args: int(np.prod(args[0])) >= size


CASES = {
    # module, numpy function, which calls fail, the call
    "flip": (rearrange, "empty", _big(2), lambda a, m: np.flip(a)),
    "concatenate": (rearrange, "empty", _big(2), lambda a, m: np.concatenate([a, a])),
    "reshape": (layout, "empty", _big(2), lambda a, m: np.reshape(m, (4 * N, 6))),
    "sort": (samplesort, "empty", _big(N + 1), lambda a, m: np.sort(a)),
    "argsort": (samplesort, "empty", _big(N + 1), lambda a, m: np.argsort(a)),
    "unique": (uniques, "unique", lambda args: True, lambda a, m: np.unique(a)),
    "from_global root": (gather, "empty", _big(2), lambda a, m: dap.DistArray.from_global(
        np.arange(24.0 * N) if rank == 0 else None, comm=comm, root=0)),
    "halo": (halo, "empty", _big(1), lambda a, m: dap.DistArray.from_shape(
        (8 * N,), comm=comm, padding=[1]).exchange_halos()),
}


@pytest.mark.skipif(N == 1, reason="one rank has no one to leave waiting")
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_allocation_failing_on_one_rank_raises_everywhere(case, monkeypatch):
    mod, name, when, call = CASES[case]
    g = np.arange(24.0 * N)[::-1].copy()
    a = dap.DistArray.from_global(g, comm=comm)
    m = dap.DistArray.from_global(g.reshape(6, 4 * N), comm=comm)
    monkeypatch.setattr(mod, "np", _Numpy(name, when))
    try:
        with pytest.raises(MemoryError):      # the failing rank's own, a DapError[MemoryError] elsewhere
            call(a, m)
    finally:
        monkeypatch.undo()
    collective_assert(np.sort(a).gather(root=None).tobytes() == np.sort(g).tobytes(), "after")


@pytest.mark.skipif(N != 4, reason="a transpose moves where two axes are distributed (2 x 2 grid)")
def test_a_transpose_allocation_failing_on_one_rank_raises_everywhere(monkeypatch):
    m = dap.DistArray.from_global(np.arange(48.0).reshape(6, 8), comm=comm)
    assert m.distribution.grid_shape == (2, 2)
    monkeypatch.setattr(layout, "np", _Numpy("empty", _big(2)))
    try:
        with pytest.raises(MemoryError):
            m.T
    finally:
        monkeypatch.undo()


def _per_rank_blocks(n):
    """A 1-d block Distribution whose cuts the last rank sees one element
    later (a Distribution built on each rank alone), and this rank's values."""
    cuts = [n * r // N for r in range(N + 1)]
    if rank == last:
        cuts[1] += 1
    d = dap.Distribution.from_dim_data_per_rank(
        [({"dist_type": "b", "size": n, "start": cuts[r], "stop": cuts[r + 1],
           "proc_grid_rank": r, "proc_grid_size": N},) for r in range(N)])
    start, stop = cuts[rank], cuts[rank + 1]
    # past the constructor's agreement (test_construct_agreement_mpi.py): the
    # operations' own agreements still catch it
    return dap.DistArray._of(np.arange(start, stop, dtype=np.float64) ** 2, d, comm)


@pytest.mark.skipif(N == 1, reason="needs two ranks that disagree")
@pytest.mark.parametrize("call", ["np.sum", "a.sum", "np.add.reduce", "np.mean", "np.max"])
def test_reductions_of_layouts_that_differ_between_ranks_raise_everywhere(call):
    a = _per_rank_blocks(12 * N)
    fn = {"np.sum": lambda: np.sum(a), "a.sum": lambda: a.sum(),
          "np.add.reduce": lambda: np.add.reduce(a), "np.mean": lambda: np.mean(a),
          "np.max": lambda: np.max(a)}[call]
    raised_everywhere(fn)
    b = dap.DistArray.from_global(np.arange(12.0 * N) ** 2, comm=comm)
    collective_assert(float(np.sum(b)) == float(np.sum(np.arange(12.0 * N) ** 2)), "after")


@pytest.mark.skipif(N == 1, reason="needs two ranks that disagree")
def test_save_npy_of_layouts_that_differ_between_ranks_raises_everywhere(tmpdir_shared):
    a = _per_rank_blocks(12 * N)
    path = os.path.join(tmpdir_shared, "differ.npy")
    msg = raised_everywhere(a.save_npy, path)
    assert "disagree" in msg, msg
