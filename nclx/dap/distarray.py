"""DistArray: a local block, its Distribution and an MPI communicator.

The top of nclx.dap: it wraps what the modules below compute on blocks
(maps, collective agreement, halo exchange, reductions) and is the type's
face to NumPy (``__array_ufunc__`` through :mod:`nclx.dap.ufuncs`,
``__array_function__`` through :mod:`nclx.dap.registry`).
"""

import copy

import numpy as np

from nclx.dap import registry
from nclx.dap.agreekeys import agree_layout
from nclx.dap.fold import agreed_call
from nclx.dap import ufuncs as _ufuncs
from nclx.dap.distribution import Distribution
from nclx.dap.halo import exchange_halos, start_halo_exchange
from nclx.dap.maps import check_global_range
from nclx.dap.gather import from_every_rank, from_root, gather_global
from nclx.dap.redistribute import redistribute as _redistribute
from nclx.dap import layout as _layout   # below DistArray: registers np.transpose, np.reshape...
from nclx.dap.mean import mean as _mean
from nclx.dap.npyfile import write_npy
from nclx.dap.pyvalue import PyValueMixin
from nclx.dap.validate import DapError
from nclx.storage import as_storage   # dap sits above storage: a block is a Storage

PROTOCOL_VERSION = "0.10.0"


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError:  # pragma: no cover - mpi4py is a test dependency
        raise ImportError("nclx.dap.DistArray needs mpi4py: pip install mpi4py mpich") from None
    return MPI


def _comm(comm):
    """The communicator to use: the given one, else COMM_WORLD (one rank
    without mpiexec)."""
    return _mpi().COMM_WORLD if comm is None else comm


def _is_storage(obj):
    """A GDP-3 storage (nclx.storage's or another's): it has the data interface."""
    return getattr(type(obj), "__gt_data_interface__", None) is not None


def _as_storage(data, halo):
    """A zero-copy storage over ``data`` whose halo is the DAP padding."""
    return as_storage(data, halo=halo)


def _agreed(comm, make, what):
    """``make()`` (the DistArray) on every rank, then one agreement on its
    layout and dtype (:func:`nclx.dap.agreekeys.agree_layout`): any rank's
    error, or ranks holding different Distributions or dtypes, raise on
    every rank."""
    error = made = None
    try:
        made = make()
    except Exception as exc:  # noqa: BLE001 - raised on every rank by the agreement
        error = exc
    agree_layout(comm, None if made is None else made.distribution,
                 None if made is None else made.dtype, error, what,
                 made is None or made._block.flags.writeable)
    return made


