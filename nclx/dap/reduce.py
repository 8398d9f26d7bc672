"""Reductions of distributed blocks across ranks.

Each rank reduces the cells counted in ``size`` (owned cells and boundary
padding, never communication padding) with nclx's kernel, then the ranks
combine their partial results and agree on errors in one collective
(:mod:`nclx.dap.fold`): an ``Allreduce`` with a non-commutative
user-defined operation that applies the ufunc in rank order, so every rank
gets the same bits and a given grid gives the same answer on every run, for
floating-point sums and products too.  An axis reduction combines over the
process grid's sub-communicator of the reduced axes and gives the result's
block over the remaining grid dimensions (on the ranks that share the
reduced coordinates).  No rank ever gathers the others' partial results.

This module sits below :mod:`nclx.dap.distarray`: it works on a block, its
Distribution and communicator and returns those parts; DistArray wraps them
and writes ``out=``.
"""
import math
import operator

import numpy as np

from nclx._warnscope import ignoring
from nclx._ncl.install import is_installed
from nclx.aware import start_value
from nclx.dap import commstate
from nclx.dap.agreekeys import dtype_key, reduction_caller
from nclx.dap.fold import allreduce_agreed, raise_verdict
from nclx.dap.halfsum import half_cells, half_initial, narrowed, wide_spec, with_flags
from nclx.dap.redistribute import check_partition, layout_key
from nclx.dap.reduceflags import cast_may_flag, reduce_recording
from nclx.dap.reduceresult import _result, result_distribution
from nclx.dap.validate import DapError, DapTypeError

__all__ = ["reduce_block", "join_failed", "normalize_axes", "partial_spec",
           "result_distribution"]


def normalize_axes(axis, ndim, reduce_0d=False):
    """``axis`` (None, an int or a tuple) as a sorted tuple of axes in ``[0, ndim)``
    (NumPy's AxisError and duplicate-value ValueError otherwise).
    ``reduce_0d``: as ``ufunc.reduce`` does, an int axis 0 or -1 of a 0-d
    array means no axis (NumPy's ``np.sum(np.array(3.5), axis=0)`` is 3.5)."""
    if axis is None:
        return tuple(range(ndim))
    if reduce_0d and ndim == 0 and not isinstance(axis, tuple) and operator.index(axis) in (0, -1):
        return ()
    seq = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in seq:
        # NumPy's TypeError for a float axis, in its words for either form
        a = int(np.lib.array_utils.normalize_axis_index(a, max(ndim, 1))) \
            if isinstance(axis, tuple) and ndim else operator.index(a)
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


def _free_splits(splits):
    """The communicator is being freed (collectively): free its splits too."""
    for pair in splits.values():
        for c in pair:
            c.Free()


def _subcomms(dist, comm, axes):
    """(combine comm over the reduced grid axes, result comm over the kept ones),
    made once per communicator, grid and axes (comm.Split is collective and
    communicators are a finite resource: never one per DistArray).

    When the reduced axes are not distributed (grid extent 1) nothing is
    combined (None) and the result lives on ``comm`` itself; when the kept
    axes are not distributed the partial results combine over ``comm`` and
    every rank holds the whole result (``COMM_SELF``): no Split either way."""
    from mpi4py import MPI
    kept = [d for d in range(dist.ndim) if d not in axes]
    if all(dist.grid_shape[d] == 1 for d in axes):
        return None, comm
    if all(dist.grid_shape[d] == 1 for d in kept):
        return comm, MPI.COMM_SELF
    coords = dist.coords_from_rank(comm.Get_rank())
    key = (dist.grid_shape, coords, axes)
    # kept on the communicator itself: a freed one's handle, given to a new
    # communicator, never meets its splits (before: a hang)
    cache = commstate.kept(comm, "reduce splits", dict, _free_splits)
    if key in cache:
        return cache[key]

    def ravel(dims):
        idx = 0
        for d in dims:
            idx = idx * dist.grid_shape[d] + coords[d]
        return idx

    combine = comm.Split(color=ravel(kept), key=ravel(axes))
    result = comm.Split(color=ravel(axes), key=ravel(kept))
    cache[key] = (combine, result)
    return cache[key]


