# cython: wraparound=False, boundscheck=False
"""The block executor's run loop: every step of a program on a block of its
slots, blocks spread over nclx's thread team, a final sum along NumPy's
pairwise tree or a product in order; floating-point flags (and, for the
ledger, loop time) kept per (thread, step).  No GIL, no Python objects
(but Scratch, the per-thread memory a run is given): nclx._ncl.blockexec
checks the program and operands and fills the xrun."""
from libc.string cimport memcpy
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free
from posix.stdlib cimport posix_memalign

from nclx._ncl.ncl cimport npy_intp, ncl_loop_fn
from nclx._ncl.team cimport ncl_team_run
from nclx._ncl.entries cimport ncl_slot_policy, ncl_slot_proto, ncl_entries_quiet

cdef extern from *:
    """
    #include <time.h>
    #include "ncl_fpe.h"
    #include "ncl_stream.h"
    #define ncl_bx_clear ncl_fpe_clear
    #define ncl_bx_fpe ncl_fpe_flags
    static int64_t ncl_bx_now_ns(void) {
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    """
    void ncl_bx_clear() nogil
    void ncl_stream_copy(char *d, const char *s, size_t n) nogil
    int64_t ncl_bx_now_ns() nogil
    int ncl_bx_fpe() nogil

cdef extern from "ncl_prefault.h":
    void ncl_prefault_fresh(char *p, size_t nbytes) nogil


cdef class Scratch:
    """Per-thread scratch of one running call, kept in a pool between calls."""

    def __cinit__(self):
        cdef int t
        for t in range(MAX_THREADS):
            self.buf[t] = NULL
            self.size[t] = 0

    cdef int ensure(self, int nthreads, npy_intp nbytes) except -1:
        cdef int t
        cdef void *p
        nbytes = max(nbytes, 64)
        for t in range(nthreads):
            if self.size[t] < nbytes:
                free(self.buf[t])
                self.buf[t] = NULL
                self.size[t] = 0
                if posix_memalign(&p, 64, nbytes) != 0:
                    raise MemoryError("nclx.blockexec: no memory for block scratch")
                self.buf[t] = <char *>p
                self.size[t] = nbytes
        return 0

    def __dealloc__(self):
        cdef int t
        for t in range(MAX_THREADS):
            free(self.buf[t])


cdef inline char *_at(xrun *r, char *scr, int s, npy_intp lo) noexcept nogil:
    if r.base[s] != NULL:
        return r.base[s] + lo * r.stride[s]
    return scr + r.soff[s]


cdef void _block(xrun *r, char *scr, int *fl, npy_intp lo, npy_intp m) noexcept nogil:
    """Every step on elements [lo, lo + m) (m <= B); with r.ns, each step's
    time added to ns[k] (one clock read per step)."""
    cdef char *args[4]
    cdef npy_intp steps[4]
    cdef npy_intp dims[1]
    cdef xstep *st
    cdef int k, j, s
    cdef bint staged
    cdef int64_t t0 = 0, t1
    cdef int64_t *ns = NULL
    if r.ns != NULL:
        ns = r.ns + (fl - r.flags)
        t0 = ncl_bx_now_ns()
    for k in range(r.nsteps):
        st = &r.steps[k]
        # a step of 0-d operands alone makes one value, which the steps
        # after it read with stride 0: eager NumPy's scalar (NumPy's loops
        # keep another NaN of two for a stride-0 operand; found by review)
        dims[0] = 1 if r.narrow[st.slot[st.nin]] else m
        for j in range(st.nin + 1):
            s = st.slot[j]
            args[j] = _at(r, scr, s, lo)
            steps[j] = 0 if r.narrow[s] else (r.stride[s] if r.base[s] != NULL else r.isz[s])
        staged = k == r.nsteps - 1 and r.stream_off >= 0     # s: the output slot
        if staged:
            # the result's block staged in scratch, then written past the
            # caches: its lines are not read first (same bytes)
            args[st.nin] = scr + r.stream_off
            steps[st.nin] = r.isz[s]
        ncl_bx_clear()
        st.fn(args, dims, steps, st.data)
        fl[k] |= ncl_bx_fpe()
        if staged:
            ncl_stream_copy(r.base[s] + lo * r.stride[s], scr + r.stream_off, <size_t>(m * r.isz[s]))
        if ns != NULL:
            t1 = ncl_bx_now_ns()
            ns[k] += t1 - t0
            t0 = t1


