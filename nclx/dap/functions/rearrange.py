"""flip, roll, concatenate, stack, vstack and hstack of DistArrays
(collective).

Each is "my elements land at these global indices of the result": the
source block is described by maps that send each owned index through the
function's index transform (``n - 1 - g`` for a flip, ``(g + s) % n`` for a
roll, ``g + offset`` for a concatenated operand, a constant for a stacked
one), and one ``Alltoallw`` moves the elements of every source straight into
the result's blocks (:func:`nclx.dap.redistribute.move_many`).

Layouts: ``flip`` and ``roll`` keep the input's distribution
(padding filled); ``concatenate``, ``stack``, ``vstack`` and ``hstack``
give the default layout of the result's shape
(``Distribution.from_shape(shape, nprocs=P)``: block over a balanced grid).
Every operand of a joining function must be a DistArray on the same
communicator (a NumPy array is refused: wrap it with
``DistArray.from_global``); the result's dtype is NumPy's ``result_type``
of theirs.
"""
import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from nclx.dap.fold import agreed_call
from nclx.dap.functions._agreed import agreed_warnings_call
from nclx.dap.layout import ravel, reshape
from nclx.dap.movetypes import RangeMap
from nclx.dap.redistribute import (Layout, check_movable, check_partition, move_many,
                                   target_distribution)
from nclx.dap.registry import implements
from nclx.dap.validate import DapError, DapTypeError


class MappedMap:
    """A map whose owned indices are sent through ``fwd`` (a bijection onto
    part of ``[0, size)``; ``inv`` undoes it)."""
    dist_type = "u"

    def __init__(self, orig, size, fwd, inv):
        self.orig, self.size, self.fwd, self.inv = orig, size, fwd, inv
        self.local_size = orig.local_size

    def _owned_local(self):
        return self.orig._owned_local()

    def global_from_local(self, i):
        return self.fwd(self.orig.global_from_local(i))

    def owns(self, g):
        h = self.inv(np.asarray(g, dtype=np.int64))
        ok = (h >= 0) & (h < self.orig.size)
        out = np.zeros(h.shape, bool)
        out[ok] = self.orig.owns(h[ok])
        return out


def _mapped(da, transforms, size_of=None):
    """The layout of ``da``'s blocks with dimension ``d``'s indices sent
    through ``transforms[d] = (fwd, inv)`` (None: unchanged)."""
    check_partition(da.distribution, "the source distribution")
    base = Layout.of(da.distribution)
    maps = []
    for d, col in enumerate(base.maps):
        t = transforms.get(d)
        size = (size_of or {}).get(d, da.shape[d])
        maps.append(col if t is None else [MappedMap(m, size, *t) for m in col])
    return Layout(maps, base.coords)


def _into(cls, target, comm, dtype, sources):
    """The result (a ``cls``): each ``(block, layout)`` of ``sources`` moved in."""
    # one agreement first: a MemoryError on one rank would leave the others
    # in the Alltoallw
    out = agreed_call(comm, lambda: np.empty(target.local_shape(comm.Get_rank()), dtype),
                      "allocate:rearrange", "allocating the result")
    move_many(comm, sources, out, Layout.of(target))
    return cls._of(out, target, comm)


@implements(np.flip)
def flip(m, axis=None):
    """``np.flip`` over ``axis`` (all axes for None): one Alltoallw."""
    axes = range(m.ndim) if axis is None else normalize_axis_tuple(axis, m.ndim)
    tr = {}
    for d in axes:
        n = m.shape[d]
        tr[d] = (lambda g, n=n: n - 1 - g,) * 2
    return _into(type(m), m.distribution, m.comm, m.dtype, [(m._block, _mapped(m, tr))])


