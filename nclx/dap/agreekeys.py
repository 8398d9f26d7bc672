"""Fingerprints of Distributions, and agreeing on a value in one collective.

:func:`layout_key` names a Distribution by its shape, maps and a digest of
every dimension dictionary (indices hashed in place); :func:`agree_quick`
checks that every rank passes the same value (and raises any rank's error
everywhere) in one ``Allreduce`` when all is well.
"""
import contextlib
import contextvars
import hashlib
import io
import pickle

import numpy as np

from nclx.dap.collective import _ranges, agree_same, allgather_checked
from nclx.dap.crossrank import same_dim_dict
from nclx.dap.fold import agree
from nclx.dap.validate import DapError

__all__ = ["layout_key", "layout_words", "agree_quick", "agree_layout", "layout_differences", "dtype_key",
           "operation_of", "called_by", "reduction_caller"]

#: the operation whose inner reductions run (np.mean's sums): in their key
_CALLER = contextvars.ContextVar("nclx_dap_reduction_caller", default="")


@contextlib.contextmanager
def called_by(name):
    """The reductions run inside carry ``name`` in their agreement key (the
    outermost caller's name is kept): np.mean's sum on one rank and np.sum
    on another are different calls (before: one key, "add.reduce", so the
    ranks combined a mean with a sum silently; found by review 22)."""
    token = _CALLER.set(_CALLER.get() or name)
    try:
        yield
    finally:
        _CALLER.reset(token)


def reduction_caller():
    """The name :func:`called_by` set for the running reductions ('' if none)."""
    return _CALLER.get()


def layout_key(dist):
    """A short fingerprint of a Distribution (every rank must target the same;
    kept on the Distribution, which nclx never changes once built)."""
    k = getattr(dist, "_nclx_key", None)
    if k is None:
        k = dist._nclx_key = _fingerprint(dist)
    return k


def layout_words(dist):
    """What the keywords of ``Distribution.from_shape`` made of ``dist``,
    per dimension, in words (equal for equal keywords): the type, and the
    padding and periodic flag of block dimensions, the block size of cyclic
    ones -- where a digest differs, the part a reader can compare."""
    out = []
    for d, col in enumerate(dist._dims):
        dd = col[0]
        kind = dd["dist_type"]
        words = f"{d}: {kind!r}"
        if kind in ("b", "n"):
            pad = max((max(c.get("padding", (0, 0))) for c in col), default=0)
            words += f" padding ({pad},) periodic {bool(dd.get('periodic', False))}"
        elif kind == "c":
            words += f" block_size ({dd.get('block_size', 1)},)"
        out.append(words)
    return "; ".join(out)


def _fingerprint(dist):
    h = hashlib.sha1()
    for col in dist._dims:
        for dd in col:
            for k in sorted(dd):
                v = dd[k]
                if isinstance(v, np.ndarray):     # hashed in place: no copy of long indices
                    h.update(f"{k}:{v.dtype.str}{v.shape}".encode())
                    h.update(memoryview(np.ascontiguousarray(v)).cast("B"))
                else:
                    h.update(k.encode() + repr(v).encode())
    return (dist.shape, dist.dist, dist.grid_shape, h.hexdigest())


def _array_bytes(dtype, shape, data):
    """Names arrays in :class:`_Canonical`'s pickles (never called)."""


class _Canonical(pickle.Pickler):
    """Pickles arrays by dtype, shape and C-order bytes, so equal arrays in
    other memory orders (Fortran order, views) pickle alike."""

    def reducer_override(self, obj):
        if isinstance(obj, np.ndarray) and not obj.dtype.hasobject:
            return _array_bytes, (obj.dtype, obj.shape, obj.tobytes())
        return NotImplemented


def agree_quick(comm, value, error, what, describe=repr):
    """:func:`nclx.dap.collective.agree_same` in one ``Allreduce`` on success:
    the fixed-size record of :func:`nclx.dap.fold.agree` carrying a digest
    of ``value`` (so ranks that called a different operation meet in the
    same collective and are told so); only on a failure or a disagreement
    does ``agree_same`` run to report every rank's error or value."""
    try:                     # every byte of arrays (a repr abbreviates large ones)
        buf = io.BytesIO()
        _Canonical(buf, protocol=4).dump((what, value))
        raw = buf.getvalue()
    except Exception:  # noqa: BLE001 - an unpicklable value: its text
        raw = repr((what, value)).encode()
    digest = hashlib.sha1(raw).hexdigest()
    if not agree(comm, digest, error, what):     # raises where another operation met it
        # each rank's value with the operation it came from: a rank in
        # another operation is named as such, not described as this one's
        agree_same(comm, (what, value), error, what, _described(what, describe))
        raise DapError(f"{what}: the ranks disagree")      # digests differ: values too