cdef void _leaf_reduce(xrun *r, char *scr, int *fl, npy_intp i) noexcept nogil:
    """Leaf i computed and reduced into its partial (RED_TREE) or the
    running value (RED_SEQ), as NumPy's reduction calls the loop:
    accumulator in and out with stride 0."""
    cdef npy_intp lo = r.leaf[i], m = r.leaf[i + 1] - r.leaf[i]
    cdef char *args[3]
    cdef npy_intp steps[3]
    cdef char *dst
    cdef int64_t t0
    if r.nsteps:
        _block(r, scr, fl, lo, m)
    if r.red == RED_SEQ:
        dst = r.acc
    else:
        dst = r.partials + i * r.risz
        memcpy(dst, r.seed, r.risz)
    args[0] = dst
    args[1] = _at(r, scr, r.result, lo)
    args[2] = dst
    steps[0] = 0
    steps[1] = r.stride[r.result] if r.base[r.result] != NULL else r.isz[r.result]
    steps[2] = 0
    t0 = ncl_bx_now_ns() if r.ns != NULL else 0
    ncl_bx_clear()
    r.rfn(args, &m, steps, r.rdata)
    fl[r.nsteps] |= ncl_bx_fpe()
    if r.ns != NULL:
        r.ns[(fl - r.flags) + r.nsteps] += ncl_bx_now_ns() - t0


cdef void _body(void *ctx, int tid, int nth) noexcept nogil:
    cdef xrun *r = <xrun *>ctx
    cdef char *scr = r.scratch[tid]
    cdef int *fl = r.flags + tid * r.nflags
    cdef npy_intp per, lo, hi, m, i
    cdef int piece
    if r.red != RED_NONE:
        piece = tid
        while piece < r.npieces:
            lo = piece * r.nleaves // r.npieces
            hi = (piece + 1) * r.nleaves // r.npieces
            for i in range(lo, hi):
                _leaf_reduce(r, scr, fl, i)
            piece += nth
        return
    # thread ranges and blocks (B) start on multiples of 64 elements: which
    # NaN NumPy's float32 loops keep from two NaN operands depends on an
    # element's place in the loop call (its unrolled body or its tail), so
    # calls cut elsewhere than one whole call's unrolled steps differ there
    # (found by review: float32 x + y of two NaNs near block boundaries)
    per = (r.n + r.npieces - 1) // r.npieces
    per = (per + 63) // 64 * 64
    piece = tid
    while piece < r.npieces:
        lo = min(piece * per, r.n)
        hi = min(lo + per, r.n)
        if r.prefault and hi > lo:
            # a fresh result: the thread's range mapped in one call, not a
            # fault a page inside the loops (ncl_prefault.h; mapping it in
            # pieces just ahead of the blocks measured no faster)
            ncl_prefault_fresh(r.base[r.result] + lo * r.isz[r.result], <size_t>((hi - lo) * r.isz[r.result]))
        while lo < hi:
            m = _block_at(r.B, hi - lo)
            _block(r, scr, fl, lo, m)
            lo += m
        piece += nth


cdef inline npy_intp _block_at(npy_intp B, npy_intp left) noexcept nogil:
    """The next block's length, ``left`` elements left: B, but never leaving
    a last call shorter than 64 elements (B - 64 then, the rest 64 to 127):
    NumPy's add/multiply loops take another path on a call shorter than
    their vector step, keeping the other NaN of two (found by review: the
    last 1-7 float64, 1-15 float32 elements of x + y, x * y); B >= 128."""
    if left <= B:
        return left
    if left - B < 64:
        return B - 64
    return B


cdef npy_intp bx_leaves(npy_intp lo, npy_intp m, npy_intp B, npy_intp *out, npy_intp k) noexcept nogil:
    """Boundaries of the maximal nodes of NumPy's pairwise tree over
    [lo, lo + m) holding at most B elements (B >= 128, NumPy's leaf size:
    every node split here NumPy splits too), appended from out[k]."""
    cdef npy_intp n2
    if m <= B:
        out[k] = lo + m
        return k + 1
    n2 = m // 2
    n2 -= n2 % 8
    k = bx_leaves(lo, n2, B, out, k)
    return bx_leaves(lo + n2, m - n2, B, out, k)


