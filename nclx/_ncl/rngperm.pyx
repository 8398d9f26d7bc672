# cython: wraparound=False, boundscheck=False
"""nclx's random permutation (the RNG subsystem's ``permutation`` op, run
by nclx._ncl.rng's kernel): a uniformly random order of 0 .. n-1.

Up to ``max(block, 2**18)`` elements, one Fisher-Yates shuffle from one
block stream.  Above, Sanders' parallel shuffle on nclx's thread team:
chunks (at most 64, a function of n alone) send each element to a
uniformly random bucket (about 2**16 elements each), counting first and
scattering with the same draws, then each bucket is shuffled from its own
stream.  Every order is equally likely given any bucket sizes, and the
result depends on the seed, the call number and n (and the block size up
to the one-shuffle bound), never on the thread count.  The C pieces are
in ncl_perm.h.
"""
from libc.stdint cimport int64_t, uint64_t

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now

cdef extern from "ncl_perm.h" nogil:
    ctypedef struct ncl_stream:
        pass
    void ncl_block_stream(ncl_stream *s, uint64_t k0, uint64_t k1, npy_intp b, uint64_t call,
                          uint64_t phase, npy_intp expect)
    npy_intp ncl_claim(npy_intp *next)
    void ncl_shuffle(int64_t *a, npy_intp n, ncl_stream *s)
    void ncl_perm_count(npy_intp *counts, npy_intp n, ncl_stream *s, int lg)
    void ncl_perm_scatter(int64_t *out, npy_intp *nxt, npy_intp first, npy_intp n,
                          ncl_stream *s, int lg)


cdef enum:
    PERM_FY_LG = 18         # one Fisher-Yates shuffle up to 2**18
    PERM_BUCKET_LG = 16     # ... above, buckets of about 2**16 elements
    PERM_CHUNKS = 64        # ... chosen by at most 64 chunks
    PERM_MAX_LG = 16        # ... among at most 2**16 buckets


cdef struct perm_job:
    uint64_t k0, k1, call    # the key and the call number of the block streams
    npy_intp *scratch        # chunk x bucket counts, then bucket starts
    int64_t *out
    npy_intp n
    npy_intp piece           # elements per chunk
    int lg                   # log2 of the bucket count
    npy_intp nchunks
    npy_intp next            # the next chunk or bucket to claim


cdef inline int _want(npy_intp npieces) noexcept nogil:
    cdef int t = ncl_threads_now()
    return <int>min(<npy_intp>t, npieces)


cdef inline void _perm_chunks(perm_job *j, bint scatter) noexcept nogil:
    """Claim chunks in turn: count each chunk's elements per bucket, or
    scatter them to their buckets' slots (the same draws: the chunk's
    stream for phase 1)."""
    cdef ncl_stream s
    cdef npy_intp q, lo, m, K = (<npy_intp>1) << j.lg
    q = ncl_claim(&j.next)
    while q < j.nchunks:
        lo = q * j.piece
        m = min(j.piece, j.n - lo)
        ncl_block_stream(&s, j.k0, j.k1, q, j.call, 1, j.piece)
        if scatter:
            ncl_perm_scatter(j.out, j.scratch + q * K, lo, m, &s, j.lg)
        else:
            ncl_perm_count(j.scratch + q * K, m, &s, j.lg)
        q = ncl_claim(&j.next)


cdef void _perm_count(void *ctx, int tid, int nthreads) noexcept nogil:
    _perm_chunks(<perm_job *>ctx, False)


cdef void _perm_scatter(void *ctx, int tid, int nthreads) noexcept nogil:
    _perm_chunks(<perm_job *>ctx, True)


cdef void _perm_shuffle(void *ctx, int tid, int nthreads) noexcept nogil:
    cdef perm_job *j = <perm_job *>ctx
    cdef ncl_stream s
    cdef npy_intp k, K = (<npy_intp>1) << j.lg
    cdef npy_intp *start = j.scratch + j.nchunks * K
    k = ncl_claim(&j.next)
    while k < K:
        ncl_block_stream(&s, j.k0, j.k1, k, j.call, 2, start[k + 1] - start[k])
        ncl_shuffle(j.out + start[k], start[k + 1] - start[k], &s)
        k = ncl_claim(&j.next)


cdef inline npy_intp _perm_fy_max(npy_intp block) noexcept nogil:
    return max(block, (<npy_intp>1) << PERM_FY_LG)


cdef void _perm_plan(npy_intp n, npy_intp *nchunks, int *lg) noexcept nogil:
    """Chunks that pick buckets and log2 of the bucket count: functions of n
    alone (buckets of about 2**16 elements: a shuffle within cache)."""
    cdef npy_intp nb = (n + ((<npy_intp>1) << PERM_BUCKET_LG) - 1) >> PERM_BUCKET_LG
    lg[0] = 1
    while lg[0] < PERM_MAX_LG and ((<npy_intp>1) << lg[0]) < nb:
        lg[0] += 1
    nchunks[0] = min(nb, <npy_intp>PERM_CHUNKS)


cdef void ncl_permutation(uint64_t k0, uint64_t k1, uint64_t call, npy_intp block,
                          npy_intp *scratch, int64_t *out, npy_intp n) noexcept nogil:
    """A uniformly random order of 0 .. n-1: one shuffled block, or (Sanders'
    parallel shuffle) every element sent to a uniformly random bucket,
    chunk by chunk, then each bucket shuffled -- every order is equally
    likely given any bucket sizes."""
    cdef perm_job j
    cdef ncl_stream s
    cdef npy_intp i, k, q, K, run, t
    cdef npy_intp *start
    if n <= _perm_fy_max(block):
        for i in range(n):
            out[i] = i
        ncl_block_stream(&s, k0, k1, 0, call, 2, n)
        ncl_shuffle(out, n, &s)
        return
    j.k0, j.k1, j.call, j.scratch = k0, k1, call, scratch
    j.out = out
    j.n = n
    _perm_plan(n, &j.nchunks, &j.lg)
    j.piece = (n + j.nchunks - 1) // j.nchunks
    K = (<npy_intp>1) << j.lg
    for i in range(j.nchunks * K):
        scratch[i] = 0
    j.next = 0
    ncl_team_run(_want(j.nchunks), _perm_count, &j)
    start = scratch + j.nchunks * K
    run = 0
    for k in range(K):              # bucket-major: bucket k's slots, chunk by chunk
        start[k] = run
        for q in range(j.nchunks):
            t = scratch[q * K + k]
            scratch[q * K + k] = run
            run += t
    start[K] = run
    j.next = 0
    ncl_team_run(_want(j.nchunks), _perm_scatter, &j)
    j.next = 0
    ncl_team_run(_want(K), _perm_shuffle, &j)


cdef npy_intp ncl_perm_scratch(npy_intp n, npy_intp block) noexcept nogil:
    """Counters a permutation of n elements needs (0: one shuffle)."""
    cdef npy_intp nchunks
    cdef int lg
    if n <= _perm_fy_max(block):
        return 0
    _perm_plan(n, &nchunks, &lg)
    return nchunks * (<npy_intp>1 << lg) + (<npy_intp>1 << lg) + 1
