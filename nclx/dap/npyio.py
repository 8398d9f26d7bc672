"""Parallel ``.npy`` I/O of DistArrays through MPI-IO.

``load_npy(path, dist=..., comm=...)`` distributes the array a ``.npy``
file holds, ``save_npy(path, da)`` (or ``da.save_npy(path)``) writes a
DistArray as one: each rank reads or writes only its own part, straight
from or into its local block (MPI derived datatypes, :mod:`nclx.dap.iotypes`),
with collective MPI-IO; rank 0 alone reads or writes the header.  No rank
holds more than its block.  The file is a standard ``.npy`` file:
``np.load`` opens what ``save_npy`` writes and ``load_npy`` reads what
``np.save`` writes, C- or Fortran-ordered, any fixed-width dtype in its
stored byte order.
"""
import math
import numbers
import operator
import os

import numpy as np

from nclx.dap.agreekeys import agree_quick
from nclx.dap.distarray import DistArray, _comm
from nclx.dap.distribution import Distribution
from nclx.dap.npyfile import describe_save, write_npy
from nclx.dap.npyload import read_npy
from nclx.dap.validate import DapError

__all__ = ["load_npy", "save_npy"]


def load_npy(path, dist=None, comm=None, *, max_header_size=10000, **kw):
    """The DistArray of the array stored in the ``.npy`` file ``path``
    (collective: every rank of ``comm`` calls it with the same arguments).

    ``dist`` and ``kw`` (grid_shape, padding, block_size, periodic) go to
    :meth:`Distribution.from_shape` with the stored shape, or ``dist`` is a
    ``Distribution`` of that shape ('u' dimensions included).  The result
    has the stored dtype (byte order kept); its communication padding is
    filled as :func:`exchange_halos` would, by reading those cells from the
    file in the same collective read (no messages between ranks; works for
    layouts the halo exchange refuses, e.g. cyclic beside padded block
    dimensions).  ``max_header_size`` is np.load's: a
    larger header (a dtype of many fields) must be allowed explicitly; it
    must be an integer (a float of an integral value is taken, as np.load
    compares with it): anything else raises TypeError or ValueError naming
    it on every rank before any file is opened (before, np.load's own
    "'>' not supported between instances of 'int' and 'str'", from rank 0's
    header read; found by review).

    A missing or unreadable file raises OSError on every rank; a bad header,
    an object dtype, a truncated file, a Distribution that does not fit or
    an MPI-IO failure raise the same DapError on every rank."""
    comm = _comm(comm)
    # a rank passing no path (None, a number) fails in read_npy's first
    # agreement, with the others (before, it raised alone here and the
    # others waited in that agreement for ever: found by review)
    path, error = _fspath(path)
    max_header_size, limit_error = _header_limit(max_header_size)
    error = error or limit_error

    def make_dist(shape):
        if isinstance(dist, Distribution):
            if kw:
                raise DapError(f"{sorted(kw)} cannot be given with a Distribution as dist")
            return dist
        return Distribution.from_shape(shape, dist=dist, nprocs=comm.Get_size(), **kw)

    block, d = read_npy(comm, path, make_dist, f"load_npy({path!r})", max_header_size,
                        error=error)
    return DistArray._of(block, d, comm)


def _fspath(path):
    """``(os.fspath(path), None)``, or ``(None, TypeError)`` for no path."""
    try:
        return os.fspath(path), None
    except TypeError:
        return None, TypeError(f"the path must be a str, bytes or os.PathLike object, "
                               f"not {type(path).__name__}")


def _header_limit(value):
    """``(int(value), None)`` for a valid ``max_header_size``, else ``(None,
    the TypeError or ValueError naming it)`` (raised on every rank by
    read_npy's first agreement, so a rank passing another value than the
    others does not raise alone)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return operator.index(value), None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        if math.isfinite(value) and float(value).is_integer():
            return int(value), None
        return None, ValueError(f"max_header_size must be a whole number of bytes, "
                                f"not {_short(value)}")
    return None, TypeError(f"max_header_size must be an integer (a number of bytes), "
                           f"not {_short(value)} of type {type(value).__name__}")


def _short(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def save_npy(path, da, comm=None):
    """Write the DistArray ``da`` as the ``.npy`` file ``path``
    (:meth:`DistArray.save_npy`).  A rank passing no path raises on every
    rank (:func:`nclx.dap.npyfile.write_npy` checks it in its agreement).

    Without ``comm`` a rank passing anything but a DistArray raises a
    DapError at once, alone: it has no communicator, so ranks passing a
    DistArray wait in the save's first agreement until that rank's next
    nclx.dap call on theirs.  With ``comm`` (the DistArray's communicator,
    or one of the same ranks in the same order) every rank takes part in
    that first agreement whatever it passed: a rank passing an ndarray (or
    anything else), or a DistArray of another communicator, raises the same
    DapError on every rank, naming each rank and what it passed, as do
    DistArrays of different global shapes or layouts (their dtypes are
    compared next, also on every rank).  Ranks passing a DistArray without
    ``comm`` (or ``np.save(path, da)``) meet a rank passing ``comm`` in the
    same agreement when ``comm`` is the DistArray's own communicator."""
    if comm is None:
        if not isinstance(da, DistArray):
            raise DapError(f"save_npy needs a DistArray, not {type(da).__name__} (no "
                           f"communicator to join: pass comm= on every rank to have the "
                           f"ranks agree, or np.save for a file of this rank's array)")
        da.save_npy(path)
        return
    what = f"save_npy({path!r})"
    error = _not_saveable(da, comm)
    if error is None:
        write_npy(comm, path, da._block, da.distribution, what)
        return
    # the first agreement of write_npy, with this rank's error: raises on every rank
    agree_quick(comm, ("save_npy", ("passed", _passed(da))), error, "save_npy", describe_save)
    raise DapError(f"{what}: {error}")      # not reached: the agreement raised


def _passed(x):
    """What a rank passed to save_npy, in words."""
    if isinstance(x, DistArray):
        return f"a DistArray of global shape {x.shape} and dtype {x.dtype}, on another " \
               f"communicator than comm="
    kind = f"{type(x).__module__}.{type(x).__qualname__}"
    if isinstance(x, np.ndarray):
        return f"a {kind} of shape {x.shape} and dtype {x.dtype}"
    return f"a {kind}"


def _not_saveable(da, comm):
    """None when ``da`` is a DistArray on ``comm``'s ranks (in its order),
    else this rank's DapError for the agreement."""
    if isinstance(da, DistArray):
        from mpi4py import MPI   # optional dependency: nclx.dap loads without it
        if MPI.Comm.Compare(comm, da.comm) in (MPI.IDENT, MPI.CONGRUENT):
            return None
        return DapError(f"save_npy(comm=...) needs a DistArray on comm's ranks in comm's "
                        f"order: this rank's lives on another communicator (of "
                        f"{da.comm.Get_size()} ranks; comm has {comm.Get_size()})")
    return DapError(f"save_npy needs a DistArray on every rank of comm: this rank passed "
                    f"{_passed(da)}")
