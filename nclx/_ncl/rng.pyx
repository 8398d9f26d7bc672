# cython: wraparound=False, boundscheck=False
"""NCLib's RNG subsystem: the random fills behind nclx.random.Generator.

A fill is one call of an RNG call op (spec.CALL_OPS: random, uniform,
standard_normal, normal, exponential, integers, permutation) through
``ncl_callop_run``: a ledger row, the "rng" funnel chain and the
``<op>_<dtype>`` kernel chain, whose nclx node is ``ncl_rng_kernel``.  The
kernel splits the output into pieces that nclx's threads fill in any order:

- random and uniform read the generator's main Philox stream, element i at
  the stream position of the call plus i, so a piece's values do not depend
  on who fills it;
- the other ops draw each block of ``block`` elements from its own stream
  (counter words: block-local counter, block number, the generator's call
  number, a tag), so their values depend on the seed, the call number and
  the block size, never on the thread count.

A ``Stream`` holds a generator's state; its methods reserve stream
positions or a call number under the GIL, then fill without it.
"""
from libc.math cimport M_PI, erfc, exp, log, sqrt
from libc.stdint cimport int64_t, uint32_t, uint64_t

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport ncl_team_run, ncl_threads_now
from nclx._ncl.rngperm cimport ncl_permutation

cdef extern from "ncl_rng.h" nogil:
    ctypedef struct ncl_stream:
        pass
    ctypedef struct ncl_zig:
        double r
        double w[256]
        uint64_t k[256]
        double f[257]
        float wf[256]
        uint32_t kf[256]
    void ncl_stream_init(ncl_stream *s, uint64_t k0, uint64_t k1, uint64_t c0, uint64_t c1,
                         uint64_t c2, uint64_t c3, uint64_t expect_words)
    void ncl_philox(uint64_t c0, uint64_t c1, uint64_t c2, uint64_t c3, uint64_t k0,
                    uint64_t k1, uint64_t *out)
    float ncl_u01f(uint32_t h)
    void ncl_block_stream(ncl_stream *s, uint64_t k0, uint64_t k1, npy_intp b, uint64_t call,
                          uint64_t phase, npy_intp expect)
    npy_intp ncl_claim(npy_intp *next)
    void ncl_fill_u01_f64(double *out, npy_intp n, uint64_t p, uint64_t k0, uint64_t k1,
                          int affine, double lo, double scale)
    void ncl_fill_u01_f32(float *out, npy_intp n, uint64_t p, int odd, uint64_t k0,
                          uint64_t k1, int affine, float lo, float scale)
    void ncl_fill_normal_f64(double *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                             int affine, double loc, double scale)
    void ncl_fill_normal_f32(float *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                             int affine, float loc, float scale)
    void ncl_fill_exponential_f64(double *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                  double scale)
    void ncl_fill_exponential_f32(float *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                  float scale)
    void ncl_fill_integers_int8(void *out, npy_intp n, ncl_stream *s, uint64_t lo, uint64_t rng)
    void ncl_fill_integers_int16(void *out, npy_intp n, ncl_stream *s, uint64_t lo, uint64_t rng)
    void ncl_fill_integers_int32(void *out, npy_intp n, ncl_stream *s, uint64_t lo, uint64_t rng)
    void ncl_fill_integers_int64(void *out, npy_intp n, ncl_stream *s, uint64_t lo, uint64_t rng)
    void ncl_fill_integers_arr_int8(void *out, npy_intp n, ncl_stream *s, const uint64_t *lo,
                                    const uint64_t *rng)
    void ncl_fill_integers_arr_int16(void *out, npy_intp n, ncl_stream *s, const uint64_t *lo,
                                     const uint64_t *rng)
    void ncl_fill_integers_arr_int32(void *out, npy_intp n, ncl_stream *s, const uint64_t *lo,
                                     const uint64_t *rng)
    void ncl_fill_integers_arr_int64(void *out, npy_intp n, ncl_stream *s, const uint64_t *lo,
                                     const uint64_t *rng)


# ------------------------------------------------------------ ziggurats

cdef ncl_zig ZN          # standard normal, f(x) = exp(-x^2 / 2)
cdef ncl_zig ZE          # standard exponential, f(x) = exp(-x)


cdef inline double _dens(bint normal, double x) noexcept nogil:
    return exp(-0.5 * x * x) if normal else exp(-x)


