"""The global view of a distributed array: one dimension dictionary per
grid coordinate and dimension, over a C-order process grid."""
import operator

import numpy as np

from nclx.dap.crossrank import per_dim_of, same_dim_dict
from nclx.dap.maps import map_from_dim_dict
from nclx.dap.validate import DapError, DapTypeError, normalize_dim_dict

_DIST_ALIASES = {"b": "b", "block": "b", "c": "c", "cyclic": "c", "n": "n", None: "n",
                 "undistributed": "n"}


def dims_create(nprocs, ndims):
    """Balanced grid shape like MPI_Dims_create: factors as equal as possible,
    non-increasing."""
    if nprocs < 1 or ndims < 0:
        raise DapError(f"cannot make a grid of {nprocs} processes in {ndims} dimensions")
    if ndims == 0:
        if nprocs != 1:
            raise DapError(f"{nprocs} processes need at least one distributed dimension")
        return ()
    factors, n, p = [], nprocs, 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    dims = [1] * ndims
    for f in sorted(factors, reverse=True):
        dims[dims.index(min(dims))] *= f
    return tuple(sorted(dims, reverse=True))


def _per_dim(value, ndim, name, default):
    """``value`` per dimension: a list or tuple of ``ndim`` (None entries
    are ``default``), or one value for every dimension (review 27:
    ``padding=1, periodic=True`` on a 1-D shape, docs/dap.md's own example,
    were refused as "one value per dimension (1), not 1")."""
    if value is None:
        return [default] * ndim
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if not isinstance(value, (list, tuple, np.ndarray)):
        return [value] * ndim
    if not isinstance(value, (list, tuple)) or len(value) != ndim:
        raise DapError(f"{name} must give one value per dimension ({ndim}), not {value!r}")
    return [default if v is None else v for v in value]


def _integers(values, name):
    """Each of ``values`` (None kept) as an int: a float or a string is
    refused, not truncated (before: padding 1.7 became 1; found by review)."""
    out = []
    for d, v in enumerate(values):
        if v is None or isinstance(v, (bool, np.bool_)):
            if v is not None:
                raise DapTypeError(f"{name}[{d}] must be an integer, not {v!r}")
            out.append(v)
            continue
        try:
            out.append(operator.index(v))
        except TypeError:
            raise DapTypeError(f"{name}[{d}] must be an integer, not {v!r}") from None
    return out


def _flags(values, name):
    """Each of ``values`` as a bool: True, False (NumPy's too) or 0 / 1; a
    string is refused (before: 'no' was True; found by review)."""
    out = []
    for d, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)):
            out.append(bool(v))
            continue
        try:
            i = operator.index(v)
        except TypeError:
            i = None
        if i not in (0, 1):
            raise DapTypeError(f"{name}[{d}] must be True or False, not {v!r}")
        out.append(bool(i))
    return out


