"""Creation functions: ``zeros_like``/``ones_like``/``full_like``/
``empty_like`` of a DistArray (a DistArray of the same distribution and
communicator), and NumPy's creation functions called with ``like=da``
(NEP 35: ``np.zeros/ones/full/empty/arange(..., like=da)``), which give a
DistArray of the default distribution (:meth:`DistArray.from_shape`) over
``like``'s communicator -- NumPy passes no ``like`` argument on, but calls
``like``'s ``__array_function__``, which hands itself to the registry
(:func:`nclx.dap.registry.receiver`).  No collective but the
constructor's agreement: every rank computes its own block (``arange``'s values as NumPy computes them: ``start + i *
delta`` in the result dtype with ``delta = (start + step) - start``)."""
import math

import numpy as np

from nclx.dap.distarray import DistArray, _agreed
from nclx.dap.distribution import Distribution
from nclx.dap.functions._common import wrap
from nclx.dap.registry import implements, receiver
from nclx.dap.validate import DapError

_NO_BYTES = np.dtype("V0")
_MAX_BYTES = np.iinfo(np.intp).max


def _made_like(name, maker, a, fill, dtype, shape):
    """``np.<name>`` of a DistArray: NumPy's function on each block (``fill``:
    full_like's value, a tuple of it)."""
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
# device do not apply: the blocks are NumPy's own arrays of the new dtype
@implements(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.zeros_like``: a DistArray of ``a``'s distribution and communicator
    (with another ``shape=``: the default distribution over ``a``'s
    communicator)."""
    return _made_like("zeros_like", np.zeros_like, a, (), dtype, shape)


@implements(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.ones_like``: as :func:`zeros_like`."""
    return _made_like("ones_like", np.ones_like, a, (), dtype, shape)


@implements(np.empty_like)
def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.empty_like``: as :func:`zeros_like`."""
    return _made_like("empty_like", np.empty_like, prototype, (), dtype, shape)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``np.full_like``: as :func:`zeros_like`; a scalar ``fill_value``."""
    return _made_like("full_like", np.full_like, a, (fill_value,), dtype, shape)


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
    return like.comm if isinstance(like, DistArray) else None


def _filled(shape, fill, dtype):
    return DistArray.from_shape(_shape(shape, dtype), dtype=dtype, fill=fill,
                                comm=_like_comm())


@implements(np.zeros)
def zeros(shape, dtype=float, order="C", **kw):
    """``np.zeros(shape, like=da)``: a DistArray of the default distribution."""
    return _filled(shape, 0, np.dtype(dtype))


@implements(np.ones)
def ones(shape, dtype=float, order="C", **kw):
    """``np.ones(shape, like=da)``: a DistArray of the default distribution."""
    return _filled(shape, 1, np.dtype(dtype))


@implements(np.empty)
def empty(shape, dtype=float, order="C", **kw):
    """``np.empty(shape, like=da)``: a DistArray of the default distribution (zeroed)."""
    return _filled(shape, 0, np.dtype(dtype))


@implements(np.full)
def full(shape, fill_value, dtype=None, order="C", **kw):
    """``np.full(shape, fill_value, like=da)``: dtype as NumPy's."""
    dtype = np.array(fill_value).dtype if dtype is None else np.dtype(dtype)
    return _filled(shape, fill_value, dtype)


@implements(np.arange)
def arange(*args, dtype=None, **kw):
    """``np.arange(..., like=da)``: a 1-D DistArray of the default distribution."""
    if not 1 <= len(args) <= 3:
        raise TypeError(f"arange() takes 1 to 3 positional arguments, {len(args)} given")
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
    if step == 0:
        raise ZeroDivisionError("division by zero")     # NumPy's message for step=0
    rdtype = np.result_type(start, stop, step) if dtype is None else np.dtype(dtype)
    if rdtype.kind not in "biuf":
        raise DapError(f"np.arange(like=DistArray) of dtype {rdtype}: integer and float only")
    n = max(int(math.ceil((stop - start) / step)), 0)
    a = DistArray.from_shape((n,), dtype=rdtype, comm=_like_comm())
    m = a.distribution.maps(a.comm.Get_rank())[0]
    idx = m.global_from_local(np.arange(m.local_size)) if m.local_size else np.zeros(0, int)
    t = rdtype.type
    with np.errstate(all="ignore"):
        s = t(start)
        delta = t(start + step) - s
        vals = s + idx.astype(rdtype) * delta
        vals[idx == 1] = t(start + step)
        vals[idx == 0] = s
    a._block[...] = vals
    return a