class DistArray(PyValueMixin):
    """A distributed array: ``local`` (this rank's block, padding included),
    ``distribution`` (the global view) and ``comm``.

    Elementwise ufuncs and operators on DistArrays of one global shape (and
    scalars) run nclx's kernels on the local blocks, through nclx's "python"
    hook chains; an operand distributed differently from the first DistArray
    operand is first redistributed to its distribution (:meth:`redistribute`,
    one ``Alltoallw``; ``out=`` must be distributed like the first operand).
    ``sum``/``max``/``min`` reduce across ranks.
    """
    __array_priority__ = 20

    def __init__(self, local, distribution, comm=None):
        """Collective: every rank of ``comm`` passes its block and the same
        Distribution.  One ``Allreduce`` checks that every rank passed the
        same layout (:func:`nclx.dap.agreekeys.layout_key`) and dtype, and
        raises any rank's error on every rank: a DistArray's ranks never hold
        different Distributions, so each rank's local decisions about it
        (elementwise calls redistributing an operand) are the same."""
        comm = _comm(comm)
        _agreed(comm, lambda: self._setup(local, distribution, comm),
                "DistArray(local, distribution, comm)")

    @classmethod
    def _of(cls, local, distribution, comm):
        """A DistArray whose ranks already agree on ``distribution`` (nclx's
        own results: derived from agreed layouts, or built after an
        agreement): no collective, and -- as NumPy builds views of ndarray
        subclasses -- no subclass ``__init__`` (whose signature nclx cannot
        know)."""
        return cls.__new__(cls)._setup(local, distribution, comm)

    @classmethod
    def _made(cls, made, comm):
        """``made`` (a DistArray from an agreement) as ``cls``: a subclass
        through its own ``__init__``, as the classmethod builders promise.
        Its ``__init__`` raising on some ranks raises on every rank (one more
        collective, for subclasses only): the others would wait in their
        next collective."""
        if cls is DistArray:
            return made
        return agreed_call(comm, lambda: cls(made._block, made.distribution, comm),
                           f"{cls.__qualname__}.__init__", f"{cls.__qualname__}.__init__",
                           inner_agreed=True)

    def _setup(self, local, distribution, comm):
        if not isinstance(distribution, Distribution):
            raise DapError(f"distribution must be a Distribution, not {type(distribution).__name__}")
        if distribution.nprocs != comm.Get_size():
            raise DapError(f"the distribution spans {distribution.nprocs} processes, the "
                           f"communicator {comm.Get_size()}")
        storage = _is_storage(local)
        block = np.asarray(local)        # a storage: a view of its host buffer
        want = distribution.local_shape(comm.Get_rank())
        if block.shape != want:
            raise DapError(f"rank {comm.Get_rank()}: local block has shape {block.shape}, the "
                           f"distribution gives {want}")
        halo = tuple(tuple(getattr(m, "padding", (0, 0))) for m in distribution.maps(comm.Get_rank()))
        # the local block is a storage whose halo is the DAP padding (zero-copy)
        self.local = _as_storage(local if storage else block, halo)
        self._block = block
        self.distribution = distribution
        self.comm = comm
        return self

    def exchange_halos(self):
        """Fill the communication padding from the owners (:func:`nclx.dap.exchange_halos`)."""
        exchange_halos(self)
        return self

    def start_halo_exchange(self):
        """Post the exchange; ``.wait()`` on the result completes it."""
        return start_halo_exchange(self)

    def save_npy(self, path):
        """Write the global array as the ``.npy`` file ``path`` (collective):
        each rank writes its owned cells through MPI-IO (:mod:`nclx.dap.npyio`);
        a failure on any rank raises the same DapError on every rank (also
        a rank that passes no path: ``write_npy`` checks it in its agreement)."""
        write_npy(self.comm, path, self._block, self.distribution, f"save_npy({path!r})")

    def _aligned(self, other):
        """``other`` (a DistArray of this global shape) in this array's
        distribution: redistributed (one ``Alltoallw``) where it differs, as
        every operand, mask (``where=``) and weights DistArray is."""
        if other.distribution != self.distribution and other.comm is self.comm:
            if other.shape != self.shape:
                raise DapError(f"operands have global shapes {self.shape} and {other.shape}: "
                               f"DistArray operands must have the same global shape")
            other = other.redistribute(self.distribution)
        self._check_same(other)
        return other

    def _check_same(self, other):
        if other.distribution == self.distribution and other.comm is not self.comm:
            raise DapError(f"operands live on different communicators ({other.comm!r} vs "
                           f"{self.comm!r}): DistArrays combined must share one")
        if other.distribution != self.distribution:
            raise DapError(f"operands are not identically distributed "
                           f"({other.distribution} vs {self.distribution})")

    # ------------------------------------------------------------ creation
    @classmethod
    def from_shape(cls, shape, dtype=float, dist=None, comm=None, fill=0, **kw):
        """A DistArray of global ``shape`` filled with ``fill``; ``kw`` go to
        :meth:`Distribution.from_shape` (grid_shape, block_size, padding, periodic)."""
        comm = _comm(comm)

        def make():
            d = Distribution.from_shape(shape, dist=dist, nprocs=comm.Get_size(), **kw)
            local = d.local_shape(comm.Get_rank())
            # items of no bytes: nothing to write (np.full would walk 2**60 of them)
            block = np.zeros(local, dtype) if np.dtype(dtype).itemsize == 0 else \
                np.full(local, fill, dtype=dtype)
            return DistArray._of(block, d, comm)

        # the arguments may differ by rank: the same agreement as the constructor's
        return cls._made(_agreed(comm, make, "DistArray.from_shape"), comm)

    @classmethod
    def from_global(cls, array, dist=None, comm=None, root=None, **kw):
        """Distribute a global array: held by every rank (``root=None``) or by
        rank ``root`` only (the others pass None).

        ``dist`` (with ``kw``) goes to :meth:`Distribution.from_shape`, or is
        a ``Distribution`` of ``array.shape`` (e.g. with 'u' dimensions, whose
        indices must then lie in ``[0, size)``).  Padding is filled from the
        global values.

        Every rank (``root=None``): each keeps its block; every rank must pass
        the same shape and dtype.  One rank (``root=r``): rank r sends each
        rank its block in one ``Alltoallw`` (no pickling, no rank but r holds
        more than its block); shape and dtype travel from r; a non-root rank
        may pass None or an array of r's shape and dtype (not used).  Either
        way one collective checks the arguments and any rank's error, and
        every rank raises the same DapError naming the ranks."""
        comm = _comm(comm)
        if root is not None:
            block, d = from_root(array, dist, comm, root, kw)
        else:
            block, d = from_every_rank(array, dist, comm, kw)
        return cls._made(DistArray._of(block, d, comm), comm)      # agreed there

    # ------------------------------------------------------------ protocol
    def __distarray__(self):
        return {"__version__": PROTOCOL_VERSION, "buffer": self._block,
                "dim_data": self.distribution.dim_data(self.comm.Get_rank())}

    @property
    def shape(self):
        return self.distribution.shape

    @property
    def dtype(self):
        return self._block.dtype

    @property
    def ndim(self):
        return len(self.distribution.shape)

    @property
    def size(self):
        """The number of cells of the global array (NumPy's ``size``)."""
        return int(np.prod(self.shape, dtype=np.int64))

    # ------------------------------------------- layout (nclx.dap.layout)
    def transpose(self, *axes):
        """``np.transpose``: a view with permuted dimension dictionaries when
        the distributed dimensions keep their order, else moved (one
        Alltoallw) to the default layout of the transposed shape.  With
        axes, through ``np.transpose`` (the ranks agree on them first)."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        if not axes:
            return _layout.transpose(self, None)
        return np.transpose(self, axes)

    @property
    def T(self):
        return self.transpose()

    # The methods with arguments go through NumPy's functions, whose
    # dispatch agrees on the arguments in one collective: ranks passing
    # different shapes or axes raise on every rank (before, each rank went
    # its own way, or ranks met in different collectives).
    def swapaxes(self, axis1, axis2):
        return np.swapaxes(self, axis1, axis2)

    def reshape(self, *shape, order="C", copy=None):
        """``np.reshape`` (C order): distributed by blocks of axis 0."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        # (the registry's dispatch itself: np.reshape takes copy= from NumPy 2.1)
        return registry.dispatch(DistArray, np.reshape, (DistArray,), (self, shape, order),
                                 {} if copy is None else {"copy": copy})

    def ravel(self, order="C"):
        """``np.ravel`` (C order): a 1-d DistArray in blocks."""
        return np.ravel(self, order)

    @property
    def owned(self):
        """View of the part of the local block this rank owns (no padding)."""
        return self._block[self.distribution.owned_slices(self.comm.Get_rank())]

    def _owned_global_indices(self):
        rank = self.comm.Get_rank()
        return [m.global_indices() for m in self.distribution.maps(rank)]

    def gather(self, root=0):
        """The global array on ``root`` (None elsewhere); ``root=None``: on
        every rank.  One ``Alltoallw`` into one buffer (no pickling)."""
        check_global_range(self.distribution)      # every rank: same verdict, no hang
        return gather_global(self, root)

    def redistribute(self, dist=None, *, grid_shape=None, padding=None, block_size=None,
                     periodic=None):
        """This array in another distribution (:func:`nclx.dap.redistribute`)."""
        return _redistribute(self, dist, grid_shape=grid_shape, padding=padding,
                            block_size=block_size, periodic=periodic)

    # ----------------------------------------------------------- reductions
    # np.sum(da), np.max(da), ... call these methods; they go through the
    # ufunc machinery (and so the python-level hooks) like any other call.
    def _reduction(self, ufunc, axis, dtype, out, keepdims, **extra):
        kw = {k: v for k, v in extra.items() if v is not np._NoValue}
        if dtype is not None:
            kw["dtype"] = dtype
        if isinstance(out, (tuple, list)):
            # NumPy's methods take one array (ufunc.reduce a tuple of one):
            # passed on as one out= that is no array, refused as NumPy does
            # by every rank's check before the reduction's collective
            out = (out,)
        return ufunc.reduce(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
            where=np._NoValue):
        """Sum over all ranks' owned elements (``axis=None``)."""
        return self._reduction(np.add, axis, dtype, out, keepdims, initial=initial, where=where)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
             where=np._NoValue):
        return self._reduction(np.multiply, axis, dtype, out, keepdims, initial=initial, where=where)

    def max(self, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
        return self._reduction(np.maximum, axis, None, out, keepdims, initial=initial, where=where)

    def min(self, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
        return self._reduction(np.minimum, axis, None, out, keepdims, initial=initial, where=where)

    def any(self, axis=None, out=None, keepdims=False, where=np._NoValue):
        return self._reduction(np.logical_or, axis, bool, out, keepdims, where=where)

    def all(self, axis=None, out=None, keepdims=False, where=np._NoValue):
        return self._reduction(np.logical_and, axis, bool, out, keepdims, where=where)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=np._NoValue):
        """Mean over the cells counted in ``size`` (all ranks), or those where
        ``where`` is True (:func:`nclx.dap.mean.mean`)."""
        return _mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)

    # ---------------------------------------------------- NumPy functions
    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions by the registry (:mod:`nclx.dap.registry`):
        registered ones run collectively, the others raise TypeError."""
        return registry.dispatch(DistArray, func, types, args, kwargs, receiver=self)

    def __array__(self, dtype=None, copy=None):
        """No implicit gather: ``np.asarray(da)`` raises TypeError (use
        :meth:`gather`)."""
        raise registry.refusal("np.asarray / __array__")

    # -------------------------------------------------------------- ufuncs
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _ufuncs.array_ufunc(self, ufunc, method, inputs, kwargs)

    def _unwrap(self, x):
        if isinstance(x, DistArray):
            return self._aligned(x)._block
        if np.ndim(x) == 0:
            return x
        raise DapError(f"cannot combine a DistArray with a {type(x).__name__} of shape "
                       f"{np.shape(x)}")

    def _wrap_block(self, r):
        return r if isinstance(r, DistArray) else DistArray._of(r, self.distribution, self.comm)

    # copies as ndarray's (local, no collective); no pickling (review 21:
    # copy.copy shared the block, and a pickled DistArray sent to another
    # rank arrived holding the sender's block -- silently wrong gathers)
    def __copy__(self):
        return type(self)._of(self._block.copy(), self.distribution, self.comm)

    def __deepcopy__(self, memo):
        return type(self)._of(copy.deepcopy(self._block, memo), self.distribution, self.comm)

    def __reduce_ex__(self, protocol):
        raise TypeError("a DistArray cannot be pickled: its block is one rank's part of a "
                        "communicator's array; send da.gather() (or the block, "
                        "da.local, with its distribution) instead")

    def __repr__(self):
        return (f"<DistArray shape={self.shape} dtype={self.dtype} rank "
                f"{self.comm.Get_rank()}/{self.comm.Get_size()} local={self._block.shape}>")


_ufuncs.add_operators(DistArray)
