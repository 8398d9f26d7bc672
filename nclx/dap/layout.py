"""Axis permutations and reshapes of a DistArray (collective).

``transpose`` / ``swapaxes`` / ``moveaxis`` permute the dimension
dictionaries along with the local block (a view, as NumPy's transpose is):
no data moves when the permutation keeps the order of the distributed
dimensions (those whose process grid has more than one coordinate), since a
rank's grid coordinates are its rank in C order.  Otherwise the result is
in the default layout of the transposed shape
(``Distribution.from_shape(shape, nprocs=P)``: block over a balanced grid),
filled by one ``Alltoallw`` that reads the source block through transposed
datatypes.

``reshape`` / ``ravel`` (C order) give a result distributed by blocks of
axis 0 (``Distribution.from_shape(shape, ('b', 'n', ...))``): the source is
first moved to blocks of its own axis 0 (skipped when it already is), whose
elements are then contiguous ranges of the flat index, and one more
``Alltoallw`` moves those ranges.  ``order='F'``: the transpose of the
C-order reshape of the transpose (distributed by blocks of its last axis).
"""
import math
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from nclx.dap.distribution import Distribution
from nclx.dap.fold import agreed_call
from nclx.dap.movetypes import RangeMap
from nclx.dap.redistribute import (Layout, check_partition, layout_key, move,
                                   target_distribution)
from nclx.dap.registry import implements
from nclx.dap.validate import DapError


@implements(np.transpose)
def transpose(a, axes=None):
    """``np.transpose(a, axes)``: see the module docstring for the layout."""
    DistArray = type(a)
    nd = len(a.shape)
    if axes is not None:
        # NumPy's errors and texts ("axes don't match array", "repeated axis
        # in transpose"; before, other texts): its transpose of an empty probe
        try:
            np.transpose(_probe(nd), axes)
        except ValueError as exc:
            if "match" not in str(exc):
                raise
            raise ValueError(f"{exc} (transpose: axes {axes!r} do not match the {nd} "
                             f"dimensions)") from None
    perm = tuple(range(nd))[::-1] if axes is None else normalize_axis_tuple(axes, nd, "axes")
    dist, comm = a.distribution, a.comm
    cols = [dist._dims[p] for p in perm]
    shape = tuple(a.shape[p] for p in perm)
    spread = [p for p in perm if dist.grid_shape[p] > 1]
    if spread == sorted(spread):            # same coordinates, same ranks: a view
        return DistArray._of(a._block.transpose(perm), Distribution(cols), comm)
    check_partition(dist, "transpose")
    src = Layout([[dist.column_map(p, c) for c in range(len(dist._dims[p]))] for p in perm],
                 lambda r: tuple(dist.coords_from_rank(r)[p] for p in perm))
    target = target_distribution(shape, comm.Get_size())
    out = agreed_call(comm, lambda: np.empty(target.local_shape(comm.Get_rank()), a.dtype),
                      "allocate:transpose", "transpose")
    move(comm, a._block.transpose(perm), src, out, Layout.of(target),
         key=(layout_key(dist), "transposed", perm, layout_key(target)))
    return DistArray._of(out, target, comm)


@implements(np.swapaxes)
def swapaxes(a, axis1, axis2):
    """``np.swapaxes``: :func:`transpose` with two axes exchanged."""
    nd = len(a.shape)
    i, j = normalize_axis_index(axis1, nd, "axis1"), normalize_axis_index(axis2, nd, "axis2")
    perm = list(range(nd))
    perm[i], perm[j] = j, i
    return transpose(a, perm)


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    """``np.moveaxis``: :func:`transpose` with the axes moved."""
    nd = len(a.shape)
    np.moveaxis(_probe(nd), source, destination)      # NumPy's errors and texts
    src = normalize_axis_tuple(source, nd, "source")
    dst = normalize_axis_tuple(destination, nd, "destination")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


def _probe(nd):
    """An empty array of ``nd`` dimensions: NumPy's argument checks run on it
    (no memory)."""
    return np.empty((0,) * nd, np.uint8)


def _order(order, fn):
    """``order`` as NumPy reads it ('C' for None, any case), with NumPy's
    errors: ``fn`` (``np.reshape`` or ``np.ravel``) called on an empty probe
    (before, 'c'/'f' were refused and reshape took 'K', which NumPy refuses
    there; found by review)."""
    if fn is np.reshape:
        np.reshape(_probe(1), 0, order=order)
    else:
        fn(_probe(1), order=order)
    return "C" if order is None else (order.decode() if isinstance(order, bytes)
                                      else order).upper()


