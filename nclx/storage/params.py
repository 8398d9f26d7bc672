"""The keywords of the storage creation functions: validation, presets and
inference (GDP-3's order: explicit keyword, then ``defaults``, then what
``data``/``device_data`` show, then the fallback).

Every check raises :class:`StorageError` (a ``ValueError``) or
:class:`StorageTypeError` (also a ``TypeError``) whose message names the
keyword and the value it got.
"""
import operator
from collections.abc import Mapping, Set

import numpy as np

from nclx.errors import NclxError

__all__ = ["StorageError", "StorageTypeError", "NoSuchBufferError", "DeviceUnavailableError",
           "PRESETS", "normalize_shape", "normalize_dims", "normalize_halo",
           "normalize_layout", "normalize_aligned_index", "normalize_alignment",
           "normalize_device", "normalize_managed", "preset", "layout_from_strides",
           "default_dims", "normalize_dtype", "fit_alignment", "MAX_DIMS", "MAX_ALIGNMENT"]


class StorageError(NclxError, ValueError):
    """A storage keyword or buffer that cannot be used (names the keyword)."""


class StorageTypeError(StorageError, TypeError):
    """A storage keyword of the wrong type."""


class NoSuchBufferError(StorageError, AttributeError):
    """The storage has no buffer on the asked-for side (host or device);
    GDP-3's ``GTNoSuchBufferError``.  An ``AttributeError`` too, so that
    ``hasattr(s, "__cuda_array_interface__")`` is False on a CPU storage."""


class DeviceUnavailableError(StorageError, ImportError):
    """``device="gpu"`` without a usable device backend (CuPy and a GPU)."""


MAX_DIMS = 64                 # NumPy's limit
MAX_ALIGNMENT = 1 << 24       # 16 MiB: beyond any page or cache line
_MAX_DIGITS = 18              # a data dim's number (int() refuses > 4300 digits)

# Presets: ``defaults=`` picks the layout (per dims) and the alignment only,
# never the device.  Layout rank keys: the dimension with the largest key
# gets the smallest stride.  The IJK/KJI rows of GDP-3's table follow from
# these rules (tests check them against the table itself).
_SPATIAL = ("I", "J", "K")
PRESETS = {
    # positional: "F" reverses the axes, "C" keeps them, whatever the dims
    "F": {"alignment_size": 1, "order": "F"},
    "C": {"alignment_size": 1, "order": "C"},
    # semantic: K innermost on CPU (then extra data dims), I innermost on GPU
    "gtx86": {"alignment_size": 64, "rank": {"I": 0, "J": 1, "K": 2}, "digits": "inner"},
    "gtcuda": {"alignment_size": 256, "rank": {"K": 0, "J": 1, "I": 2}, "digits": "outer"},
}


def _fail(keyword, value, why, cls=StorageError):
    raise cls(f"{keyword}={value!r}: {why}")


def _as_int(keyword, value, what, whole=None):
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        return operator.index(value)
    except TypeError:
        _fail(keyword, value if whole is None else whole,
              f"{what} must be an integer, got {type(value).__name__}", StorageTypeError)


def _as_sequence(keyword, value):
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        _fail(keyword, value, "expected a sequence", StorageTypeError)
    if isinstance(value, (Mapping, Set)):
        # (found by review: a dict was read as its keys, a set in hash order)
        _fail(keyword, value, f"expected a sequence, got an unordered {type(value).__name__}",
              StorageTypeError)
    return tuple(value)


def normalize_shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = _as_sequence("shape", shape)
    if len(shape) > MAX_DIMS:
        _fail("shape", shape, f"has {len(shape)} dimensions; NumPy allows at most {MAX_DIMS}")
    out = tuple(_as_int("shape", s, f"extent {i}", shape) for i, s in enumerate(shape))
    for i, s in enumerate(out):
        if s < 0:
            _fail("shape", shape, f"extent {i} is negative ({s})")
    return out


def default_dims(ndim):
    """I, J, K for the first three dimensions, then "0", "1", ..."""
    return _SPATIAL[:ndim] + tuple(str(i) for i in range(max(0, ndim - 3)))


def normalize_dims(dims, ndim):
    if dims is None:
        return default_dims(ndim)
    seq = tuple(dims) if isinstance(dims, str) else _as_sequence("dims", dims)
    for d in seq:
        if not isinstance(d, str):
            _fail("dims", dims, f"entry {d!r} is not a string", StorageTypeError)
        if d not in _SPATIAL and not (d.isdigit() and d.isascii()):
            _fail("dims", dims, f"entry {d!r} is neither 'I', 'J', 'K' nor a digit string")
        if d not in _SPATIAL and len(d) > _MAX_DIGITS:
            _fail("dims", dims, f"entry {d!r} is longer than {_MAX_DIGITS} digits")
        if d not in _SPATIAL and len(d) > 1 and d[0] == "0":
            # '01' and '1' would name one data dimension twice
            _fail("dims", dims, f"entry {d!r} is not written as its number (no leading zero)")
    if len(set(seq)) != len(seq):
        _fail("dims", dims, "repeats a dimension")
    if len(seq) != ndim:
        _fail("dims", dims, f"has {len(seq)} entries for {ndim} dimensions")
    return seq