def partial_spec(block, dist, rank, ufunc, axis, dtype):
    """``(axes, (shape, dtype))`` of this rank's partial result: what the ranks
    exchange.  It depends only on the arguments, the layout and the block's
    dtype (never on the values), so ranks called alike agree on it; an error
    here (a bad axis or dtype) is raised alike on every rank called alike."""
    axes = normalize_axes(axis, dist.ndim, reduce_0d=True)
    # NumPy's own error first where NumPy refuses the reduction (subtract of
    # bools, not_equal of ints: its TypeError; before, nclx's DapError, a
    # ValueError: found by review), then nclx's refusals
    rdtype = _result_dtype(ufunc, block.dtype, dist.ndim, axes, dtype)
    if ufunc.__name__ not in _ASSOCIATIVE:
        raise DapError(f"{ufunc.__name__}.reduce of a DistArray: the ranks' partial results "
                       f"can only be combined for associative operations (gather first)")
    if rdtype.hasobject or (dtype is not None and np.dtype(dtype).hasobject):
        # NumPy's result would be Python objects (a Python int for
        # dtype=object: the probe's result dtype said int64, so the check
        # missed it and the partials mismatched; found by review)
        raise DapTypeError(f"{ufunc.__name__}.reduce of a DistArray with dtype=object: Python "
                           f"objects cannot cross ranks in a reduction (gather first: "
                           f"da.gather(root=None))")
    counted = block[dist.owned_slices(rank)].shape
    shape = tuple(n for d, n in enumerate(counted) if d not in axes)
    return axes, (shape, rdtype)


_DTYPES = {}        # (ufunc, dtype, ndim, axes, dtype=) -> the reduction's result dtype


def _result_dtype(ufunc, dt, ndim, axes, dtype):
    """NumPy's result dtype of ``ufunc.reduce`` (a one-cell probe, cached)."""
    try:
        key = (ufunc, dt, ndim, axes, dtype)
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in _DTYPES:
        return _DTYPES[key]
    kw = {} if dtype is None else {"dtype": dtype}
    with ignoring():
        # the probe's own warnings (a ComplexWarning for dtype=<real>) are
        # not the user's: the reduction itself warns (once, as NumPy's)
        r = np.asarray(ufunc.reduce(np.zeros((1,) * ndim, dt), axis=axes, **kw)).dtype
    if key is not None and len(_DTYPES) < 4096:
        _DTYPES[key] = r
    return r


def reduce_block(block, distribution, comm, ufunc, axis=0, dtype=None, keepdims=False,
                 where=True, initial=np._NoValue, kernels=None, check=None):
    """``ufunc.reduce`` over every rank's block (NumPy's defaults: ``axis=0``).

    ``block`` is this rank's local block (padding included) of
    ``distribution`` over ``comm``; ``where`` is True, a bool, or this rank's
    block of the mask (the same layout); ``kernels`` maps NumPy's ufunc to
    the one that computes when nclx is not installed.  Every rank of
    ``comm`` must call it, with the same ``axis``, ``dtype`` and
    ``keepdims`` (they fix the size of what the ranks exchange).

    One collective (:func:`nclx.dap.fold.allreduce_agreed`) both combines
    the partial results and agrees on errors: an error on one rank (its
    kernel, a floating-point error, NumPy refusing the arguments for its
    block) is raised on every rank -- the failing rank's own exception
    there, a DapError naming it elsewhere.  Two when both the reduced and
    the kept axes are distributed (the data over the reduced grid axes, then
    the verdict over ``comm``).

    Returns ``(result, distribution, comm)``: a reduction over every axis
    gives the value on every rank (a NumPy scalar, an array with
    ``keepdims``) with ``None, None``; an axis reduction gives this rank's
    block of the result (padding included), its Distribution over the
    remaining grid dimensions and the communicator of the ranks that hold
    it.  The caller wraps the parts and writes ``out=``; ``check(axes)``,
    called on every rank before the collective, may refuse this rank's
    ``out=`` for the reduced axes (its error raised on every rank, as a
    kernel's: ranks passing different outputs are never left waiting)."""
    dist = distribution
    rank = comm.Get_rank()
    try:
        # a 'u' dimension holding an index twice or not at all has no global
        # array to reduce (gather refuses it too); the Distribution is every
        # rank's, so the verdict is the same everywhere
        check_partition(dist, f"{ufunc.__name__}.reduce")
        axes, spec = partial_spec(block, dist, rank, ufunc, axis, dtype)
        # float16 sums/products combine in float32, rounded once (nclx.dap.halfsum)
        spec, narrow = wide_spec(ufunc, block, dist, comm, axes, dtype, spec)
    except Exception as exc:
        _refused(comm, ufunc, exc)                 # raises exc here, a DapError elsewhere
        raise
    index = dist.owned_slices(rank)      # the cells counted in size (no communication padding)
    error = partial = None
    fp = 0
    try:
        if check is not None:
            check(axes)
        wide = (dtype, initial) if narrow is None else (spec[1], half_initial(initial))
        cells, cast_fp = half_cells(block[index], narrow)
        partial, fp = _local_partial(cells, dist, rank, ufunc, axes, wide[0], where,
                                     index, wide[1], kernels, spec)
        fp |= cast_fp
    except Exception as exc:  # noqa: BLE001 - raised on every rank below
        error = exc
    return _finish(dist, comm, ufunc, axes, keepdims, spec, partial, error,
                   _extra(where, initial, spec[1]), fp, narrow)


