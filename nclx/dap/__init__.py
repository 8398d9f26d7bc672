"""The Distributed Array Protocol (DAP 0.10) on MPI.

``validate(distbuffer)`` checks what a ``__distarray__()`` producer returns
and gives back a normalised copy; ``map_from_dim_dict(dd)`` turns one
dimension dictionary into a map between local and global indices;
``Distribution`` is the global view over the process grid and ``DistArray``
a local block (an nclx.storage Storage whose halo is the DAP padding) with
its Distribution and communicator (mpi4py); ``exchange_halos(da)`` fills
the communication padding from the owners; ``redistribute(da, dist)``
moves it to another distribution (one ``MPI_Alltoallw``); ``load_npy(path, ...)``
and ``save_npy(path, da)`` read and write ``.npy`` files in parallel (MPI-IO).
"""
from nclx.dap.validate import DapError, DapTypeError, SUPPORTED_MAJOR, normalize_dim_dict, validate
from nclx.dap.maps import (BlockMap, CyclicMap, UnstructuredMap, map_from_dim_dict,
                           num_owned_indices)
from nclx.dap.distribution import Distribution, dims_create
from nclx.dap.distarray import DistArray
from nclx.dap.producers import from_distarray
from nclx.dap.halo import HaloRequest, exchange_halos, start_halo_exchange
from nclx.dap.redistribute import redistribute
from nclx.dap.npyio import load_npy, save_npy
from nclx.dap.registry import implemented, implements
from nclx.dap import functions  # noqa: F401 - registers NumPy functions

__all__ = ["DapError", "DapTypeError", "SUPPORTED_MAJOR", "validate", "normalize_dim_dict",
           "BlockMap", "CyclicMap", "UnstructuredMap", "map_from_dim_dict", "num_owned_indices",
           "Distribution", "dims_create", "DistArray", "from_distarray", "exchange_halos",
           "start_halo_exchange", "HaloRequest", "implements", "implemented", "redistribute",
           "load_npy", "save_npy"]
