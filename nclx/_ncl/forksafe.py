"""Python locks a forked child gets free.

A lock another thread holds when ``os.fork()`` runs stays held in the child
for ever: only the forking thread lives on there, so the child's first
``install()``, ``uninstall()``, ``checked()`` or ``ledger.recording()``
would wait for good.  :func:`guard` names a lock attribute (of a module or
an object) that is taken before every fork -- what it guards is whole on
both sides, never a half-done install -- released after it in the parent,
and replaced by a new, free lock in the child.

The attribute is read at each use (``with module._lock:``), so guarding
costs nothing outside a fork.  Locks are taken in the order they were
guarded and released in reverse; a guarded critical section must not wait
for another guarded lock.  Guarded locks are reentrant, so a fork from
inside one's critical section, on the thread holding it, takes it again.
"""
import os
import threading
import weakref

# owner -> [(attribute, factory)], in the order guarded; owners are modules or
# objects and are not kept alive by this table
_owners = weakref.WeakKeyDictionary()
_order = []                       # weak references to the owners, in the order guarded
_taken = threading.local()


def guard(owner, name, factory=threading.RLock):
    """Guard ``owner.<name>`` (a lock ``factory()`` made) across ``os.fork()``.
    The lock must be reentrant (an RLock): a thread that forks inside its
    critical section (a signal handler, a ``__del__``) takes it again at
    the fork (before, a plain Lock deadlocked the parent there; review 20)."""
    entries = _owners.get(owner)
    if entries is None:
        entries = _owners[owner] = []
        _order.append(weakref.ref(owner))
        if len(_order) > 64 and len(_order) > 2 * len(_owners):
            _order[:] = [r for r in _order if r() is not None]
    entries.append((name, factory))


def _locks():
    out = []
    for ref in list(_order):
        owner = ref()
        if owner is None:
            continue
        for name, factory in _owners.get(owner, ()):
            out.append((owner, name, factory))
    return out


def _before():
    taken = _taken.locks = []
    try:
        for owner, name, _ in _locks():
            lock = getattr(owner, name)
            lock.acquire()
            taken.append(lock)
    except BaseException:
        # (os.fork forks anyway): nothing stays taken in the parent
        _after_in_parent()
        raise


def _after_in_parent():
    for lock in reversed(getattr(_taken, "locks", ())):
        lock.release()
    _taken.locks = ()


def _after_in_child():
    _taken.locks = ()
    for owner, name, factory in _locks():
        setattr(owner, name, factory())


os.register_at_fork(before=_before, after_in_parent=_after_in_parent,
                    after_in_child=_after_in_child)
