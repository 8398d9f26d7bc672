"""NumPy functions on storages (their ``__array_function__``'s default):
NumPy's own implementation, where a storage it writes into -- the
destination of ``np.copyto``, ``np.put``, ``np.putmask``, ``np.place``,
``np.fill_diagonal``, ``np.put_along_axis``, or an ``out`` by keyword or by
position -- is given as
its host view (synced from the device first, marked newer after, the
storages' buffer locks held throughout), and that storage is returned where
NumPy returns the view.  Before, NumPy's C functions refused a storage
there ("copyto() argument 1 must be a numpy.ndarray", "output must be an
array"; review 24) where ``np.asarray(s)`` works.  A device-only storage
(no host view) keeps NumPy's error.
"""
import inspect

import numpy as np

from nclx import aware
from nclx.storage._fastalloc import StorageBase
from nclx.storage.buffer import all_locked, read_nested
from nclx.storage.devices import SyncState

__all__ = ["storage_default"]

#: functions whose first argument (by this name) NumPy writes in place
_IN_PLACE = {np.copyto: "dst", np.put: "a", np.putmask: "a", np.place: "arr",
             np.fill_diagonal: "a", np.put_along_axis: "arr"}


_OUT_AT = {}


def _out_position(func):
    """The position of ``func``'s ``out`` parameter when it can be passed
    by position (``np.mean``: 3, ``np.dot``: 2), else None (cached)."""
    try:
        return _OUT_AT[func]
    except KeyError:
        pass
    at = None
    try:
        params = list(inspect.signature(func).parameters.values())
        at = next((i for i, p in enumerate(params) if p.name == "out" and p.kind in
                   (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)), None)
    except (TypeError, ValueError):     # no signature to read (a C function of NumPy 2.0)
        pass
    if len(_OUT_AT) < 4096:
        _OUT_AT[func] = at
    return at


def _host_storage(x):
    return isinstance(x, StorageBase) and x._host is not None


def storage_default(func, types, args, kwargs):
    """``aware.numpy_default`` with the storages NumPy writes into as their
    host views (module docstring)."""
    args, kwargs = list(args), dict(kwargs)
    targets = []
    name = _IN_PLACE.get(func)
    if name is not None:
        if args and _host_storage(args[0]):
            targets.append(("arg", 0, args[0]))
        elif _host_storage(kwargs.get(name)):
            targets.append(("kw", name, kwargs[name]))
    if _host_storage(kwargs.get("out")):
        targets.append(("kw", "out", kwargs["out"]))
    else:
        at = _out_position(func)        # out given by position (np.mean(a, 0, None, s))
        if at is not None and len(args) > at and _host_storage(args[at]):
            targets.append(("arg", at, args[at]))
    if not targets:
        return aware.numpy_default(func, types, tuple(args), kwargs)
    # every storage the call reads too: one lock order for all
    # (buffer.all_locked); those inside lists read before (review 24c)
    involved = [x for x in (*args, *kwargs.values()) if isinstance(x, StorageBase)]
    held = all_locked(involved)
    if held.locks:
        args = [read_nested(x) for x in args]
        kwargs = {k: read_nested(v) for k, v in kwargs.items()}
    views = []
    with held:
        for where, key, s in targets:
            view = s._host_read()
            views.append((s, view))
            if where == "arg":
                args[key] = view
            else:
                kwargs[key] = view
        try:
            result = aware.numpy_default(func, types, tuple(args), kwargs)
        finally:
            for s, _ in views:
                s._buf.mark(SyncState.SYNC_HOST_DIRTY)
    for s, view in views:
        if result is view:
            return s
    return result
