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
import weakref

import numpy as np

from nclx.errors import NclxError

SUPPORTED_MAJOR = 0
_COMMON = ("dist_type", "size", "proc_grid_size", "proc_grid_rank")
_KEYS = {
    "b": (_COMMON + ("start", "stop"), ("padding", "periodic")),
    "c": (_COMMON + ("start",), ("block_size",)),
    "u": (_COMMON + ("indices",), ("one_to_one",)),
}
# 'major.minor.patch': ASCII decimal numbers without leading zeros (as
# Semantic Versioning), matched with fullmatch (no trailing newline).
_NUMBER = r"(0|[1-9][0-9]*)"
_VERSION = re.compile(rf"{_NUMBER}\.{_NUMBER}\.{_NUMBER}")
_INT64_MAX = np.iinfo(np.int64).max


class DapError(NclxError, ValueError):
    """A DAP export or dimension dictionary is invalid (the message names
    the dimension and key)."""


class DapTypeError(DapError, TypeError):
    """A DAP value has the wrong type."""


def require_distarray(da, what, hint=""):
    """DapTypeError unless ``da`` is a DistArray (its block, distribution
    and communicator): ``"<what> of a <type>: it needs a DistArray<hint>"``
    (before, "'numpy.ndarray' object has no attribute ..." from inside)."""
    if not all(hasattr(da, name) for name in ("_block", "distribution", "comm")):
        raise DapTypeError(f"{what} of a {type(da).__name__}: it needs a DistArray{hint}")


def _where(dim, key=None):
    return f"dim_data[{dim}]" + (f"[{key!r}]" if key is not None else "")


