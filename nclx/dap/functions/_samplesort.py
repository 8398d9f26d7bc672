"""Sample sort of lines held in pieces by the ranks of a communicator.

Every rank of ``comm`` holds the same ``L`` lines (the rows of an ``(L, m)``
array; ``m`` may differ between ranks, may be 0).  :func:`sample_sort`
sorts every line across the ranks by regular sampling: each rank sorts its
pieces (stable), picks ``16 P`` regular samples of its sorted sequence, one
``allgather`` brings every rank the ``16 P*P`` samples, ``P - 1`` splitters
are taken from them at regular positions, one ``Alltoallv`` moves the
buckets, and each rank merges what it received.  The keys are
``(line, value, source rank, source position)``: unique, so equal values
never pile up in one bucket (the buckets stay near ``n / P`` elements), and
equal values keep the order of (source rank, position), i.e. a stable sort where
the ranks hold consecutive pieces of each line in order (block layouts).
Values compare as NumPy's sort does: NaN last, ``-0.0 == 0.0``.

:func:`deliver_block` then moves the sorted elements to a block layout of
each line with exact counts (one ``Exscan`` and one ``Alltoallv``).
Nothing is gathered: a rank holds its pieces, its bucket and its result.
"""
import numpy as np

from nclx.dap.fold import agreed_call

__all__ = ["sample_sort", "deliver_block", "alltoallv", "mpi", "run_indices"]

_OVERSAMPLE = 16


def mpi():
    """mpi4py's ``MPI``, imported when first needed (nclx.dap imports without it)."""
    from mpi4py import MPI   # optional dependency: only a DistArray's operations need it
    return MPI


def _records(lines, values):
    """A packed record array (line, value) to send as bytes; just the values
    for one line."""
    if lines is None:
        return np.ascontiguousarray(values)
    rec = np.empty(values.shape[0], np.dtype([("l", lines.dtype), ("v", values.dtype)]))
    rec["l"] = lines
    rec["v"] = values
    return rec


def alltoallv(comm, send, counts):
    """Send ``send[...]`` (ordered by destination, ``counts[d]`` records to
    rank ``d``) with one ``Alltoallv`` of bytes; returns the records received
    (in source-rank order) and the counts from each source.  ``send`` may be
    a callable that builds the records: it runs after the counts travel,
    and the records received are allocated then, both before one agreement
    (a MemoryError on one rank -- the records are as large as the data --
    is raised on every rank instead of leaving the others in Alltoallv)."""
    P = comm.Get_size()
    counts = np.asarray(counts, dtype=np.int64)
    rcounts = np.empty(P, np.int64)
    comm.Alltoall(counts, rcounts)

    def buffers():
        out = send() if callable(send) else send
        return out, np.empty(int(rcounts.sum()), out.dtype)
    send, recv = agreed_call(comm, buffers, "allocate:alltoallv", "the records to exchange")
    item = send.dtype.itemsize
    sdis = np.concatenate(([0], np.cumsum(counts)[:-1])) * item
    rdis = np.concatenate(([0], np.cumsum(rcounts)[:-1])) * item
    comm.Alltoallv([send.view(np.uint8) if send.size else np.empty(0, np.uint8),
                    (counts * item, sdis), mpi().BYTE],
                   [recv.view(np.uint8) if recv.size else np.empty(0, np.uint8),
                    (rcounts * item, rdis), mpi().BYTE])
    return recv, rcounts


def _key_order(lines, values, *tiebreaks):
    """Stable order by (lines, values, tiebreaks...) (lines may be None)."""
    order = np.arange(values.shape[0])
    for key in reversed(tiebreaks):
        order = order[np.argsort(key[order], kind="stable")]
    order = order[np.argsort(values[order], kind="stable")]
    if lines is not None:
        order = order[np.argsort(lines[order], kind="stable")]
    return order


