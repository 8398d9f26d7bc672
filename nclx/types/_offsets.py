"""Offsets buffers of ragged arrays (Arrow's list layout): accepting one
and checking it against the values it indexes, with errors naming the first
bad entry."""
import numpy as np

__all__ = ["as_offsets", "validate_offsets", "check_lists", "check_window"]


def as_offsets(offsets):
    """An int32 or int64 1-d ndarray view of ``offsets`` (n lists: n + 1 entries)."""
    if isinstance(offsets, np.ma.MaskedArray):
        raise TypeError("offsets must be a plain int32 or int64 ndarray, not a masked array "
                        "(a missing list is a bit of the validity bitmap)")
    if isinstance(offsets, np.ndarray):
        arr = offsets
    elif isinstance(offsets, (list, tuple, range)):
        arr = np.asarray(offsets, dtype=np.int64)
    else:
        try:
            arr = np.asarray(memoryview(offsets))
        except TypeError:
            raise TypeError("offsets must be an int32 or int64 ndarray, "
                            f"not {type(offsets).__name__}") from None
    if arr.dtype not in (np.int32, np.int64):
        raise TypeError(f"offsets must be int32 or int64, not {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"offsets must be 1-dimensional, not {arr.ndim}-dimensional")
    if len(arr) == 0:
        raise ValueError("offsets must hold at least one entry (n lists need n + 1 offsets)")
    return arr


def validate_offsets(offsets, nvalues):
    """Raise ValueError naming the first bad entry; one vectorized pass."""
    first = int(offsets[0])
    if first < 0:
        raise ValueError(f"offsets[0] = {first} is negative")
    if len(offsets) > 1:
        dec = offsets[1:] < offsets[:-1]
        if dec.any():
            i = int(np.argmax(dec)) + 1
            raise ValueError(f"offsets[{i}] = {int(offsets[i])} is less than offsets[{i - 1}] = "
                             f"{int(offsets[i - 1])}: offsets must not decrease")
    last = int(offsets[-1])
    if last > nvalues:
        raise ValueError(f"offsets[{len(offsets) - 1}] = {last} points past the end of values "
                         f"(length {nvalues})")


def check_lists(offsets, nvalues, lists=None):
    """Raise ValueError naming the first list (of ``lists``, every list by
    default) whose offsets, as given, leave ``values[0:nvalues]`` or run
    backwards.  For offsets taken on trust (``validate=False``): called
    before anything is sized from them, and on the error path of the kernels
    so that the message names the caller's offsets, not a shifted window's."""
    idx = np.arange(len(offsets) - 1) if lists is None else np.asarray(lists, dtype=np.int64)
    starts = offsets[:-1][idx]
    stops = offsets[1:][idx]
    bad = (starts < 0) | (stops < starts) | (stops > nvalues)
    if not bad.any():
        return
    k = int(np.argmax(bad))
    i, a, b = int(idx[k]), int(starts[k]), int(stops[k])
    why = "run backwards" if b < a else f"leave the values (length {nvalues})"
    raise ValueError(f"list {i}: offsets {a}..{b} {why}; were they built with validate=False?")


def check_window(offsets, nvalues):
    """O(1): the values the lists reach, ``offsets[0]..offsets[-1]``, must lie
    inside ``values[0:nvalues]``; when they do not, the first bad list is
    named (an O(n) pass on the error path only)."""
    first, last = int(offsets[0]), int(offsets[-1])
    if 0 <= first <= last <= nvalues:
        return
    check_lists(offsets, nvalues)
    # every list is sound but the ends are not: only possible with no list
    raise ValueError(f"offsets {first}..{last} leave the values (length {nvalues})")
