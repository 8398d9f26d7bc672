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

from nclx.dap.distarray import DistArray
from nclx.dap.functions._layout import (agree_call, along_whole_axis, axis_comm, axis_of,
                                        check_permutation, from_owned)
from nclx.dap.functions._flatten import flat_block
from nclx.dap.fold import guarded_call
from nclx.dap.redistribute import redistribute
from nclx.dap.registry import implements
from nclx.dap.validate import DapError


def _scan_block(comm, owned, axis, ufunc, dtype, whole):
    """Scan ``owned`` along a block ``axis`` split over ``comm``'s ranks (in
    order).  Where a floating-point flag can raise, an error of any rank's
    step (its own scan, the ranks' combined prefix, adding that prefix) is
    raised on every rank of ``whole`` (the array's communicator: the other
    columns of a grid would wait in the next collective); the ``exscan``
    itself never raises (an exception inside it would leave the collective
    unfinished)."""
    key = f"scan {ufunc.__name__}"
    local = guarded_call(whole, lambda: ufunc.accumulate(owned, axis=axis, dtype=dtype), key,
                         f"np.{ufunc.__name__}.accumulate")
    rest = tuple(s for d, s in enumerate(local.shape) if d != axis)
    if local.shape[axis]:
        total = np.take(local, -1, axis=axis)
    else:
        total = np.full(rest, ufunc.identity, dtype=local.dtype)
    met = []

    def op(x, y):                  # runs inside the collective: flags noted, never raised
        with np.errstate(all="call", call=lambda kind, flag: met.append(kind)):
            return ufunc(x, y)

    def finish():
        before = comm.exscan(np.array(total), op=op)
        # a flag met here is met again by the rank before, adding the same
        # two numbers to its last cell (its own report follows its mode):
        # raised here too under 'raise', never reported twice otherwise
        mode = np.geterr()
        for kind in dict.fromkeys(met):
            if mode.get(kind) == "raise":
                raise FloatingPointError(f"{kind} encountered in accumulate")
        if comm.Get_rank() != 0 and before is not None:
            ufunc(local, np.expand_dims(before, axis), out=local)
        return local

    return guarded_call(whole, finish, key + " prefix", f"np.{ufunc.__name__}.accumulate")


def _scan(name, ufunc, a, axis, dtype, out):
    comm, dist = a.comm, a.distribution
    error = ax = rdtype = None
    try:
        if out is not None:
            raise DapError(f"np.{name}: out= is not supported for a DistArray")
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
    if axis is not None and dist.grid_shape[ax] != 1 and dist.dist[ax] != "b":
        # a cyclic or 'u' axis: block-distributed first (one Alltoallw), on the same grid
        a = redistribute(a, ("b",) * dist.ndim, grid_shape=dist.grid_shape)
        dist = a.distribution
    if axis is None:
        part, target = flat_block(a)
        scanned = _scan_block(comm, part, 0, ufunc, dtype, comm)
        return from_owned(DistArray, target, comm, scanned, rdtype)
    if dist.grid_shape[ax] == 1:
        done = guarded_call(comm, lambda: along_whole_axis(
            a, ax, lambda x: ufunc.accumulate(x, axis=-1, dtype=dtype)), f"np.{name} lines",
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