cdef double _layers(bint normal, double r, double *x) noexcept nogil:
    """x[0..256] of the 256 layers of equal area whose base starts at r;
    returns how far the top layer overshoots the mode f(0) = 1 (> 0: r is
    too small, the layers reach the top early)."""
    cdef double tail = sqrt(M_PI / 2) * erfc(r / sqrt(2.0)) if normal else exp(-r)
    cdef double v = r * _dens(normal, r) + tail, y
    cdef int i
    x[0] = v / _dens(normal, r)
    x[1] = r
    for i in range(1, 255):
        y = _dens(normal, x[i]) + v / x[i]
        if y >= 1.0:
            return 1.0
        x[i + 1] = sqrt(-2.0 * log(y)) if normal else -log(y)
    x[256] = 0.0
    return _dens(normal, x[255]) + v / x[255] - 1.0


cdef void _ziggurat(ncl_zig *z, bint normal, int bits32) noexcept nogil:
    """Solve for r by bisection, then the tables of the 53-bit (double) and
    ``bits32``-bit (float) draws."""
    cdef double x[257]
    cdef double lo = 1.0, hi = 20.0, mid
    cdef int i
    for i in range(200):
        mid = 0.5 * (lo + hi)
        if _layers(normal, mid, x) > 0:
            lo = mid
        else:
            hi = mid
    _layers(normal, hi, x)
    z.r = x[1]
    for i in range(256):
        z.w[i] = x[i] / 9007199254740992.0
        z.k[i] = <uint64_t>(x[i + 1] / x[i] * 9007199254740992.0)
        z.wf[i] = <float>(x[i] / (<double>(1 << bits32)))
        z.kf[i] = <uint32_t>(x[i + 1] / x[i] * (1 << bits32))
        z.f[i] = _dens(normal, x[i])
    z.f[256] = 1.0


_ziggurat(&ZN, True, 23)
_ziggurat(&ZE, False, 24)


def ziggurat(str which):
    """(r, x[i] of every layer) of the "normal" or "exponential" ziggurat."""
    cdef ncl_zig *z = &ZN if which == "normal" else &ZE
    return z.r, [z.w[i] * 9007199254740992.0 for i in range(256)]