def join_failed(block, distribution, comm, ufunc, kwargs, error):
    """A rank that failed before :func:`reduce_block` (its hook chain raised)
    meets the others in the reduction's collective with ``error``, which is
    then raised on every rank; where this rank cannot tell the size of the
    exchange (its own arguments are refused) it meets the others' first
    record all the same (:func:`_refused`)."""
    try:
        axes, spec = partial_spec(block, distribution, comm.Get_rank(), ufunc,
                                  kwargs.get("axis", 0), kwargs.get("dtype"))
        spec, narrow = wide_spec(ufunc, block, distribution, comm, axes, kwargs.get("dtype"),
                                 spec)
    except Exception:  # noqa: BLE001 - joined with the caller's error, raised here
        _refused(comm, ufunc, error)
        return
    _finish(distribution, comm, ufunc, axes, bool(kwargs.get("keepdims", False)), spec, None,
            error, _extra(kwargs.get("where", True), kwargs.get("initial", np._NoValue), spec[1]),
            narrow=narrow)


def _refused(comm, ufunc, error):
    """This rank's arguments are refused (a bad axis or dtype): it cannot
    tell the size of the exchange, but every reduction starts with the
    fold's fixed-size record over ``comm``, so it sends that with ``error``
    -- raised here, a DapError naming this rank on ranks that accepted
    theirs (not left waiting, nor paired with this rank's next call)."""
    what = getattr(ufunc, "what", None) or f"{ufunc.__name__}.reduce"
    verdict, _ = allreduce_agreed(comm, ufunc, None, None, error, key=repr((what, "refused")))
    raise_verdict(verdict, comm.Get_size(), comm.Get_rank(), what, error)


def _extra(where, initial, dtype):
    """What else the ranks must agree on: the initial value as the
    reduction takes it (cast to ``dtype``: ``initial=0`` and ``0.0`` are one
    call; before, their reprs differed: a DapError, found by review 22) and
    the kind of ``where`` (a mask's values are each rank's own)."""
    mask = "all" if where is True else ("none" if where is False else "mask")
    if initial is np._NoValue:
        return "" if mask == "all" else repr((mask, initial))
    try:
        with ignoring():
            cast = np.asarray(initial).astype(dtype, casting="unsafe")
        # the value as read, then its bytes (-0.0 and NaN payloads count): a
        # mismatch's DapError shows it (before, bytes alone; review 23)
        value = f"initial={cast[()]!r} [{cast.tobytes().hex()}]"
    except Exception:  # noqa: BLE001 - not castable: refused by the reduction itself
        value = f"initial={initial!r}"
    return repr((mask, value))


