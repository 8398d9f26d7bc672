"""Device backends for ``device="gpu"`` storages, and the SyncState.

A backend allocates device spans, makes strided device views over them,
copies between host and device and counts what it copied.  Two ship:

- :class:`CupyBackend`: real device memory through CuPy (an NVIDIA GPU).
- :class:`EmulatedDevice`: a second host buffer stands in for device
  memory; its arrays are :class:`EmulatedDeviceArray` (an ndarray subclass,
  so host and "device" arrays can be told apart).  The sync logic is tested
  with it on machines without a GPU, and the same tests run on CuPy where
  a GPU is present.

``device="gpu"`` uses the current backend: this thread's ``with use(b):``
block, else the process-wide :func:`set_default`, else CuPy when it
imports and sees a GPU; otherwise
:class:`~nclx.storage.DeviceUnavailableError` names what is missing.
"""
import contextlib
import os
import sys
import threading
import weakref

import numpy as np

from nclx._ncl import forksafe as _forksafe
from nclx.storage.params import DeviceUnavailableError

__all__ = ["SyncState", "CupyBackend", "EmulatedDevice", "EmulatedDeviceArray",
           "use", "set_default", "current"]


#: every SyncState alive: a forked child gets each a free lock (below)
_LIVE_STATES = weakref.WeakSet()


def _free_locks_in_child():
    """A lock another thread held at ``fork()`` stays held in the child for
    ever (review 24: the child's first use of such a storage waited for
    good).  Not taken before the fork as nclx's module locks are
    (nclx._ncl.forksafe): a ufunc holds the locks of all its storages at
    once, which a fork taking them in another order could deadlock.  What a
    lock guarded may be half done in the child, as an ndarray another
    thread was writing is: a copy between host and device is made again
    (its state is set after the copy)."""
    for state in list(_LIVE_STATES):
        state.lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_free_locks_in_child)


class SyncState:
    """Which buffer of a host+device pair is newer.  One instance is shared
    by every view of one allocation; transitions hold its lock."""
    SYNC_CLEAN = 0
    SYNC_HOST_DIRTY = 1
    SYNC_DEVICE_DIRTY = 2
    _NAMES = {0: "SYNC_CLEAN", 1: "SYNC_HOST_DIRTY", 2: "SYNC_DEVICE_DIRTY"}

    def __init__(self, state=SYNC_CLEAN):
        if state not in self._NAMES:
            raise ValueError(f"state={state!r}: not one of SyncState's states (0, 1, 2)")
        self.state = state
        self.lock = threading.RLock()
        _LIVE_STATES.add(self)

    def __repr__(self):
        return f"SyncState({self._NAMES.get(self.state, self.state)})"


class _Counters:
    def __init__(self):
        self.h2d_calls = self.d2h_calls = self.h2d_bytes = self.d2h_bytes = 0

    def reset_counters(self):
        _Counters.__init__(self)


class EmulatedDeviceArray(np.ndarray):
    """Host memory playing the part of a device array (tests, no GPU)."""


class EmulatedDevice(_Counters):
    """A device backend whose "device memory" is a second host buffer."""
    name = "emulated"
    xp = np

    def alloc(self, nbytes):
        return np.empty(max(nbytes, 1), np.uint8).view(EmulatedDeviceArray)

    def managed_alloc(self, nbytes):
        span = np.empty(max(nbytes, 1), np.uint8)
        return span, span.view(EmulatedDeviceArray)

    def address(self, arr):
        return arr.__array_interface__["data"][0]

    def view(self, span, offset, shape, dtype, strides):
        base = np.asarray(span)
        return np.ndarray(shape, dtype, buffer=base, offset=offset,
                          strides=strides).view(EmulatedDeviceArray)

    def is_device_array(self, x):
        return isinstance(x, EmulatedDeviceArray)

    def to_device(self, x):
        if isinstance(x, EmulatedDeviceArray):
            return x
        return np.array(x, copy=True).view(EmulatedDeviceArray)

    def to_host(self, x):
        return np.array(np.asarray(x), copy=True)

    def copy_h2d(self, dst, src):
        np.copyto(np.asarray(dst), src)
        self.h2d_calls += 1
        self.h2d_bytes += src.nbytes

    def copy_d2h(self, dst, src):
        np.copyto(dst, np.asarray(src))
        self.d2h_calls += 1
        self.d2h_bytes += dst.nbytes

    def interface(self, arr):
        """A ``__cuda_array_interface__``-shaped dict (host addresses)."""
        ai = np.asarray(arr).__array_interface__
        return {"version": 3, "shape": ai["shape"], "typestr": ai["typestr"],
                "data": ai["data"], "strides": ai["strides"], "descr": ai["descr"],
                "stream": None}

    def pointer(self, arr):
        return np.asarray(arr).data

    def synchronize(self):
        pass