cdef uint64_t ncl_rng_word(uint64_t k0, uint64_t k1, uint64_t p) noexcept nogil:
    """Word p of the main stream."""
    cdef uint64_t w[4]
    ncl_philox(p // 4 + 1, 0, 0, 0, k0, k1, w)
    return w[p % 4]


cdef enum:
    MIN_WORK_NS = 2500      # a thread's least work: about twice a team start-up
    PIECES_PER_THREAD = 4   # pieces are claimed: a late thread takes fewer
    MAX_PIECE_NS = 400000   # ... and none holds the others up for long
    PREFAULT_FROM = 8 << 20 # bytes of output from which thread 0 maps its pages first

cdef extern from "ncl_prefault.h":
    # thread 0 maps (and zeroes) the pages of a fresh output ahead of the
    # others, which fill behind it: the kernel's zeroing runs at memory speed
    # on one core instead of in every filling thread's page faults, where the
    # two contend
    void ncl_prefault(char *p, size_t nbytes) nogil


cdef struct job:
    rng_call *c
    char *out
    npy_intp n
    npy_intp piece           # elements per piece
    npy_intp npieces
    npy_intp next            # the next piece to claim
    int prefault             # thread 0 first maps the output's pages


cdef void _fill_blocks(rng_call *c, char *out, npy_intp first, npy_intp n) noexcept nogil:
    """Elements first .. first + n of the output (a whole number of blocks,
    the last one maybe short), block by block."""
    cdef ncl_stream s
    cdef npy_intp b, lo, m
    cdef int sz = c.itemsize
    cdef bint aff = c.kind == K_NORMAL
    b = first // c.block
    lo = first
    while lo < first + n:
        m = min(c.block, first + n - lo)
        ncl_block_stream(&s, c.k0, c.k1, b, c.call, 0, m)
        if c.kind == K_STANDARD_NORMAL or c.kind == K_NORMAL:
            if sz == 8:
                ncl_fill_normal_f64(<double *>out + lo, m, &s, &ZN, aff, c.a, c.b)
            else:
                ncl_fill_normal_f32(<float *>out + lo, m, &s, &ZN, aff, <float>c.a, <float>c.b)
        elif c.kind == K_EXPONENTIAL:
            if sz == 8:
                ncl_fill_exponential_f64(<double *>out + lo, m, &s, &ZE, c.b)
            else:
                ncl_fill_exponential_f32(<float *>out + lo, m, &s, &ZE, <float>c.b)
        elif c.lo_arr != NULL:
            if sz == 1:
                ncl_fill_integers_arr_int8(<void *>(out + lo), m, &s, c.lo_arr + lo, c.rng_arr + lo)
            elif sz == 2:
                ncl_fill_integers_arr_int16(<void *>(out + 2 * lo), m, &s, c.lo_arr + lo, c.rng_arr + lo)
            elif sz == 4:
                ncl_fill_integers_arr_int32(<void *>(out + 4 * lo), m, &s, c.lo_arr + lo, c.rng_arr + lo)
            else:
                ncl_fill_integers_arr_int64(<void *>(out + 8 * lo), m, &s, c.lo_arr + lo, c.rng_arr + lo)
        elif sz == 1:
            ncl_fill_integers_int8(<void *>(out + lo), m, &s, c.lo, c.rng)
        elif sz == 2:
            ncl_fill_integers_int16(<void *>(out + 2 * lo), m, &s, c.lo, c.rng)
        elif sz == 4:
            ncl_fill_integers_int32(<void *>(out + 4 * lo), m, &s, c.lo, c.rng)
        else:
            ncl_fill_integers_int64(<void *>(out + 8 * lo), m, &s, c.lo, c.rng)
        lo += m
        b += 1


cdef void _piece_body(void *ctx, int tid, int nthreads) noexcept nogil:
    cdef job *j = <job *>ctx
    cdef rng_call *c = j.c
    cdef npy_intp p, lo, m
    cdef bint aff = c.kind == K_UNIFORM
    if tid == 0 and j.prefault:
        ncl_prefault(j.out, j.n * c.itemsize)
    p = ncl_claim(&j.next)
    while p < j.npieces:
        lo = p * j.piece
        m = min(j.piece, j.n - lo)
        if c.kind > K_UNIFORM:
            _fill_blocks(c, j.out, lo, m)
        elif c.itemsize == 8:
            ncl_fill_u01_f64(<double *>j.out + lo, m, c.pos + <uint64_t>lo, c.k0, c.k1, aff, c.a, c.b)
        else:
            # element lo is half lo of the call's: word pos + lo / 2 (a half
            # index 2 * pos + lo overflowed from position 2**63)
            ncl_fill_u01_f32(<float *>j.out + lo, m, c.pos + <uint64_t>(lo >> 1), <int>(lo & 1),
                             c.k0, c.k1, aff, <float>c.a, <float>c.b)
        p = ncl_claim(&j.next)


# ------------------------------------------------------------ the kernel

cdef inline npy_intp _cost_tenths(const rng_call *c) noexcept nogil:
    """A fill's cost per element on one thread, in tenths of a nanosecond
    (measured on a 2.6 GHz x86-64): how many threads its size pays for."""
    if c.kind <= K_UNIFORM:
        return 23 if c.itemsize == 8 else 13
    if c.kind <= K_EXPONENTIAL:
        return 43 if c.itemsize == 8 else 32
    if c.lo_arr != NULL or c.rng >= <uint64_t>0xFFFFFFFF:
        return 33
    return 21


cdef void ncl_rng_kernel(char **args, const npy_intp *dims, const npy_intp *steps,
                  void *data) noexcept nogil:
    """nclx's node of every RNG kernel chain: fill args[0] (dims[0]
    contiguous elements) as the call's rng_call says."""
    cdef rng_call *c = <rng_call *>data
    cdef job j
    cdef int want
    cdef npy_intp per
    cdef npy_intp n = dims[0]
    cdef char *out = args[0]
    if n <= 0:
        return
    if c.kind == K_PERMUTATION:
        ncl_permutation(c.k0, c.k1, c.call, c.block, c.scratch, <int64_t *>out, n)
        return
    if c.lead:                      # float32: the high half a former call left
        (<float *>out)[0] = ncl_u01f(c.half)
        if c.kind == K_UNIFORM:
            (<float *>out)[0] = <float>c.a + <float>c.b * (<float *>out)[0]
        out += 4
        n -= 1
        if n == 0:
            return
    j.c = c
    j.out = out
    j.n = n
    want = <int>min(<npy_intp>ncl_threads_now(), max(1, n * _cost_tenths(c) // (10 * MIN_WORK_NS)))
    per = (n + want * PIECES_PER_THREAD - 1) // (want * PIECES_PER_THREAD)
    per = min(per, 10 * MAX_PIECE_NS // _cost_tenths(c))
    if c.kind <= K_UNIFORM:
        j.piece = (per + 63) // 64 * 64
    else:                           # whole blocks
        j.piece = c.block * ((per + c.block - 1) // c.block)
    j.npieces = (n + j.piece - 1) // j.piece
    j.next = 0
    want = <int>min(<npy_intp>want, j.npieces)
    j.prefault = want > 1 and n * c.itemsize >= PREFAULT_FROM
    ncl_team_run(want, _piece_body, &j)