def _kind(values):
    """'stable' where the order of equal keys shows in the values (both
    zeros, NaNs other than the canonical one, complex and structured
    values), else NumPy's default (much faster) sort: equal keys then have
    equal bits."""
    kind = values.dtype.kind
    if kind in "biuSUMm":
        return None
    if kind != "f":
        return "stable"
    zeros = np.signbit(values[values == 0])
    if zeros.size and zeros.any() and not zeros.all():
        return "stable"
    nans = values[np.isnan(values)]
    if nans.size:
        # NumPy's default (SIMD) sort may make every NaN its canonical one:
        # a NaN of other bits (``-nan``) keeps them only in a stable sort
        size = nans.dtype.itemsize
        if size not in (4, 8):
            # float16: NumPy's SIMD sort writes its canonical NaN as 0x7C01
            # (measured on an AVX2 machine): only a stable sort keeps bits
            return "stable"
        unsigned = np.dtype(f"u{size}")
        if np.any(nans.view(unsigned) != np.array(np.nan, nans.dtype).view(unsigned)):
            return "stable"
    return None


def _count_below(sorted_block, me, splitter):
    """How many of this rank's elements (``sorted_block``: (L, m), every row
    sorted) have a key below ``splitter`` = (line, value, rank, position)."""
    L, m = sorted_block.shape
    line, value, rank, pos = splitter
    row = sorted_block[line]
    lo = int(np.searchsorted(row, value, side="left"))
    hi = int(np.searchsorted(row, value, side="right"))
    if me < rank:
        within = hi
    elif me > rank:
        within = lo
    else:
        within = min(max(pos - line * m, lo), hi)
    return line * m + within


