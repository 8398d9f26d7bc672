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
    perm = tuple(range(nd))[::-1] if axes is None else normalize_axis_tuple(axes, nd, "axes")
    if len(perm) != nd:
        raise ValueError(f"transpose: axes {axes!r} do not match the {nd} dimensions")
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
    i, j = normalize_axis_index(axis1, nd), normalize_axis_index(axis2, nd)
    perm = list(range(nd))
    perm[i], perm[j] = j, i
    return transpose(a, perm)


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    """``np.moveaxis``: :func:`transpose` with the axes moved."""
    nd = len(a.shape)
    src = normalize_axis_tuple(source, nd, "source")
    dst = normalize_axis_tuple(destination, nd, "destination")
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of "
                         "elements")
    order = [n for n in range(nd) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


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
    distributed by blocks of its last axis; 'A' and 'K' read as 'C' (a
    DistArray has no memory order).  ``copy=False`` raises DapError (the
    elements move)."""
    DistArray = type(a)
    if newshape is not None:
        if shape is not None:
            raise TypeError("reshape: give shape or newshape, not both")
        shape = newshape
    if shape is None:
        raise TypeError("reshape: the new shape is missing")
    if order not in ("C", "F", "A", "K", None):
        raise ValueError(f"reshape: order must be one of 'C', 'F', 'A' or 'K' (got {order!r})")
    if copy is False:
        raise DapError("reshape: copy=False: a DistArray reshape moves elements between ranks")
    size = int(np.prod(a.shape, dtype=np.int64))
    new = _resolve(shape, size)
    if order == "F":
        return transpose(reshape(transpose(a), new[::-1]))
    comm = a.comm
    nprocs, rank = comm.Get_size(), comm.Get_rank()
    src_rows, dst_rows = _rows(a.shape, nprocs), _rows(new, nprocs)
    b = a if a.distribution == src_rows else a.redistribute(src_rows)
    out = agreed_call(comm, lambda: np.empty(dst_rows.local_shape(rank), a.dtype),
                      "allocate:reshape", "reshape")
    move(comm, b._block.reshape(-1), _flat_layout(src_rows), out.reshape(-1),
         _flat_layout(dst_rows), key=("flat", layout_key(src_rows), layout_key(dst_rows)))
    return DistArray._of(out, dst_rows, comm)


@implements(np.ravel)
def ravel(a, order="C"):
    """``np.ravel``: a 1-d DistArray in blocks (:func:`reshape`; 'F' reads
    the elements in Fortran order)."""
    return reshape(a, (-1,), order=order)
