# cython: wraparound=False, boundscheck=False
"""NCLib's Mask subsystem: the threaded kernels and their call slots.

A selection by a mask runs in two passes over pieces of the mask: every
piece counts its selected elements (in parallel), an exclusive prefix sum
gives each piece where its output starts, then every piece copies its
elements there (in parallel again).  ``place`` uses the same prefix to know
which value its first selected element takes; ``putmask`` needs no count
(the value of element i is ``values[i % len(values)]``).

Each call runs through its call slot (nclx._ncl.callops): straight to the
kernel when no hook is in the "mask" funnel chain or the kernel chain
``<op>_<dtype>``, else down those chains, whose "numpy" node runs NumPy's own
function on the same buffers.  Arguments, NumPy's rules and fallbacks are
the business of nclx._ncl.maskselect (extract, compress) and
nclx._ncl.maskfuncs (place, putmask, count); NumPy's node is
nclx._ncl.masknumpy.
"""
cimport numpy as cnp

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.callops cimport ncl_callop_slot, ncl_callop_quiet, ncl_callop_run
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now, MAX_THREADS
from nclx._ncl.masknumpy cimport (mask_numpy_extract, mask_numpy_place,
                                    mask_numpy_putmask, mask_numpy_count)

from nclx._ncl.dtypes import fixed_width

cnp.import_array()

cdef extern from *:
    """
    /* the next chunk of tasks, for whichever thread of the team runs now: a
     * thread the OS has not scheduled yet leaves its share to the others */
    static inline npy_intp ncl_mask_claim(npy_intp *next, npy_intp chunk)
    { return __atomic_fetch_add(next, chunk, __ATOMIC_RELAXED); }
    """
    npy_intp ncl_mask_claim(npy_intp *next, npy_intp chunk) nogil

cdef extern from "ncl_mask.h" nogil:
    npy_intp ncl_mask_count(const unsigned char *m, npy_intp n)
    void ncl_extract_piece(int isz, const unsigned char *m, const char *s, char *d,
                           npy_intp lo, npy_intp hi, npy_intp cap)
    void ncl_place_piece(int isz, const unsigned char *m, const char *v, npy_intp nv, char *d,
                         npy_intp lo, npy_intp hi, npy_intp j)
    void ncl_putmask_piece(int isz, const unsigned char *m, const char *v, npy_intp nv, char *d,
                           npy_intp lo, npy_intp hi)
    void ncl_gather_piece(npy_intp rowbytes, const char *s, char *d, const npy_intp *idx,
                          npy_intp cnt, npy_intp S, npy_intp r0, npy_intp r1)
    int ncl_maskstore_isa()
    int ncl_maskstore_set_limit(int k)

# ------------------------------------------------------------ the job

# below _thread_min elements a call stays on the calling thread (two threads
# measured 1.06-1.35x one at 16K elements, 1.5-1.65x at 64K); no piece is
# shorter than _min_piece elements
cdef npy_intp _thread_min = 65536
cdef npy_intp _min_piece = 16384


def set_split(npy_intp thread_min, npy_intp min_piece):
    """Set the threading threshold and the shortest piece (elements);
    returns the previous pair.  Tests lower them to split small calls."""
    global _thread_min, _min_piece
    if thread_min < 1 or min_piece < 64:
        raise ValueError("thread_min must be >= 1 and min_piece >= 64")
    old = (_thread_min, _min_piece)
    _thread_min = thread_min
    _min_piece = min_piece
    return old


