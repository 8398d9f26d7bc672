"""Kept move plans shared by threads (nclx/dap/plancache.py), on one rank:
a plan evicted while another thread's Alltoallw uses it is freed only when
that thread is done (found by review: threads on duplicated communicators
freed each other's datatypes, then KeyError, MPICH aborts and hangs)."""
import importlib
import threading

import numpy as np
from mpi4py import MPI

from nclx.dap import Distribution
from nclx.dap.plancache import PlanCache

R = importlib.import_module("nclx.dap.redistribute")


class _Comm:
    """One rank; ``Alltoallw`` copies through MPI.COMM_SELF, optionally
    waiting first (``hold``: an Event set by the test) and recording
    whether every datatype it was given was still committed after the wait."""

    def __init__(self, hold=None):
        self.hold, self.alive, self.entered = hold, [], threading.Event()

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1

    def Alltoallw(self, send, recv):
        self.entered.set()
        if self.hold is not None:
            assert self.hold.wait(30)
        types = list(send[2]) + list(recv[2])
        self.alive.append(all(t != MPI.DATATYPE_NULL for t in types))
        MPI.COMM_SELF.Alltoallw(send, recv)


def _layouts(n, k):
    src = Distribution.from_shape((n, 3), nprocs=1)
    dst = Distribution.from_shape((n, 3), "c", block_size=[k, 1], nprocs=1)
    return R.Layout.of(src), R.Layout.of(dst), (R.layout_key(src), R.layout_key(dst))


def test_a_plan_evicted_under_another_threads_alltoallw_stays_alive():
    n = 40
    a = np.arange(n * 3.0).reshape(n, 3)
    src, dst, key = _layouts(n, 1)
    hold = threading.Event()
    slow = _Comm(hold)
    out = np.empty_like(a)
    R.move(_Comm(), a, src, out, dst, key=key)            # the plan is kept
    t = threading.Thread(target=R.move, args=(slow, a, src, out, dst), kwargs={"key": key})
    t.start()
    assert slow.entered.wait(30)                         # inside its Alltoallw
    for k in range(2, 2 + R._MAX_PLANS + 2):              # evict the kept plan
        s, d, kk = _layouts(n, k)
        R.move(_Comm(), a, s, np.empty_like(a), d, key=kk)
    hold.set()
    t.join(30)
    assert slow.alive == [True], "the plan was freed under the thread's Alltoallw"
    assert out.tobytes() == a.tobytes()


class _Plan:
    def __init__(self, log):
        self.log, self.freed = log, 0

    def free(self):
        self.freed += 1
        self.log.append(self)


def test_plan_cache_frees_each_plan_once_and_never_in_use():
    log, cache, errors = [], PlanCache(3), []
    in_use = {}
    lock = threading.Lock()

    def work(i):
        try:
            for j in range(400):
                key = (i + j) % 7
                p = cache.take(key) or cache.offer(key, _Plan(log), keep=j % 5 != 0)
                with lock:
                    in_use[id(p)] = in_use.get(id(p), 0) + 1
                if p.freed:
                    errors.append("a plan in use was already freed")
                with lock:
                    in_use[id(p)] -= 1
                cache.release(p)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert all(p.freed == 1 for p in log), "a plan freed twice"
    assert len(cache) <= 3
    assert not cache._users, "uses left counted"


def test_plan_cache_spare_plan_of_a_kept_key_is_freed():
    log, cache = [], PlanCache(4)
    first = cache.offer("k", _Plan(log))
    second = cache.offer("k", _Plan(log))
    assert second is first and len(log) == 1 and log[0] is not first
    cache.release(first)
    cache.release(second)
    assert first.freed == 0 and len(cache) == 1
