"""Halo exchange plans and requests over time (runs under mpiexec -n 1..6):
concurrent exchanges of several DistArrays, plans rebuilt after deletion, a
lost request or a collected DistArray, user messages on the same
communicator, a replaced or reshaped block."""
import gc

import numpy as np
import pytest

import nclx.dap as dap
from mpi_helpers import (N, check_block, collective_assert, comm, exchange_and_check,
                         fill_and_expect, grid2, outcome, rank)


def test_two_distarrays_exchanged_concurrently():
    g0, g1 = grid2()
    a = dap.DistArray.from_shape((4 * g0 + 1, 3 * g1 + 2), comm=comm, grid_shape=(g0, g1),
                                 padding=[1, 1], periodic=[True, True])
    b = dap.DistArray.from_shape((4 * g0 + 1, 3 * g1 + 2), dtype=np.int32, comm=comm,
                                 grid_shape=(g0, g1), padding=[1, 1], periodic=[True, True])
    c = dap.DistArray.from_shape((3 * N + 2,), dtype=np.complex128, comm=comm, padding=[2],
                                 periodic=[True])
    ea, eb, ec = fill_and_expect(a), fill_and_expect(b), fill_and_expect(c)
    ra = a.start_halo_exchange()
    rb = b.start_halo_exchange()
    rc = dap.start_halo_exchange(c, "packed")
    rc.wait()
    rb.wait()
    ra.wait()
    oks = [check_block(x, e, n) for x, e, n in ((a, ea, "a"), (b, eb, "b"), (c, ec, "c"))]
    collective_assert(all(o for o, _ in oks), "; ".join(m for o, m in oks if not o))

def test_exchange_after_deleting_the_plan_and_after_deleting_an_array():
    g0, g1 = grid2()
    a = dap.DistArray.from_shape((3 * g0 + 2, 3 * g1 + 2), comm=comm, grid_shape=(g0, g1),
                                 padding=[1, 1], periodic=[True, False])
    exchange_and_check(a, None, "first")
    del a._halo_plan                   # every rank: the plan is rebuilt and agreed again
    exchange_and_check(a, None, "after del of the plan")
    exchange_and_check(a, "packed", "packed after del of the plan")
    del a
    gc.collect()
    b = dap.DistArray.from_shape((3 * g0 + 2, 3 * g1 + 2), comm=comm, grid_shape=(g0, g1),
                                 padding=[1, 1], periodic=[True, False])
    exchange_and_check(b, None, "a new array after del of the old one")

@pytest.mark.parametrize("how", ["request dropped", "exception before wait"])
def test_an_exchange_whose_request_was_lost_does_not_lock_the_array(how):
    """Defect: start_halo_exchange() whose HaloRequest is dropped (or lost to an
    exception before wait()) leaves ``plan.in_flight`` set for ever: every
    later exchange of that DistArray raises 'in flight; wait() for it', and
    there is no request left to wait on."""
    a = dap.DistArray.from_shape((4 * N + 2,), comm=comm, padding=[1], periodic=[True])
    fill_and_expect(a)
    if how == "request dropped":
        req = a.start_halo_exchange()
        del req
    else:
        try:
            req = a.start_halo_exchange()
            raise RuntimeError("the interior computation failed")
        except RuntimeError:
            pass
        del req
    gc.collect()
    comm.Barrier()
    exp = fill_and_expect(a)
    kind, value = outcome(a.exchange_halos)
    ok, msg = (check_block(a, exp, how) if kind == "ok" else (False, f"{how}: then {value}"))
    collective_assert(ok, msg)

def test_wait_after_the_distarray_was_collected_completes_the_exchange():
    """Defect: the HaloRequest does not keep its DistArray alive; collecting
    the DistArray runs the plan's finalizer, which frees the persistent
    requests while they are active, so ``req.wait()`` returns at once (the
    requests are MPI_REQUEST_NULL) before the padding has arrived."""
    n = 1 << 16                         # large enough for a rendezvous message
    a = dap.DistArray.from_shape((n * max(N, 2),), comm=comm, padding=[n // 2], periodic=[True])
    exp = fill_and_expect(a).astype(np.float64)
    block = a._block
    req = a.start_halo_exchange()
    del a
    gc.collect()
    req.wait()
    ok = bool(np.all(block == exp))
    msg = None if ok else f"{int(np.sum(block != exp))} padding cells not filled after wait()"
    comm.Barrier()                       # let the freed requests finish
    collective_assert(ok, msg)

def test_user_messages_on_the_same_communicator_are_not_taken_by_the_exchange():
    """Defect: halo messages travel on the user's communicator with tags
    0..3**ndim-1 (tag 0 is mpi4py's default), not on a duplicate, so a user
    message in flight with the same source and tag is matched by the
    exchange (and the user receives halo data)."""
    if N == 1:
        pytest.skip("needs a neighbour (a message to self with the same tag deadlocks)")
    bad = []
    for method in ("datatype", "packed"):
        a = dap.DistArray.from_shape((4 * N,), comm=comm, padding=[1], periodic=[True])
        exp = fill_and_expect(a)
        mine = np.array([-777.0 - rank])
        sreq = comm.Isend(mine, dest=(rank + 1) % N, tag=0)
        kind, value = outcome(dap.exchange_halos, a, method)
        if kind == "exc":
            bad.append(f"{method}: exchange raised {value}")
        got = np.empty(1)
        comm.Recv(got, source=(rank - 1) % N, tag=0)
        sreq.Wait()
        ok, msg = check_block(a, exp, method)
        if not ok:
            bad.append(msg)
        if got[0] != -777.0 - (rank - 1) % N:
            bad.append(f"{method}: the user's message holds {got[0]}, not {-777.0 - (rank - 1) % N}")
    collective_assert(not bad, "; ".join(bad))

def test_exchange_does_not_follow_a_replaced_block():
    """Defect (private attribute, but nothing prevents it): the plan cache key is
    (shape, strides, dtype), not the buffer, so after ``da._block`` is
    replaced by an array of the same layout the persistent requests keep
    filling the old buffer and the new block's padding is never written."""
    a = dap.DistArray.from_shape((4 * N + 2,), comm=comm, padding=[1], periodic=[True])
    exchange_and_check(a, None, "first")
    a._block = a._block.copy()
    exp = fill_and_expect(a)
    dap.exchange_halos(a)
    ok, msg = check_block(a, exp, "replaced block")
    collective_assert(ok, msg)

def test_a_block_reshaped_on_one_rank_before_the_first_exchange_raises_everywhere():
    a = dap.DistArray.from_shape((4 * N + 2, 3), comm=comm, padding=[1, 0], periodic=[True, False])
    if rank == N - 1:
        a._block = np.zeros((a._block.shape[0] + 1, 3))
    kind, value = outcome(a.exchange_halos)
    collective_assert(kind == "exc" and "DapError" in value and f"rank {N - 1}" in value,
                      f"{kind} {value}")
