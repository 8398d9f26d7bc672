"""``np.unique`` of a DistArray: the global result, a NumPy array on every
rank (with ``return_counts``, the counts too), equal to NumPy's.

Each rank finds its own distinct values and their counts (NumPy's
``np.unique``); these are sample-sorted over the ranks (:mod:`._samplesort`,
the counts travelling with them); each rank finds the runs of equal values
in its bucket (adding their counts), one ``allgather`` of
each bucket's first and last values joins a run cut between buckets (its
count goes to the rank where it starts), and two ``Allgatherv`` write the
values and counts straight into the result on every rank.  A rank holds
its part, its bucket and the result, nothing more: for an array of distinct
values the result is as large as the array, for few distinct values it is
small.  Where zero is held as both ``-0.0`` and ``0.0`` (or NaN with
different bits) the one value kept may have the other sign (bits) than
NumPy's sort path (its unstable sort picks); the values alone of native
complex numbers, which NumPy 2.3+ finds by hashing, keep its first cell in
C order (:func:`_first_seen`), NumPy's bits.  ``return_index`` (each value's first global C-order index: one
``Allreduce`` of per-rank minima) and ``return_inverse`` (a DistArray of
positions in the result, distributed like the input, NumPy 2's shape) are
found from the global result every rank holds; with ``equal_nan=False``
each NaN cell is its own entry, in C order of the cells (one
``Allgatherv`` of the NaN cells' flat indices and bits: the result holds
one entry for each anyway).  ``axis=k`` (:func:`_unique_axis`): the
slices along ``k`` become records of NumPy's consolidated structured dtype
after one redistribution (``k`` block-distributed, the other axes whole)
and take the same path.  One agreement first raises on every rank
if a rank failed or the ranks passed different arguments.
"""
import numpy as np

from nclx.dap.distarray import DistArray
from nclx.dap.distribution import Distribution
from nclx.dap.fold import agreed_call
from nclx.dap.functions._layout import agree_call, axis_of, from_owned
from nclx.dap.functions._samplesort import mpi, sample_sort
from nclx.dap.redistribute import redistribute
from nclx.dap.registry import implements


def _same(x, y, equal_nan):
    """Equal values (NaN equal to NaN, NaT to NaT, where ``equal_nan``),
    elementwise."""
    eq = x == y
    if equal_nan and x.dtype.kind in "fcmM":
        eq |= np.isnan(x) & np.isnan(y)
    return eq


def _joins(edges, equal_nan):
    """From every rank's (first value, last value, number of runs): whether
    each rank's first run continues the run before it, and how many counts
    each rank's last run takes from later ranks' first runs."""
    drop = [False] * len(edges)
    prev = None
    for r, edge in enumerate(edges):
        if edge is None:
            continue
        first, last, runs = edge
        if prev is not None and bool(_same(np.asarray(first), np.asarray(prev), equal_nan)):
            drop[r] = True
            if runs == 1:                  # all of this rank's values continue that run
                continue
        prev = last
    return drop


def _allgatherv(comm, local, sizes, dtype):
    out = np.empty(int(sizes.sum()), dtype)
    item = out.dtype.itemsize
    displs = np.concatenate(([0], np.cumsum(sizes)[:-1])) * item
    comm.Allgatherv([np.ascontiguousarray(local).view(np.uint8), mpi().BYTE],
                    [out.view(np.uint8), (sizes * item, displs), mpi().BYTE])
    return out


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):
    """``np.unique`` of a DistArray (see the module doc)."""
    comm = ar.comm
    error = ax = None
    try:
        if ar.dtype.hasobject:
            raise TypeError(f"np.unique: a DistArray of dtype {ar.dtype} is not supported")
        if axis is not None:
            ax = axis_of(ar, axis, "np.unique")
            if ar.dtype.names is not None:
                raise TypeError(f"The axis argument to unique is not supported for dtype "
                                f"{ar.dtype}")
    except Exception as exc:  # noqa: BLE001 - raised on every rank by agree_call()
        error = exc
    agree_call(comm, error, "np.unique",
               (return_index, return_inverse, return_counts, axis, equal_nan, sorted))
    if ax is not None and ar.distribution.ndim > 1:
        return _unique_axis(ar, ax, return_index, return_inverse, return_counts, equal_nan)
    out = _unique_core(ar, return_index, return_inverse, return_counts, equal_nan)
    return out[0] if len(out) == 1 else tuple(out)


