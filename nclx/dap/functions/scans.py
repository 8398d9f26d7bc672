"""Prefix scans of a DistArray: ``np.cumsum``, ``np.cumprod``.

- Along an axis with one grid coordinate ('n', or a grid of size 1 there)
  every rank scans its lines whole, in global order: NumPy's result bit for
  bit, distributed like ``a`` (padding refreshed).
- Along a block-distributed axis each rank scans its part, one ``exscan``
  over the ranks along that axis combines the ranks' totals (in rank
  order), and each rank adds (multiplies) the total of the ranks before it.
  Integers (and booleans) are NumPy's bit for bit (modular arithmetic is
  associative); NumPy's float scan is sequential, this one groups the
  additions by rank, so floats equal NumPy's to rounding (1e-12 relative
  where the partial sums do not cancel).  The result is distributed like
  ``a`` (padding refreshed).  Along a cyclic or 'u' axis the array is
  first redistributed (one ``Alltoallw``) to block layouts on the same
  grid, which is then the result's distribution.
- ``axis=None`` scans the flattened array in global C order: the owned
  cells move (one ``Alltoallv``, :mod:`._flatten`) to a 1-D block
  distribution of ``a.size`` elements over the communicator (balanced, no
  padding), which is the result's distribution, and are scanned as above.
``dtype=`` as NumPy's; ``out=`` is refused.  One ``allgather`` first: a rank
that failed, or ranks that passed different arguments, raise on every rank.
"""
import numpy as np

from nclx import _callsite
from nclx.dap.distarray import DistArray
from nclx.dap.functions._layout import (agree_call, along_whole_axis, axis_comm, axis_of,
                                        check_permutation, from_owned)
from nclx.dap.functions._common import counted
from nclx.dap.functions._flatten import flat_block
from nclx._fpflags import recorded_flags
from nclx._ncl.blockexec import give_fp_errors
from nclx.dap.fold import allreduce_agreed, raise_verdict
from nclx.dap.functions._agreed import agreed_flags
from nclx.dap.redistribute import redistribute
from nclx.dap.registry import implements
from nclx.dap.validate import DapError, DapTypeError


def _scan_block(comm, owned, axis, ufunc, dtype, whole):
    """Scan ``owned`` along a block ``axis`` split over ``comm``'s ranks (in
    order).  The floating-point flags of every rank's steps (its own scan,
    the ranks' combined prefix, adding that prefix) are recorded, ORed over
    ``whole`` (the array's communicator) in one agreement that also raises
    any rank's exception on every rank, and reported on every rank as
    NumPy reports its scan's ("overflow encountered in accumulate"), once
    per kind; before, each rank reported the flags of its own cells, those
    of adding the prefix under the ufunc's name ("... in add"), and under
    'raise' the ranks raised different errors (found by review).  The
    ``exscan`` itself never raises (an exception inside it would leave the
    collective unfinished)."""
    key = f"scan {ufunc.__name__}"
    error = local = None
    flags = 0
    try:
        local, flags = recorded_flags(lambda: ufunc.accumulate(owned, axis=axis, dtype=dtype))
    except Exception as exc:  # noqa: BLE001 - raised on every rank by the agreement
        error = exc
    rest = tuple(s for d, s in enumerate(owned.shape) if d != axis)
    if local is not None and local.shape[axis]:
        total = np.take(local, -1, axis=axis)
    else:                           # no cells, or this rank failed: the identity
        total = np.full(rest, ufunc.identity,
                        dtype=local.dtype if local is not None else owned.dtype)
    met = []

    def op(x, y):                  # runs inside the collective: flags noted, never raised
        with np.errstate(all="call", call=lambda kind, flag: met.append(flag)):
            return ufunc(x, y)

    before = comm.exscan(np.array(total), op=op)
    for flag in met:
        flags |= flag
    if error is None and comm.Get_rank() != 0 and before is not None:
        try:
            flags |= recorded_flags(lambda: ufunc(local, np.expand_dims(before, axis),
                                                  out=local))[1]
        except Exception as exc:  # noqa: BLE001 - raised on every rank by the agreement
            error = exc
    verdict, _ = allreduce_agreed(whole, np.add, None, None, error, fp=flags,
                                  key=key + " prefix", kind="call")
    if verdict is not None:
        flags = verdict[4]
        # the flags are the scan's, named below, not a reduction's
        raise_verdict(verdict[:4] + (0,), whole.Get_size(), whole.Get_rank(),
                      f"np.{ufunc.__name__}.accumulate", error)
    _callsite.call(give_fp_errors, (b"accumulate", flags), {})
    return local


def _cast(a, dtype, name):
    """``a``'s counted cells cast to the scan's ``dtype=`` first, their flags
    reported as NumPy reports its cast's ("invalid value encountered in
    cast"; before review 21, under the scan's name); padding cells zero."""
    own = counted(a)

    def cast():
        blk = np.zeros(a._block.shape, dtype)
        blk[own] = a._block[own].astype(dtype)
        return blk
    return DistArray._of(agreed_flags(a.comm, cast, "cast", f"np.{name}"), a.distribution,
                         a.comm)


def _scan(name, ufunc, a, axis, dtype, out):
    comm, dist = a.comm, a.distribution
    error = ax = rdtype = None
    try:
        if out is not None:
            raise DapTypeError(f"np.{name}: out= is not supported for a DistArray")
        numpy_fn = np.cumsum if ufunc is np.add else np.cumprod
        rdtype = numpy_fn(np.zeros(1, a.dtype), dtype=dtype).dtype   # NumPy's (and errors)
        # the accumulation's dtype=: NumPy's result dtype (native: a byte
        # order given or held is NumPy's to drop), none for times (a unit in
        # dtype= only selects a DType there: TypeError; the result is cast)
        dtype = rdtype if rdtype.kind in "biufc" else None
        if not a.shape and isinstance(axis, (int, np.integer)) and axis in (0, -1):
            axis = None             # NumPy: axis 0 or -1 of a 0-d array scans it as 1-D
        if axis is not None:
            ax = axis_of(a, axis, f"np.{name}")
            check_permutation(dist, ax, f"np.{name}")
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(comm, error, f"np.{name}", (axis, None if dtype is None else np.dtype(dtype).str))
    if dtype is not None and a.dtype != dtype:
        a = _cast(a, dtype, name)
    if axis is not None and dist.grid_shape[ax] != 1 and dist.dist[ax] != "b":
        # a cyclic or 'u' axis: block-distributed first (one Alltoallw), on the same grid
        a = redistribute(a, ("b",) * dist.ndim, grid_shape=dist.grid_shape)
        dist = a.distribution
    if axis is None:
        part, target = flat_block(a)
        scanned = _scan_block(comm, part, 0, ufunc, dtype, comm)
        return from_owned(DistArray, target, comm, scanned, rdtype)
    if dist.grid_shape[ax] == 1:
        # each rank scans whole lines; their flags reported on every rank
        done = agreed_flags(comm, lambda: along_whole_axis(
            a, ax, lambda x: ufunc.accumulate(x, axis=-1, dtype=dtype)), "accumulate",
            f"np.{name}")
        return from_owned(DistArray, dist, comm, done, rdtype)
    scanned = _scan_block(axis_comm(a, ax), a.owned, ax, ufunc, dtype, comm)
    return from_owned(DistArray, dist, comm, scanned, rdtype)


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    """``np.cumsum`` of a DistArray (see the module doc)."""
    return _scan("cumsum", np.add, a, axis, dtype, out)


@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    """``np.cumprod`` of a DistArray (see the module doc)."""
    return _scan("cumprod", np.multiply, a, axis, dtype, out)
