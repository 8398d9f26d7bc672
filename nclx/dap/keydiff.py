"""What differs between the ranks' calls when an agreement's keys do not
match (:func:`nclx.dap.fold.allreduce_agreed`'s mismatch).

The agreement's record carries one checksum of the call's key, which says
that the ranks' calls differ but not how: the DapError listed every
argument it might be ("the operation, axis, dtype, keepdims, initial or the
array's layout differ").  A key may be given as ``(name, value)`` fields
(``("axis", (0,))``); where the checksums differ every rank has reached the
same point of the same collective, so one more ``Allgather`` there (of a
fixed size; only on this error path) gives every rank every rank's fields,
and the message names the fields that differ and each rank's value.
"""
import numpy as np

from nclx.dap.collective import _ranges

__all__ = ["key_text", "fields_of", "describe_mismatch"]

_ROOM = 2048            # bytes of one rank's fields in the Allgather
_VALUE = 120            # characters of a value shown
_SEP, _EQ = "\x1e", "\x1f"


def fields_of(key):
    """``key`` (a string, or ``(name, value)`` pairs) as pairs of strings."""
    if isinstance(key, str):
        return (("call", key),)
    return tuple((str(n), repr(v) if not isinstance(v, str) else v) for n, v in key)


def key_text(key):
    """The text whose checksum the record carries."""
    return key if isinstance(key, str) else repr(fields_of(key))


def _encode(fields):
    out = bytearray()
    for name, value in fields:
        item = f"{name}{_EQ}{value[:_VALUE]}{_SEP}".encode("utf-8", "replace")
        if len(out) + len(item) > _ROOM:
            break
        out += item
    return bytes(out)


def _decode(raw):
    text = raw.rstrip(b"\0").decode("utf-8", "replace")
    pairs = [p.partition(_EQ) for p in text.split(_SEP) if p]
    return {n: v for n, _, v in pairs}


def describe_mismatch(comm, key):
    """Every rank of ``comm`` calls it at once: the fields that differ, with
    each group of ranks' value ("axis: (0,) on ranks 0, 2 / (1,) on rank
    1"), or "" where none differs."""
    send = np.zeros(_ROOM, np.uint8)
    mine = _encode(fields_of(key))
    send[:len(mine)] = np.frombuffer(mine, np.uint8)
    recv = np.empty((comm.Get_size(), _ROOM), np.uint8)
    comm.Allgather(send, recv)
    every = [_decode(row.tobytes()) for row in recv]
    names = list(dict.fromkeys(n for d in every for n in d))
    parts = []
    for name in names:
        values = [d.get(name, "(none)") or "(none)" for d in every]
        if len(set(values)) < 2:
            continue
        groups = {}
        for rank, v in enumerate(values):
            groups.setdefault(v, []).append(rank)
        shown = " / ".join(f"{v} on rank{'s' if len(r) > 1 else ''} {_ranges(r)}"
                           for v, r in list(groups.items())[:4])
        parts.append(f"{name}: {shown}" + (" / ..." if len(groups) > 4 else ""))
    return "; ".join(parts[:4])