def _unique_core(ar, return_index, return_inverse, return_counts, equal_nan):
    """``[values, index?, inverse?, counts?]`` of the flattened ``ar``."""
    comm = ar.comm
    # each rank's own distinct values and counts first: few values move if few differ
    mine, held = agreed_call(comm, lambda: np.unique(ar.owned, return_counts=True,
                                                     equal_nan=equal_nan),
                             "np.unique:local", "np.unique")
    held, bucket = sample_sort(comm, mine.reshape(1, -1), payload=held.astype(np.int64))
    n = bucket.shape[0]
    new = np.ones(n, bool)
    new[1:] = ~_same(bucket[1:], bucket[:-1], equal_nan)     # where a run starts
    starts = np.flatnonzero(new)
    del new
    values = bucket[starts]
    counts = np.add.reduceat(held, starts).astype(np.intp) if n else np.zeros(0, np.intp)
    del bucket, held
    edges = comm.allgather(None if n == 0 else (values[0], values[-1], values.shape[0]))
    drop = _joins(edges, equal_nan)
    me = comm.Get_rank()
    # a first run that continues the run before it: its count goes where that run starts
    carry = np.zeros(comm.Get_size(), np.int64)
    if drop[me]:
        carry[_start_of_run(edges, drop, me)] = counts[0]
    got = np.empty_like(carry)
    comm.Allreduce(carry, got, op=mpi().SUM)
    if drop[me]:
        values, counts = values[1:], counts[1:]
    if values.shape[0]:
        counts[-1] += got[me]
    sizes = np.array([0 if e is None else e[2] - int(d) for e, d in zip(edges, drop)], np.int64)
    result = _allgatherv(comm, values, sizes, ar.dtype)
    if equal_nan and not (return_index or return_inverse or return_counts) and \
            _first_seen_kept(ar.dtype):
        _first_seen(ar, result)
    out = [result]
    if return_index or return_inverse:
        index, inverse = _indices(ar, result, return_index, equal_nan)
        if return_index:
            out.append(index)
        if return_inverse:
            out.append(inverse)
    if return_counts:
        out.append(_allgatherv(comm, counts, sizes, np.intp))
    return out


def _unique_axis(ar, ax, return_index, return_inverse, return_counts, equal_nan):
    """``np.unique(ar, axis=ax)``: the array is redistributed (one
    Alltoallw) to ``ax`` block-distributed over every rank and the other
    axes whole, each slice along ``ax`` is one record of a structured dtype
    (NumPy's own consolidation: its fields compare in order, NaN last, and
    a slice holding a NaN equals no other), and the records go through
    the flattened path as a 1-D DistArray; the values come back as slices
    along ``ax``, the inverse is a DistArray of ``ar.shape[ax]``
    block-distributed."""
    comm, P = ar.comm, ar.comm.Get_size()
    shape = ar.shape
    n, rest = shape[ax], tuple(s for d, s in enumerate(shape) if d != ax)
    K = int(np.prod(rest, dtype=np.int64))
    rows = Distribution.from_shape((n,), "b", nprocs=P)
    if K == 0 or n == 0:        # no cells: NumPy's result does not depend on data
        res = np.unique(np.zeros(shape, ar.dtype), return_index, return_inverse,
                        return_counts, axis=ax, equal_nan=equal_nan)
        out = list(res) if isinstance(res, tuple) else [res]
        if return_inverse:
            k = 1 + int(return_index)
            out[k] = DistArray.from_global(out[k], dist=rows, comm=comm)
        return out[0] if len(out) == 1 else tuple(out)
    target = tuple("b" if d == ax else "n" for d in range(len(shape)))
    b = redistribute(ar, target, grid_shape=tuple(P if d == ax else 1 for d in range(len(shape))))
    lines = np.ascontiguousarray(np.moveaxis(b.owned, ax, 0).reshape(-1, K))
    del b
    records = np.dtype([(f"f{i}", ar.dtype) for i in range(K)])
    as_rows = DistArray._of(lines.view(records).reshape(-1), rows, comm)
    del lines
    out = _unique_core(as_rows, return_index, return_inverse, return_counts, equal_nan)
    uniq = out[0]
    out[0] = np.moveaxis(uniq.view(ar.dtype).reshape((uniq.shape[0],) + rest), 0, ax)
    return out[0] if len(out) == 1 else tuple(out)