def _int(value, dim, key, minimum=None, maximum=_INT64_MAX):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise DapTypeError(f"{_where(dim, key)} must be an integer, not "
                           f"{type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise DapError(f"{_where(dim, key)} must be >= {minimum}, got {value}")
    if not -_INT64_MAX - 1 <= value <= maximum:
        # the maps, the moves and NumPy index in int64: a size of 2**70 made
        # a DistArray whose .size raised OverflowError (found by review); a
        # size may be 2**63, the count of the int64 indices [0, 2**63) a 'u'
        # dimension can hold (a Distribution's shape must still fit an array)
        raise DapError(f"{_where(dim, key)} is {value}, outside the int64 range of indices"
                       + (" (a size is at most 2**63)" if maximum != _INT64_MAX else ""))
    return value


def _bool(value, dim, key):
    if not isinstance(value, (bool, np.bool_)):
        raise DapTypeError(f"{_where(dim, key)} must be a bool, not {type(value).__name__}")
    return bool(value)


def _dtype_of(obj):
    """The dtype an object would export, for messages."""
    dt = getattr(obj, "dtype", None)
    if dt is not None:
        return str(dt)
    try:
        return f"format {memoryview(obj).format!r}"
    except (TypeError, ValueError, NotImplementedError, BufferError):
        return type(obj).__name__


def _as_buffer(obj, what):
    """``obj`` as an ndarray through the buffer protocol (no copy)."""
    try:
        return np.asarray(memoryview(obj))
    except TypeError:
        raise DapTypeError(f"{what} must support the buffer protocol, not "
                           f"{type(obj).__name__}") from None
    except (ValueError, NotImplementedError, BufferError) as exc:
        # NumPy cannot export datetime64/timedelta64 through the buffer protocol
        raise DapTypeError(f"{what} of dtype {_dtype_of(obj)} cannot be shared through the "
                           f"buffer protocol ({exc})") from None


def _exact_int64(value):
    """``value`` as a Python int if it is an integer that fits in int64, else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, numbers.Integral):
        value = int(value)
    elif isinstance(value, numbers.Real):
        try:
            f = float(value)
        except (TypeError, ValueError, OverflowError):
            return None
        if not f.is_integer():
            return None
        value = int(f)
    else:
        return None
    return value if -_INT64_MAX - 1 <= value <= _INT64_MAX else None


def _indices(value, dim):
    """The 'indices' of a 'u' dimension as a 1-d int64 array: every value must
    be an integer that fits in int64 (nothing wraps or rounds), locally unique."""
    if _CHECKED.get(id(value)) is value:
        return value                 # a Distribution's own checked, read-only copy
    where = _where(dim, "indices")
    raw = _as_buffer(value, where)
    if raw.ndim != 1:
        raise DapTypeError(f"{where} must be a 1-d buffer of integers, got {raw.ndim}-d "
                           f"{raw.dtype}")
    if raw.dtype.kind == "u" and raw.size and raw.dtype.itemsize >= 8:
        big = np.flatnonzero(raw > np.uint64(_INT64_MAX))
        if big.size:
            p = int(big[0])
            raise DapError(f"{where}: index {int(raw[p])} at position {p} does not fit in "
                           f"int64 (indices are int64)")
    elif raw.dtype.kind not in "iu" and raw.size:
        # not an integer buffer: name the first value that is not an int64,
        # else the first value (integral, but stored as another type)
        values = raw.tolist()
        p = next((i for i, v in enumerate(values) if _exact_int64(v) is None), None)
        if p is None:
            p, why = 0, f"is stored as {raw.dtype}"
        else:
            why = "is not an int64 integer"
        raise DapTypeError(f"{where} must be a 1-d buffer of integers, got 1-d {raw.dtype}: "
                           f"index {values[p]!r} at position {p} {why}")
    # a copy of its own, read-only: a Distribution never changes once built (its
    # partition check and sorted index tables are kept), whatever the caller's
    # array does later
    idx = np.array(raw, dtype=np.int64, copy=True)
    idx.flags.writeable = False
    if idx.size > 1:
        order = np.argsort(idx, kind="stable")
        s = idx[order]
        same = np.flatnonzero(s[1:] == s[:-1])
        if same.size:
            # the duplicate whose second occurrence comes first in local order
            k = same[np.argmin(order[same + 1])]
            first, second = sorted((int(order[k]), int(order[k + 1])))
            raise DapError(f"{where} holds global index {int(s[k])} more than once "
                           f"(positions {first} and {second}); indices must be locally unique")
    _CHECKED[id(idx)] = idx
    return idx


# The index arrays _indices made (checked, read-only, owned by nclx), so that
# normalising a Distribution's own dimension dictionary again (its maps, its
# pickle) neither copies nor sorts them again; entries leave with the arrays.
_CHECKED = weakref.WeakValueDictionary()


def check_indices_in_range(dd, dim=0, rank=None):
    """Check that a normalised dimension dictionary maps every local index
    into the global range ``[0, size)``.

    An export may give a 'u' dimension any locally unique int64 indices
    (negative ones included, DAP 0.10); an operation that places them in a
    global array of ``size`` elements (``DistArray.from_global``,
    ``DistArray.gather``) calls this first.  Block and cyclic dimensions that
    passed :func:`normalize_dim_dict` always map into range (periodic padding
    wraps).  Raises DapError naming the rank (when given), dimension,
    position and index.
    """
    if dd.get("dist_type") != "u":
        return
    idx = np.asarray(dd["indices"])
    size = dd["size"]
    bad = np.flatnonzero((idx < 0) | (idx >= size))
    if bad.size:
        p = int(bad[0])
        who = "" if rank is None else f"rank {rank}: "
        raise DapError(f"{who}{_where(dim, 'indices')}[{p}] is {int(idx[p])}, outside the "
                       f"global range [0, {size}) of the dimension (an export may hold such "
                       f"indices; they cannot be placed in the global array)")


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
    if not isinstance(dist, str):
        raise DapTypeError(f"{_where(dim, 'dist_type')} must be a string ('b', 'c' or 'u'), not "
                           f"{type(dist).__name__} {dist!r}")
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
    size = out["size"] = _int(dd["size"], dim, "size", 0, _INT64_MAX + 1)
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
        if stop - start > _INT64_MAX:
            raise DapError(f"{_where(dim)}: the local range [{start}, {stop}) holds more than "
                           f"{_INT64_MAX} elements")
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
        out["indices"] = _indices(dd["indices"], dim)
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
    m = _VERSION.fullmatch(version)
    if not m:
        raise DapError(f"'__version__' must be 'major.minor.patch', not {version!r}")
    if int(m.group(1)) != SUPPORTED_MAJOR:
        raise DapError(f"'__version__' {version!r}: major version {m.group(1)} is not "
                       f"supported (nclx reads {SUPPORTED_MAJOR}.x)")
    buf = _as_buffer(distbuffer["buffer"], "'buffer'")
    if buf.dtype.hasobject:
        raise DapTypeError(f"'buffer' has dtype {buf.dtype}: a buffer of Python object "
                           f"references holds no array data to share")
    dim_data = distbuffer["dim_data"]
    if not isinstance(dim_data, (tuple, list)):
        raise DapTypeError(f"'dim_data' must be a tuple of dicts, not {type(dim_data).__name__}")
    if len(dim_data) != buf.ndim:
        raise DapError(f"'dim_data' has {len(dim_data)} dimension dictionaries but the buffer "
                       f"has {buf.ndim} dimensions")
    dims = tuple(normalize_dim_dict(dd, i, buf.shape[i]) for i, dd in enumerate(dim_data))
    return {"__version__": version, "buffer": distbuffer["buffer"], "dim_data": dims}
