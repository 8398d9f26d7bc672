"""DistArray: a local block, its Distribution and an MPI communicator."""
import numpy as np

from nclx.dap.distribution import Distribution
from nclx.dap.validate import DapError, validate

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


class DistArray:
    """A distributed array: ``local`` (this rank's block, padding included),
    ``distribution`` (the global view) and ``comm``.

    Elementwise ufuncs and operators on identically distributed DistArrays
    (and scalars) run nclx's kernels on the local blocks, through nclx's
    "python" hook chains; ``sum``/``max``/``min`` reduce across ranks.
    """
    __array_priority__ = 20

    def __init__(self, local, distribution, comm=None):
        comm = _comm(comm)
        if not isinstance(distribution, Distribution):
            raise DapError(f"distribution must be a Distribution, not {type(distribution).__name__}")
        if distribution.nprocs != comm.Get_size():
            raise DapError(f"the distribution spans {distribution.nprocs} processes, the "
                           f"communicator {comm.Get_size()}")
        local = np.asarray(local)
        want = distribution.local_shape(comm.Get_rank())
        if local.shape != want:
            raise DapError(f"rank {comm.Get_rank()}: local block has shape {local.shape}, the "
                           f"distribution gives {want}")
        self.local = local
        self.distribution = distribution
        self.comm = comm

    # ------------------------------------------------------------ creation
    @classmethod
    def from_shape(cls, shape, dtype=float, dist=None, comm=None, fill=0, **kw):
        """A DistArray of global ``shape`` filled with ``fill``; ``kw`` go to
        :meth:`Distribution.from_shape` (grid_shape, block_size, padding, periodic)."""
        comm = _comm(comm)
        d = Distribution.from_shape(shape, dist=dist, nprocs=comm.Get_size(), **kw)
        return cls(np.full(d.local_shape(comm.Get_rank()), fill, dtype=dtype), d, comm)

    @classmethod
    def from_global(cls, array, dist=None, comm=None, **kw):
        """Distribute a global array every rank holds (each keeps its block,
        padding filled from the global array where the indices exist)."""
        comm = _comm(comm)
        array = np.asarray(array)
        d = Distribution.from_shape(array.shape, dist=dist, nprocs=comm.Get_size(), **kw)
        idx = [m.global_from_local(np.arange(m.local_size)) for m in d.maps(comm.Get_rank())]
        return cls(array[np.ix_(*idx)].copy() if idx else array.copy(), d, comm)

    # ------------------------------------------------------------ protocol
    def __distarray__(self):
        return {"__version__": PROTOCOL_VERSION, "buffer": self.local,
                "dim_data": self.distribution.dim_data(self.comm.Get_rank())}

    @property
    def shape(self):
        return self.distribution.shape

    @property
    def dtype(self):
        return self.local.dtype

    @property
    def owned(self):
        """View of the part of the local block this rank owns (no padding)."""
        return self.local[self.distribution.owned_slices(self.comm.Get_rank())]

    def _owned_global_indices(self):
        rank = self.comm.Get_rank()
        return [m.global_indices() for m in self.distribution.maps(rank)]

    def gather(self, root=0):
        """The global array on ``root`` (None elsewhere)."""
        pieces = self.comm.gather((self._owned_global_indices(), np.ascontiguousarray(self.owned)),
                                  root=root)
        if self.comm.Get_rank() != root:
            return None
        out = np.empty(self.shape, dtype=self.dtype)
        for idx, data in pieces:
            if idx:
                out[np.ix_(*idx)] = data
            else:
                out[...] = data
        return out

    # ----------------------------------------------------------- reductions
    # np.sum(da), np.max(da), ... call these methods; they go through the
    # ufunc machinery (and so the python-level hooks) like any other call.
    def _reduction(self, ufunc, axis, dtype, out, keepdims, **extra):
        kw = {k: v for k, v in extra.items() if v is not np._NoValue}
        if dtype is not None:
            kw["dtype"] = dtype
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

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        """Mean over all ranks' owned elements (``axis=None``)."""
        if dtype is None:
            dtype = np.float64 if self.dtype.kind in "biu" else self.dtype
        total = self.sum(axis=axis, dtype=dtype, keepdims=keepdims)
        result = np.true_divide(total, int(np.prod(self.shape)))
        if out is not None:
            out[...] = result
            return out
        return result

    # -------------------------------------------------------------- ufuncs
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from nclx import aware
        return aware.array_ufunc(ufunc, method, inputs, kwargs, unwrap=self._unwrap,
                                 wrap=lambda r: r, compute=self._compute)

    def _unwrap(self, x):
        if isinstance(x, DistArray):
            if x.distribution != self.distribution or x.comm is not self.comm:
                raise DapError(f"operands are not identically distributed "
                               f"({x.distribution} vs {self.distribution})")
            return x.local
        if np.ndim(x) == 0:
            return x
        raise DapError(f"cannot combine a DistArray with a {type(x).__name__} of shape "
                       f"{np.shape(x)}")

    def _compute(self, ufunc, method, inputs, kwargs):
        from nclx import aware
        if method == "__call__":
            out = kwargs.get("out")
            if out is not None:
                for o in (out if isinstance(out, tuple) else (out,)):
                    if not isinstance(o, DistArray):
                        raise DapError(f"{ufunc.__name__}: out= must be an identically "
                                       f"distributed DistArray, not {type(o).__name__}")
            try:
                result = aware.run_unwrapped(ufunc, method, inputs, kwargs, self._unwrap,
                                             aware.nclx_ufunc)
            except DapError as exc:
                raise DapError(f"{ufunc.__name__}: {exc}") from None
            if out is not None:
                return result
            if isinstance(result, tuple):
                return tuple(DistArray(r, self.distribution, self.comm) for r in result)
            return DistArray(result, self.distribution, self.comm)
        if method == "reduce":
            return self._reduce_all(ufunc, inputs, kwargs)
        raise DapError(f"{ufunc.__name__}.{method} of a DistArray is not supported: elementwise "
                       f"calls and full reductions are (axis reductions and scans need "
                       f"communication along the process grid)")

    def _reduce_all(self, ufunc, inputs, kwargs):
        """A reduction over every axis: each rank reduces its owned cells with
        nclx's kernel, then the ranks' values are combined in rank order."""
        from nclx import aware
        if len(inputs) != 1 or inputs[0] is not self:
            raise DapError(f"{ufunc.__name__}.reduce: the DistArray must be the only input")
        kw = dict(kwargs)
        axis = kw.pop("axis", 0)
        out = kw.pop("out", None)
        keepdims = kw.pop("keepdims", False)
        axes = tuple(range(len(self.shape))) if axis is None else \
            tuple(sorted(a % len(self.shape) for a in (axis if isinstance(axis, tuple) else (axis,))))
        if axes != tuple(range(len(self.shape))):
            raise DapError(f"{ufunc.__name__}.reduce over axis {axis} of a {len(self.shape)}-d "
                           f"DistArray: only reductions over every axis are supported")
        if kw.get("where") is not None and kw.get("where") is not True:
            where = kw["where"]
            kw["where"] = self._unwrap(where)[self.distribution.owned_slices(self.comm.Get_rank())] \
                if isinstance(where, DistArray) else where
        fn = aware.nclx_ufunc(ufunc)
        owned = self.owned
        has = owned.size > 0
        local = fn.reduce(owned, axis=None, **kw) if has else None
        parts = self.comm.allgather((has, local))
        values = [v for h, v in parts if h]
        if not values:
            if ufunc.identity is None and "initial" not in kw:
                raise ValueError(f"zero-size DistArray: {ufunc.__name__}.reduce has no identity")
            result = fn.reduce(np.empty(0, dtype=kw.get("dtype", self.dtype)), **kw)
        else:
            kw2 = {k: v for k, v in kw.items() if k == "dtype"}
            result = fn.reduce(np.array(values, dtype=np.result_type(*values)), **kw2)
        if keepdims:
            result = np.reshape(result, (1,) * len(self.shape))
        if out is not None:
            o = out[0] if isinstance(out, tuple) else out
            o[...] = result
            return o
        return result

    def __repr__(self):
        return (f"<DistArray shape={self.shape} dtype={self.dtype} rank "
                f"{self.comm.Get_rank()}/{self.comm.Get_size()} local={self.local.shape}>")


