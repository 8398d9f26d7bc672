# cython: wraparound=False, boundscheck=False
"""Whether the block executor writes a large result with non-temporal
stores (nclx._ncl.blockrun): measured on this machine, not assumed.

Streaming a result skips the read of each destination line before its
write, which pays where the destination is cold; where it is still in the
cache (a result that fits in the last-level cache with its operands, or
pages the kernel zeroed just before, on some machines) ordinary stores are
faster.  Which holds differs between machines of the same description (on
one 2-CPU AMD EPYC VM streaming 8 MB results was 1.05-1.14x faster, on
another 0.76-0.87x; docs/benchmarks.md), so each result size class (4-8
MiB, 8-16, ... 256 MiB and up), for results the executor allocates and
for results given as ``out=``, on one thread and on the team, is measured:
its first ``2 * PROBES`` calls go each way in turn (the work is done
either way, the bytes are the same), then the faster way is kept.  The
choice changes speed only, never a result.  ``adapt(False)`` streams every
eligible result (the fixed threshold alone, as before the probes).

The state is the process's own (a forked child keeps its parent's
decisions); the executor calls these with the GIL held.
"""
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

PROBES = 3

cdef enum:
    NCLASSES = 8          # below 4 MiB (a lowered threshold), 4-8 MiB, ..., 256 MiB and up
    NKINDS = 4            # (given out= 0, allocated 2) + (one thread 0, the team 1)

cdef int64_t _calls[NKINDS][NCLASSES]
cdef int64_t _best[NKINDS][NCLASSES][2]    # fewest ns per MiB: plain (0), streamed (1)
cdef int _decided[NKINDS][NCLASSES]        # 0 probing, 1 plain, 2 streamed
cdef bint _adapt = True
cdef int64_t _nprobes = PROBES


cdef inline int _class(npy_intp nbytes) noexcept:
    cdef int c = 0
    cdef npy_intp r = nbytes >> 22
    while r > 0 and c < NCLASSES - 1:
        c += 1
        r >>= 1
    return c


cdef int64_t sp_now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef int sp_way(npy_intp nbytes, int kind) noexcept:
    """How an eligible result of ``nbytes`` is written: 0 plain, 1 streamed;
    2 | way: a probe, to be timed and given to sp_record()."""
    if not _adapt:
        return 1
    cdef int c = _class(nbytes)
    cdef int d = _decided[kind][c]
    if d:
        return d - 1
    cdef int64_t n = _calls[kind][c]
    _calls[kind][c] = n + 1
    cdef int64_t b0 = _best[kind][c][0], b1 = _best[kind][c][1]
    if n >= 2 * _nprobes and b0 > 0 and b1 > 0:
        _decided[kind][c] = 2 if b1 < b0 else 1
        return _decided[kind][c] - 1
    return 2 | <int>(n & 1)       # a probe (again, where one of them never finished)


cdef void sp_record(npy_intp nbytes, int kind, int way, int64_t ns) noexcept:
    cdef int c = _class(nbytes)
    cdef int w = way & 1
    cdef int64_t per = max(<int64_t>1, ns * (1 << 20) // max(nbytes, <npy_intp>1))
    if _best[kind][c][w] == 0 or per < _best[kind][c][w]:
        _best[kind][c][w] = per


def adapt(on=None):
    """Whether result sizes are probed (True by default); ``adapt(False)``:
    every eligible result is streamed.  Returns the previous setting."""
    global _adapt
    old = bool(_adapt)
    if on is not None:
        _adapt = bool(on)
    return old


def probes():
    """What the probes found: one dict per probed (kind, size class), with
    ``result`` ('allocated' or 'out='), ``threads`` ('one' or 'team'),
    ``bytes`` (the class's [low, high), high None for the last),
    ``decided`` (None while probing, 'plain' or 'streamed') and ``ns_per_mib``
    (the fastest plain and streamed call seen, 0 for none)."""
    out = []
    cdef int k, c
    for k in range(NKINDS):
        for c in range(NCLASSES):
            if _calls[k][c] == 0:
                continue
            lo = 0 if c == 0 else 1 << (21 + c)
            hi = None if c == NCLASSES - 1 else 1 << (22 + c)
            out.append({"result": "allocated" if k & 2 else "out=",
                        "threads": "team" if k & 1 else "one",
                        "bytes": (lo, hi),
                        "decided": (None, "plain", "streamed")[_decided[k][c]],
                        "ns_per_mib": (_best[k][c][0], _best[k][c][1])})
    return out


def reset():
    """Forget what the probes measured: the next large results probe again."""
    cdef int k, c
    for k in range(NKINDS):
        for c in range(NCLASSES):
            _calls[k][c] = 0
            _best[k][c][0] = 0
            _best[k][c][1] = 0
            _decided[k][c] = 0
