# cython: wraparound=False, boundscheck=False
"""NCLib's Convert subsystem: the ``copy`` call op's kernel -- a copy of
``n`` elements cut into one piece per thread (multiples of 512 elements),
each piece NumPy's own loop on its part of both buffers (an elementwise
copy: the same bytes however it is cut) -- and the sizes that decide
whether a copy is cut at all (nclx._ncl.copyloop calls it from the loop it
hands NumPy), with the probes that keep large contiguous copies into
mapped memory whole where splitting them measured slower (probes()).
"""
from libc.stdint cimport int64_t, uintptr_t

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.callops cimport ncl_callop_run
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now, MAX_THREADS

cdef extern from *:
    """
    #include <time.h>
    static inline int64_t ncl_copy_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    static inline int64_t ncl_copy_load(int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static inline void ncl_copy_store(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
    static inline void ncl_copy_rc(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
    static inline void ncl_copy_count(int64_t *p) { __atomic_add_fetch(p, 1, __ATOMIC_RELAXED); }
    static inline int64_t ncl_copy_next(int64_t *p) { return __atomic_fetch_add(p, 1, __ATOMIC_RELAXED); }
    /* p = min(p, v) for v > 0 (0: nothing yet) */
    static inline void ncl_copy_min(int64_t *p, int64_t v) {
        int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
        while ((cur == 0 || v < cur)
               && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    }
    /* whether the memory page holding the first page boundary at or after
     * p is resident (mapped and touched); 1 where nobody can tell */
    #if defined(__linux__) || defined(__APPLE__)
    #include <sys/mman.h>
    #include <unistd.h>
    static int ncl_copy_resident(const char *p) {
        long page = sysconf(_SC_PAGESIZE);
        uintptr_t a;
        unsigned char vec[1] = {1};
        if (page <= 0)
            return 1;
        a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
        if (mincore((void *)a, (size_t)page, (void *)vec) != 0)
            return 1;
        return vec[0] & 1;
    }
    #else
    static int ncl_copy_resident(const char *p) { (void)p; return 1; }
    #endif
    """
    int64_t ncl_copy_now_ns() noexcept nogil
    int64_t ncl_copy_load(int64_t *p) noexcept nogil
    void ncl_copy_store(int64_t *p, int64_t v) noexcept nogil
    void ncl_copy_rc(int *p, int v) noexcept nogil
    void ncl_copy_count(int64_t *p) noexcept nogil
    int64_t ncl_copy_next(int64_t *p) noexcept nogil
    void ncl_copy_min(int64_t *p, int64_t v) noexcept nogil
    int ncl_copy_resident(const char *p) noexcept nogil

cdef extern from "ncl_stream.h" nogil:
    void ncl_stream_copy(char *d, const char *s, size_t n)

#: each thread copies at least this many bytes: a call of fewer than twice
#: as many is NumPy's loop on the calling thread (docs/hooks.md)
PIECE_BYTES = 256 << 10
#: a team that ran less than this long ago still spins; a sleeping one is
#: woken only for calls of COLD_BYTES and more (as nclx._ncl.creating).
#: Measured here (docs/benchmarks.md): a 4 MB copy split after the caller
#: computed for 20 ms took 0.20-0.30 ms against NumPy's 0.26 (waking the
#: team about 0.1 ms), after the whole process slept 10 ms 5.5 ms (the VM
#: wakes its idle second CPU late)
WARM_NS = 2_000_000
COLD_BYTES = 4 << 20
#: a contiguous copy of at least this many bytes into memory already
#: mapped is split only where splitting measured faster in this process:
#: a single thread's memmove can take all the memory bandwidth (on an AMD
#: EPYC VM a 76 MiB np.copyto took 7.0 ms on one thread, 8.6 ms on two),
#: or not (other machines copied 1.9 times as fast on two).  The first
#: PROBES calls of each size class are made each way in turn (the work is
#: done either way), then the faster way is kept; see probes(), and
#: probed again after REPROBE calls (then 2, 4, ... 16 times as many).
PROBE_BYTES = 32 << 20
PROBES = 3
REPROBE = 64
#: a contiguous copy of at least this many bytes whose source and
#: destination do not overlap writes with non-temporal stores
#: (ncl_stream.h): its source and destination together outgrow the
#: last-level cache of the machines measured (8 MiB on the AMD EPYC VM,
#: where a 4 MiB copy took 0.31 ms against memmove's 0.50)
STREAM_BYTES = 4 << 20

