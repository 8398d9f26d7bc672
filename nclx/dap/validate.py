"""Strict validation of DAP ``__distarray__()`` exports.

Conventions where the protocol text leaves room (docs/dap.md):

- block ``[start, stop)`` is the global range of the whole local buffer,
  padding included, so neighbours' ranges overlap by their communication
  padding;
- on a periodic dimension the first grid rank's range may begin below 0 and
  the last rank's may end above ``size``: those padding indices wrap modulo
  ``size``;
- an empty dimension dictionary is an undistributed block dimension.
"""
import numbers
import re

import numpy as np

SUPPORTED_MAJOR = 0
_COMMON = ("dist_type", "size", "proc_grid_size", "proc_grid_rank")
_KEYS = {
    "b": (_COMMON + ("start", "stop"), ("padding", "periodic")),
    "c": (_COMMON + ("start",), ("block_size",)),
    "u": (_COMMON + ("indices",), ("one_to_one",)),
}
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


class DapError(ValueError):
    """A DAP export or dimension dictionary is invalid (the message names
    the dimension and key)."""


class DapTypeError(DapError, TypeError):
    """A DAP value has the wrong type."""


def _where(dim, key=None):
    return f"dim_data[{dim}]" + (f"[{key!r}]" if key is not None else "")


def _int(value, dim, key, minimum=None):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise DapTypeError(f"{_where(dim, key)} must be an integer, not "
                           f"{type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise DapError(f"{_where(dim, key)} must be >= {minimum}, got {value}")
    return value


def _bool(value, dim, key):
    if not isinstance(value, (bool, np.bool_)):
        raise DapTypeError(f"{_where(dim, key)} must be a bool, not {type(value).__name__}")
    return bool(value)


def cyclic_owned_count(size, grid_size, grid_rank, block_size):
    """Indices a grid rank owns under CYCLIC(block_size) (partial last block included)."""
    nblocks = -(-size // block_size) if size else 0
    mine = len(range(grid_rank, nblocks, grid_size))
    if mine == 0:
        return 0
    last_block = nblocks - 1
    count = mine * block_size
    if last_block % grid_size == grid_rank:
        count -= nblocks * block_size - size
    return count


def normalize_dim_dict(dd, dim=0, length=None):
    """Check one dimension dictionary and return it with defaults filled.

    ``length`` is the buffer's extent along this dimension, when known.
    """
    if not isinstance(dd, dict):
        raise DapTypeError(f"{_where(dim)} must be a dict, not {type(dd).__name__}")
    if not dd:
        if length is None:
            raise DapError(f"{_where(dim)} is empty (undistributed) but the buffer length is unknown")
        return {"dist_type": "b", "size": length, "proc_grid_size": 1, "proc_grid_rank": 0,
                "start": 0, "stop": length, "padding": (0, 0), "periodic": False}
    if "dist_type" not in dd:
        raise DapError(f"{_where(dim)} has no 'dist_type' key")
    dist = dd["dist_type"]
    if dist not in _KEYS:
        raise DapError(f"{_where(dim, 'dist_type')} must be 'b', 'c' or 'u', not {dist!r}")
    required, optional = _KEYS[dist]
    for key in required:
        if key not in dd:
            raise DapError(f"{_where(dim)} ({dist!r}) is missing required key {key!r}")
    for key in dd:
        if key not in required and key not in optional:
            raise DapError(f"{_where(dim, key)} is not a key of dist_type {dist!r}")
    out = {"dist_type": dist}
    size = out["size"] = _int(dd["size"], dim, "size", 0)
    grid = out["proc_grid_size"] = _int(dd["proc_grid_size"], dim, "proc_grid_size", 1)
    rank = out["proc_grid_rank"] = _int(dd["proc_grid_rank"], dim, "proc_grid_rank", 0)
    if rank >= grid:
        raise DapError(f"{_where(dim, 'proc_grid_rank')} is {rank}, outside a grid of "
                       f"proc_grid_size {grid}")
    if dist == "b":
        periodic = out["periodic"] = _bool(dd.get("periodic", False), dim, "periodic")
        pad = dd.get("padding", (0, 0))
        if not isinstance(pad, (tuple, list)) or len(pad) != 2:
            raise DapTypeError(f"{_where(dim, 'padding')} must be a list or tuple of two ints, "
                               f"not {pad!r}")
        pad = out["padding"] = (_int(pad[0], dim, "padding", 0), _int(pad[1], dim, "padding", 0))
        start = out["start"] = _int(dd["start"], dim, "start")
        stop = out["stop"] = _int(dd["stop"], dim, "stop")
        low = -pad[0] if (periodic and rank == 0) else 0
        high = size + pad[1] if (periodic and rank == grid - 1) else size
        if start < low:
            raise DapError(f"{_where(dim, 'start')} is {start}, below {low}")
        if stop < start:
            raise DapError(f"{_where(dim, 'stop')} ({stop}) is below start ({start})")
        if stop > high:
            raise DapError(f"{_where(dim, 'stop')} is {stop}, beyond size {size}")
        if pad[0] + pad[1] > stop - start:
            raise DapError(f"{_where(dim, 'padding')} {pad} is wider than the local range "
                           f"[{start}, {stop})")
    elif dist == "c":
        bs = out["block_size"] = _int(dd.get("block_size", 1), dim, "block_size", 1)
        start = out["start"] = _int(dd["start"], dim, "start", 0)
        expect = rank * bs
        if start != expect and not (start == size and expect >= size):
            raise DapError(f"{_where(dim, 'start')} is {start}; grid rank {rank} with block_size "
                           f"{bs} starts at {expect}")
        if start > size:
            raise DapError(f"{_where(dim, 'start')} is {start}, beyond size {size}")
    else:
        try:
            idx = np.asarray(memoryview(dd["indices"]))
        except TypeError:
            raise DapTypeError(f"{_where(dim, 'indices')} must support the buffer protocol") from None
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise DapTypeError(f"{_where(dim, 'indices')} must be a 1-d buffer of integers, "
                               f"got {idx.ndim}-d {idx.dtype}")
        idx = idx.astype(np.int64, copy=False)
        uniq, counts = np.unique(idx, return_counts=True)
        if uniq.size != idx.size:
            dup = uniq[np.flatnonzero(counts > 1)[0]]
            raise DapError(f"{_where(dim, 'indices')} holds global index {dup} more than once")
        out["indices"] = idx
        out["one_to_one"] = _bool(dd.get("one_to_one", False), dim, "one_to_one")
    if length is not None:
        n = local_length(out)
        if n != length:
            raise DapError(f"{_where(dim)}: buffer.shape[{dim}] is {length} but the dimension "
                           f"dictionary describes {n} local elements")
    return out


def local_length(dd):
    """Length of the local buffer a normalised dimension dictionary describes."""
    if dd["dist_type"] == "b":
        return dd["stop"] - dd["start"]
    if dd["dist_type"] == "c":
        return cyclic_owned_count(dd["size"], dd["proc_grid_size"], dd["proc_grid_rank"],
                                  dd["block_size"])
    return len(dd["indices"])


def validate(distbuffer):
    """Validate a ``__distarray__()`` export; return a normalised copy.

    Raises
    ------
    DapError
        (a ValueError) for a bad value, DapTypeError (also a TypeError) for a
        wrong type; the message names the dimension and key.
    """
    if not isinstance(distbuffer, dict):
        raise DapTypeError(f"a DAP export is a dict, not {type(distbuffer).__name__}")
    for key in ("__version__", "buffer", "dim_data"):
        if key not in distbuffer:
            raise DapError(f"the export has no {key!r} key")
    extra = set(distbuffer) - {"__version__", "buffer", "dim_data"}
    if extra:
        raise DapError(f"the export has unknown keys {sorted(extra)}")
    version = distbuffer["__version__"]
    if not isinstance(version, str):
        raise DapTypeError(f"'__version__' must be a string, not {type(version).__name__}")
    m = _VERSION.match(version)
    if not m:
        raise DapError(f"'__version__' must be 'major.minor.patch', not {version!r}")
    if int(m.group(1)) != SUPPORTED_MAJOR:
        raise DapError(f"'__version__' {version!r}: major version {m.group(1)} is not "
                       f"supported (nclx reads {SUPPORTED_MAJOR}.x)")
    try:
        buf = np.asarray(memoryview(distbuffer["buffer"]))
    except TypeError:
        raise DapTypeError("'buffer' must support the buffer protocol, not "
                           f"{type(distbuffer['buffer']).__name__}") from None
    dim_data = distbuffer["dim_data"]
    if not isinstance(dim_data, (tuple, list)):
        raise DapTypeError(f"'dim_data' must be a tuple of dicts, not {type(dim_data).__name__}")
    if len(dim_data) != buf.ndim:
        raise DapError(f"'dim_data' has {len(dim_data)} dimension dictionaries but the buffer "
                       f"has {buf.ndim} dimensions")
    dims = tuple(normalize_dim_dict(dd, i, buf.shape[i]) for i, dd in enumerate(dim_data))
    return {"__version__": version, "buffer": distbuffer["buffer"], "dim_data": dims}
