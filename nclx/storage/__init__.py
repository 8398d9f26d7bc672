"""GDP-3 storages: duck-typed arrays with halos, alignment and layouts,
NumPy's array interface and CUDA's, and host/device synchronisation.

``empty``, ``zeros``, ``ones``, ``full`` (and their ``_like`` forms) allocate
with gt4py's padding and strides; ``as_storage`` wraps existing host/device
buffers without copying; ``storage`` copies.  Storages are not ndarray
subclasses: ``np.asarray(s)`` is a zero-copy view of the host buffer, and
NumPy's ufuncs and operators go through nclx's hook chains and return
storages laid out like their operands.  See docs/storage.md.
"""
from nclx.storage.params import (PRESETS, DeviceUnavailableError, NoSuchBufferError,
                                 StorageError, StorageTypeError)
from nclx.storage.devices import SyncState
from nclx.storage import devices
from nclx.storage.core import (CPUStorage, CUDAManagedGPUStorage, GPUStorage,
                               SoftwareManagedGPUStorage, Storage)
from nclx.storage.creation import (as_storage, empty, empty_like, full, full_like, ones,
                                   ones_like, storage, zeros, zeros_like)

GTNoSuchBufferError = NoSuchBufferError

__all__ = ["empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
           "full_like", "as_storage", "storage", "Storage", "CPUStorage", "GPUStorage",
           "SoftwareManagedGPUStorage", "CUDAManagedGPUStorage", "SyncState", "devices",
           "PRESETS", "StorageError", "StorageTypeError", "NoSuchBufferError",
           "GTNoSuchBufferError", "DeviceUnavailableError"]