def _numpy_shape_text(shape):
    """A shape as NumPy's reshape error prints it: leading unknown (negative)
    dimensions left out, later ones ``newaxis``: ``(2,0,3,newaxis)``,
    ``(4)`` for ``(-1, 4)``, ``(5,)``."""
    i = 0
    while i < len(shape) and shape[i] < 0:
        i += 1
    if i == len(shape):
        return "()"
    parts = [str(shape[i])] + ["newaxis" if s < 0 else str(s) for s in shape[i + 1:]]
    return "(" + ",".join(parts) + (",)" if len(shape) == 1 else ")")


def _resolve(shape, size):
    """``shape`` with its one unknown (negative, as NumPy's) dimension
    resolved for ``size`` cells; NumPy's errors and their text otherwise."""
    try:
        shape = (operator.index(shape),)
    except TypeError:                       # a sequence (NumPy's TypeError for a float)
        if not hasattr(shape, "__iter__"):
            raise TypeError(f"expected a sequence of integers or a single integer, got "
                            f"'{shape!r}'") from None        # NumPy's text
        shape = tuple(operator.index(s) for s in shape)
    unknown = [i for i, s in enumerate(shape) if s < 0]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = math.prod(s for s in shape if s >= 0)          # Python ints: no wrap-around
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape "
                             f"{_numpy_shape_text(shape)}")
        shape = shape[:unknown[0]] + (size // known,) + shape[unknown[0] + 1:]
    if math.prod(shape) != size:
        raise ValueError(f"cannot reshape array of size {size} into shape "
                         f"{_numpy_shape_text(shape)}")
    return shape


def _rows(shape, nprocs):
    """Blocks of axis 0 (the whole array on one rank for a 0-d shape)."""
    if not shape:
        if nprocs != 1:
            raise DapError(f"reshape: a 0-d DistArray needs one rank, the communicator has "
                           f"{nprocs}")
        return Distribution.from_shape((), nprocs=1)
    return Distribution.from_shape(shape, ["b"] + ["n"] * (len(shape) - 1), nprocs=nprocs)


def _flat_layout(rows):
    """The flat-index ranges of a blocks-of-axis-0 distribution, one per rank."""
    rest = int(np.prod(rows.shape[1:], dtype=np.int64))
    if not rows.shape:
        return Layout([[RangeMap(0, 1, 0)]], lambda r: (0,))
    maps = [RangeMap(dd["start"] * rest, dd["stop"] * rest, dd["start"] * rest)
            for dd in rows._dims[0]]
    return Layout([maps], lambda r: (r,))


@implements(np.reshape)
def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    """``np.reshape``; in C order the result is distributed by blocks of
    axis 0 (see the module docstring).  ``order='F'`` is the transpose of the
    C-order reshape of the transpose (``a.T`` reshaped to the reversed shape),
    distributed by blocks of its last axis; 'A' reads as 'C' (a DistArray
    has no memory order), 'K' is NumPy's ValueError, lower case NumPy's too.  ``copy=False``: a view of each rank's
    block where no element moves between ranks (:func:`_unmoved`), else a
    DapError (a ValueError, as NumPy's where it cannot avoid a copy)."""
    DistArray = type(a)
    if newshape is not None:
        if shape is not None:
            raise TypeError("reshape: give shape or newshape, not both")
        shape = newshape
    if shape is None:           # NumPy: a.reshape(None), the same shape
        shape = tuple(a.shape)
    order = _order(order, np.reshape)
    size = int(np.prod(a.shape, dtype=np.int64))
    new = _resolve(shape, size)
    if copy is False and new == tuple(a.shape):    # the same layout: nothing moves
        return DistArray._of(a._block.view(), a.distribution, a.comm)
    if copy is False and size == 0:                # no element to move, in any order
        return _unmoved(a, new)
    if order == "F":
        if copy is False:
            # NumPy's ValueError where it cannot view the gathered (C-ordered)
            # array so; on one rank, the block's own memory decides below
            if a.comm.Get_size() > 1:
                _viewed(_c_ordered(a.shape), new, "F")
            if sum(g > 1 for g in a.distribution.grid_shape) > 1:
                raise DapError(_MOVES)          # the transposes would move elements
        return transpose(reshape(transpose(a), new[::-1], copy=copy))
    if copy is False:
        return _unmoved(a, new)
    comm = a.comm
    nprocs, rank = comm.Get_size(), comm.Get_rank()
    src_rows, dst_rows = _rows(a.shape, nprocs), _rows(new, nprocs)
    b = a if a.distribution == src_rows else a.redistribute(src_rows)
    out = agreed_call(comm, lambda: np.empty(dst_rows.local_shape(rank), a.dtype),
                      "allocate:reshape", "reshape")
    move(comm, b._block.reshape(-1), _flat_layout(src_rows), out.reshape(-1),
         _flat_layout(dst_rows), key=("flat", layout_key(src_rows), layout_key(dst_rows)))
    return DistArray._of(out, dst_rows, comm)


_MOVES = ("reshape: copy=False: this reshape moves elements between ranks (a view is "
          "possible only where each rank keeps its elements)")


def _unmoved(a, new):
    """``a`` reshaped to ``new`` (another shape) as views of the blocks, where
    no element moves between ranks: each rank's block the same range of the
    flat index as its block of ``new`` in blocks of axis 0 (one rank
    holding the whole array: any shape).  Else DapError.
    Before, copy=False was refused even where nothing moves, on one rank
    too (found by review).  The verdict reads the Distribution, the same on
    every rank; a block NumPy cannot view in the new shape raises NumPy's
    ValueError on every rank."""
    DistArray = type(a)
    dist, comm = a.distribution, a.comm
    rank, nprocs = comm.Get_rank(), comm.Get_size()
    rows = _rows(new, nprocs)
    dst = _flat_layout(rows).maps[0] if new else [RangeMap(0, 1, 0)]
    if not all(_same_range(_flat_range(dist, a.shape, r), dst[r]) for r in range(nprocs)):
        raise DapError(_MOVES)
    block = agreed_call(comm, lambda: _viewed(a._block, rows.local_shape(rank)),
                        "reshape:view", "reshape")
    return DistArray._of(block, rows, comm)


def _flat_range(dist, shape, r):
    """``(start, stop)`` of the flat C-order indices rank ``r``'s block holds,
    in order and nothing else (no padding; every axis whole but the first,
    a contiguous range there); ``()`` for an empty block; None otherwise."""
    if not shape:
        return (0, 1) if r == 0 else None
    rest = math.prod(shape[1:])
    first = None
    for d, m in enumerate(dist.maps(r)):
        g = m.global_indices()
        if tuple(m.dim_dict.get("padding", (0, 0))) != (0, 0) or len(g) != m.local_size:
            return None
        if len(g) == 0:
            return ()
        if not np.array_equal(g, np.arange(g[0], g[0] + len(g))) or \
                (d and len(g) != shape[d]):
            return None
        if d == 0:
            first = (int(g[0]) * rest, (int(g[-1]) + 1) * rest)
    return first if first[0] < first[1] else ()


def _same_range(held, target):
    """Whether a block holding ``held`` (:func:`_flat_range`) is the block of
    the flat range ``target`` (a RangeMap)."""
    return held == () if target.lo >= target.hi else held == (target.lo, target.hi)


def _c_ordered(shape):
    """A C-ordered array of ``shape`` over one byte (strides only: never read)."""
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape, strides,
                                           writeable=False)


def _viewed(block, shape, order="C"):
    """``block`` viewed in ``shape``, NumPy's ValueError where it needs a copy."""
    try:
        return np.reshape(block, shape, order=order, copy=False)
    except TypeError:                   # NumPy 2.0: no copy= (setting the shape never copies)
        v = block.view() if order == "C" else block.T.view()
        try:
            v.shape = shape if order == "C" else shape[::-1]
        except AttributeError:
            raise ValueError("Unable to avoid creating a copy while reshaping.") from None
        return v if order == "C" else v.T


@implements(np.ravel)
def ravel(a, order="C"):
    """``np.ravel``: a 1-d DistArray in blocks (:func:`reshape`; 'F' reads
    the elements in Fortran order)."""
    order = _order(order, np.ravel)          # 'K' reads as 'C' here (no memory order)
    return reshape(a, (-1,), order="F" if order == "F" else "C")
