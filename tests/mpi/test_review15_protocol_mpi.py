"""Defects found in the fifteenth look at nclx.dap, at importing another
library's DAP export (``from_distarray``) and at halo exchange (each test
marked "defect" failed on the code before its fix, at the rank counts it
names):

- P1: a dimension whose grid coordinates disagree on 'dist_type' ('b' on
  some ranks, 'c' or 'u' on others) was taken: an AttributeError or a
  KeyError on every rank, or, 'c' then 'b', a DistArray whose gather gave
  wrong values (at 2 ranks or more); now a DapError naming the dimension,
  the key and each rank's value;
- P2: cyclic grid coordinates with different 'block_size's were taken:
  their owned indices overlap and leave gaps, and a gather or a
  redistribution returned uninitialised memory (at 2 ranks or more);
  now the same DapError;
- P3: 'proc_grid_size's near 2**63 whose int64 product wraps to the rank
  count passed the grid check (``np.prod``), and building the grid then
  raised a bare MemoryError (any rank count); now the exact product is
  compared and a DapError names it;
- P4: sizes beyond int64 were taken: a 'u' dimension of size 2**70 made a
  DistArray whose ``.size`` raised OverflowError, two 'u' dimensions of
  2**40 one whose ``.size`` was 0 (the int64 product wrapped); now a
  DapError naming the key (or the global shape);
- P5 (message): ranks disagreeing on 'proc_grid_size' or 'size' were told
  the set of values only; now each rank's value.

Every call runs in a thread on a duplicated communicator and fails
(instead of hanging) when it has not returned within 10 seconds
(``mpi_helpers.within``).
"""
import sys
import threading

import numpy as np
import pytest
from mpi4py import MPI

import nclx.dap as dap
from mpi_helpers import HUNG as _HUNG, within as _within, N, check_block, collective_assert, fill_and_expect, rank

comm = MPI.COMM_WORLD
last = N - 1




def _export(buf, *dim_data):
    return {"__version__": "0.10.0", "buffer": buf, "dim_data": tuple(dim_data)}


def _import_and_gather(export):
    """from_distarray on a duplicate of COMM_WORLD, then a gather."""
    sub = comm.Dup()
    try:
        return _within(lambda: dap.from_distarray(export, comm=sub).gather(root=None))
    finally:
        if not _HUNG:
            sub.Free()


def _dapError_everywhere(got, *needles):
    """Every rank raised the same DapError holding every needle."""
    every = comm.allgather((got[0], str(got[1])))
    ok = (got[0] == "exc" and str(got[1]).startswith("DapError")
          and all(n in str(got[1]) for n in needles)
          and all(e == every[0] for e in every))
    collective_assert(ok, f"{every}")


def _dims(kind, size):
    """This rank's dimension dictionary of ``kind`` for 3 cells a rank."""
    common = dict(size=size, proc_grid_size=N, proc_grid_rank=rank)
    if kind == "b":
        return dict(dist_type="b", start=3 * rank, stop=3 * rank + 3, **common)
    if kind == "c":
        return dict(dist_type="c", start=rank, **common)
    return dict(dist_type="u", indices=np.arange(3 * rank, 3 * rank + 3), **common)


# ------------------------------------------------------------------ P1
@pytest.mark.skipif(N < 2, reason="needs two grid coordinates")
@pytest.mark.parametrize("first,other", [("c", "b"), ("b", "c"), ("u", "b"), ("b", "u")])
def test_a_dimension_with_two_dist_types_raises_on_every_rank(first, other):
    """Defect: 'c' then 'b' gathered [0, 0, 1, 3, 2, 5] for 0..5 at 2 ranks;
    'b' then 'c' raised AttributeError, 'u' and 'b' KeyError or AttributeError."""
    mine = _dims(first if rank < last else other, 3 * N)
    got = _import_and_gather(_export(np.arange(3.0) + 3 * rank, mine))
    _dapError_everywhere(got, "dimension 0", "'dist_type'", f"rank {last}: {other!r}")


# ------------------------------------------------------------------ P2
@pytest.mark.skipif(N < 2, reason="needs two grid coordinates")
@pytest.mark.parametrize("op", ["gather", "redistribute"])
def test_cyclic_coordinates_with_different_block_sizes_raise_on_every_rank(op):
    """Defect: rank 0 CYCLIC(1), the others CYCLIC(2): owned indices overlap
    and leave gaps; the gather and the redistribution returned values the
    buffers never held (uninitialised memory)."""
    from nclx.dap.validate import cyclic_owned_count
    size = 6 * N
    bs = 1 if rank == 0 else 2
    n = cyclic_owned_count(size, N, rank, bs)
    dd = dict(dist_type="c", size=size, proc_grid_size=N, proc_grid_rank=rank,
              start=rank * bs, block_size=bs)
    export = _export(np.arange(n, dtype=float) + 100 * rank, dd)
    sub = comm.Dup()

    def run():
        a = dap.from_distarray(export, comm=sub)
        return a.gather(root=None) if op == "gather" else a.redistribute(dist="b").gather(root=None)
    got = _within(run)
    if not _HUNG:
        sub.Free()
    _dapError_everywhere(got, "dimension 0", "'block_size'", "rank 0: 1;",
                         f"{'rank' if N == 2 else 'ranks'} {', '.join(map(str, range(1, N)))}: 2)")


