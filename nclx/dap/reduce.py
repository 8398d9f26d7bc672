"""Reductions of distributed blocks across ranks.

Each rank reduces the cells counted in ``size`` (owned cells and boundary
padding, never communication padding) with nclx's kernel, then the ranks
combine their partial results with one collective: ``Allreduce`` for
operations whose result does not depend on the order (integer and boolean
sums and products, maximum, minimum, logical and bitwise operations), and
for floating-point sums and products ``Reduce`` to the first rank followed by
``Bcast``, so every rank gets the same bits and a given grid gives the same
answer on every run.  An axis reduction combines over the process grid's
sub-communicator of that axis and gives the result's block over the
remaining grid dimensions (on the ranks that share the reduced coordinates).
No rank ever gathers the others' partial results.

This module sits below :mod:`nclx.dap.distarray`: it works on a block, its
Distribution and communicator and returns those parts; DistArray wraps them
and writes ``out=``.
"""
import numpy as np

from nclx._ncl.install import is_installed
from nclx.aware import start_value
from nclx.checked import active as checked_active
from nclx.dap.collective import agree
from nclx.dap.distribution import Distribution
from nclx.dap.validate import DapError, normalize_dim_dict

__all__ = ["reduce_block", "normalize_axes"]

# ufunc name -> MPI operation name (order-independent on exact types)
_MPI_OPS = {"add": "SUM", "multiply": "PROD", "maximum": "MAX", "minimum": "MIN",
            "logical_and": "LAND", "logical_or": "LOR", "bitwise_and": "BAND",
            "bitwise_or": "BOR", "bitwise_xor": "BXOR"}


def normalize_axes(axis, ndim):
    """``axis`` (None, an int or a tuple) as a sorted tuple of axes in ``[0, ndim)``
    (NumPy's AxisError and duplicate-value ValueError otherwise)."""
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


_COMMS = {}     # (communicator handle, grid, coords, axes) -> sub-communicators


def _subcomms(dist, comm, axes):
    """(combine comm over the reduced grid axes, result comm over the kept ones),
    made once per communicator, grid and axes (comm.Split is collective and
    communicators are a finite resource: never one per DistArray)."""
    coords = dist.coords_from_rank(comm.Get_rank())
    key = (comm.py2f(), dist.grid_shape, coords, axes)
    cache = _COMMS
    if key in cache:
        return cache[key]
    kept = [d for d in range(dist.ndim) if d not in axes]

    def ravel(dims):
        idx = 0
        for d in dims:
            idx = idx * dist.grid_shape[d] + coords[d]
        return idx

    combine = comm.Split(color=ravel(kept), key=ravel(axes))
    result = comm.Split(color=ravel(axes), key=ravel(kept))
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
    if op_name in ("SUM", "PROD") and local.dtype.kind in "iu" and checked_active():
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


def reduce_block(block, distribution, comm, ufunc, axis=0, dtype=None, keepdims=False,
                 where=True, initial=np._NoValue, kernels=None):
    """``ufunc.reduce`` over every rank's block (NumPy's defaults: ``axis=0``).

    ``block`` is this rank's local block (padding included) of
    ``distribution`` over ``comm``; ``where`` is True, a bool, or this rank's
    block of the mask (the same layout); ``kernels`` maps NumPy's ufunc to
    the one that computes when nclx is not installed.  Every rank of
    ``comm`` must call it.

    Returns ``(result, distribution, comm)``: a reduction over every axis
    gives the value on every rank (a NumPy scalar, an array with
    ``keepdims``) with ``None, None``; an axis reduction gives this rank's
    block of the result (padding included), its Distribution over the
    remaining grid dimensions and the communicator of the ranks that hold
    it.  The caller wraps the parts and writes ``out=``."""
    dist = distribution
    axes = normalize_axes(axis, dist.ndim)
    if ufunc.__name__ not in _ASSOCIATIVE:
        raise DapError(f"{ufunc.__name__}.reduce of a DistArray: the ranks' partial results "
                       f"can only be combined for associative operations (gather first)")
    rank = comm.Get_rank()
    index = dist.owned_slices(rank)      # the cells counted in size (no communication padding)
    error = partial = None
    try:
        partial = _local_partial(block[index], dist, rank, ufunc, axes, dtype, where, index,
                                 initial, kernels)
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree() below
        error = exc
    try:
        agree(comm, error, f"{ufunc.__name__}.reduce")
    except DapError as exc:
        # a failing rank raises its own exception (NumPy's type and message),
        # the others a DapError naming the failing ranks
        raised = error if error is not None else exc
        raised._nclx_agreed = True
        raise raised from (None if error is None else error.__cause__)
    return _combine(dist, comm, ufunc, axes, keepdims, partial)


def _local_partial(block, dist, rank, ufunc, axes, dtype, where, index, initial, kernels):
    """This rank's partial result over its counted cells (``block``)."""
    # installed: NumPy's ufunc reaches nclx's loops and every hook chain
    # (nclx.checked() included); otherwise nclx's own ufuncs
    fn = kernels(ufunc) if kernels is not None and not is_installed() else ufunc
    kw = {}
    if dtype is not None:
        kw["dtype"] = dtype
    if where is not True:
        kw["where"] = where[index] if isinstance(where, np.ndarray) else bool(where)
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
        start = start_value(ufunc.__name__, probe_dtype)
        if start is None:
            raise DapError(f"{ufunc.__name__}.reduce: an empty block on rank {rank} and no "
                           "neutral value for its dtype")
        partial = np.full(local_shape, start, dtype=probe_dtype)
    return np.asarray(partial)


def _reduce(fn, ufunc, block, axes, kw):
    try:
        return np.asarray(fn.reduce(block, axis=axes, **kw))
    except TypeError:                 # no nclx loop for this dtype: NumPy's
        return np.asarray(ufunc.reduce(block, axis=axes, **kw))


def _combine(dist, comm, ufunc, axes, keepdims, partial):
    """Combine the ranks' partial results: (value, None, None) or the parts
    of the result's DistArray (block, Distribution, communicator)."""
    kept = tuple(d for d in range(dist.ndim) if d not in axes)
    combine, result_comm = _subcomms(dist, comm, axes) if kept else (comm, None)
    value = _mpi_combine(combine, ufunc, np.asarray(partial))
    if not kept:
        result = value.reshape(()) if not keepdims else value.reshape((1,) * dist.ndim)
        return (result[()] if not keepdims else result), None, None
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
    return full, rdist, result_comm
