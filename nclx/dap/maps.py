"""Maps between local and global indices of one distributed dimension.

All methods are vectorised: they take an integer or an integer array and
return the same shape.  ``IndexError`` names the first index that is not
valid.
"""
import numpy as np

from nclx.dap.validate import (
    DapError,
    DapTypeError,
    check_indices_in_range,
    local_length,
    normalize_dim_dict,
)


def _as_index(idx, what):
    arr = np.asarray(idx)
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise DapTypeError(f"{what} indices must be integers, not {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _first_bad(arr, ok):
    bad = arr[~ok] if arr.ndim else arr
    return int(np.ravel(bad)[0])


class _Map:
    dist_type = None

    def __init__(self, dd):
        self.dim_dict = dd
        self.size = dd["size"]
        self.grid_size = dd["proc_grid_size"]
        self.grid_rank = dd["proc_grid_rank"]
        self.local_size = local_length(dd)

    def _check_local(self, idx):
        arr = _as_index(idx, "local")
        ok = (arr >= 0) & (arr < self.local_size)
        if not np.all(ok):
            raise IndexError(f"local index {_first_bad(arr, ok)} is outside the local buffer "
                             f"of {self.local_size} elements")
        return arr

    def global_indices(self):
        """Global indices this rank owns, in local order (communication padding excluded)."""
        return self.global_from_local(self._owned_local())

    def check_global_range(self, dim=0, rank=None):
        """DapError (naming rank, dimension, position and index) unless every
        local index maps into ``[0, size)``: only a 'u' map can fail (DAP 0.10
        allows negative and out-of-range indices in an export)."""
        check_indices_in_range(self.dim_dict, dim, rank)

    @property
    def num_owned(self):
        return int(self._owned_local().size)

    def __repr__(self):
        return (f"{type(self).__name__}(size={self.size}, grid {self.grid_rank}/"
                f"{self.grid_size}, local={self.local_size}, owned={self.num_owned})")


class BlockMap(_Map):
    """Block dimension: the local buffer holds global ``[start, stop)``,
    padding included (wrapping modulo size on a periodic dimension)."""
    dist_type = "b"

    def __init__(self, dd):
        super().__init__(dd)
        self.start, self.stop = dd["start"], dd["stop"]
        self.padding = dd["padding"]
        self.periodic = dd["periodic"]
        first, last = self.grid_rank == 0, self.grid_rank == self.grid_size - 1
        # edge padding on a non-periodic dimension is boundary padding: owned
        self.comm_padding = (self.padding[0] if (self.periodic or not first) else 0,
                             self.padding[1] if (self.periodic or not last) else 0)

    def _owned_local(self):
        return np.arange(self.comm_padding[0], self.local_size - self.comm_padding[1])

    def global_from_local(self, idx):
        g = self.start + self._check_local(idx)
        return g % self.size if (self.periodic and self.size) else g

    def _local_candidates(self, g):
        i = g - self.start
        if self.periodic and self.size:
            i = np.where(i < 0, i + self.size, i)
            i = np.where(i >= self.local_size, i - self.size, i)
        return i

    def local_from_global(self, idx):
        g = _as_index(idx, "global")
        i = self._local_candidates(g)
        ok = (i >= 0) & (i < self.local_size) & (g >= 0) & (g < self.size)
        if not np.all(ok):
            raise IndexError(f"global index {_first_bad(g, ok)} is not held by grid rank "
                             f"{self.grid_rank} (local range [{self.start}, {self.stop}))")
        return i

    def owns(self, idx):
        g = _as_index(idx, "global")
        i = self._local_candidates(g)
        return ((i >= self.comm_padding[0]) & (i < self.local_size - self.comm_padding[1])
                & (g >= 0) & (g < self.size))


class CyclicMap(_Map):
    """Cyclic (block_size 1) or block-cyclic dimension, as MPI's CYCLIC(k):
    block b of ``block_size`` indices belongs to grid rank ``b % P``."""
    dist_type = "c"

    def __init__(self, dd):
        super().__init__(dd)
        self.block_size = dd["block_size"]
        self.start = dd["start"]

    def _owned_local(self):
        return np.arange(self.local_size)

    def global_from_local(self, idx):
        i = self._check_local(idx)
        k, P = self.block_size, self.grid_size
        return ((i // k) * P + self.grid_rank) * k + i % k

    def owns(self, idx):
        g = _as_index(idx, "global")
        return (g >= 0) & (g < self.size) & ((g // self.block_size) % self.grid_size == self.grid_rank)

    def local_from_global(self, idx):
        g = _as_index(idx, "global")
        ok = self.owns(g)
        if not np.all(ok):
            raise IndexError(f"global index {_first_bad(g, ok)} is not owned by grid rank "
                             f"{self.grid_rank} (block_size {self.block_size}, "
                             f"{self.grid_size} ranks)")
        k = self.block_size
        return (g // k // self.grid_size) * k + g % k


class UnstructuredMap(_Map):
    """Unstructured dimension: the local buffer holds ``indices`` in order."""
    dist_type = "u"

    def __init__(self, dd):
        super().__init__(dd)
        self.indices = dd["indices"]
        self.one_to_one = dd["one_to_one"]
        self._sorted = np.sort(self.indices)      # every map of a layout: owners by search
        self._order = None

    @property
    def order(self):
        """Local positions in global order (built on first use: only the
        maps of this rank's own blocks need it)."""
        if self._order is None:
            self._order = np.argsort(self.indices, kind="stable")
        return self._order

    def _owned_local(self):
        return np.arange(self.local_size)

    def global_from_local(self, idx):
        return self.indices[self._check_local(idx)]

    def owns(self, idx):
        g = _as_index(idx, "global")
        if not self._sorted.size:
            return np.zeros(g.shape, dtype=bool)
        pos = np.clip(np.searchsorted(self._sorted, g), 0, self._sorted.size - 1)
        return self._sorted[pos] == g

    def local_from_global(self, idx):
        g = _as_index(idx, "global")
        ok = self.owns(g)
        if not np.all(ok):
            raise IndexError(f"global index {_first_bad(g, ok)} is not in this rank's indices")
        return self.order[np.searchsorted(self._sorted, g)]


def check_global_range(distribution):
    """Check that every rank's indices of a ``Distribution`` lie in the
    global range ``[0, size)`` of their dimension.

    Call it, on every rank, before an operation places local data in the
    global array (``DistArray.gather``, ``DistArray.from_global``): it reads
    only the Distribution, which every rank holds whole, so every rank raises
    the same DapError (naming dimension, grid coordinate, ranks, position and
    index) and none is left waiting in a collective.
    """
    grid = distribution.grid_shape
    for d in range(distribution.ndim):
        for c in range(grid[d]):
            coords = [0] * len(grid)
            coords[d] = c
            dd = distribution.dim_data(distribution.rank_from_coords(coords))[d]
            try:
                check_indices_in_range(dd, d)
            except DapError as exc:
                ranks = [r for r in range(distribution.nprocs)
                         if distribution.coords_from_rank(r)[d] == c]
                shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
                who = f"rank {shown}" if len(ranks) == 1 else f"ranks {shown}"
                raise DapError(f"dimension {d}, proc_grid_rank {c} ({who}): {exc}") from None


def map_from_dim_dict(dd, length=None):
    """The map of one (possibly unnormalised) dimension dictionary.

    ``length`` (the buffer's extent) is needed only for an empty dictionary.
    """
    dd = normalize_dim_dict(dd, 0, length)
    return {"b": BlockMap, "c": CyclicMap, "u": UnstructuredMap}[dd["dist_type"]](dd)


def num_owned_indices(dd, length=None):
    """Number of global indices a dimension dictionary's rank owns."""
    return map_from_dim_dict(dd, length).num_owned