_MAX_BYTES = (1 << 63) - 1                 # npy_intp's largest (tune()'s bounds)
_MAX_PIECE = _MAX_BYTES // 2               # twice it (_split_bytes) still fits
cdef npy_intp _piece_bytes = PIECE_BYTES
cdef npy_intp _split_bytes = 2 * PIECE_BYTES   # calls below are never split
cdef npy_intp _cold_bytes = COLD_BYTES
cdef int64_t _warm_ns = WARM_NS
cdef int64_t _warm_until = 0
cdef npy_intp _stream_bytes = STREAM_BYTES
cdef int64_t _streams = 0                  # calls written by ncl_stream_copy (stream_calls())
cdef int64_t _splits = 0                   # calls split across the team (split_calls())


cdef enum:
    NCLASSES = 3              # probed size classes: [32, 128), [128, 512), 512 MiB and up

cdef struct copy_probe:
    int64_t calls             # probed calls begun
    int64_t best[2]           # fewest ns per MiB seen whole (0) and split (1); 0: none yet
    int64_t decided           # 0: probing, 1: whole, 2: split
    int64_t since             # calls made the decided way since the decision
    int64_t rounds            # decisions made before the current one

cdef copy_probe _probes[NCLASSES]
cdef bint _adapt = True
cdef npy_intp _probe_bytes = PROBE_BYTES
cdef int64_t _nprobes = PROBES
cdef int64_t _nreprobe = REPROBE


cdef struct copy_job:
    PyArrayMethod_Context *ctx
    strided_loop_fn loop
    char *src
    char *dst
    npy_intp n
    npy_intp isz
    npy_intp ss, ds
    int pieces
    int stream                # pieces copied by ncl_stream_copy, not NumPy's loop
    int rc


cdef inline npy_intp _lo(char *p, npy_intp n, npy_intp s) noexcept nogil:
    return <npy_intp>(<uintptr_t>p) + (s * (n - 1) if s < 0 else 0)


cdef inline npy_intp _hi(char *p, npy_intp n, npy_intp s, npy_intp isz) noexcept nogil:
    return <npy_intp>(<uintptr_t>p) + (s * (n - 1) if s > 0 else 0) + isz


cdef inline bint _overlap(const copy_job *j, npy_intp isz) noexcept nogil:
    return (_lo(j.src, j.n, j.ss) < _hi(j.dst, j.n, j.ds, isz)
            and _lo(j.dst, j.n, j.ds) < _hi(j.src, j.n, j.ss, isz))


