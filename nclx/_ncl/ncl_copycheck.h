/*
 * A copy that checks NumPy's order of what it writes, for np.sort's copy
 * (nclx._ncl.sortcopy): each element is loaded once, stored and compared
 * with the element before it from the same registers, so the order found
 * is the order of the bytes written, whatever another thread writes to the
 * source meanwhile.  64-bit keys only: int64, uint64 (compared with the
 * sign bit flipped) and float64 (NumPy's order, NaNs last: x[i] < x[i-1],
 * or x[i-1] a NaN and x[i] not).
 *
 * With AVX2 (picked at run time) four elements a vector, the element
 * before each lane taken from the vector before by a permute; the stores
 * non-temporal when asked (a copy larger than the last-level cache).  On
 * an AMD EPYC VM one thread copied 80 MB into fresh pages in 6.1 ms this
 * way, 6.0 ms by the plain streamed copy, 10.5 ms through a buffer in the
 * cache checked between (the reads and the writes no longer overlapped).
 * Without AVX2: one element at a time, branch-free.
 */
#ifndef NCLX_NCL_COPYCHECK_H
#define NCLX_NCL_COPYCHECK_H
#include <stdint.h>
#include <string.h>
#include <numpy/npy_common.h>
#include "ncl_order.h"
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define NCL_CC_AVX2 1
#endif

/* kinds of key */
#define NCL_CC_I64 0
#define NCL_CC_U64 1
#define NCL_CC_F64 2

/* 1 when x[i] is below x[i - 1] in NumPy's order */
static inline int ncl_cc_desc(int kind, uint64_t cur, uint64_t prev)
{
    if (kind == NCL_CC_F64) {
        double c, p;
        memcpy(&c, &cur, 8);
        memcpy(&p, &prev, 8);
        return NCL_BLT_FLT(c, p);       /* ncl_order.h's NaN-aware compare */
    }
    if (kind == NCL_CC_U64)
        return cur < prev;
    return (int64_t)cur < (int64_t)prev;
}

/* d[0:n) = x[0:n), one element at a time; 1 when in order */
static int ncl_cc_scalar(int kind, uint64_t *d, const uint64_t *x, npy_intp n)
{
    int bad = 0;
    uint64_t prev = n > 0 ? x[0] : 0;
    for (npy_intp i = 0; i < n; i++) {
        uint64_t v = x[i];
        bad |= ncl_cc_desc(kind, v, prev);
        d[i] = v;
        prev = v;
    }
    return !bad;
}

#ifdef NCL_CC_AVX2
/* the vector of the elements before v's lanes: [last of before, v0, v1, v2] */
#define NCL_CC_BEFORE(v, before) \
    _mm256_blend_epi32(_mm256_permute4x64_epi64((v), 0x90), _mm256_permute4x64_epi64((before), 0xFF), 0x03)

__attribute__((target("avx2"))) static int
ncl_cc_avx2(int kind, uint64_t *d, const uint64_t *x, npy_intp n, int stream)
{
    npy_intp i = 0;
    int bad = 0;
    uint64_t prev = n > 0 ? x[0] : 0;
    const __m256i flip = _mm256_set1_epi64x(kind == NCL_CC_U64 ? INT64_MIN : 0);
    __m256i acc = _mm256_setzero_si256(), last;
    int vec = 0;
    /* to the destination's 32-byte boundary one by one */
    for (; i < n && ((uintptr_t)(d + i) & 31); i++) {
        uint64_t v = x[i];
        bad |= ncl_cc_desc(kind, v, prev);
        d[i] = v;
        prev = v;
    }
    last = _mm256_set1_epi64x((int64_t)prev);
    for (; i + 4 <= n; i += 4) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(x + i));
        __m256i p = NCL_CC_BEFORE(v, last);
        if (kind == NCL_CC_F64) {
            __m256d vd = _mm256_castsi256_pd(v), pd = _mm256_castsi256_pd(p);
            __m256d lt = _mm256_cmp_pd(vd, pd, _CMP_LT_OQ);
            __m256d nan_first = _mm256_and_pd(_mm256_cmp_pd(pd, pd, _CMP_UNORD_Q),
                                              _mm256_cmp_pd(vd, vd, _CMP_ORD_Q));
            acc = _mm256_or_si256(acc, _mm256_castpd_si256(_mm256_or_pd(lt, nan_first)));
        } else {
            acc = _mm256_or_si256(acc, _mm256_cmpgt_epi64(_mm256_xor_si256(p, flip),
                                                          _mm256_xor_si256(v, flip)));
        }
        if (stream)
            _mm256_stream_si256((__m256i *)(d + i), v);
        else
            _mm256_store_si256((__m256i *)(d + i), v);
        last = v;
        vec = 1;
    }
    if (vec) {
        uint64_t t[4];
        _mm256_storeu_si256((__m256i *)t, last);
        prev = t[3];
    }
    for (; i < n; i++) {
        uint64_t v = x[i];
        bad |= ncl_cc_desc(kind, v, prev);
        d[i] = v;
        prev = v;
    }
    if (stream)
        _mm_sfence();
    return !(bad | !_mm256_testz_si256(acc, acc));
}
#undef NCL_CC_BEFORE
static int ncl_cc_has_vector(void) { return ncl_i64_isa() == 2; }
#else
static int ncl_cc_has_vector(void) { return 0; }
#endif

/* 0: the one-at-a-time copy even where the CPU has AVX2 (tests) */
static int ncl_cc_vector = 1;

/* d[0:n) = x[0:n) (8-byte items, not overlapping); 1 when the items
 * written are in NumPy's order for keys of ``kind`` */
static int ncl_copy_check(int kind, char *d, const char *x, npy_intp n, int stream)
{
#ifdef NCL_CC_AVX2
    if (__atomic_load_n(&ncl_cc_vector, __ATOMIC_RELAXED) && ncl_i64_isa() == 2)
        return ncl_cc_avx2(kind, (uint64_t *)d, (const uint64_t *)x, n, stream);
#endif
    (void)stream;
    return ncl_cc_scalar(kind, (uint64_t *)d, (const uint64_t *)x, n);
}

#endif