def _finish(dist, comm, ufunc, axes, keepdims, spec, partial, error, extra="", fp=0,
            narrow=None):
    """Combine (or agree on the failure) and build the result's parts
    (``ufunc``: a ufunc, or a combining callable with a ``what`` to name it).

    Every rank's first collective is the same fixed-size record over
    ``comm`` (:func:`nclx.dap.fold.allreduce_agreed`), whatever the axes: so
    ranks that passed different axes, dtypes or keepdims are told so on
    every rank instead of meeting in different collectives.  When both the
    reduced and the kept axes are distributed that record is the agreement
    alone; the data then combine over the reduced grid axes and a last
    record over ``comm`` carries the verdict (three collectives).  ``fp``:
    the floating-point flags of this rank's local reduction
    (:mod:`nclx.dap.reduceflags`), ORed over the ranks in the record that
    also carries the combining's, so every rank reports them once.
    ``narrow``: the dtype the combined value is rounded to once, its flags
    reported with the rest (:mod:`nclx.dap.halfsum`)."""
    what = getattr(ufunc, "what", None) or f"{ufunc.__name__}.reduce"
    nranks, rank = comm.Get_size(), comm.Get_rank()
    kept = tuple(d for d in range(dist.ndim) if d not in axes)
    # the layout's fingerprint too: ranks holding the array in different
    # layouts (a Distribution built per rank) would combine wrong partial sums
    # and the caller (np.mean's sums are not np.sum's: nclx.dap.agreekeys.called_by)
    key = (("operation", what), ("called by", reduction_caller()), ("axis", axes),
           ("keepdims", bool(keepdims)), ("dtype", dtype_key(spec[1])),
           ("initial and where", extra), ("layout", layout_key(dist)[3]),
           ("combined in", str(narrow)))
    everyone = not kept or all(dist.grid_shape[d] == 1 for d in kept)
    local = bool(kept) and all(dist.grid_shape[d] == 1 for d in axes)
    if everyone and not local:
        verdict, value = allreduce_agreed(comm, ufunc, partial, spec, error, fp=fp, key=key)
        if narrow is not None and value is not None:     # the same value on every rank
            value, flags = narrowed(value, narrow)
            verdict = with_flags(verdict, flags)
        result_comm = None
        if kept:
            from mpi4py import MPI
            result_comm = MPI.COMM_SELF
    else:
        # the local flags in the one record that reaches every rank last:
        # this one where nothing is combined (_subcomms: None), else the
        # combining record, carried to every rank by the last one
        uncombined = all(dist.grid_shape[d] == 1 for d in axes)
        verdict, _ = allreduce_agreed(comm, ufunc, None, None, error, key=key,
                                      fp=fp if uncombined else 0)
        raise_verdict(verdict, nranks, rank, what, error)
        combine, result_comm = _subcomms(dist, comm, axes)
        if combine is None:
            verdict, value = None, np.array(partial, copy=True)
        else:
            # the data over the reduced grid axes, then every rank learns the verdict
            verdict, value = allreduce_agreed(combine, ufunc, partial, spec, None, fp=fp,
                                              key=key)
            carried, fp = (None, 0) if verdict is None else (verdict[3], verdict[4])
            if narrow is not None and value is not None:     # ORed over comm below
                value, flags = narrowed(value, narrow)
                fp |= flags
            verdict, _ = allreduce_agreed(comm, ufunc, None, None, None, combine_error=carried,
                                          fp=fp, key=key)
    raise_verdict(verdict, nranks, rank, what, error)
    return _result(dist, kept, keepdims, value, result_comm)


