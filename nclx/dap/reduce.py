"""Reductions of DistArrays across ranks.

Each rank reduces the cells counted in ``size`` (owned cells and boundary
padding, never communication padding) with nclx's kernel, then the ranks
combine their partial results with one collective: ``Allreduce`` for
operations whose result does not depend on the order (integer and boolean
sums and products, maximum, minimum, logical and bitwise operations), and
for floating-point sums and products ``Reduce`` to the first rank followed by
``Bcast``, so every rank gets the same bits and a given grid gives the same
answer on every run.  An axis reduction combines over the process grid's
sub-communicator of that axis and returns a DistArray over the remaining
grid dimensions (on the ranks that share the reduced coordinates).
No rank ever gathers the others' partial results.
"""
import numpy as np

from nclx.dap.distribution import Distribution
from nclx.dap.validate import DapError, normalize_dim_dict

__all__ = ["reduce_distarray"]

# ufunc name -> MPI operation name (order-independent on exact types)
_MPI_OPS = {"add": "SUM", "multiply": "PROD", "maximum": "MAX", "minimum": "MIN",
            "logical_and": "LAND", "logical_or": "LOR", "bitwise_and": "BAND",
            "bitwise_or": "BOR", "bitwise_xor": "BXOR"}


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    seq = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in seq:
        a = int(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in 'axis': {axis!r}")
    return tuple(sorted(out))


# operations whose partial results may be combined in any grouping
_ASSOCIATIVE = frozenset(("add", "multiply", "maximum", "minimum", "fmax", "fmin",
                          "logical_and", "logical_or", "logical_xor", "bitwise_and",
                          "bitwise_or", "bitwise_xor", "gcd", "lcm"))


def _counted(da):
    """Local index of the cells counted in ``size`` (no communication padding)."""
    return da.distribution.owned_slices(da.comm.Get_rank())


_COMMS = {}     # (communicator handle, grid, coords, axes) -> sub-communicators


def _subcomms(da, axes):
    """(combine comm over the reduced grid axes, result comm over the kept ones),
    made once per communicator, grid and axes (comm.Split is collective and
    communicators are a finite resource: never one per DistArray)."""
    dist = da.distribution
    key = (da.comm.py2f(), dist.grid_shape, dist.coords_from_rank(da.comm.Get_rank()), axes)
    cache = _COMMS
    if key in cache:
        return cache[key]
    dist = da.distribution
    coords = dist.coords_from_rank(da.comm.Get_rank())
    kept = [d for d in range(dist.ndim) if d not in axes]

    def ravel(dims):
        idx = 0
        for d in dims:
            idx = idx * dist.grid_shape[d] + coords[d]
        return idx

    combine = da.comm.Split(color=ravel(kept), key=ravel(axes))
    result = da.comm.Split(color=ravel(axes), key=ravel(kept))
    cache[key] = (combine, result)
    return cache[key]


def _mpi_combine(comm, ufunc, local):
    """Combine equal-shaped partial results across ``comm`` (see module doc)."""
    from mpi4py import MPI
    name = ufunc.__name__
    local = np.ascontiguousarray(local)
    if comm.Get_size() == 1:
        return local.copy()
    op_name = _MPI_OPS.get(name)
    try:
        MPI._typedict[local.dtype.char]          # a dtype MPI can carry
    except KeyError:
        op_name = None
    if local.dtype.kind == "c" and op_name in ("MAX", "MIN"):
        op_name = None                           # MPI orders no complex numbers
    if op_name is None:
        # no MPI counterpart: a pickled pairwise reduction in rank order (a tree)
        value = comm.reduce(local, op=lambda a, b: ufunc(a, b), root=0)
        return comm.bcast(value, root=0)
    if op_name in ("SUM", "PROD") and local.dtype.kind in "iu" and _checked_mode():
        # under nclx.checked() the combine must raise on overflow too: a tree in
        # rank order with NumPy's (checked) add/multiply, the outcome broadcast
        def op(a, b):
            if isinstance(a, BaseException) or isinstance(b, BaseException):
                return a if isinstance(a, BaseException) else b
            try:
                return ufunc(a, b)
            except Exception as exc:  # noqa: BLE001 - carried to every rank
                return exc
        value = comm.bcast(comm.reduce(local, op=op, root=0), root=0)
        if isinstance(value, BaseException):
            raise value
        return value
    op = getattr(MPI, op_name)
    if local.dtype == np.bool_ and op_name in ("MAX", "MIN", "BAND", "BOR", "BXOR", "SUM", "PROD"):
        # MPI defines these for integers, not for its logical type
        return _mpi_combine(comm, ufunc, local.view(np.uint8)).view(np.bool_)
    out = np.empty_like(local)
    if local.dtype.kind in "fc" and name in ("add", "multiply"):
        comm.Reduce(local, out, op=op, root=0)   # one fixed order for a given grid ...
        comm.Bcast(out, root=0)                  # ... and the same bits everywhere
    elif local.dtype.kind in "fc" and name in ("maximum", "minimum"):
        comm.Allreduce(local, out, op=op)
        # NumPy propagates NaN; MPI's MAX/MIN need not
        nan = np.ascontiguousarray(np.isnan(local))
        anynan = np.empty_like(nan)
        comm.Allreduce(nan, anynan, op=MPI.LOR)
        out[anynan] = np.nan
    else:
        comm.Allreduce(local, out, op=op)
    return out


def _checked_mode():
    from nclx._ncl import entries
    return entries.checked_depth() > 0


def _identity_fill(ufunc, dtype, shape):
    """A neutral partial result for a rank that has no counted cell."""
    if ufunc.identity is not None:
        return np.full(shape, ufunc.identity, dtype=dtype)
    if ufunc.__name__ in ("maximum", "minimum"):
        dt = np.dtype(dtype)
        big = ufunc.__name__ == "minimum"
        if dt.kind == "f":
            v = np.inf if big else -np.inf
        elif dt.kind in "iu":
            info = np.iinfo(dt)
            v = info.max if big else info.min
        elif dt.kind == "b":
            v = big
        else:
            return None
        return np.full(shape, v, dtype=dt)
    return None


def reduce_distarray(da, ufunc, axis=0, dtype=None, out=None, keepdims=False, where=True,
                     initial=np._NoValue, kernels=None):
    """``ufunc.reduce`` of a DistArray (NumPy's defaults: ``axis=0``)."""
    from nclx.dap.collective import agree
    dist = da.distribution
    axes = _axes(axis, dist.ndim)
    if ufunc.__name__ not in _ASSOCIATIVE:
        raise DapError(f"{ufunc.__name__}.reduce of a DistArray: the ranks' partial results "
                       f"can only be combined for associative operations (gather first)")
    index = _counted(da)
    block = da._block[index]
    error = partial = None
    try:
        partial = _local_partial(da, ufunc, axes, dtype, where, initial, kernels, index, block)
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree() below
        error = exc
    try:
        agree(da.comm, error, f"{ufunc.__name__}.reduce")
    except DapError as exc:
        # a failing rank raises its own exception (NumPy's type and message),
        # the others a DapError naming the failing ranks
        raised = error if error is not None else exc
        raised._nclx_agreed = True
        raise raised from (None if error is None else error.__cause__)
    return _combine_and_wrap(da, ufunc, axes, keepdims, out, partial)


def _local_partial(da, ufunc, axes, dtype, where, initial, kernels, index, block):
    """This rank's partial result over its counted cells."""
    from nclx.dap.distarray import DistArray
    dist = da.distribution
    rank = da.comm.Get_rank()
    from nclx._ncl import install as _install
    # installed: NumPy's ufunc reaches nclx's loops and every hook chain
    # (nclx.checked() included); otherwise nclx's own ufuncs
    fn = kernels(ufunc) if kernels is not None and not _install.is_installed() else ufunc
    kw = {}
    if dtype is not None:
        kw["dtype"] = dtype
    if where is not True:
        if isinstance(where, DistArray):
            da._check_same(where)
            kw["where"] = where._block[index]
        elif np.ndim(where) == 0:
            kw["where"] = bool(where)
        else:
            raise DapError(f"{ufunc.__name__}.reduce: where= must be a DistArray distributed "
                           f"like the operand or a scalar, not {type(where).__name__}")
    first = all(dist.coords_from_rank(rank)[d] == 0 for d in axes)
    if initial is not np._NoValue and (first or ufunc.__name__ in ("maximum", "minimum")):
        kw["initial"] = initial        # counted once (idempotent ops: everywhere)
    total = int(np.prod([dist.shape[d] for d in axes], dtype=np.int64))
    if total == 0 and ufunc.identity is None and initial is np._NoValue:
        raise ValueError(f"zero-size array to reduction operation {ufunc.__name__} which has "
                         "no identity")
    kept = tuple(d for d in range(dist.ndim) if d not in axes)
    local_shape = tuple(block.shape[d] for d in kept)
    if block.size or (ufunc.identity is not None and "initial" not in kw) or "initial" in kw:
        partial = _reduce(fn, ufunc, block, axes, kw)
    else:
        probe_dtype = _reduce(fn, ufunc, np.zeros((1,) * block.ndim, block.dtype), axes,
                              {k: v for k, v in kw.items() if k == "dtype"}).dtype
        partial = _identity_fill(ufunc, probe_dtype, local_shape)
        if partial is None:
            raise DapError(f"{ufunc.__name__}.reduce: an empty block on rank {rank} and no "
                           "neutral value for its dtype")
    return np.asarray(partial)


def _reduce(fn, ufunc, block, axes, kw):
    try:
        return np.asarray(fn.reduce(block, axis=axes, **kw))
    except TypeError:                 # no nclx loop for this dtype: NumPy's
        return np.asarray(ufunc.reduce(block, axis=axes, **kw))


def _combine_and_wrap(da, ufunc, axes, keepdims, out, partial):
    from nclx.dap.distarray import DistArray
    dist = da.distribution
    kept = tuple(d for d in range(dist.ndim) if d not in axes)
    combine, result_comm = _subcomms(da, axes) if kept else (da.comm, None)
    value = _mpi_combine(combine, ufunc, np.asarray(partial))
    if not kept:
        result = value.reshape(()) if not keepdims else value.reshape((1,) * dist.ndim)
        result = result[()] if not keepdims else result
        return _to_out(out, result)
    columns = []
    for d in range(dist.ndim):
        if d in kept:
            columns.append([dist._dims[d][c] for c in range(dist.grid_shape[d])])
        elif keepdims:
            columns.append([normalize_dim_dict(dict(dist_type="b", size=1, start=0, stop=1,
                                                    proc_grid_size=1, proc_grid_rank=0), d)])
    # the counted cells along the kept axes go back into a block with their padding
    rdist = Distribution(columns)
    rrank = result_comm.Get_rank()
    full = np.zeros(rdist.local_shape(rrank), dtype=value.dtype)
    counted = value.reshape(tuple(value.shape[kept.index(d)] if d in kept else 1
                                  for d in range(dist.ndim))) if keepdims else value
    full[rdist.owned_slices(rrank)] = counted
    result = DistArray(full, rdist, result_comm)
    if out is not None:
        o = out[0] if isinstance(out, tuple) else out
        if not isinstance(o, DistArray) or o.distribution != result.distribution:
            raise DapError(f"{ufunc.__name__}.reduce: out= must be a DistArray distributed like "
                           f"the result ({result.distribution})")
        o._block[...] = result._block
        return o
    return result


def _to_out(out, result):
    if out is None:
        return result
    o = out[0] if isinstance(out, tuple) else out
    o[...] = result
    return o
