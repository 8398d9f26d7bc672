"""One allocation (or one wrapped pair of buffers) shared by all its views:
the host and device spans, the kind of synchronisation, the SyncState, and
the copies between the two sides."""
from nclx.storage.devices import SyncState
from nclx.storage.params import StorageError

__all__ = ["Buffer", "KINDS", "locked"]

# kind -> storage class name (core.py maps them to classes)
KINDS = ("cpu", "gpu", "gt4py", "cuda")


class Buffer:
    """Shared state of one storage allocation.

    ``host_root`` / ``dev_root`` are the views as allocated or wrapped (the
    whole field).  When nclx allocated both sides it passes the padded
    spans, and a transfer copies a span in one go; wrapped buffers are
    copied as their root views, element by element where they are not
    contiguous, so bytes between their elements (someone else's data) are
    never touched.
    """
    __slots__ = ("kind", "backend", "host_root", "dev_root", "host_span", "dev_span",
                 "sync", "__weakref__")

    def __init__(self, kind, backend=None, host_root=None, dev_root=None,
                 host_span=None, dev_span=None, sync_state=None):
        assert kind in KINDS
        self.kind = kind
        self.backend = backend
        self.host_root = host_root
        self.dev_root = dev_root
        self.host_span = host_span
        self.dev_span = dev_span
        if kind == "gt4py":
            self.sync = sync_state if sync_state is not None else SyncState()
        else:
            self.sync = None

    # -- transfers (callers hold sync.lock) ---------------------------------
    def copy_h2d(self):
        if self.host_span is not None:
            self.backend.copy_h2d(self.dev_span, self.host_span)
        else:
            self.backend.copy_h2d(self.dev_root, self.host_root)

    def copy_d2h(self):
        if self.host_span is not None:
            self.backend.copy_d2h(self.host_span, self.dev_span)
        else:
            if not self.host_root.flags.writeable:
                # a backend may write through the flag (CuPy's get(out=)
                # copies into any host buffer): never into read-only memory
                raise StorageError("device -> host copy into a read-only host buffer (the "
                                   "storage wraps read-only data): device writes cannot be "
                                   "copied back")
            self.backend.copy_d2h(self.host_root, self.dev_root)

    # -- the GDP-3 sync methods ---------------------------------------------
    def device_to_host(self, force=False):
        if self.kind == "cuda":
            self.backend.synchronize()
            return
        if self.kind != "gt4py":
            return
        with self.sync.lock:
            st = self.sync.state
            if st == SyncState.SYNC_DEVICE_DIRTY or force:
                self.copy_d2h()
                self.sync.state = SyncState.SYNC_CLEAN

    def host_to_device(self, force=False):
        if self.kind != "gt4py":
            return
        with self.sync.lock:
            st = self.sync.state
            if st == SyncState.SYNC_HOST_DIRTY or force:
                self.copy_h2d()
                self.sync.state = SyncState.SYNC_CLEAN

    def synchronize(self):
        if self.kind == "cuda":
            self.backend.synchronize()
            return
        if self.kind != "gt4py":
            return
        with self.sync.lock:
            if self.sync.state == SyncState.SYNC_HOST_DIRTY:
                self.copy_h2d()
            elif self.sync.state == SyncState.SYNC_DEVICE_DIRTY:
                self.copy_d2h()
            self.sync.state = SyncState.SYNC_CLEAN

    def mark(self, state):
        if self.kind == "gt4py":
            with self.sync.lock:
                self.sync.state = state


class locked:
    """Hold a buffer's sync lock (when it has one) for a compound operation."""
    __slots__ = ("lock",)

    def __init__(self, buf):
        self.lock = buf.sync.lock if buf.sync is not None else None

    def __enter__(self):
        if self.lock is not None:
            self.lock.acquire()

    def __exit__(self, *exc):
        if self.lock is not None:
            self.lock.release()


class all_locked:
    """Hold the sync locks of every managed buffer among ``storages`` (one
    each; the others have none), taken in one order, so that two calls
    holding several never wait on each other (a ufunc reads its operands,
    computes and marks its outputs as one step -- review 24: a device write
    another thread made to another row of an output's buffer between the
    read and the mark was lost; ``s[k] = t`` holds ``s``'s and ``t``'s)."""
    __slots__ = ("locks",)

    def __init__(self, storages):
        held = {}
        for x in storages:
            sync = getattr(getattr(x, "_buf", None), "sync", None)
            if isinstance(sync, SyncState):     # a managed storage's (other values: none)
                held[id(sync)] = sync
        self.locks = [held[k].lock for k in sorted(held)]

    def __enter__(self):
        for lock in self.locks:
            lock.acquire()

    def __exit__(self, *exc):
        for lock in reversed(self.locks):
            lock.release()


def read_nested(obj):
    """``obj`` with each storage inside it replaced by its host values when
    ``obj`` is a list or tuple (at any depth), read under that storage's own
    lock alone; any other ``obj`` (a storage itself too) as it is.  A caller
    about to hold several locks (:class:`all_locked`) reads nested operands
    first, as NumPy would convert them (review 24c: ``s[...] = [t[0],
    t[1]]`` in one thread and ``t[...] = [s[0], s[1]]`` in another, a
    ``where=`` list, ``np.concatenate([...], out=s)``, each read a nested
    storage under the caller's lock: a deadlock).  A structure holding no
    storage is returned as it is (no copy)."""
    return _inside(obj, 0) if isinstance(obj, (list, tuple)) else obj


def _inside(obj, depth):
    if isinstance(obj, (list, tuple)) and depth < 64:
        items = [_inside(x, depth + 1) for x in obj]
        if any(a is not b for a, b in zip(items, obj)):
            return type(obj)(items) if type(obj) in (list, tuple) else items
        return obj
    if isinstance(getattr(getattr(obj, "_buf", None), "sync", None), SyncState) and \
            getattr(obj, "_host", None) is not None:
        return obj._host_read()
    return obj
