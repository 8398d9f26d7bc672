"""Building Ragged buffers from Python objects, each buffer built once."""
import itertools

import numpy as np

from nclx.types import _bits
from nclx.types.ragged import Ragged

__all__ = ["from_list", "from_strings", "MAX_DEPTH"]

#: list levels below the outer one that from_list builds (NumPy's MAXDIMS)
MAX_DEPTH = 64


def _offsets_of(lengths, n, offsets_dtype):
    offsets = np.zeros(n + 1, dtype=offsets_dtype)
    if n:
        np.cumsum(np.fromiter(lengths, dtype=np.int64, count=n), out=offsets[1:])
    return offsets


def _is_list(x):
    return isinstance(x, (list, tuple, np.ndarray, Ragged)) and not isinstance(x, (str, bytes))


def _depth(data):
    """How many list levels sit below ``data``'s own, and the first leaf (None if none)."""
    depth, level = 0, data
    while True:
        present = [x for x in level if x is not None]
        if not present:
            return depth, None
        leaf = next((x for x in present if not _is_list(x)), None)
        if leaf is not None:
            return depth, leaf
        depth += 1
        if depth > MAX_DEPTH:
            # (found by review: 600 levels raised a bare RecursionError, and
            # a list that contains itself looped here for ever)
            raise ValueError(f"data: lists nested more than {MAX_DEPTH + 1} levels deep "
                             "(or a list that contains itself); from_list builds at most "
                             f"{MAX_DEPTH} var dimensions below the outer one (NumPy's limit "
                             "on dimensions)")
        level = list(itertools.chain.from_iterable(present))


def from_strings(strings, *, offsets_dtype=np.int64):
    """str items -> Ragged of utf-8 bytes (type string); bytes items -> type bytes."""
    offsets_dtype = np.dtype(offsets_dtype)
    if offsets_dtype not in (np.int32, np.int64):
        raise TypeError(f"offsets_dtype must be int32 or int64, not {offsets_dtype}")
    items = list(strings)
    def kind(i, s):
        if isinstance(s, str):
            return "utf-8"
        if isinstance(s, (bytes, bytearray)):
            return "bytes"
        raise TypeError(f"strings[{i}] is a {type(s).__name__}; from_strings takes "
                        "str (or bytes) items and None")
    kinds = [(i, kind(i, s)) for i, s in enumerate(items) if s is not None]
    encoding = kinds[0][1] if kinds else "utf-8"
    for i, k in kinds:
        if k != encoding:   # (a str/bytes mix: before, a bare StopIteration; review 21)
            raise TypeError(f"strings[{i}] is a {type(items[i]).__name__} after a "
                            f"{type(items[kinds[0][0]]).__name__} at strings[{kinds[0][0]}]; "
                            "from_strings takes str or bytes items and None, not a mix")
    if encoding == "utf-8":
        raw = [b"" if s is None else str(s).encode("utf-8") for s in items]
    else:
        raw = [b"" if s is None else bytes(s) for s in items]
    n = len(raw)
    offsets = _offsets_of(map(len, raw), n, offsets_dtype)
    if offsets_dtype == np.int32 and n and offsets[-1] != sum(map(len, raw)):
        raise OverflowError("the strings hold more than 2**31 - 1 bytes: use offsets_dtype=int64")
    values = np.frombuffer(b"".join(raw), dtype=np.uint8).copy() if n else np.zeros(0, np.uint8)
    validity = None
    if any(s is None for s in items):
        validity = _bits.pack([s is not None for s in items])
    return Ragged._trusted(offsets, values, validity, 0, encoding)


def _leaves(flat, dtype):
    """1-D values (masked where None) from a flat list of scalars or records."""
    missing = [x is None for x in flat]
    if any(missing):
        fill = next((x for x in flat if x is not None), None)
        if fill is None:
            # every leaf missing: no value to type them, NumPy's default as
            # for lists with no leaf at all (before, int64 from a 0 fill)
            return np.ma.masked_array(np.zeros(len(flat), dtype=dtype or np.float64),
                                      mask=np.ones(len(flat), dtype=bool))
        filled = [fill if m else x for x, m in zip(flat, missing)]
        data = np.array(filled, dtype=dtype)
        if data.ndim != 1:
            raise ValueError("lists of different depths: every leaf must be a scalar")
        return np.ma.masked_array(data, mask=np.array(missing))
    data = np.array(flat, dtype=dtype)
    if data.dtype.kind == "O" or data.ndim != 1:
        raise ValueError("lists of different depths, or leaves NumPy cannot hold in a "
                         "fixed-width dtype")
    return data


def from_list(data, dtype=None, *, offsets_dtype=np.int64):
    """Nested lists -> Ragged (one var dimension per list level below the outer one)."""
    offsets_dtype = np.dtype(offsets_dtype)
    if offsets_dtype not in (np.int32, np.int64):
        raise TypeError(f"offsets_dtype must be int32 or int64, not {offsets_dtype}")
    items = list(data)
    if any(x is not None and not _is_list(x) for x in items):
        bad = next(i for i, x in enumerate(items) if x is not None and not _is_list(x))
        if all(x is None or isinstance(x, (str, bytes)) for x in items):
            return from_strings(items, offsets_dtype=offsets_dtype)
        raise TypeError(f"data[{bad}] = {items[bad]!r} is not a list: from_list takes a list "
                        "of lists (None for a missing list)")
    depth, _ = _depth(items)
    return _build(items, max(depth, 1), dtype, offsets_dtype)


def _all_strings(flat):
    """Leaves that are all str or all bytes (None between) become a string Ragged; a
    mix with numbers goes to NumPy, which makes them all str, in any order (before,
    the first leaf decided: [1, 'a'] gave strings, ['a', 1] a TypeError; review 21)."""
    present = [x for x in flat if x is not None]
    return bool(present) and all(isinstance(x, (str, bytes)) for x in present)


def _build(items, depth, dtype, offsets_dtype):
    n = len(items)
    missing = [x is None for x in items]
    lists = [() if x is None else x for x in items]
    offsets = _offsets_of(map(len, lists), n, offsets_dtype)
    flat = list(itertools.chain.from_iterable(lists))
    if len(flat) and offsets_dtype == np.int32 and len(flat) > np.iinfo(np.int32).max:
        raise OverflowError("more than 2**31 - 1 values: use offsets_dtype=int64")
    if depth > 1:
        if any(x is not None and not _is_list(x) for x in flat):
            bad = next(x for x in flat if x is not None and not _is_list(x))
            raise ValueError(f"lists of different depths: {bad!r} where a list was expected")
        values = _build(flat, depth - 1, dtype, offsets_dtype)
    elif _all_strings(flat):
        values = from_strings(flat, offsets_dtype=offsets_dtype)
    else:
        if any(_is_list(x) for x in flat):
            raise ValueError("lists of different depths: a list where a scalar was expected")
        values = _leaves(flat, dtype) if flat else np.zeros(0, dtype=dtype or np.float64)
    validity = _bits.pack([not m for m in missing]) if any(missing) else None
    return Ragged._trusted(offsets, values, validity, 0, None)
