"""Creation functions: ``zeros_like``/``ones_like``/``full_like``/
``empty_like`` of a DistArray (a DistArray of the same distribution and
communicator), and NumPy's creation functions called with ``like=da``
(NEP 35: ``np.zeros/ones/full/empty/arange(..., like=da)``), which give a
DistArray of the default distribution (:meth:`DistArray.from_shape`) over
``like``'s communicator -- NumPy passes no ``like`` argument on, but calls
``like``'s ``__array_function__``, which hands itself to the registry
(:func:`nclx.dap.registry.receiver`).  No collective but the
constructor's agreement (an error on one rank is raised on every rank, of
its type): every rank computes its own block -- ``np.zeros``/``np.ones``
of it (zero bytes; NumPy's ones, strings and records included), its part
of ``np.full``'s fill value broadcast to the global shape, and
``arange``'s values as NumPy computes them (:mod:`._arange`)."""
import math

import numpy as np

from nclx.dap.distarray import DistArray, _agreed, _comm
from nclx.dap.distribution import Distribution
from nclx.dap.functions._arange import plan as _arange_plan
from nclx.dap.functions._common import wrap
from nclx.dap.registry import implements, receiver
from nclx.dap.validate import DapError

_NO_BYTES = np.dtype("V0")
_MAX_BYTES = np.iinfo(np.intp).max


def _like_arguments(a, dtype, order, subok, shape, device):
    """NumPy's errors for ``np.*_like``'s arguments, in the order its
    ``empty_like`` parses them (dtype, order, subok, shape, device, then
    the shape's extents), from NumPy's own functions on no items (before,
    ``order='X'`` and ``device='gpu'`` were accepted; review 21)."""
    proto = np.empty(0, a.dtype)
    np.empty_like(proto, dtype=dtype, order=order, subok=subok)
    later = _extents_later(shape) if shape is not None else None
    np.empty_like(proto, device=device)
    if later is not None:
        raise later


def _extents_later(shape):
    """A shape NumPy cannot read raises here (TypeError); one it reads but
    cannot allocate (a negative extent) is returned, NumPy raising it after
    the remaining arguments' errors."""
    try:
        np.empty(shape, _NO_BYTES)
    except ValueError as exc:
        return exc
    return None


def _made_like(name, maker, a, fill, dtype, shape, order="K", subok=True, device=None):
    """``np.<name>`` of a DistArray: NumPy's function on each block (``fill``:
    full_like's value, a tuple of it)."""
    _like_arguments(a, dtype, order, subok, shape, device)
    # a DistArray fill_value has no np.ndim/np.shape (nothing gathered): its
    # own shape (before, np.ndim's TypeError; found by review)
    fshape = (tuple(fill[0].shape) if isinstance(fill[0], DistArray) else np.shape(fill[0])) \
        if fill else ()
    if fshape or (fill and isinstance(fill[0], DistArray)):
        # per block it would broadcast against the local shape: silently
        # wrong on some ranks, an error on others
        raise DapError(f"np.full_like(DistArray, fill_value of shape {fshape}): "
                       f"only a scalar fill_value is supported for a DistArray "
                       f"(global shape {a.shape})")
    if shape is not None and _shape(shape) != a.shape:
        # another shape: the default distribution over a's communicator,
        # each block NumPy's function of a's block with the block's shape
        comm = a.comm
        size = _shape(shape, a.dtype if dtype is None else dtype)

        def make():
            d = Distribution.from_shape(size, nprocs=comm.Get_size())
            block = maker(a._block, *fill, dtype=dtype, shape=d.local_shape(comm.Get_rank()))
            return DistArray._of(block, d, comm)
        return DistArray._made(_agreed(comm, make, f"np.{name}"), comm)
    return wrap(maker(a._block, *fill, dtype=dtype), a)


# NumPy's signatures (a dtype given by position too); order, subok and
# device are checked as NumPy checks them, then do not apply: the blocks are
# NumPy's own arrays of the new dtype
@implements(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.zeros_like``: a DistArray of ``a``'s distribution and communicator
    (with another ``shape=``: the default distribution over ``a``'s
    communicator)."""
    return _made_like("zeros_like", np.zeros_like, a, (), dtype, shape, order, subok, device)


@implements(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.ones_like``: as :func:`zeros_like`."""
    return _made_like("ones_like", np.ones_like, a, (), dtype, shape, order, subok, device)


@implements(np.empty_like)
def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.empty_like``: as :func:`zeros_like`."""
    return _made_like("empty_like", np.empty_like, prototype, (), dtype, shape, order, subok,
                      device)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.full_like``: as :func:`zeros_like`; a scalar ``fill_value``."""
    return _made_like("full_like", np.full_like, a, (fill_value,), dtype, shape, order, subok,
                      device)


def _shape(shape, dtype=None):
    """``shape`` as NumPy's creation functions read it (their errors: a float
    or negative extent, and with ``dtype`` an array too big to address); no
    memory: the items have no bytes."""
    shape = np.empty(shape, _NO_BYTES).shape
    d = None if dtype is None else np.dtype(dtype)
    # NumPy's count: the item size (an unsized string's: one character)
    # times every extent but the zero ones
    size = 0 if d is None else (d.itemsize or ({"S": 1, "U": 4}.get(d.kind, 0)))
    if size and math.prod(n for n in shape if n) * size > _MAX_BYTES:
        raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than "
                         "the maximum possible size.")        # NumPy's
    return shape


def _like_comm():
    """The communicator of ``like=``'s DistArray (NumPy calls its
    ``__array_function__``; before, COMM_WORLD: with ``like`` on a
    sub-communicator the other ranks never joined, a hang)."""
    like = receiver()
    return _comm(like.comm if isinstance(like, DistArray) else None)