@implements(np.roll)
def roll(a, shift, axis=None):
    """``np.roll``: one Alltoallw (shifts along repeated axes add up, as in
    NumPy); ``axis=None`` rolls the flattened array, which moves the data
    three times (ravel, roll, back to ``a``'s distribution) -- once for a
    1-D array, whose flattened array is itself (review 27: four moves)."""
    if axis is None and a.ndim == 1:
        axis = 0
    if axis is None:
        flat = roll(ravel(a), shift, 0)
        return reshape(flat, a.shape).redistribute(a.distribution)
    axes = normalize_axis_tuple(axis, a.ndim, allow_duplicate=True)
    # shifts and axes broadcast against each other, as NumPy's roll has it
    # (a tuple of shifts along one axis adds up; before: refused, found by
    # review), with NumPy's errors
    pairs = np.broadcast(shift, axes)
    if pairs.ndim > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    total = {}
    for s, d in pairs:
        total[int(d)] = total.get(int(d), 0) + int(s)
    tr = {}
    for d, s in total.items():
        n = a.shape[d]
        s = s % n if n else 0        # as NumPy: before, g + s wrapped in int64 (a shift
        if s:                        # near 2**63: garbage; found by review)
            tr[d] = (lambda g, n=n, s=s: (g + s) % n, lambda g, n=n, s=s: (g - s) % n)
    return _into(type(a), a.distribution, a.comm, a.dtype, [(a._block, _mapped(a, tr))])


def _is_dist(x):
    return hasattr(type(x), "__distarray__") and hasattr(x, "distribution")


def _operands(arrays, what):
    """The operands: DistArrays (of one class) on one communicator."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError(f"{what}: need at least one array")
    DistArray = type(next((x for x in arrays if _is_dist(x)), arrays[0]))
    for i, x in enumerate(arrays):
        if not isinstance(x, DistArray) or not _is_dist(x):
            raise DapError(f"{what}: operand {i} is a {type(x).__name__}, not a DistArray "
                           f"(distribute it with DistArray.from_global)")
        if x.comm is not arrays[0].comm:
            raise DapError(f"{what}: operand {i} lives on another communicator")
    return arrays


def _no_out(out, what):
    if out is not None:
        raise DapTypeError(f"{what}: out= is not supported for DistArrays")


def _joined_dtype(arrays, dtype, casting, what):
    """The joined result's dtype, NumPy's casting check, and one that can
    cross ranks (object references cannot: before, they were sent as raw
    pointers and the process crashed freeing them; found by review)."""
    dt = np.result_type(*[x.dtype for x in arrays]) if dtype is None else np.dtype(dtype)
    for x in arrays:
        if not np.can_cast(x.dtype, dt, casting=casting):
            raise TypeError(f"Cannot cast array data from {x.dtype!r} to {dt!r} according "
                            f"to the rule {casting!r}")
    check_movable(dt, f"{what} into dtype {dt}")
    return dt


def _cast_blocks(arrays, dt, what):
    """Each operand's block in ``dt``: one agreement where any is cast (a
    cast's error -- a NaN made an integer under errstate 'raise', a
    ComplexWarning made an error -- raised on every rank; before, the rank
    meeting it raised alone and the others waited in the move), and its
    warnings ("invalid value encountered in cast") on every rank, once
    (before, on the ranks whose cells met them; found by review)."""
    if all(x.dtype == dt for x in arrays):
        return [x._block for x in arrays]
    return agreed_warnings_call(arrays[0].comm,
                                lambda: [x._block.astype(dt, copy=False) for x in arrays],
                                f"{what}:cast", what)


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``np.concatenate`` (``axis=None`` joins the flattened operands): one
    Alltoallw into the default layout of the result."""
    what = "concatenate"
    if out is not None and dtype is not None:      # NumPy's check, before out='s refusal
        raise TypeError("concatenate() only takes `out` or `dtype` as an argument, but both "
                        "were provided.")
    _no_out(out, what)
    if isinstance(arrays, dict) or not hasattr(type(arrays), "__getitem__"):
        # NumPy's own error (its dispatcher consumed a generator already)
        raise TypeError("The first input argument needs to be a sequence")
    arrays = _operands(arrays, what)
    if axis is None:
        arrays, axis = [ravel(x) for x in arrays], 0
    nd = arrays[0].ndim
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = normalize_axis_index(axis, nd)
    for i, x in enumerate(arrays):              # NumPy's checks and texts
        if x.ndim != nd:
            raise ValueError(f"all the input arrays must have same number of dimensions, but "
                             f"the array at index 0 has {nd} dimension(s) and the array at "
                             f"index {i} has {x.ndim} dimension(s)")
        for d in range(nd):
            if d != axis and x.shape[d] != arrays[0].shape[d]:
                raise ValueError(f"all the input array dimensions except for the "
                                 f"concatenation axis must match exactly, but along dimension "
                                 f"{d}, the array at index 0 has size {arrays[0].shape[d]} and "
                                 f"the array at index {i} has size {x.shape[d]}")
    dt = _joined_dtype(arrays, dtype, casting, what)
    blocks = _cast_blocks(arrays, dt, what)
    total = sum(x.shape[axis] for x in arrays)
    shape = arrays[0].shape[:axis] + (total,) + arrays[0].shape[axis + 1:]
    target = target_distribution(shape, arrays[0].comm.Get_size())
    sources, off = [], 0
    for x, blk in zip(arrays, blocks):
        tr = {axis: (lambda g, o=off: g + o, lambda g, o=off: g - o)}
        sources.append((blk, _mapped(x, tr, {axis: total})))
        off += x.shape[axis]
    return _into(type(arrays[0]), target, arrays[0].comm, dt, sources)