def sample_sort(comm, block, payload=None):
    """Sort each row of the distributed ``(L, m)`` rows (see module doc).

    ``block`` (C-contiguous, this rank's own copy) is sorted in place.
    Returns ``(lines, values)``: this rank's bucket in key order (``lines``
    is None when ``L == 1``).  With ``payload`` (``block`` already sorted
    along each row, ties in any order: a value per element that travels
    with it) it returns ``(payloads, values)`` for one line, and
    ``((lines, payloads), values)`` for several, in (line, value, payload)
    order.  Every rank of ``comm`` must call it."""
    P, me = comm.Get_size(), comm.Get_rank()
    L, m = block.shape
    if payload is None:
        block.sort(axis=1, kind=_kind(block))
    local = block
    flat = local.reshape(-1)
    n = flat.shape[0]
    s = _OVERSAMPLE * P               # regular samples per rank: buckets near n / P each
    picks = np.unique(np.arange(s) * n // s) if n else np.zeros(0, np.int64)
    samples = [(int(i // m), flat[i], me, int(i)) for i in picks]
    every = [s for part in comm.allgather(samples) for s in part]
    splitters = []
    if every:
        lines_s = np.array([s[0] for s in every])
        vals_s = np.array([s[1] for s in every], dtype=block.dtype)
        ranks_s = np.array([s[2] for s in every])
        pos_s = np.array([s[3] for s in every])
        order = _key_order(lines_s, vals_s, ranks_s, pos_s)
        S = len(every)
        for i in range(1, P):
            k = order[min(i * S // P, S - 1)]
            splitters.append((int(lines_s[k]), vals_s[k], int(ranks_s[k]), int(pos_s[k])))
    bounds = [0] + [_count_below(local, me, s) for s in splitters]
    bounds += [n] * (P + 1 - len(bounds))
    bounds = np.maximum.accumulate(np.asarray(bounds, np.int64))
    counts = np.diff(bounds)
    ltype = np.int32 if L < 2 ** 31 else np.int64

    def line_ids():       # built inside alltoallv's agreement, as large as the data
        return None if L == 1 else np.repeat(np.arange(L, dtype=ltype), m)
    if payload is not None and L > 1:
        def records():
            rec = np.empty(n, np.dtype([("l", ltype), ("p", np.asarray(payload).dtype),
                                        ("v", block.dtype)]))
            rec["l"], rec["p"], rec["v"] = line_ids(), np.asarray(payload).reshape(-1), flat
            return rec
        recv, _ = alltoallv(comm, records, counts)
        order = np.lexsort((recv["p"], recv["v"], recv["l"]))
        return (recv["l"][order], recv["p"][order]), recv["v"][order]
    if payload is not None:
        recv, _ = alltoallv(comm, lambda: _records(np.asarray(payload), flat), counts)
        order = np.argsort(recv["v"], kind=_kind(recv["v"]))
        return recv["l"][order], recv["v"][order]
    recv, _ = alltoallv(comm, lambda: _records(line_ids(), flat), counts)
    local = flat = block = None         # the sent data goes (the closures hold their cells)
    if L == 1:
        recv.sort(kind=_kind(recv))          # sources in rank order: stable where it shows
        return None, recv
    kind = _kind(recv["v"])
    order = np.argsort(recv["v"], kind=kind)
    order = order[np.argsort(recv["l"][order], kind="stable")]
    lines, values = recv["l"][order], recv["v"][order]
    return lines, values


def deliver_block(comm, lines, values, L, bounds):
    """Move sorted elements to their block owners.

    ``lines``/``values`` are this rank's bucket from :func:`sample_sort`;
    ``bounds[c]:bounds[c+1]`` is the range of sorted positions (the same for
    every line) that rank ``c`` of ``comm`` receives.  Returns this rank's
    ``(L, bounds[me+1] - bounds[me])`` array of sorted values."""
    me = comm.Get_rank()
    n_mine = values.shape[0]
    per_line = (np.bincount(lines, minlength=L) if lines is not None
                else np.array([n_mine])).astype(np.int64)
    below = np.zeros(L, np.int64)
    comm.Exscan(per_line, below, op=mpi().SUM)
    if me == 0:
        below[:] = 0
    bounds = np.asarray(bounds, np.int64)
    if lines is None:
        # this rank's sorted positions are one run: cut it at the bounds
        cuts = np.clip(bounds - below[0], 0, n_mine)
        recv, _ = alltoallv(comm, values, np.diff(cuts))
        return recv.reshape(1, int(bounds[me + 1] - bounds[me]))
    # this rank's positions of line l are one run from below[l]: cut each at the bounds
    P = comm.Get_size()
    cuts = np.clip(bounds[None, :] - below[:, None], 0, per_line[:, None])     # (L, P + 1)
    seg = np.diff(cuts, axis=1)                                                # (L, P)
    starts = np.concatenate(([0], np.cumsum(per_line)[:-1]))
    send = values[run_indices(starts[:, None] + cuts[:, :-1], seg)]
    del values
    rseg = np.empty((P, L), np.int64)
    comm.Alltoall(np.ascontiguousarray(seg.T), rseg)                           # (source, line)
    recv, _ = alltoallv(comm, send, seg.sum(axis=0))
    del send
    width = int(bounds[me + 1] - bounds[me])
    # from each source, line after line; line l takes the sources in rank order
    offsets = np.cumsum(rseg, axis=0) - rseg                                   # (P, L)
    out = np.empty((L, width), recv.dtype)
    dst = run_indices(offsets + np.arange(L, dtype=np.int64)[None, :] * width, rseg,
                      transpose=False)
    out.reshape(-1)[dst] = recv
    return out


def run_indices(first, length, transpose=True):
    """Indices of the runs ``first[i, j] + range(length[i, j])`` in
    (j, i) order (``transpose``) or (i, j) order."""
    if transpose:
        first, length = first.T, length.T
    first, length = first.reshape(-1), length.reshape(-1)
    keep = length > 0
    first, length = first[keep].astype(np.int64), length[keep].astype(np.int64)
    out = np.ones(int(length.sum()), np.int64)      # steps of 1 within a run ...
    if out.size:
        at = np.cumsum(length) - length             # ... and a jump where one starts
        out[at] = first - np.concatenate(([1], first[:-1] + length[:-1])) + 1
        np.cumsum(out, out=out)                     # one index array, no temporaries
    return out