def _described(what, describe):
    def one(v):
        if not (isinstance(v, tuple) and len(v) == 2 and v[0] == what):
            return f"arguments of another operation ({operation_of(v)})"
        try:
            return describe(v[1])
        except Exception:  # noqa: BLE001 - a value of another shape: as it is
            return repr(v[1])
    return one


def operation_of(v):
    """The operation a rank's agreement payload came from (its first string)."""
    if isinstance(v, tuple) and v and v[0] == _LAYOUT and len(v) > 1:
        return v[1]
    return v[0] if isinstance(v, tuple) and v and isinstance(v[0], str) else "unknown"


def dtype_key(dtype):
    """A dtype as ranks must agree on it: ``.str`` and the repr, which tells
    records of one size apart by their fields (both ``|V8``)."""
    dt = np.dtype(dtype)
    return (dt.str, repr(dt))


def _padding_of(column):
    return [tuple(dd.get("padding", (0, 0))) for dd in column]


def _same_column(a, b):
    return a is b or (a is not None and b is not None and len(a) == len(b)
                      and all(same_dim_dict(x, y) for x, y in zip(a, b)))


def layout_differences(views):
    """Lines naming, per dimension, the groups of ranks whose views of the
    layout differ (``views[r]``: rank r's Distribution columns, ``_dims``) and
    the padding (or the dimension dictionaries) each group sees; empty where
    every rank sees the same."""
    lines = []
    for d in range(max((len(v) for v in views), default=0)):
        groups = []                  # [column, [ranks]] in order of first rank
        for r, v in enumerate(views):
            col = v[d] if d < len(v) else None
            for g in groups:
                if _same_column(g[0], col):
                    g[1].append(r)
                    break
            else:
                groups.append([col, [r]])
        if len(groups) > 1:
            lines.append(f"dimension {d}: the ranks disagree on its layout:")
            pads = {repr(_padding_of(col)) for col, _ in groups if col is not None}
            for col, ranks in groups:
                who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {_ranges(ranks)}"
                if col is None:
                    what = "no such dimension"
                elif len(pads) == len(groups):
                    what = f"padding {_padding_of(col)} over the grid ranks of dimension {d}"
                else:
                    what = f"dim_data {col}"
                lines.append(f"  {who} see {what}")
    return lines


def agree_layout(comm, dist, dtype, error, what, writeable=True):
    """Every rank of ``comm`` holds the same Distribution ``dist`` (its
    :func:`layout_key`), ``dtype`` and ``writeable`` (whether its block is)
    and none failed (``error``): one ``Allreduce`` when so.  Otherwise every
    rank raises the same DapError: the failing ranks' errors, or per
    dimension the groups of ranks that disagree and the layout each group
    sees (one allgather of every rank's view, only on that path)."""
    value = None if error is not None else (layout_key(dist), dtype_key(dtype), bool(writeable))
    digest = hashlib.sha1(repr(value).encode()).hexdigest()
    if agree(comm, digest, error, what):     # raises where another operation met it
        return
    # the payload names its operation: a rank in another agreement (whose
    # allgather this one meets) is reported as such, not read as a layout
    views = allgather_checked(comm, None if error is not None else
                              (_LAYOUT, what, [list(col) for col in dist._dims], value[1:]),
                              error, what)
    others = [(r, operation_of(v)) for r, v in enumerate(views)
              if not (isinstance(v, tuple) and len(v) == 4 and v[:2] == (_LAYOUT, what))]
    if others:
        raise DapError(f"{what}: the ranks made different calls (another operation runs on "
                       f"some ranks: " + ", ".join(f"rank {r}: {op}" for r, op in others[:8])
                       + "): every rank must make the same call")
    lines = layout_differences([v[2] for v in views])
    if len({v[3][0] for v in views}) > 1:
        lines.append("the ranks disagree on the dtype: " + ", ".join(
            f"rank {r}: {v[3][0][1]}" for r, v in enumerate(views)))
    if len({v[3][1] for v in views}) > 1:
        # one rank's read-only block would make it alone raise in a later
        # elementwise call with out= (found by review: the others then
        # waited in their next collective)
        lines.append("the ranks disagree on whether the local block is writeable: " + ", ".join(
            f"rank {r}: {'writeable' if v[3][1] else 'read-only'}" for r, v in enumerate(views)))
    raise DapError(f"{what}: every rank must hold the same Distribution and dtype\n"
                   + "\n".join(lines or ["the ranks' layout fingerprints differ"]))


_LAYOUT = "\0layout"       # marks agree_layout's payloads
