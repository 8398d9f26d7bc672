"""The Distributed Array Protocol (DAP 0.10): validation and index maps.

``validate(distbuffer)`` checks what a ``__distarray__()`` producer returns
and gives back a normalised copy; ``map_from_dim_dict(dd)`` turns one
dimension dictionary into a map between local and global indices.
"""
from nclx.dap.validate import DapError, DapTypeError, SUPPORTED_MAJOR, normalize_dim_dict, validate
from nclx.dap.maps import (BlockMap, CyclicMap, UnstructuredMap, map_from_dim_dict,
                           num_owned_indices)

__all__ = ["DapError", "DapTypeError", "SUPPORTED_MAJOR", "validate", "normalize_dim_dict",
           "BlockMap", "CyclicMap", "UnstructuredMap", "map_from_dim_dict", "num_owned_indices"]
