"""Fingerprints of Distributions, and agreeing on a value in one collective.

:func:`layout_key` names a Distribution by its shape, maps and a digest of
every dimension dictionary (indices hashed in place); :func:`agree_quick`
checks that every rank passes the same value (and raises any rank's error
everywhere) in one ``Allreduce`` when all is well.
"""
import hashlib
import io
import pickle

import numpy as np

from nclx.dap.collective import agree_same
from nclx.dap.fold import agree
from nclx.dap.validate import DapError

__all__ = ["layout_key", "agree_quick"]


def layout_key(dist):
    """A short fingerprint of a Distribution (every rank must target the same;
    kept on the Distribution, which nclx never changes once built)."""
    k = getattr(dist, "_nclx_key", None)
    if k is None:
        k = dist._nclx_key = _fingerprint(dist)
    return k


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
        agree_same(comm, value, error, what, describe)
        raise DapError(f"{what}: the ranks disagree")      # digests differ: values too
