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
    def _reduce(self, name, mpi_op):
        owned = self.owned
        has = owned.size > 0
        local = getattr(np, name)(owned) if has else None
        parts = self.comm.allgather((has, local))
        values = [v for h, v in parts if h]
        if not values:
            if name == "sum":
                return self.dtype.type(0)
            raise ValueError(f"zero-size DistArray has no {name}")
        return getattr(np, name)(np.array(values, dtype=np.result_type(*values)))

    def sum(self):
        """Sum over all ranks' owned elements."""
        return self._reduce("sum", None)

    def max(self):
        return self._reduce("max", None)

    def min(self):
        return self._reduce("min", None)

    # -------------------------------------------------------------- ufuncs
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__":
            return NotImplemented
        import nclx.hooks as hooks
        sub = hooks.SUBSYSTEMS.index(hooks.subsystem_of(ufunc, method))
        return hooks.run_python_chain(sub, ufunc, method, inputs, kwargs, self._local_call)

    def _local_call(self, ufunc, method, inputs, kwargs):
        import nclx.ufuncs as nu
        locals_ = []
        for x in inputs:
            if isinstance(x, DistArray):
                if x.distribution != self.distribution or x.comm is not self.comm:
                    raise DapError(f"{ufunc.__name__}: operands are not identically distributed "
                                   f"({x.distribution} vs {self.distribution})")
                locals_.append(x.local)
            elif np.ndim(x) == 0:
                locals_.append(x)
            else:
                raise DapError(f"{ufunc.__name__}: cannot combine a DistArray with a "
                               f"{type(x).__name__} of shape {np.shape(x)}")
        out = kwargs.get("out")
        if out is not None:
            outs = out if isinstance(out, tuple) else (out,)
            for o in outs:
                if not isinstance(o, DistArray) or o.distribution != self.distribution:
                    raise DapError(f"{ufunc.__name__}: out= must be an identically distributed DistArray")
            kwargs = dict(kwargs, out=tuple(o.local for o in outs))
        kernel = getattr(nu, ufunc.__name__, None)
        func = kernel if isinstance(kernel, np.ufunc) else ufunc
        result = func(*locals_, **kwargs)
        if out is not None:
            return out
        if isinstance(result, tuple):
            return tuple(DistArray(r, self.distribution, self.comm) for r in result)
        return DistArray(result, self.distribution, self.comm)

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