class _Owner:
    """Keeps a CUDA managed allocation alive under a NumPy view of it."""

    def __init__(self, memptr, nbytes):
        self._memptr = memptr
        self.__array_interface__ = {"version": 3, "shape": (nbytes,), "typestr": "|u1",
                                    "data": (memptr.ptr, False)}


class CupyBackend(_Counters):
    """Device memory through CuPy."""
    name = "cupy"

    def __init__(self):
        super().__init__()
        try:
            import cupy
        except ImportError as exc:
            raise DeviceUnavailableError(
                "device='gpu': needs the package 'cupy' (pip install cupy-cuda12x or "
                f"cupy-cuda13x), which is not installed ({exc})") from exc
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # no driver / no device: CuPy raises its own types
            raise DeviceUnavailableError(f"device='gpu': CuPy sees no usable GPU ({exc})") from exc
        if count < 1:
            raise DeviceUnavailableError("device='gpu': CuPy sees no GPU")
        self.cp = self.xp = cupy

    def __reduce__(self):            # pickled storages name their backend
        return CupyBackend, ()

    def alloc(self, nbytes):
        return self.cp.empty(max(nbytes, 1), dtype=self.cp.uint8)

    def managed_alloc(self, nbytes):
        n = max(nbytes, 1)
        mem = self.cp.cuda.malloc_managed(n)
        dev = self.cp.ndarray((n,), self.cp.uint8, memptr=mem)
        return np.asarray(_Owner(mem, n)), dev

    def address(self, arr):
        return arr.data.ptr

    def view(self, span, offset, shape, dtype, strides):
        return self.cp.ndarray(shape, dtype, memptr=span.data + offset, strides=strides)

    def is_device_array(self, x):
        return isinstance(x, self.cp.ndarray) or hasattr(x, "__cuda_array_interface__")

    def to_device(self, x):
        return self.cp.asarray(x)

    def to_host(self, x):
        return self.cp.asnumpy(x)

    def copy_h2d(self, dst, src):
        if dst.flags.c_contiguous and src.flags.c_contiguous:
            dst.set(src)
        else:
            dst[...] = self.cp.asarray(np.ascontiguousarray(src))
        self.h2d_calls += 1
        self.h2d_bytes += src.nbytes

    def copy_d2h(self, dst, src):
        if dst.flags.c_contiguous and src.flags.c_contiguous:
            src.get(out=dst)
        else:
            dst[...] = self.cp.asnumpy(src)
        self.d2h_calls += 1
        self.d2h_bytes += dst.nbytes

    def interface(self, arr):
        return arr.__cuda_array_interface__

    def pointer(self, arr):
        return arr.data

    def synchronize(self):
        self.cp.cuda.runtime.deviceSynchronize()


_lock = threading.RLock()
_forksafe.guard(sys.modules[__name__], "_lock")   # free in a fork's child
_default = None           # set_default(): the process-wide backend
_local = threading.local()  # use(): a backend for one block of one thread
_cupy = None


def current():
    """The backend ``device="gpu"`` uses in this thread now: the innermost
    ``with use(...)`` of this thread, else :func:`set_default`'s, else CuPy."""
    global _cupy
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    if _default is not None:
        return _default
    with _lock:
        if _cupy is None:
            _cupy = CupyBackend()
        return _cupy


def set_default(backend):
    """The process-wide device backend (``None``: back to CuPy)."""
    global _default
    _default = backend


class use(contextlib.ContextDecorator):
    """``with use(EmulatedDevice()):`` -- this thread's device backend for
    the block (other threads keep theirs); blocks nest."""

    def __init__(self, backend):
        self.backend = backend

    def __enter__(self):
        if not hasattr(_local, "stack"):
            _local.stack = []
        _local.stack.append(self.backend)
        return self.backend

    def __exit__(self, *exc):
        _local.stack.pop()
        return False