def _flat_indices(ar, size):
    """Global C-order flat indices of this rank's owned cells (C order of
    the owned block)."""
    idx = [m.global_indices() for m in ar.distribution.maps(ar.comm.Get_rank())]
    return np.ravel_multi_index(np.ix_(*idx), ar.shape).reshape(-1).astype(np.int64) if idx \
        else np.zeros(size, np.int64)


def _indices(ar, uniq, first, equal_nan=True):
    """NumPy's ``return_index`` (with ``first``: the global C-order index of
    each value's first occurrence, one ``Allreduce`` of the minima) and
    ``return_inverse`` (each cell's position in ``uniq``: a DistArray
    distributed like ``ar``), from the global ``uniq`` every rank holds:
    equal values (both zeros, every NaN) find one position, as in NumPy.
    With ``equal_nan=False`` every NaN, and with a structured dtype every
    record holding a NaN, is an entry of its own (:func:`_apart`)."""
    own = np.asarray(ar.owned).reshape(-1)
    flat = _flat_indices(ar, own.size) if first or not equal_nan or \
        ar.dtype.names is not None else None
    apart = None
    if (not equal_nan and ar.dtype.kind in "fcmM") or ar.dtype.names is not None:
        apart = _apart(ar, uniq, own, flat)
    inv = np.searchsorted(uniq, own).astype(np.intp)
    keep = slice(None)
    if equal_nan and ar.dtype.kind == "c":
        # NumPy's one NaN entry (the last) holds every complex NaN, which
        # searchsorted orders apart (nan+0j after 1+nanj); its first index
        # is that of the first cell sorting like the entry's value
        nans = np.isnan(own)
        slot = np.searchsorted(np.isnan(uniq), True)
        keep = ~(nans & (inv != slot))
        inv[nans] = slot
    if apart is not None:
        mask, where, slots = apart
        inv[mask] = slots[np.searchsorted(where, flat[mask])]
    index = None
    if first:
        index = np.full(uniq.shape[0], np.iinfo(np.int64).max, np.int64)
        keep = keep if apart is None else ~apart[0]
        np.minimum.at(index, inv[keep], flat[keep])
        if apart is not None:
            index[apart[2]] = apart[1]
        ar.comm.Allreduce(mpi().IN_PLACE, index, op=mpi().MIN)
        if ar.dtype.kind in "fc" or ar.dtype.names is not None:
            _bits_at(ar.comm, uniq, own, flat, index)
        index = index.astype(np.intp)
    inverse = from_owned(DistArray, ar.distribution, ar.comm,
                         inv.reshape(np.asarray(ar.owned).shape), np.intp)
    return index, inverse


def _first_seen_kept(dtype):
    """Whether NumPy's values-only ``np.unique`` keeps, of equal values with
    other bits, the first in C order: its hash path (NumPy 2.3 and later)
    where it takes the dtype and compares values (native complex: both
    zeros, every NaN; non-native complex it compares by bytes, keeping
    equal values apart -- its sort path's merge is kept there)."""
    if dtype.kind != "c" or not dtype.isnative:
        return False
    try:
        from numpy._core._multiarray_umath import _unique_hash
    except ImportError:              # NumPy before 2.3: its sort path
        return False
    return _unique_hash(np.zeros(0, dtype), equal_nan=True) is not NotImplemented