for _name, _uf in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("truediv", np.true_divide), ("floordiv", np.floor_divide), ("mod", np.remainder),
                   ("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                   ("ge", np.greater_equal), ("and", np.bitwise_and), ("or", np.bitwise_or),
                   ("xor", np.bitwise_xor)]:
    setattr(DistArray, f"__{_name}__", lambda self, other, _u=_uf: _u(self, other))
    setattr(DistArray, f"__r{_name}__", lambda self, other, _u=_uf: _u(other, self))
DistArray.__neg__ = lambda self: np.negative(self)
DistArray.__abs__ = lambda self: np.absolute(self)


def from_distarray(obj, comm=None):
    """Import any DAP producer (an object with ``__distarray__`` or its
    export dict) without copying: the DistArray's ``local`` is a view of the
    producer's buffer.  Every rank of ``comm`` must call it (the ranks'
    dimension dictionaries are exchanged to build the Distribution)."""
    comm = _comm(comm)
    export = obj.__distarray__() if hasattr(obj, "__distarray__") else obj
    export = validate(export)
    everyone = comm.allgather(export["dim_data"])
    dist = Distribution.from_dim_data_per_rank(everyone)
    return DistArray(np.asarray(memoryview(export["buffer"])) if not isinstance(export["buffer"], np.ndarray)
                     else export["buffer"], dist, comm)
