"""Defects a hostile review of the windowed moves found (each test failed
before its fix), run under mpiexec -n 1..6 (tests/test_mpi_suite.py):

- threads moving at once on duplicated communicators raced on the kept
  plans: KeyError, freed datatypes under another thread's Alltoallw,
  MPICH aborts, hangs;
- ``np.stack`` of one operand with a 'u' dimension raised AttributeError
  (the stack axis' RangeMap had no ``local_size``);
- ``redistribute`` and ``gather`` agreed on the target only: ranks whose
  source Distributions differ moved garbage or hung;
- the target block was allocated after the agreement: a MemoryError on one
  rank left the others in ``Alltoallw``;
- equal window settings of other types (``65536.0``, ``np.float64``) were
  taken for a disagreement.
"""
import importlib
import sys
import threading

import numpy as np
import pytest

from mpi_helpers import N, collective_assert, comm, raised_everywhere, rank
from nclx import dap
from nclx.dap import movewindows
from test_redistribute_mpi import _block_ok, _u_dist, _values

last = N - 1
redistribute_mod = importlib.import_module("nclx.dap.redistribute")   # not the functions
gather_mod = importlib.import_module("nclx.dap.gather")


def test_threads_on_duplicated_communicators_share_the_kept_plans():
    g = _values((40, 3))
    comms = [comm.Dup() for _ in range(8)]
    bad = []
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)       # switch threads as often as possible

    def work(i):
        try:
            a = dap.DistArray.from_global(g, comm=comms[i])
            for it in range(60):
                k = (it * 7 + i * 5) % 30 + 1          # more layouts than plans kept
                b = a.redistribute(dist="c", block_size=[k, 1])
                ok, msg = _block_ok(b, g, f"thread {i} block size {k}")
                if not ok:
                    bad.append(msg)
        except Exception as exc:  # noqa: BLE001 - reported collectively
            bad.append(f"thread {i}: {exc!r}")
    try:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(comms))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(saved)
        for c in comms:
            c.Free()
    collective_assert(not bad, "; ".join(bad[:3]))


@pytest.mark.parametrize("dim", [0, 1])
def test_stack_of_one_operand_with_a_u_dimension(dim):
    g = _values((7, 5))
    a = dap.DistArray.from_global(g, dist=_u_dist(g.shape, seed=5, dim=dim), comm=comm)
    for axis in (0, 1, 2):
        got = np.stack([a], axis=axis).gather(root=None)
        collective_assert(got.tobytes() == np.stack([g], axis=axis).tobytes(),
                          f"np.stack([a], axis={axis})")


def _own_u_array(n, seed):
    """A DistArray with a 'u' distribution drawn from ``seed`` (the values
    right for it): ranks passing different seeds disagree on the source."""
    d = _u_dist((n,), seed=seed)
    m = d.maps(rank)[0]
    # past the constructor's agreement (test_construct_agreement_mpi.py): the
    # operations' own agreements still catch it
    return dap.DistArray._of(_values((n,))[m.global_from_local(np.arange(m.local_size))].copy(),
                             d, comm)


@pytest.mark.skipif(N == 1, reason="needs two ranks that disagree")
@pytest.mark.parametrize("n", [12, 20000])
@pytest.mark.parametrize("op", ["redistribute", "gather", "gather root"])
def test_source_distributions_that_differ_between_ranks_raise_everywhere(n, op):
    a = _own_u_array(n, seed=3 + (rank == last))
    call = {"redistribute": lambda: a.redistribute("b"),
            "gather": lambda: a.gather(root=None),
            "gather root": lambda: a.gather(root=0)}[op]
    msg = raised_everywhere(call)
    assert "the ranks disagree" in msg and "source" in msg, msg
    same = _own_u_array(n, seed=3)
    collective_assert(same.gather(root=None).tobytes() == _values((n,)).tobytes(), "after")


class _FailingEmpty:
    """numpy, except that ``empty`` of ``size`` elements raises MemoryError."""

    def __init__(self, size):
        self.size = size

    def __getattr__(self, name):
        return getattr(np, name)

    def empty(self, shape, *args, **kw):
        if int(np.prod(shape)) == self.size:
            raise MemoryError(f"cannot allocate {shape}")
        return np.empty(shape, *args, **kw)


@pytest.mark.parametrize("op", ["redistribute", "gather root"])
def test_a_target_that_cannot_be_allocated_on_one_rank_raises_everywhere(op, monkeypatch):
    g = _values((6 * N + 1, 3))
    a = dap.DistArray.from_global(g, comm=comm)
    if op == "redistribute":
        target = dap.Distribution.from_shape(g.shape, "c", nprocs=N)
        mod, size, call = redistribute_mod, int(np.prod(target.local_shape(last))), \
            lambda: a.redistribute(target)
    else:
        mod, size, call = gather_mod, g.size, lambda: a.gather(root=last)
    if rank == last:
        monkeypatch.setattr(mod, "np", _FailingEmpty(size))
    with pytest.raises(dap.DapError) as info:
        call()
    monkeypatch.undo()
    assert "MemoryError" in str(info.value), str(info.value)
    collective_assert(a.gather(root=None).tobytes() == g.tobytes(), "after")


def test_equal_window_settings_of_other_types_agree(monkeypatch):
    if rank == last:
        monkeypatch.setattr(movewindows, "FLOOR", float(movewindows.FLOOR))
        monkeypatch.setattr(movewindows, "FRACTION", np.float64(movewindows.FRACTION))
    g = _values((300, 2))
    a = dap.DistArray.from_global(g, dist=_u_dist(g.shape), comm=comm)
    collective_assert(*_block_ok(a.redistribute("b"), g, "settings of other types"))