def _first_seen(ar, uniq):
    """Each entry of ``uniq`` takes the bits of its first cell in C order
    (every complex NaN one entry, the last), as NumPy's hash path keeps
    them; one ``Allreduce`` of a flag, and where a rank holds a cell whose
    bits differ from its entry's, one of the entries' first indices and one
    of their bits (:func:`_bits_at`)."""
    # contiguous: owned cells of a padded block are a strided view, whose
    # byte view raised on that rank alone while the others waited in the
    # Allreduce below (found by review)
    own = np.ascontiguousarray(np.asarray(ar.owned).reshape(-1))
    inv = np.searchsorted(uniq, own)
    nans = np.isnan(own)
    inv[nans] = np.searchsorted(np.isnan(uniq), True)
    width = ar.dtype.itemsize
    differ = bool(own.shape[0]) and bool(np.any(
        own.view(np.uint8).reshape(-1, width) != uniq[inv].view(np.uint8).reshape(-1, width)))
    if not ar.comm.allreduce(differ, op=mpi().LOR):
        return
    flat = _flat_indices(ar, own.size)
    index = np.full(uniq.shape[0], np.iinfo(np.int64).max, np.int64)
    np.minimum.at(index, inv, flat)
    ar.comm.Allreduce(mpi().IN_PLACE, index, op=mpi().MIN)
    _bits_at(ar.comm, uniq, own, flat, index)


def _bits_at(comm, uniq, own, flat, index):
    """NumPy's entries with ``return_index`` are the cells at their first
    index (its argsort is stable): equal values of other bits (both zeros,
    NaNs of other payloads) take that cell's bits in ``uniq`` (one
    bitwise-or ``Allreduce`` from the cells' owners)."""
    order = np.argsort(flat, kind="stable")
    loc = np.minimum(np.searchsorted(flat[order], index), max(flat.shape[0] - 1, 0))
    mine = flat[order][loc] == index if flat.shape[0] else np.zeros(index.shape, bool)
    got = np.zeros(uniq.shape[0], uniq.dtype)
    got[mine] = own[order[loc[mine]]]
    bits = np.ascontiguousarray(got).view(np.uint8)
    comm.Allreduce(mpi().IN_PLACE, bits, op=mpi().BOR)
    uniq[...] = bits.view(uniq.dtype)


def _apart(ar, uniq, own, flat):
    """Cells equal to no other (``x != x``: a NaN with ``equal_nan=False``,
    a record holding a NaN): each is an entry of ``uniq`` of its own, and
    the entries of cells that sort alike (every NaN) follow C order of the
    cells (NumPy's order with ``return_index``, whose argsort is stable;
    with ``return_inverse`` alone NumPy's order of them is its unstable
    argsort's).  One ``Allgatherv`` of every such cell's flat index and bits
    (the result holds an entry for each anyway) writes their bits into
    ``uniq`` in that order.  Returns ``(this rank's mask of such cells, the
    flat indices of all of them in increasing order, the entry of each)``."""
    mask = np.asarray(own != own).reshape(-1)
    sizes = np.array(ar.comm.allgather(int(np.count_nonzero(mask))), np.int64)
    where = _allgatherv(ar.comm, flat[mask], sizes, np.int64)
    bits = _allgatherv(ar.comm, own[mask], sizes, ar.dtype)
    order = np.argsort(where, kind="stable")
    where, bits = where[order], bits[order]
    order = np.argsort(bits, kind="stable")           # by value, then C order
    first = np.searchsorted(uniq, bits[order], side="left")
    within = np.arange(order.shape[0]) - np.searchsorted(bits[order], bits[order], side="left")
    slots = np.empty(order.shape[0], np.int64)
    slots[order] = first + within
    uniq[slots] = bits
    return mask, where, slots


def _start_of_run(edges, drop, r):
    """The rank whose last run the first run of rank ``r`` continues."""
    for s in range(r - 1, -1, -1):
        if edges[s] is not None and not (drop[s] and edges[s][2] == 1):
            return s
    raise AssertionError("a dropped run has no start")      # pragma: no cover
