"""The text of a Ragged's repr, summarised as NumPy summarises a large
array: at most ``EDGE`` lists from each end, at most ``EDGE`` values from
each end of every list (and of every fixed dimension) shown, ``...`` for the
rest, long strings cut to both ends.  A repr so reads a bounded number of
values whatever the lists hold (found by review: repr called ``to_list()``
on whole lists, 27 s and 349 MB for a list of 30 million values).

Nothing here knows the Ragged class: ``summary`` takes one and tells nested
ones by its type; it reads ``offsets``, ``values``, ``validity``,
``validity_offset`` and ``encoding``.
"""
import numpy as np

__all__ = ["EDGE", "TEXT_EDGE", "summary"]

#: lists, and values of a list, shown from each end
EDGE = 3
#: bytes of a string shown from each end of one longer than twice this
TEXT_EDGE = 32


class _Shown:
    """Text that a list's repr shows as it is (``...``, a cut string)."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


_ELIDED = _Shown("...")


def _positions(n):
    """The indices shown of ``n``; None where the middle is left out."""
    if n <= 2 * EDGE:
        return list(range(n))
    return list(range(EDGE)) + [None] + list(range(n - EDGE, n))


def summary(r):
    """Python lists whose ``repr`` is the summarised text of Ragged ``r``."""
    return _lists(r, type(r))


def _lists(r, kind):
    return [_ELIDED if i is None else _list(r, i, kind) for i in _positions(len(r))]


def _list(r, i, kind):
    if r.validity is not None:
        bit = r.validity_offset + i
        if not (int(r.validity[bit >> 3]) >> (bit & 7)) & 1:
            return None
    a, b = int(r.offsets[i]), int(r.offsets[i + 1])
    if a < 0 or b < a or b > len(r.values):
        # offsets taken on trust that r[i] refuses: shown as such, never a
        # made-up list (before, clipped: [] for -3..2; review 23)
        return _Shown(f"<list {i}: offsets {a}..{b} invalid>")
    item = r.values[a:b]
    if r.encoding is not None:
        return _text(item, r.encoding)
    return _sequence(item, kind)


def _sequence(x, kind):
    """The values of ``x`` along its first axis, the middle left out."""
    if isinstance(x, kind):
        return _lists(x, kind)
    return [_ELIDED if j is None else _value(x[j], kind) for j in _positions(len(x))]


def _value(v, kind):
    if v is np.ma.masked:
        return None
    if isinstance(v, np.ndarray) and v.ndim:      # a row of fixed dimensions
        return _sequence(v, kind)
    return v.item() if isinstance(v, (np.generic, np.ndarray)) else v


def _text(raw, encoding):
    """A string (``encoding`` "utf-8") or bytes value of uint8 ``raw``; one
    longer than ``2 * TEXT_EDGE`` bytes shows its two ends."""
    if len(raw) <= 2 * TEXT_EDGE:
        return _decode(raw, encoding)
    head, tail = TEXT_EDGE, len(raw) - TEXT_EDGE
    if encoding == "utf-8":
        # cut between characters: a continuation byte (10xxxxxx) is no start
        while head > 0 and raw[head] & 0xC0 == 0x80:
            head -= 1
        while tail < len(raw) and raw[tail] & 0xC0 == 0x80:
            tail += 1
    return _Shown(f"{_decode(raw[:head], encoding)!r}...{_decode(raw[tail:], encoding)!r}")


def _decode(raw, encoding):
    data = raw.tobytes()
    # a repr never fails: bytes that are not utf-8 show as escapes
    return data.decode("utf-8", "backslashreplace") if encoding == "utf-8" else data
