"""``x in r`` for a Ragged: whether any present value equals ``x``.

A Ragged is not a Python list of lists: as NumPy's ``x in a`` asks
``(a == x).any()`` over the elements, ``x in r`` asks it over the values
of every present list, at any depth of nesting (values under a missing
list do not count); for a Ragged of strings, whether one of its present
strings equals ``x`` (a ``str`` for UTF-8, ``bytes`` for bytes; anything
else is unequal, as NumPy's ``b"a" in np.array(["a"])`` is False).  Before,
Python iterated the lists and asked each comparison's truth value:
NumPy's "truth value ... is ambiguous" (review 24).
"""
import numpy as np

from nclx.types._offsets import check_lists

__all__ = ["contains"]


def contains(r, x):
    """Whether a present value of ``r`` (at any depth) equals ``x``."""
    lists = None          # a mask of the lists of ``r`` under present ones
    while True:
        if r.encoding is not None:
            # strings at any depth (review 27: nested ones compared x with
            # their UTF-8 bytes, so "ab" was not found and 97 was)
            return _contains_string(r, x, lists)
        _check_needle(x)  # (other objects -- None, object() -- compare as NumPy's: unequal)
        vals, mask = _present_values(r, lists)
        if hasattr(vals, "encoding"):           # a nested Ragged: its lists under present ones
            r, lists = vals, mask
            continue
        return bool((vals[mask] == x).any())


def _check_needle(x):
    if isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim > 0):
        raise TypeError(f"x in r: x must be one value (a scalar) to look for among the "
                        f"Ragged's values, not a {type(x).__name__}; compare lists with "
                        "r.equals or r.to_list()")


def _present_values(r, lists):
    """(the values ``r``'s lists reach, a mask of those under a present list
    also selected by ``lists``, a mask over ``r``'s lists or None)."""
    valid = _valid(r, lists)
    vals, offs = r.window()
    lengths = np.diff(offs)
    if len(lengths) and lengths.min() < 0:
        # offsets taken on trust that run backwards: the list named as every
        # other operation names it (review 27: NumPy's "repeats may not
        # contain negative values")
        check_lists(r.offsets, len(r.values))
    return vals, np.repeat(valid, lengths)


def _valid(r, lists):
    valid = r.valid()
    return valid if lists is None else valid & lists


def _contains_string(r, x, lists=None):
    want = str if r.encoding == "utf-8" else bytes
    if not isinstance(x, want):
        _check_needle(x)
        return False        # NumPy's: b"a" in a str array, None, 3 -- unequal
    key = np.frombuffer(x.encode("utf-8") if want is str else x, np.uint8)
    vals, offs = r.window()
    lengths = np.diff(offs)
    if len(lengths) and lengths.min() < 0:
        check_lists(r.offsets, len(r.values))
    rows = np.flatnonzero(_valid(r, lists) & (lengths == len(key)))
    if len(rows) == 0:
        return False
    if len(key) == 0:
        return True
    raw = np.asarray(vals).view(np.uint8)
    for start in range(0, len(rows), 4096):       # bounded temporaries
        at = offs[rows[start:start + 4096]].astype(np.intp)[:, None] + np.arange(len(key))
        if (raw[at] == key).all(axis=1).any():
            return True
    return False