cdef int bx_plan_leaves(xrun *r, npy_intp bufsize, bint chunked) noexcept nogil:
    """The final reduction's leaves (r.leaf, r.nleaves; r.chunk) and room for
    their partials (r.partials), for r.n elements in blocks of r.B: a sum's
    leaves are nodes of NumPy's pairwise tree (``chunked``: of each chunk
    of ``bufsize`` elements, as NumPy's float sums run), a product's blocks
    in order.  -1 (both pointers NULL) when memory runs out."""
    cdef npy_intp lo, m, n = r.n
    r.partials = NULL
    r.leaf = <npy_intp *>malloc((2 * (n // r.B) + 2 * (n // max(bufsize, 1)) + 4) * sizeof(npy_intp))
    if r.leaf == NULL:
        return -1
    r.leaf[0] = 0
    r.nleaves = 0
    r.chunk = 0
    if n > 0:
        if r.red == RED_TREE:
            if chunked:
                r.chunk = bufsize
                lo = 0
                while lo < n:
                    m = min(r.chunk, n - lo)
                    r.nleaves = bx_leaves(lo, m, r.B, r.leaf + 1, r.nleaves)
                    lo += m
            else:
                r.nleaves = bx_leaves(0, n, r.B, r.leaf + 1, 0)
        else:
            while r.leaf[r.nleaves] < n:
                r.leaf[r.nleaves + 1] = r.leaf[r.nleaves] + _block_at(r.B, n - r.leaf[r.nleaves])
                r.nleaves += 1
    r.partials = <char *>malloc(max(r.nleaves, 1) * r.risz)
    if r.partials == NULL:
        free(r.leaf)
        r.leaf = NULL
        return -1
    return 0


cdef void _combine(xrun *r, npy_intp m, npy_intp *idx, char *out) noexcept nogil:
    """The partials of the subtree over m elements, added along the tree."""
    cdef char a[16]
    cdef char b[16]
    cdef char *args[3]
    cdef npy_intp steps[3]
    cdef npy_intp one = 1, n2
    if m <= r.B:
        memcpy(out, r.partials + idx[0] * r.risz, r.risz)
        idx[0] += 1
        return
    n2 = m // 2
    n2 -= n2 % 8
    _combine(r, n2, idx, a)
    _combine(r, m - n2, idx, b)
    args[0] = a
    args[1] = b
    args[2] = out
    steps[0] = steps[1] = steps[2] = r.risz
    r.cfn(args, &one, steps, r.rdata)


cdef ncl_loop_fn bx_direct(int k, int reduce, ncl_loop_fn entry, bint recorded) noexcept nogil:
    """The loop nclx's entry ``k`` runs on a call below its split threshold
    (its kernel or NumPy's loop, as its policy prefers): blocks are never
    split again.  With a hook or a mode anywhere (the entries' gate shut),
    or no entry (-1), the entry itself, which walks the chains -- unless
    the caller records the run in the ledger itself (``recorded``: it has
    checked that the ledger's nodes are all that shut the gate)."""
    if k < 0 or (not recorded and not ncl_entries_quiet()):
        return entry
    if ncl_slot_policy(k).prefer[reduce][0] != 0 and ncl_slot_proto(k).numpy_loop != NULL:
        return ncl_slot_proto(k).numpy_loop
    return ncl_slot_proto(k).nclx_loop


cdef inline void _two(xrun *r, char *a, char *b, char *out) noexcept nogil:
    cdef char *args[3]
    cdef npy_intp steps[3]
    cdef npy_intp one = 1
    args[0] = a
    args[1] = b
    args[2] = out
    steps[0] = steps[1] = steps[2] = r.risz
    r.cfn(args, &one, steps, r.rdata)


cdef int64_t bx_run(xrun *r, int want) noexcept nogil:
    """Run ``r`` on up to ``want`` threads (r.n > 0 or not), then combine a
    sum's partials; returns the wall time in ns when r.ns is set, else 0."""
    cdef int64_t wall = ncl_bx_now_ns() if r.ns != NULL else 0
    cdef npy_intp idx, lo, m
    cdef char tot[16]
    if r.n > 0:
        if want > 1:
            ncl_team_run(want, _body, r)
        else:
            _body(r, 0, 1)
    if r.red == RED_TREE and r.nleaves > 0:
        idx = 0
        ncl_bx_clear()
        if r.chunk <= 0:
            _combine(r, r.n, &idx, tot)         # the tree's sum
            _two(r, r.acc, tot, r.acc)          # start value (0) + tree, as NumPy
        else:
            # NumPy 2.0 (not 2.4, 2.5) hands its reduce loop one buffer-sized chunk
            # at a time: acc += pairwise(chunk), chunk after chunk
            lo = 0
            while lo < r.n:
                m = r.chunk if r.n - lo > r.chunk else r.n - lo
                _combine(r, m, &idx, tot)
                _two(r, r.acc, tot, r.acc)
                lo += m
        r.flags[r.nsteps] |= ncl_bx_fpe()
    ncl_bx_clear()
    return ncl_bx_now_ns() - wall if r.ns != NULL else 0