@implements(np.stack)
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``np.stack``: one Alltoallw into the default layout."""
    what = "stack"
    _no_out(out, what)
    arrays = _operands(arrays, what)
    shape0 = arrays[0].shape
    for i, x in enumerate(arrays):
        if x.shape != shape0:
            raise ValueError("all input arrays must have the same shape")
    axis = normalize_axis_index(axis, len(shape0) + 1)
    dt = _joined_dtype(arrays, dtype, casting, what)
    blocks = _cast_blocks(arrays, dt, what)
    k = len(arrays)
    shape = shape0[:axis] + (k,) + shape0[axis:]
    target = target_distribution(shape, arrays[0].comm.Get_size())
    sources = []
    for i, (x, blk) in enumerate(zip(arrays, blocks)):
        check_partition(x.distribution, "the source distribution")
        base = Layout.of(x.distribution)
        maps = base.maps[:axis] + [[RangeMap(i, i + 1, i)]] + base.maps[axis:]
        coords = (lambda r, c=base.coords: None if c(r) is None else
                  c(r)[:axis] + (0,) + c(r)[axis:])
        block = np.expand_dims(blk, axis)
        sources.append((block, Layout(maps, coords)))
    return _into(type(arrays[0]), target, arrays[0].comm, dt, sources)


@implements(np.vstack)
def vstack(tup, *, dtype=None, casting="same_kind"):
    """``np.vstack``: 1-d operands stacked as rows, others joined on axis 0."""
    arrays = _operands(tup, "vstack")
    if all(x.ndim == 1 for x in arrays):
        return stack(arrays, 0, dtype=dtype, casting=casting)
    # NumPy's atleast_2d: () -> (1, 1), (n,) -> (1, n)
    arrays = [reshape(x, (1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x for x in arrays]
    return concatenate(arrays, 0, dtype=dtype, casting=casting)


@implements(np.hstack)
def hstack(tup, *, dtype=None, casting="same_kind"):
    """``np.hstack``: joined on axis 0 for 1-d operands, on axis 1 otherwise."""
    arrays = _operands(tup, "hstack")
    arrays = [reshape(x, (1,)) if x.ndim == 0 else x for x in arrays]   # NumPy's atleast_1d
    axis = 0 if arrays[0].ndim == 1 else 1
    return concatenate(arrays, axis, dtype=dtype, casting=casting)