def _local_partial(block, dist, rank, ufunc, axes, dtype, where, index, initial, kernels, spec):
    """This rank's partial result over its counted cells (``block``), of
    ``spec``, and the floating-point flags its reduction met."""
    if ufunc.identity is None and initial is np._NoValue and not (
            isinstance(where, (bool, np.bool_)) and where):
        # NumPy refuses it whatever the data (before: an empty array gave [])
        raise ValueError(f"reduction operation '{ufunc.__name__}' does not have an identity, "
                         f"so to use a where mask one has to specify 'initial'")
    # installed: NumPy's ufunc reaches nclx's loops and every hook chain
    # (nclx.checked() included); otherwise nclx's own ufuncs
    fn = kernels(ufunc) if kernels is not None and not is_installed() else ufunc
    kw = {}
    if dtype is not None:
        kw["dtype"] = dtype
    if where is not True:
        kw["where"] = where[index] if isinstance(where, np.ndarray) else bool(where)
    first = all(dist.coords_from_rank(rank)[d] == 0 for d in axes)
    if initial is not np._NoValue and (first or ufunc.__name__ in ("maximum", "minimum",
                                                                    "fmax", "fmin")):
        kw["initial"] = initial        # counted once (idempotent ops: everywhere)
    elif not first and ufunc is np.add and np.dtype(spec[1]).kind in "fc":
        # NumPy starts a sum from `initial` or +0.0, then adds every cell: the
        # ranks after the first start from -0.0, the neutral value (a sum of
        # -0.0 cells, or of none, stays -0.0 and leaves the first rank's
        # start as it is; from +0.0, `initial=-0.0` came back +0.0)
        kw["initial"] = np.dtype(spec[1]).type(-0.0 if np.dtype(spec[1]).kind == "f"
                                               else complex(-0.0, -0.0))
    total = math.prod(dist.shape[d] for d in axes)
    if total == 0 and ufunc.identity is None and initial is np._NoValue:
        raise ValueError(f"zero-size array to reduction operation {ufunc.__name__} which has "
                         "no identity")
    shape, rdtype = spec
    fp = 0
    if block.size or (ufunc.identity is not None and "initial" not in kw) or "initial" in kw:
        casts = "dtype" in kw and cast_may_flag(block.dtype, np.dtype(kw["dtype"]))
        partial, fp = reduce_recording(lambda: _reduce(fn, ufunc, block, axes, kw), casts)
    else:
        start = start_value(ufunc.__name__, rdtype)
        if ufunc.__name__ in ("fmax", "fmin") and np.dtype(rdtype).kind in "fc":
            # fmax/fmin skip NaN: a NaN start leaves an all-NaN slice NaN, as
            # NumPy's nanmax gives (before, an empty rank's -inf won: -inf)
            start = np.dtype(rdtype).type(np.nan)
        if np.dtype(rdtype).kind in "mM" and ufunc.__name__ in ("maximum", "minimum", "fmax",
                                                                "fmin"):
            # NaT is int64's lowest: the lowest/highest time that is not NaT
            # (maximum/minimum propagate NaT); fmax/fmin skip NaT, so NaT
            # leaves a slice of NaT alone NaT, as NumPy's
            if ufunc.__name__ in ("fmax", "fmin"):
                start = np.dtype(rdtype).type("NaT")
            else:
                low = ufunc.__name__ == "maximum"
                start = np.array(np.iinfo(np.int64).min + 1 if low else np.iinfo(np.int64).max,
                                 np.int64).view(rdtype)[()]
        if start is None and np.dtype(rdtype).kind == "c" and \
                ufunc.__name__ in ("maximum", "minimum", "fmax", "fmin"):
            # NumPy orders complex numbers by (real, imag): +-inf in both is extreme
            inf = np.inf if ufunc.__name__ in ("minimum", "fmin") else -np.inf
            start = np.dtype(rdtype).type(complex(inf, inf))
        if start is None:
            raise DapError(f"{ufunc.__name__}.reduce: an empty block on rank {rank} and no "
                           "neutral value for its dtype")
        partial = np.full(shape, start, dtype=rdtype)
    if partial.shape != shape or partial.dtype != rdtype:
        raise DapError(f"{ufunc.__name__}.reduce: rank {rank}'s partial result is "
                       f"{partial.dtype}{partial.shape}, expected {rdtype}{shape}")
    return partial, fp


def _reduce(fn, ufunc, block, axes, kw):
    try:
        return np.asarray(fn.reduce(block, axis=axes, **kw))
    except TypeError:                 # no nclx loop for this dtype: NumPy's
        return np.asarray(ufunc.reduce(block, axis=axes, **kw))
