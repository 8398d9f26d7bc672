"""State kept on an MPI communicator itself: an attribute, made on first use
and freed with the communicator (``MPI_Comm_free`` runs the attribute's
delete callback on every rank, collectively).

A cache keyed by a communicator's handle (``comm.py2f()``) is wrong: MPI
hands a freed communicator's handle to the next one made, which then meets
the old one's state -- on some ranks only, where the creation orders
differ (a hang, found by review).  An attribute dies with its communicator.
"""
import sys
import threading

from nclx._ncl import forksafe as _forksafe

__all__ = ["kept"]

_KEYS = {}                 # name -> MPI keyval
_LOCK = threading.RLock()
_forksafe.guard(sys.modules[__name__], "_LOCK")   # free in a fork's child


def _keyval(name, free):
    from mpi4py import MPI   # optional dependency: nclx.dap loads without it
    with _LOCK:
        kv = _KEYS.get(name)
        if kv is None:
            def delete(comm, keyval, value):
                if free is not None:
                    try:
                        free(value)
                    except Exception:  # noqa: BLE001 - MPI finalizing: nothing left to free
                        pass
            kv = _KEYS[name] = MPI.Comm.Create_keyval(delete_fn=delete)
        return kv


def kept(comm, name, make, free=None):
    """The object kept on ``comm`` under ``name``: ``make()`` on first use,
    ``free(obj)`` when ``comm`` is freed (the first call's ``free`` counts)."""
    kv = _keyval(name, free)
    with _LOCK:
        value = comm.Get_attr(kv)
        if value is None:
            value = make()
            comm.Set_attr(kv, value)
        return value