def _created(name, size, block):
    """A DistArray of global shape ``size`` (checked already: NumPy's errors
    for the arguments are raised before, alike on every rank), the default
    distribution over ``like``'s communicator, each rank's block
    ``block(distribution, rank)``; an error there (a cast one rank
    meets, say) raised on every rank, as its type."""
    comm = _like_comm()

    def make():
        d = Distribution.from_shape(size, nprocs=comm.Get_size())
        return DistArray._of(block(d, comm.Get_rank()), d, comm)
    return _agreed(comm, make, f"np.{name}")


def _no_bytes(dtype):
    """Items of no bytes (void): nothing to write, and np.ones/np.full would
    walk every one of them (2**60 say)."""
    return dtype.itemsize == 0 and dtype.kind == "V"


# np.zeros/ones/empty parse shape, dtype, order and device before calling
# like's __array_function__: NumPy raised their errors already
@implements(np.zeros)
def zeros(shape, dtype=float, order="C", **kw):
    """``np.zeros(shape, like=da)``: a DistArray of the default distribution,
    zero bytes as NumPy's (strings '' and b'', records of them; before, the
    blocks were np.full(..., 0): '0'; review 21)."""
    dtype = np.dtype(dtype)
    return _created("zeros", _shape(shape, dtype), lambda d, r: np.zeros(d.local_shape(r), dtype))


@implements(np.ones)
def ones(shape, dtype=float, order="C", **kw):
    """``np.ones(shape, like=da)``: a DistArray of the default distribution,
    each block NumPy's ``np.ones``."""
    dtype = np.dtype(dtype)
    return _created("ones", _shape(shape, dtype), lambda d, r: np.zeros(d.local_shape(r), dtype)
                    if _no_bytes(dtype) else np.ones(d.local_shape(r), dtype))


@implements(np.empty)
def empty(shape, dtype=float, order="C", **kw):
    """``np.empty(shape, like=da)``: a DistArray of the default distribution (zeroed)."""
    dtype = np.dtype(dtype)
    return _created("empty", _shape(shape, dtype), lambda d, r: np.zeros(d.local_shape(r), dtype))


@implements(np.full)
def full(shape, fill_value, dtype=None, order="C", *, device=None):
    """``np.full(shape, fill_value, like=da)``: dtype as NumPy's; a
    ``fill_value`` that broadcasts to ``shape`` (before, a scalar only:
    np.full(3, [1, 2, 3]) failed in each block; review 21), each rank
    taking its part.  np.full parses nothing before calling like's
    ``__array_function__``: its errors are raised here, in its order
    (before, ``order='X'`` and ``device='gpu'`` were accepted)."""
    if isinstance(fill_value, DistArray):
        raise DapError("np.full(like=DistArray): fill_value is a DistArray; pass a scalar "
                       "or an array (gather it: fill_value.gather(root=None))")
    fill = np.asarray(fill_value) if dtype is None else None     # NumPy's first step
    later = _extents_later(shape)               # then np.empty(shape, dtype, order, device)
    dt = np.empty(0, fill.dtype if dtype is None else dtype, order, device=device).dtype
    if later is not None:
        raise later
    size = _shape(shape, dt)
    if fill is None:
        fill = np.asarray(fill_value)           # np.copyto's reading of it
    if fill.ndim:
        fill = _broadcastable(fill, size, dt)

    def block(d, rank):
        local = d.local_shape(rank)
        if _no_bytes(dt):
            return np.zeros(local, dt)
        if fill.ndim == 0:
            return np.full(local, fill_value, dtype=dtype)      # NumPy's copyto, per block
        idx = [m.global_from_local(np.arange(m.local_size)) for m in d.maps(rank)]
        part = np.broadcast_to(fill, size)
        return np.full(local, part[np.ix_(*idx)] if idx else part, dtype=dtype)
    return _created("full", size, block)


def _broadcastable(fill, shape, dtype):
    """``fill`` as np.copyto broadcasts it to ``shape`` (leading unit
    dimensions of a longer fill dropped); NumPy's ValueError where it does
    not broadcast."""
    src = fill
    while src.ndim > len(shape) and src.shape[0] == 1:
        src = src.reshape(src.shape[1:])
    if src.ndim > len(shape) or any(f not in (1, g) for f, g in
                                     zip(src.shape[::-1], shape[::-1])):
        # NumPy's own message, from a copy into a view of one item (no
        # loop: it refuses before copying)
        into = np.lib.stride_tricks.as_strided(np.empty(1, dtype), shape, (0,) * len(shape))
        np.copyto(into, fill, casting="unsafe")
        np.broadcast_to(src, shape)             # raises, if copyto did not
    return src


@implements(np.arange)
def arange(*args, **kw):
    """``np.arange(..., like=da)``: a 1-D DistArray of the default
    distribution, NumPy's values and dtype bit for bit, every call form
    NumPy takes (``step=``, ``start=``/``stop=``, a dtype by position;
    before, step= was ignored and the others refused; float16 steps,
    uint64 and bool results differed; review 21).  A result of Python
    objects (integers past uint64, dtype=object) is refused: a DistArray
    holds no objects."""
    p = _arange_plan(args, kw)                  # NumPy's errors, alike on every rank
    if p.dtype.hasobject:
        raise DapError(f"np.arange(like=DistArray): the result's dtype is {p.dtype} (Python "
                       f"objects), which a DistArray cannot hold; pass dtype= a number type")

    def block(d, rank):
        m = d.maps(rank)[0]
        return p.values(m.global_from_local(np.arange(m.local_size)).astype(np.int64))
    return _created("arange", _shape((p.length,), p.dtype), block)