def normalize_halo(halo, shape):
    ndim = len(shape)
    if halo is None:
        return ((0, 0),) * ndim
    if isinstance(halo, (int, np.integer)) and not isinstance(halo, (bool, np.bool_)):
        halo = (halo,) * ndim       # one width for every side of every dimension
    seq = _as_sequence("halo", halo)
    if len(seq) != ndim:
        _fail("halo", halo, f"has {len(seq)} entries for {ndim} dimensions")
    out = []
    for d, h in enumerate(seq):
        if isinstance(h, (tuple, list)):
            if len(h) != 2:
                _fail("halo", halo, f"entry {d} must be an int or a (lo, hi) pair")
            lo, hi = (_as_int("halo", x, f"entry {d}", halo) for x in h)
        else:
            lo = hi = _as_int("halo", h, f"entry {d}", halo)
        if lo < 0 or hi < 0:
            _fail("halo", halo, f"entry {d} is negative")
        if lo + hi > shape[d]:
            _fail("halo", halo, f"entry {d} ({lo} + {hi}) is wider than extent {shape[d]}")
        out.append((lo, hi))
    return tuple(out)


def normalize_layout(layout, ndim):
    seq = _as_sequence("layout", layout)
    vals = tuple(_as_int("layout", x, "entry", layout) for x in seq)
    if len(vals) != ndim:
        _fail("layout", layout, f"has {len(vals)} entries for {ndim} dimensions")
    if sorted(vals) != list(range(ndim)):
        _fail("layout", layout, f"is not a permutation of 0..{ndim - 1}")
    return vals


def normalize_aligned_index(aligned_index, shape, halo):
    if aligned_index is None:   # the halo's lower corner (inside the shape)
        return tuple(min(lo, max(n - 1, 0)) for (lo, _), n in zip(halo, shape))
    seq = _as_sequence("aligned_index", aligned_index)
    vals = tuple(_as_int("aligned_index", x, "entry", aligned_index) for x in seq)
    if len(vals) != len(shape):
        _fail("aligned_index", aligned_index, f"has {len(vals)} entries for {len(shape)} dimensions")
    for d, (i, n) in enumerate(zip(vals, shape)):
        if not (0 <= i < n or i == n == 0):
            _fail("aligned_index", aligned_index, f"entry {d} ({i}) is outside extent {n}")
    return vals


def normalize_alignment(alignment_size, itemsize=None):
    a = _as_int("alignment_size", alignment_size, "it")
    if a < 1 or a & (a - 1) or a > MAX_ALIGNMENT:
        _fail("alignment_size", alignment_size,
              f"must be a power of two from 1 to {MAX_ALIGNMENT} (bytes)")
    if itemsize is not None and a % itemsize and itemsize % a:
        _fail("alignment_size", alignment_size,
              f"and the item size {itemsize} must divide one another")
    return a


def fit_alignment(alignment, itemsize):
    """The alignment of a new field of ``itemsize`` laid out like one of
    ``alignment`` bytes (a ufunc result of another dtype): that alignment
    when the two divide one another, else the largest power of two dividing
    the item size (found by review: ``np.add`` of an 'S4' storage aligned to
    4 bytes and b'x', an 'S5' result, raised StorageError where NumPy computes)."""
    a = normalize_alignment(alignment)
    if a % itemsize and itemsize % a:
        a = min(a, itemsize & -itemsize)
    return a


def normalize_dtype(dtype, keyword="dtype"):
    """A NumPy dtype a storage can hold in raw memory (no Python objects,
    items of at least one byte)."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        _fail(keyword, dtype, f"is not a NumPy dtype ({exc})", StorageTypeError)
    if dt.hasobject:
        _fail(keyword, dtype, "holds Python objects, which raw storage memory cannot",
              StorageTypeError)
    if dt.itemsize == 0:
        _fail(keyword, dtype, "has items of 0 bytes", StorageTypeError)
    if dt.subdtype is not None:
        # NumPy turns it into extra trailing dimensions the dims, halo, layout
        # and aligned index were not given for
        _fail(keyword, dtype, f"is a subarray dtype (adds the dimensions {dt.shape} to the "
              f"shape); give them in shape with dtype={dt.base}", StorageTypeError)
    return dt


def normalize_device(device):
    if device not in (None, "gpu"):
        _fail("device", device, "must be None or 'gpu'")
    return device


def normalize_managed(managed, device):
    if managed not in (None, "gt4py", "cuda"):
        _fail("managed", managed, "must be None, 'gt4py' or 'cuda'")
    return managed if device == "gpu" else None


def preset(defaults):
    if defaults is None:
        return None
    if not isinstance(defaults, str) or defaults not in PRESETS:
        _fail("defaults", defaults, f"is not one of {sorted(PRESETS)}")
    return PRESETS[defaults]


def preset_layout(p, dims):
    """The layout a preset gives for ``dims``."""
    ndim = len(dims)
    if "order" in p:
        return tuple(range(ndim)) if p["order"] == "C" else tuple(range(ndim - 1, -1, -1))
    rank = p["rank"]
    digits = sorted((d for d in dims if d not in rank), key=int)
    if p["digits"] == "inner":
        keys = {d: rank[d] for d in dims if d in rank}
        keys.update({d: 3 + i for i, d in enumerate(digits)})
    else:
        keys = {d: 3 + rank[d] for d in dims if d in rank}
        keys.update({d: i for i, d in enumerate(digits)})
    order = sorted(dims, key=lambda d: keys[d])
    return tuple(order.index(d) for d in dims)


def layout_from_strides(strides, shape=None):
    """gt4py's layout map of an array: larger stride -> smaller entry.
    Axes of extent <= 1 do not move (ties keep axis order)."""
    ndim = len(strides)
    key = [abs(s) if shape is None or shape[i] > 1 else None for i, s in enumerate(strides)]
    ranked = sorted((i for i in range(ndim) if key[i] is not None), key=lambda i: -key[i])
    # axes of extent <= 1 keep their position; the others are ranked
    rest = iter(ranked)
    order = [i if key[i] is None else next(rest) for i in range(ndim)]
    layout = [0] * ndim
    for pos, axis in enumerate(order):
        layout[axis] = pos
    return tuple(layout)