class Distribution:
    """Dimension dictionaries of every grid coordinate, and the grid.

    Build one with :meth:`from_shape` or :meth:`from_dim_data_per_rank`.
    """

    def __init__(self, per_dim):
        # per_dim[d][c]: normalised dimension dictionary of grid coordinate c in dimension d
        self._dims = [list(col) for col in per_dim]
        self.grid_shape = tuple(len(col) for col in self._dims)
        self.nprocs = int(np.prod(self.grid_shape, dtype=np.int64)) if self._dims else 1
        self.shape = tuple(col[0]["size"] for col in self._dims)
        self.ndim = len(self._dims)
        self.dist = tuple(col[0]["dist_type"] for col in self._dims)

    def __getstate__(self):
        # the dimension dictionaries only: maps, layouts, keys and checks are
        # caches, rebuilt on use (a 'u' map's index tables would triple a pickle)
        return {"_dims": self._dims}

    def __setstate__(self, state):
        self.__init__(state["_dims"])
        for col in self._dims:                # a Distribution's indices stay read-only
            for dd in col:
                if isinstance(dd.get("indices"), np.ndarray):
                    dd["indices"].flags.writeable = False

    # ------------------------------------------------------------ builders
    @classmethod
    def from_shape(cls, shape, dist=None, grid_shape=None, nprocs=None, block_size=None,
                   padding=None, periodic=None):
        """Distribute a global ``shape``: ``dist`` per dimension is 'b' (block,
        balanced: local sizes differ by at most one), 'c' (cyclic or, with
        ``block_size``, block-cyclic) or 'n' (undistributed).  ``padding`` is
        the communication padding width of block dimensions.  ``shape`` may
        be one int; ``dist``, ``block_size``, ``padding`` and ``periodic``
        one value per dimension or one value for every dimension."""
        # integers only: int() truncated a float extent (DistArray.from_shape((4.7,))
        # was 4 long) and parsed a string (found by review); NumPy refuses both
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
            shape = (shape,)          # NumPy's int shape (review 27: "not iterable")
        shape = tuple(_integers(list(shape), "shape"))
        if None in shape:
            raise DapTypeError(f"shape must hold integers, not {shape!r}")
        ndim = len(shape)
        if any(s < 0 for s in shape):
            raise DapError(f"shape {shape} has a negative extent")
        dist = _per_dim(dist, ndim, "dist", "b") if not isinstance(dist, str) else [dist] * ndim
        try:
            dist = [_DIST_ALIASES[d] for d in dist]
        except (KeyError, TypeError):
            raise DapError(f"dist must be 'b', 'c' or 'n' per dimension, not {dist!r}") from None
        block_size = _integers(_per_dim(block_size, ndim, "block_size", 1), "block_size")
        padding = _integers(_per_dim(padding, ndim, "padding", 0), "padding")
        periodic = _flags(_per_dim(periodic, ndim, "periodic", False), "periodic")
        for d in range(ndim):
            # checked for every dimension, used where it applies (block_size
            # for 'c', padding and periodic for 'b' and 'n'): one set of
            # keywords serves every dist (before, 0 or -5 passed unchecked
            # where ignored; found by review)
            if block_size[d] < 1:
                raise DapError(f"block_size[{d}] must be >= 1, got {block_size[d]}")
            if padding[d] < 0:
                raise DapError(f"padding[{d}] must be >= 0, got {padding[d]}")
        distributed = [d for d in range(ndim) if dist[d] != "n"]
        if grid_shape is None:
            if nprocs is not None and (isinstance(nprocs, (bool, np.bool_)) or
                                       not isinstance(nprocs, (int, np.integer))):
                raise DapTypeError(f"nprocs must be an integer, not {nprocs!r}")
            nprocs = 1 if nprocs is None else int(nprocs)
            sub = dims_create(nprocs, len(distributed)) if distributed else dims_create(nprocs, 0)
            grid = [1] * ndim
            for d, g in zip(distributed, sub):
                grid[d] = g
        else:
            grid = _integers(list(grid_shape), "grid_shape")
            if None in grid:
                raise DapTypeError(f"grid_shape must hold integers, not {tuple(grid_shape)!r}")
            if len(grid) != ndim:
                raise DapError(f"grid_shape {tuple(grid)} has {len(grid)} dimensions, shape has {ndim}")
            if nprocs is not None and int(np.prod(grid)) != nprocs:
                raise DapError(f"grid_shape {tuple(grid)} holds {int(np.prod(grid))} processes, "
                               f"not {nprocs}")
            for d in range(ndim):
                if dist[d] == "n" and grid[d] != 1:
                    raise DapError(f"dimension {d} is undistributed but grid_shape gives it {grid[d]}")
        per_dim = []
        for d in range(ndim):
            n, P = shape[d], grid[d]
            if P < 1:
                raise DapError(f"grid_shape[{d}] must be >= 1, got {P}")
            col = []
            if dist[d] == "c":
                k = int(block_size[d])
                if k < 1:
                    raise DapError(f"block_size[{d}] must be >= 1, got {k}")
                for c in range(P):
                    col.append(normalize_dim_dict(dict(
                        dist_type="c", size=n, start=min(c * k, n), block_size=k,
                        proc_grid_size=P, proc_grid_rank=c), d))
            else:
                w = int(padding[d])
                per = periodic[d]
                counts = [n // P + (1 if c < n % P else 0) for c in range(P)]
                if w < 0:
                    raise DapError(f"padding[{d}] must be >= 0, got {w}")
                if w and (P > 1 or per) and min(counts) < w:
                    raise DapError(f"padding[{d}] = {w} is wider than the smallest block "
                                   f"({min(counts)} elements)")
                lo = 0
                for c in range(P):
                    hi = lo + counts[c]
                    # a periodic dimension pads its edges too (one rank wraps onto itself)
                    left = w if (c > 0 or per) else 0
                    right = w if (c < P - 1 or per) else 0
                    col.append(normalize_dim_dict(dict(
                        dist_type="b", size=n, start=lo - left, stop=hi + right,
                        padding=(left, right), periodic=bool(per), proc_grid_size=P,
                        proc_grid_rank=c), d))
                    lo = hi
            per_dim.append(col)
        return cls(per_dim)

    @classmethod
    def from_dim_data_per_rank(cls, seq):
        """The Distribution of a sequence of ``dim_data`` tuples, one per rank.

        Checks the cross-rank rules: ranks map to grid coordinates in C
        order, sizes agree, block ranges tile each dimension and
        communication padding matches (and fits) the neighbour's."""
        return cls(per_dim_of(seq))

    # ------------------------------------------------------------- queries
    def _per_rank(self, name, rank, make):
        """``make(rank)``, kept per rank in the cache ``name`` (a Distribution
        does not change).  Only plain ints are kept: other rank types are
        computed, and checked, every call, so what they give never depends on
        earlier calls."""
        if type(rank) is not int:
            return make(rank)
        cache = self.__dict__.setdefault(name, {})
        value = cache.get(rank)
        if value is None:
            value = cache[rank] = make(rank)
        return value

    def coords_from_rank(self, rank):
        """``rank``'s grid coordinates (C order)."""
        return self._per_rank("_coords", rank, self._coords_of)

    def _coords_of(self, rank):
        if not 0 <= rank < self.nprocs:
            raise DapError(f"rank {rank} is outside the grid of {self.nprocs} processes")
        return tuple(int(c) for c in np.unravel_index(rank, self.grid_shape)) if self.ndim else ()

    def rank_from_coords(self, coords):
        coords = tuple(int(c) for c in coords)
        if len(coords) != self.ndim or any(not 0 <= c < g for c, g in zip(coords, self.grid_shape)):
            raise DapError(f"coordinates {coords} are outside the grid {self.grid_shape}")
        return int(np.ravel_multi_index(coords, self.grid_shape)) if self.ndim else 0

    def dim_data(self, rank):
        """The dimension dictionaries of ``rank``."""
        coords = self.coords_from_rank(rank)
        return tuple(dict(self._dims[d][c]) for d, c in enumerate(coords))

    def maps(self, rank):
        """The maps of ``rank``'s dimensions."""
        return list(self._per_rank("_maps", rank, lambda r: [
            self.column_map(d, c) for d, c in enumerate(self.coords_from_rank(r))]))

    def column_map(self, d, c):
        """The map of grid coordinate ``c`` along dimension ``d``: one object
        per coordinate, shared by every rank's maps and by moves (a 'u'
        map's index tables are built once)."""
        cache = self.__dict__.setdefault("_column_maps", {})
        m = cache.get((d, c))
        if m is None:
            m = cache[(d, c)] = map_from_dim_dict(dict(self._dims[d][c]))
        return m

    def local_shape(self, rank):
        return tuple(m.local_size for m in self.maps(rank))

    def owned_slices(self, rank):
        """Index of the owned part of ``rank``'s local buffer (padding excluded)."""
        return self._per_rank("_owned_cache", rank, self._owned_of)

    def _owned_of(self, rank):
        return tuple(slice(m.comm_padding[0], m.local_size - m.comm_padding[1])
                     if m.dist_type == "b" else slice(None) for m in self.maps(rank))

    def owner_ranks(self, *global_indices):
        """Rank owning each global index (one integer array per dimension,
        broadcast together)."""
        if len(global_indices) != self.ndim:
            raise DapError(f"owner_ranks needs {self.ndim} index arrays, got {len(global_indices)}")
        idx = np.broadcast_arrays(*[np.asarray(g) for g in global_indices])
        coords = []
        for d, g in enumerate(idx):
            if g.dtype.kind not in "iu":
                raise DapError(f"global indices of dimension {d} must be integers, not {g.dtype}")
            if np.any((g < 0) | (g >= self.shape[d])):
                bad = int(g[(g < 0) | (g >= self.shape[d])].ravel()[0])
                raise IndexError(f"global index {bad} is outside dimension {d} of size {self.shape[d]}")
            owner = np.full(g.shape, -1, dtype=np.int64)
            for c, dd in enumerate(self._dims[d]):
                owner[map_from_dim_dict(dd).owns(g)] = c
            if np.any(owner < 0):
                bad = int(g[owner < 0].ravel()[0])
                raise IndexError(f"no rank owns global index {bad} of dimension {d}")
            coords.append(owner)
        return np.ravel_multi_index(coords, self.grid_shape) if self.ndim else np.zeros((), int)

    def __eq__(self, other):
        if not isinstance(other, Distribution) or self.grid_shape != other.grid_shape:
            return False
        return all(same_dim_dict(a, b) for ca, cb in zip(self._dims, other._dims) for a, b in zip(ca, cb))

    def __repr__(self):
        return f"Distribution(shape={self.shape}, dist={self.dist}, grid_shape={self.grid_shape})"