# ------------------------------------------------------------------ P3
def test_grid_sizes_whose_int64_product_wraps_to_the_rank_count():
    """Defect (any rank count): proc_grid_size (a, b) with a * b = N + 2**64
    passed ``np.prod(grid) == N``; a bare MemoryError followed."""
    a = 5
    while not N < (N * pow(a, -1, 2 ** 64)) % 2 ** 64 < 2 ** 63:
        a += 2
    b = (N * pow(a, -1, 2 ** 64)) % 2 ** 64     # rank r: grid coordinates (0, r)
    assert np.prod([a, b]) == N                  # the wrap the check relied on
    dims = (dict(dist_type="b", size=1, proc_grid_size=a, proc_grid_rank=0, start=0, stop=1),
            dict(dist_type="u", size=N, proc_grid_size=b, proc_grid_rank=rank,
                 indices=np.array([rank])))
    got = _import_and_gather(_export(np.zeros((1, 1)), *dims))
    _dapError_everywhere(got, f"holds {a * b} processes", f"given for {N}")


# ------------------------------------------------------------------ P4
def test_a_size_beyond_int64_raises_on_every_rank():
    """Defect: taken; the DistArray's ``.size`` raised OverflowError."""
    dd = dict(dist_type="u", size=2 ** 70, proc_grid_size=N, proc_grid_rank=rank,
              indices=np.array([rank]))
    got = _import_and_gather(_export(np.zeros(1), dd))
    _dapError_everywhere(got, "dim_data[0]['size']", str(2 ** 70), "int64")


def test_a_global_shape_beyond_int64_raises_on_every_rank():
    """Defect: two 'u' dimensions of 2**40 were taken; ``.size`` was 0."""
    d0 = dict(dist_type="u", size=2 ** 40, proc_grid_size=N, proc_grid_rank=rank,
              indices=np.array([rank]))
    d1 = dict(dist_type="u", size=2 ** 40, proc_grid_size=1, proc_grid_rank=0,
              indices=np.array([0]))
    got = _import_and_gather(_export(np.zeros((1, 1)), d0, d1))
    _dapError_everywhere(got, f"({2 ** 40}, {2 ** 40})", "more than an array can index")


# ------------------------------------------------------------------ P5
@pytest.mark.skipif(N < 2, reason="needs two ranks")
@pytest.mark.parametrize("key", ["proc_grid_size", "size"])
def test_disagreeing_ranks_are_named(key):
    """Message (before: "ranks disagree on 'size' [9, 10]", no rank named)."""
    dd = _dims("b", 3 * N)
    theirs = dd[key] + 1                    # the same on every rank
    if rank == last:
        dd[key] = theirs
    got = _import_and_gather(_export(np.arange(3.0), dd))
    _dapError_everywhere(got, "dimension 0", repr(key), f"rank {last}: {theirs}")


# ------------------------------------------------------------------ coverage
def test_threads_exchange_different_arrays_on_duplicated_communicators():
    """Not a defect (it passed): four threads, each on its own duplicate,
    exchange arrays of other dimensions, dtypes and transports at once;
    every padding cell holds its owner's bytes after every exchange."""
    comms = [comm.Dup() for _ in range(4)]
    layouts = [((5 * N + 1,), [2], [True], np.float64),
               ((3 * N + 2, 4), [1, 1], [True, False], np.int32),
               ((2 * N + 3, 3, 2), [1, 1, 0], [False, True, False], np.complex128),
               ((4 * N,), [1], [False], np.float16)]
    bad = []

    def work(i):
        try:
            shape, pad, per, dt = layouts[i]
            a = dap.DistArray.from_shape(shape, dtype=dt, padding=pad, periodic=per,
                                         comm=comms[i])
            for it in range(12):
                exp = fill_and_expect(a)
                if it % 2:
                    a.start_halo_exchange().wait()
                else:
                    dap.exchange_halos(a, method=["packed", "datatype", None][it % 3])
                ok, msg = check_block(a, exp, f"thread {i}, exchange {it}")
                if not ok or a._block.tobytes() != exp.tobytes():
                    bad.append(msg or f"thread {i}, exchange {it}: other bytes")
                    return
        except Exception as exc:  # noqa: BLE001 - reported collectively
            bad.append(f"thread {i}: {exc!r}")
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        ts = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(10.0)
        alive = any(t.is_alive() for t in ts)
    finally:
        sys.setswitchinterval(saved)
    if any(comm.allgather(alive)):
        _HUNG.append(True)
    else:
        for c in comms:
            c.Free()
    collective_assert(not alive and not bad, f"alive={alive}; {bad[:2]}")
