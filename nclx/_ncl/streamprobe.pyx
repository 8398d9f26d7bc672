# cython: wraparound=False, boundscheck=False
"""Whether the block executor writes a large result with non-temporal
stores (nclx._ncl.blockrun): measured on this machine, not assumed.

Streaming a result skips the read of each destination line before its
write, which pays where the destination is cold; where it is still in the
cache (a result that fits in the last-level cache with its operands, or
pages the kernel zeroed just before, on some machines) ordinary stores are
faster.  Which holds differs between machines of the same description
(docs/benchmarks.md, "Streamed or plain, probed"), so for each program
(its cached plan holds a :class:`StreamProbes`), each result kind
(allocated by the executor, or given as ``out=``; on one thread or on the
team) and each result size class (below 4 MiB where the threshold is
lowered, 4-8 MiB, 8-16, ... 256 MiB and up) the first ``2 * PROBES``
eligible calls go each way in turn -- the work is done either way, the
bytes are the same -- and the way whose fastest call took fewer ns per
MiB is kept.  A decision is not for ever: after ``REPROBE`` calls made
its way (then twice, four, ... up to 16 times as many after each new
decision) the class probes again, so that a decision taken in a noisy
moment, or before the machine's load changed, is measured once more; at
most ``PROBES`` of every ``2 * PROBES + REPROBE`` calls go the other way.
The choice changes speed only, never a result.  ``adapt(False)`` streams
every eligible result (the fixed threshold alone); ``reset()`` makes every
program probe again.

The state is the process's own (a forked child keeps its parent's
decisions); the executor calls these with the GIL held.
"""
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

#: Calls each way before a class decides (read at each decision).
PROBES = 3
#: Calls made the decided way before a class probes again (the first time;
#: doubled after each decision, up to 16 times; read at each decided call).
REPROBE = 64

cdef bint _adapt = True
cdef int64_t _generation = 0


cdef class StreamProbes:
    """One program's probes (kept on its cached plan)."""

    def __cinit__(self):
        self._fresh()

    cdef void _fresh(self) noexcept:
        cdef int k, c
        for k in range(SP_KINDS):
            for c in range(SP_CLASSES):
                self.calls[k][c] = 0
                self.best[k][c][0] = 0
                self.best[k][c][1] = 0
                self.decided[k][c] = 0
                self.since[k][c] = 0
                self.rounds[k][c] = 0
        self.generation = _generation

    def decisions(self):
        """One dict per probed (kind, size class): ``result`` ('allocated' or
        'out='), ``threads`` ('one' or 'team'), ``bytes`` (the class's [low,
        high), high None for the last), ``decided`` (None while probing,
        'plain' or 'streamed'), ``ns_per_mib`` (the fastest plain and
        streamed call seen in this round of probes, 0 for none),
        ``rounds`` (decisions made before this round)."""
        if self.generation != _generation:
            return []
        out = []
        cdef int k, c
        for k in range(SP_KINDS):
            for c in range(SP_CLASSES):
                if self.calls[k][c] == 0:
                    continue
                lo = 0 if c == 0 else 1 << (21 + c)
                hi = None if c == SP_CLASSES - 1 else 1 << (22 + c)
                out.append({"result": "allocated" if k & 2 else "out=",
                            "threads": "team" if k & 1 else "one",
                            "bytes": (lo, hi),
                            "decided": (None, "plain", "streamed")[self.decided[k][c]],
                            "ns_per_mib": (self.best[k][c][0], self.best[k][c][1]),
                            "rounds": self.rounds[k][c]})
        return out


cdef inline int _class(npy_intp nbytes) noexcept:
    cdef int c = 0
    cdef npy_intp r = nbytes >> 22
    while r > 0 and c < SP_CLASSES - 1:
        c += 1
        r >>= 1
    return c


cdef int64_t sp_now() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef int sp_way(StreamProbes p, npy_intp nbytes, int kind) noexcept:
    """How an eligible result of ``nbytes`` is written: 0 plain, 1 streamed;
    2 | way: a probe, to be timed and given to sp_record()."""
    if not _adapt:
        return 1
    if p.generation != _generation:
        p._fresh()
    cdef int c = _class(nbytes)
    cdef int d = p.decided[kind][c]
    cdef int64_t every
    if d:
        try:
            every = max(<int64_t>int(REPROBE), 1)
        except Exception:
            every = 64
        if p.since[kind][c] + 1 < every << min(p.rounds[kind][c], 4):
            p.since[kind][c] += 1
            return d - 1
        # probe this class again: its measures start over
        p.rounds[kind][c] = min(p.rounds[kind][c] + 1, 1 << 20)
        p.since[kind][c] = 0
        p.decided[kind][c] = 0
        p.calls[kind][c] = 0
        p.best[kind][c][0] = 0
        p.best[kind][c][1] = 0
    cdef int64_t n = p.calls[kind][c]
    p.calls[kind][c] = n + 1
    cdef int64_t b0 = p.best[kind][c][0], b1 = p.best[kind][c][1]
    cdef int64_t each
    try:
        each = max(<int64_t>int(PROBES), 1)
    except Exception:
        each = 3
    if n >= 2 * each and b0 > 0 and b1 > 0:
        p.decided[kind][c] = 2 if b1 < b0 else 1
        return p.decided[kind][c] - 1
    # a probe (again, while a probe of the other way has not finished)
    return 2 | <int>(n & 1)


cdef void sp_record(StreamProbes p, npy_intp nbytes, int kind, int way, int64_t ns) noexcept:
    if p.generation != _generation:
        return                     # reset() while it ran: not this generation's
    cdef int c = _class(nbytes)
    cdef int w = way & 1
    cdef double per_d = <double>ns * 1048576.0 / <double>max(nbytes, <npy_intp>1)
    cdef int64_t per = 1 if per_d < 1.0 else (<int64_t>per_d if per_d < 9.0e18 else <int64_t>9000000000000000000)
    if p.best[kind][c][w] == 0 or per < p.best[kind][c][w]:
        p.best[kind][c][w] = per


def adapt(on=None):
    """Whether result sizes are probed (True by default); ``adapt(False)``:
    every eligible result is streamed.  Returns the previous setting."""
    global _adapt
    old = bool(_adapt)
    if on is not None:
        _adapt = bool(on)
    return old


def reset():
    """Forget what every program's probes measured: its next large results
    probe again."""
    global _generation
    _generation += 1
