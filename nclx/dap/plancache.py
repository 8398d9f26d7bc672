"""A bounded cache of move plans (committed MPI datatypes) that threads
share safely.

Moves of the same layouts reuse their plan (:func:`nclx.dap.redistribute.move`).
Several Python threads may move at once (each on its own communicator): a
plan taken from the cache is counted as in use, and a plan evicted while
in use is freed by its last user, never under another thread's
``Alltoallw``.  Every change of the cache and of the counts happens under
one lock; ``free`` (``MPI_Type_free``) runs outside it, once per plan.
"""
import threading

from nclx._ncl import forksafe as _forksafe

__all__ = ["PlanCache"]


class PlanCache:
    """Plans by key, oldest first, at most ``limit`` of them.

    ``plan = cache.take(key)`` (None when absent) and ``plan =
    cache.offer(key, plan)`` (the plan to use: ``plan`` itself, kept in the
    cache or not, or an equal one another thread kept first, which the
    caller's is then freed for) each count one use, which ``release(plan)``
    ends.  A plan needs a ``free()`` method."""

    def __init__(self, limit):
        self.limit = limit
        self._plans = {}
        self._users = {}              # id(plan) -> uses in flight
        self._lock = threading.RLock()
        _forksafe.guard(self, "_lock")         # free in a fork's child

    def __len__(self):
        return len(self._plans)

    def take(self, key):
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._users[id(plan)] = self._users.get(id(plan), 0) + 1
            return plan

    def offer(self, key, plan, keep=True):
        """Counts a use of ``plan`` (built by the caller) and keeps it under
        ``key`` when ``keep`` and no plan is kept there yet; returns the plan
        to use."""
        spare, evicted = None, []
        with self._lock:
            if keep and key in self._plans:
                spare, plan = plan, self._plans[key]
            elif keep:
                while len(self._plans) >= self.limit:
                    old = self._plans.pop(next(iter(self._plans)))
                    if self._users.get(id(old), 0) == 0:
                        evicted.append(old)        # no one uses it: free it now
                self._plans[key] = plan
            self._users[id(plan)] = self._users.get(id(plan), 0) + 1
        for p in evicted:
            p.free()
        if spare is not None:
            spare.free()
        return plan

    def release(self, plan):
        """Ends one use; frees ``plan`` when that was the last use and the
        cache no longer holds it."""
        with self._lock:
            left = self._users.get(id(plan), 0) - 1
            if left > 0:
                self._users[id(plan)] = left
                return
            self._users.pop(id(plan), None)
            kept = any(p is plan for p in self._plans.values())
        if not kept:
            plan.free()