cdef inline npy_intp _bound(const copy_job *j, int t) noexcept nogil:
    """First element of piece ``t``: equal pieces, cut on multiples of 512
    elements (whole cache lines and pages of a contiguous copy)."""
    cdef npy_intp b
    if t >= j.pieces:
        return j.n
    b = (j.n // j.pieces) * t
    return min(b - b % 512, j.n)


cdef void _team_body(void *ctx, int tid, int nthreads) noexcept nogil:
    cdef copy_job *j = <copy_job *>ctx
    cdef int t = tid
    cdef npy_intp a, b, m
    cdef char *data[2]
    cdef npy_intp strides[2]
    strides[0] = j.ss
    strides[1] = j.ds
    while t < j.pieces:
        a = _bound(j, t)
        b = _bound(j, t + 1)
        if b > a:
            data[0] = j.src + a * j.ss
            data[1] = j.dst + a * j.ds
            m = b - a
            if j.stream:
                ncl_stream_copy(data[1], data[0], <size_t>(m * j.isz))
            elif j.loop(j.ctx, data, &m, strides, NULL) != 0:
                ncl_copy_rc(&j.rc, -1)
        t += nthreads


cdef void _kernel(char **args, const npy_intp *dims, const npy_intp *steps,
                  void *data) noexcept nogil:
    """nclx's kernel of the copy call op: the pieces on the team."""
    cdef copy_job *j = <copy_job *>data
    cdef npy_intp isz = j.isz
    cdef npy_intp nbytes = j.n * isz
    cdef int want = <int>min(<npy_intp>min(ncl_threads_now(), MAX_THREADS), nbytes // _piece_bytes)
    j.src = args[0]
    j.dst = args[1]
    j.ss = steps[0]
    j.ds = steps[1]
    if want > 1 and nbytes < _cold_bytes and ncl_copy_now_ns() > ncl_copy_load(&_warm_until):
        want = 1              # the team sleeps: waking it costs more than it saves
    cdef bint overlap = _overlap(j, isz)
    if want > 1 and (overlap or -isz < j.ds < isz):
        want = 1              # NumPy's loop, whole: memmove's order; or
                              # destination elements sharing bytes (a stride
                              # of 0, as_strided): the last write wins
    # the same bytes as NumPy's memmove where the buffers are apart
    j.stream = nbytes >= _stream_bytes and j.ss == isz and j.ds == isz and not overlap
    if j.stream:
        ncl_copy_count(&_streams)
    cdef copy_probe *p = NULL
    cdef int way = 0
    cdef int64_t t0 = 0
    if want > 1 and _adapt and nbytes >= _probe_bytes and j.ss == isz and j.ds == isz \
            and ncl_copy_resident(j.dst):
        p = _probe_for(nbytes, &way)
        if way == 0:
            want = 1
        if p != NULL:
            t0 = ncl_copy_now_ns()
    if want <= 1:
        j.pieces = 1
        _team_body(j, 0, 1)
    else:
        j.pieces = want
        ncl_copy_count(&_splits)
        ncl_team_run(want, _team_body, j)
        ncl_copy_store(&_warm_until, ncl_copy_now_ns() + _warm_ns)
    if p != NULL:
        ncl_copy_min(&p.best[way], max(<int64_t>1, (ncl_copy_now_ns() - t0) * (1 << 20) // nbytes))


cdef void _restart(copy_probe *p, int64_t rounds) noexcept nogil:
    """Probe ``p``'s class again from nothing (decided last: others keep the way till then)."""
    ncl_copy_store(&p.best[0], 0)
    ncl_copy_store(&p.best[1], 0)
    ncl_copy_store(&p.calls, 0)
    ncl_copy_store(&p.rounds, rounds)
    ncl_copy_store(&p.since, 0)
    ncl_copy_store(&p.decided, 0)


cdef copy_probe *_probe_for(npy_intp nbytes, int *way) noexcept nogil:
    """How to make a contiguous copy of ``nbytes`` into mapped memory:
    ``way`` 0 whole, 1 split.  While its size class is probed, the calls go
    each way in turn and the probe is returned (the caller times the call
    into it); after 2 * PROBES of them the faster way (split only when at
    least 5% faster) is kept; NULL then, until the call that finds
    REPROBE << min(rounds, 4) calls since the decision (_restart)."""
    cdef int c = 0 if nbytes < (128 << 20) else 1 if nbytes < (512 << 20) else 2
    cdef copy_probe *p = &_probes[c]
    cdef int64_t d = ncl_copy_load(&p.decided)
    cdef int64_t n, b0, b1, r
    if d != 0:
        r = ncl_copy_load(&p.rounds)
        if ncl_copy_next(&p.since) + 1 == _nreprobe << min(r, <int64_t>4):
            _restart(p, min(r + 1, <int64_t>(1 << 20)))
            d = 0
    if d == 0:
        n = ncl_copy_next(&p.calls)
        if n < 2 * _nprobes:
            way[0] = <int>(n & 1)
            return p
        b0 = ncl_copy_load(&p.best[0])
        b1 = ncl_copy_load(&p.best[1])
        d = 2 if b1 > 0 and b0 > 0 and b1 * 20 <= b0 * 19 else 1
        if b0 == 0 or b1 == 0:
            d = 0             # a probe still running: decide at a later call
        else:
            ncl_copy_store(&p.decided, d)
    way[0] = 1 if d == 2 else 0             # still undecided (0): whole
    return NULL


cdef void _numpy_way(char **args, const npy_intp *dims, const npy_intp *steps,
                     void *data) noexcept nogil:
    """NumPy's loop, whole, on the calling thread."""
    cdef copy_job *j = <copy_job *>data
    j.src = args[0]
    j.dst = args[1]
    j.ss = steps[0]
    j.ds = steps[1]
    j.pieces = 1
    j.stream = 0
    _team_body(j, 0, 1)


cdef int ncl_copy_call(PyArrayMethod_Context *ctx, strided_loop_fn loop, int k, npy_intp itemsize,
                       char **data, const npy_intp *dims, const npy_intp *strides) noexcept nogil:
    """One call of copy call slot ``k`` (its chains, or its kernel at once)
    copying ``dims[0]`` elements of ``itemsize`` bytes by NumPy's ``loop``."""
    cdef copy_job j
    cdef char *args[2]
    cdef npy_intp d[3]
    cdef npy_intp st[2]
    j.ctx = ctx
    j.loop = loop
    j.n = dims[0]
    j.isz = itemsize
    j.rc = 0
    args[0] = data[0]
    args[1] = data[1]
    d[0] = dims[0]            # the elements the call copies (the ledger's count)
    d[1] = dims[0]            # the operands' lengths
    d[2] = dims[0]
    st[0] = strides[0]
    st[1] = strides[1]
    # -1: a hook's exception, set: NumPy raises it (review 22)
    return -1 if ncl_callop_run(k, args, d, st, &j, _kernel, _numpy_way) < 0 else j.rc


cdef const npy_intp *ncl_copy_split_at() noexcept nogil:
    """Where the fewest bytes a split copy has lives (calls below are
    NumPy's loop at once: nclx._ncl.copyloop's quiet loop)."""
    return &_split_bytes


cdef npy_intp ncl_stream_at() noexcept nogil:
    """The fewest bytes a contiguous copy (or the block executor's result,
    nclx._ncl.blockrun) written with non-temporal stores has."""
    return _stream_bytes


def split_calls():
    """Copy calls split across the team so far (in this process)."""
    return ncl_copy_load(&_splits)


def stream_calls():
    """Copy calls written with non-temporal stores so far (in this process)."""
    return ncl_copy_load(&_streams)


def probes():
    """The probed size classes of contiguous copies into mapped memory: a
    (smallest bytes, way, fewest ns per MiB whole, fewest split) each; way
    is None while probing, else "whole" or "split" (rounds(): how many
    decisions each class made before)."""
    out = []
    for c, lo in enumerate((PROBE_BYTES, 128 << 20, 512 << 20)):
        d = ncl_copy_load(&_probes[c].decided)
        out.append((lo, None if d == 0 else "whole" if d == 1 else "split",
                    ncl_copy_load(&_probes[c].best[0]), ncl_copy_load(&_probes[c].best[1])))
    return out


def rounds():
    """Decisions each probed size class made before its current one."""
    return [ncl_copy_load(&_probes[c].rounds) for c in range(NCLASSES)]


def reprobe(every=None):
    """Calls before a kept way is first probed again (REPROBE); ``every`` sets it; the old one."""
    global _nreprobe
    old = _nreprobe
    if every is not None:
        if not 1 <= every <= (1 << 40):
            raise ValueError(f"every must be in [1, {1 << 40}], not {every}")
        _nreprobe = every
    return old


def reset_probes():
    """Forget what the probes measured: the next large copies probe again."""
    cdef int c
    for c in range(NCLASSES):
        _restart(&_probes[c], 0)


def adapt(on=None):
    """Whether large contiguous copies into mapped memory are split only
    where splitting measured faster (on by default); ``adapt(False)``:
    split whenever the sizes allow.  Returns the old setting."""
    global _adapt
    old = bool(_adapt)
    if on is not None:
        _adapt = bool(on)
    return old


def tune(piece_bytes=None, cold_bytes=None, stream_bytes=None):
    """Set the smallest piece a thread copies, the size that wakes a
    sleeping team and the smallest contiguous copy written with
    non-temporal stores (bytes); returns the old (piece_bytes, cold_bytes,
    stream_bytes).  While nothing watches copies (no hook, no ledger) a
    copy of fewer than 2 * piece_bytes is NumPy's loop at once, so the
    smallest streamed copy is then max(stream_bytes, 2 * piece_bytes).
    For tests and calibration."""
    global _piece_bytes, _split_bytes, _cold_bytes, _stream_bytes
    old = (_piece_bytes, _cold_bytes, _stream_bytes)
    # both checked before either is set: a bad one changes nothing
    if piece_bytes is not None and not 1 <= piece_bytes <= _MAX_PIECE:
        raise ValueError(f"piece_bytes must be in [1, {_MAX_PIECE}], not {piece_bytes}")
    if cold_bytes is not None and not 0 <= cold_bytes <= _MAX_BYTES:
        raise ValueError(f"cold_bytes must be in [0, {_MAX_BYTES}], not {cold_bytes}")
    if stream_bytes is not None and not 0 <= stream_bytes <= _MAX_BYTES:
        raise ValueError(f"stream_bytes must be in [0, {_MAX_BYTES}], not {stream_bytes}")
    if piece_bytes is not None:
        _piece_bytes = piece_bytes
        _split_bytes = 2 * piece_bytes
    if cold_bytes is not None:
        _cold_bytes = cold_bytes
    if stream_bytes is not None:
        _stream_bytes = stream_bytes
    return old