cdef void mask_plan(mjob *j, npy_intp n, int want) noexcept nogil:
    """Split a mask of n elements into pieces: a few per thread (so a mask
    whose selected elements sit in one part still spreads), none under
    the minimum piece, each a multiple of 64."""
    cdef npy_intp np_ = 1, piece
    if want > 1:
        np_ = min(<npy_intp>PIECES_PER_THREAD * want, <npy_intp>MAX_PIECES,
                  max(<npy_intp>1, n // _min_piece))
    piece = (n + np_ - 1) // np_
    piece = ((piece + 63) // 64) * 64
    if piece == 0:
        piece = 64
    j.n = n
    j.piece = piece
    j.npieces = <int>max(<npy_intp>1, (n + piece - 1) // piece)
    j.want = want


cdef inline npy_intp _lo(mjob *j, int p) noexcept nogil:
    return min(<npy_intp>p * j.piece, j.n)


cdef inline npy_intp _hi(mjob *j, int p) noexcept nogil:
    return min(<npy_intp>(p + 1) * j.piece, j.n)


cdef void _count_body(void *ctx, int tid, int nth) noexcept nogil:
    cdef mjob *j = <mjob *>ctx
    cdef int p = <int>ncl_mask_claim(&j.next, 1)
    while p < j.npieces:
        j.cnt[p] = ncl_mask_count(j.m + _lo(j, p), _hi(j, p) - _lo(j, p))
        p = <int>ncl_mask_claim(&j.next, 1)


cdef void _team(mjob *j, void (*body)(void *, int, int) noexcept nogil, npy_intp tasks) noexcept nogil:
    """Run body over the job's tasks: each thread claims tasks until none
    is left."""
    j.next = 0
    if j.want > 1 and tasks > 1:
        ncl_team_run(<int>min(<npy_intp>j.want, tasks), body, j)
    else:
        body(j, 0, 1)


cdef inline npy_intp _chunk(npy_intp tasks, int nth) noexcept nogil:
    """Tasks claimed at once: one for a few pieces, more for many rows."""
    return max(<npy_intp>1, tasks // (PIECES_PER_THREAD * nth))


cdef npy_intp mask_count(mjob *j) noexcept nogil:
    """Count every piece, turn the counts into each piece's first output
    position (cnt[npieces] is the total) and return it.  Counting reads a
    byte an element: below four times the threading threshold the calling
    thread counts every piece itself (one team start less per call)."""
    cdef int p, want = j.want
    cdef npy_intp run = 0, c
    if j.n // 4 < _thread_min:
        j.want = 1
    _team(j, _count_body, j.npieces)
    j.want = want
    for p in range(j.npieces):
        c = j.cnt[p]
        j.cnt[p] = run
        run += c
    j.cnt[j.npieces] = run
    j.total = run
    return run


# ------------------------------------------------------------ the bodies

cdef void _extract_body(void *ctx, int tid, int nth) noexcept nogil:
    # task t: piece t % npieces of row t // npieces (rows > 1: compress
    # along the last axis, every row selected by the same mask)
    cdef mjob *j = <mjob *>ctx
    cdef npy_intp t, t1, r, tasks = j.rows * j.npieces, chunk = _chunk(tasks, nth)
    cdef int p
    t = ncl_mask_claim(&j.next, chunk)
    while t < tasks:
        t1 = min(t + chunk, tasks)
        while t < t1:
            r = t // j.npieces
            p = <int>(t % j.npieces)
            if j.cnt[p + 1] > j.cnt[p]:         # a piece with nothing selected is done
                ncl_extract_piece(j.isz, j.m, j.src + r * j.srow,
                                  j.dst + r * j.drow + j.cnt[p] * j.isz, _lo(j, p), _hi(j, p),
                                  j.cnt[p + 1] - j.cnt[p])
            t += 1
        t = ncl_mask_claim(&j.next, chunk)


cdef void _gather_body(void *ctx, int tid, int nth) noexcept nogil:
    cdef mjob *j = <mjob *>ctx
    cdef npy_intp rows = j.rows * j.total, chunk = _chunk(rows, nth)
    cdef npy_intp r0 = ncl_mask_claim(&j.next, chunk)
    while r0 < rows:
        ncl_gather_piece(j.rowbytes, j.src, j.dst, j.idx, j.total, j.srows, r0,
                         min(r0 + chunk, rows))
        r0 = ncl_mask_claim(&j.next, chunk)


cdef void _place_body(void *ctx, int tid, int nth) noexcept nogil:
    cdef mjob *j = <mjob *>ctx
    cdef int p = <int>ncl_mask_claim(&j.next, 1)
    while p < j.npieces:
        ncl_place_piece(j.isz, j.m, j.src, j.nv, j.dst, _lo(j, p), _hi(j, p), j.cnt[p] % j.nv)
        p = <int>ncl_mask_claim(&j.next, 1)


cdef void _putmask_body(void *ctx, int tid, int nth) noexcept nogil:
    cdef mjob *j = <mjob *>ctx
    cdef int p = <int>ncl_mask_claim(&j.next, 1)
    while p < j.npieces:
        ncl_putmask_piece(j.isz, j.m, j.src, j.nv, j.dst, _lo(j, p), _hi(j, p))
        p = <int>ncl_mask_claim(&j.next, 1)


# ------------------------------------- loop functions of the call slots
# (NumPy's loop signature; data is the mjob, args the call's operands)

cdef void mask_select(mjob *j) noexcept nogil:
    """Copy the selected elements (rows) of the job, its counts known."""
    if j.total == 0:
        return
    if j.idx != NULL:
        _team(j, _gather_body, j.rows * j.total)
    else:
        _team(j, _extract_body, j.rows * j.npieces)


cdef void _extract_loop(char **args, const npy_intp *dims, const npy_intp *steps,
                        void *data) noexcept nogil:
    cdef mjob *j = <mjob *>data
    j.m = <const unsigned char *>args[0]
    j.src = args[1]
    j.dst = args[2]
    mask_select(j)


cdef void _place_loop(char **args, const npy_intp *dims, const npy_intp *steps,
                      void *data) noexcept nogil:
    cdef mjob *j = <mjob *>data
    j.m = <const unsigned char *>args[0]
    j.src = args[1]
    j.dst = args[2]
    _team(j, _place_body, j.npieces)


cdef void _putmask_loop(char **args, const npy_intp *dims, const npy_intp *steps,
                        void *data) noexcept nogil:
    cdef mjob *j = <mjob *>data
    j.m = <const unsigned char *>args[0]
    j.src = args[1]
    j.dst = args[2]
    _team(j, _putmask_body, j.npieces)


cdef void _count_loop(char **args, const npy_intp *dims, const npy_intp *steps,
                      void *data) noexcept nogil:
    cdef mjob *j = <mjob *>data
    j.m = <const unsigned char *>args[0]
    (<npy_intp *>args[1])[0] = mask_count(j)


# NumPy's way, on one thread (nclx._ncl.masknumpy)

cdef void _extract_numpy(char **args, const npy_intp *dims, const npy_intp *steps,
                         void *data) noexcept nogil:
    if (<mjob *>data).rows != 1 or (<mjob *>data).idx != NULL:
        _extract_loop(args, dims, steps, data)      # never reached: chains see flat calls
    else:
        mask_numpy_extract(args, dims, (<mjob *>data).typenum)


cdef void _place_numpy(char **args, const npy_intp *dims, const npy_intp *steps,
                       void *data) noexcept nogil:
    mask_numpy_place(args, dims, (<mjob *>data).typenum)


cdef void _putmask_numpy(char **args, const npy_intp *dims, const npy_intp *steps,
                         void *data) noexcept nogil:
    mask_numpy_putmask(args, dims, (<mjob *>data).typenum)


cdef void _count_numpy(char **args, const npy_intp *dims, const npy_intp *steps,
                       void *data) noexcept nogil:
    mask_numpy_count(args, dims)


# ------------------------------------------------------------ the calls

cdef int _SLOTS[4][NTYPENUMS]


def _fill_slots():
    cdef int op, t
    for op, name in enumerate(("extract", "place", "putmask", "count")):
        for t in range(NTYPENUMS):
            dt = fixed_width(cnp.PyArray_DescrFromType(t))
            _SLOTS[op][t] = -1
            if dt is not None and (name != "count" or dt == "bool"):
                _SLOTS[op][t] = ncl_callop_slot(name, dt)


_fill_slots()


cdef int mask_slot(int op, int typenum) noexcept:
    """Call slot of op on a NumPy type number, -1 when nclx has none."""
    if typenum < 0 or typenum >= NTYPENUMS:
        return -1
    return _SLOTS[op][typenum]


cdef bint mask_quiet(int k) noexcept nogil:
    return ncl_callop_quiet(k)


cdef int mask_threads(npy_intp work) noexcept nogil:
    """Threads for a call touching ``work`` elements (1 below the threading
    threshold)."""
    if work < _thread_min:
        return 1
    return min(ncl_threads_now(), <int>MAX_THREADS)


cdef int mask_run(int op, int k, mjob *j, char **args, npy_intp *dims,
                  npy_intp *steps) noexcept nogil:
    """Run one call of slot k: its kernel straight away when ``j.quiet``,
    else down its chains (the ledger, user hooks, NumPy's node); -1 where a
    hook left a Python exception set (the caller raises it: review 22)."""
    if op == OP_EXTRACT:
        if j.quiet:
            _extract_loop(args, dims, steps, j)
            return 0
        return ncl_callop_run(k, args, dims, steps, j, _extract_loop, _extract_numpy)
    elif op == OP_PLACE:
        if j.quiet:
            _place_loop(args, dims, steps, j)
            return 0
        return ncl_callop_run(k, args, dims, steps, j, _place_loop, _place_numpy)
    elif op == OP_PUTMASK:
        if j.quiet:
            _putmask_loop(args, dims, steps, j)
            return 0
        return ncl_callop_run(k, args, dims, steps, j, _putmask_loop, _putmask_numpy)
    if j.quiet:
        _count_loop(args, dims, steps, j)
        return 0
    return ncl_callop_run(k, args, dims, steps, j, _count_loop, _count_numpy)


cdef int mask_prepare(mjob *j, int op, const char *m, npy_intp n, cnp.ndarray a) except -1:
    """Fill a job over mask m[:n] for op on a's dtype: its slot's quietness,
    its pieces, and (extract, count) each piece's count and the total."""
    j.quiet = mask_quiet(mask_slot(op, cnp.PyArray_TYPE(a)))
    j.rows = 1
    j.idx = NULL
    j.isz = <int>cnp.PyArray_ITEMSIZE(a)
    j.typenum = cnp.PyArray_TYPE(a)
    j.m = <const unsigned char *>m
    j.total = 0
    # a count reads one byte per element: threads pay from about four times
    # the size where moving elements does (measured: docs/mask.md)
    mask_plan(j, n, mask_threads(n // 4 if op == OP_COUNT else n))
    if op == OP_EXTRACT or op == OP_PLACE and j.npieces > 1:
        if n > NOGIL_MIN:
            with nogil:
                mask_count(j)
        else:
            mask_count(j)
    else:
        j.cnt[0] = 0
    return 0


def maskstore_isa(limit=None):
    """place/putmask's vector ISA (2: AVX-512, 1: AVX2, 0: none); tests cap
    it with ``limit``, which returns the previous cap."""
    if limit is not None and (type(limit) is not int or limit not in (0, 1, 2)):
        raise ValueError(f"maskstore_isa: limit must be 0, 1 or 2, got {limit!r}")
    return ncl_maskstore_isa() if limit is None else ncl_maskstore_set_limit(limit)


def piece_layout(npy_intp n, int threads):
    """(piece length, number of pieces) of a mask of ``n`` elements split for
    ``threads`` threads (tests use it to probe piece boundaries)."""
    cdef mjob j
    if n < 0:
        raise ValueError(f"piece_layout: n must be >= 0, got {n}")
    if threads < 1:
        raise ValueError(f"piece_layout: threads must be >= 1, got {threads}")
    mask_plan(&j, n, threads)
    return j.piece, j.npieces
