/*
 * nclx's parallel unstable sort: the partition of one thread's chunk with
 * AVX2 vectors, for 64-bit keys (float64, int64, uint64).  Included by
 * ncl_part.h, which falls back to its scalar block partition elsewhere.
 *
 * In place, as the scalar one: two vectors are kept back from each end,
 * then each step loads eight keys (two vectors) from the end with less room
 * written and, for each vector, compares its four keys with the pivot (4
 * mask bits), permutes the lower keys to the front of the vector and the
 * others to its back, and stores the whole vector twice: at the left write
 * position (its lower keys count) and ending at the right one (its upper
 * keys count).  Both stores land in room already read (each end keeps at
 * least eight free slots before a step), so nothing unread is overwritten.
 * The last few keys and the four kept vectors go one by one.
 * The predicate is the scalar one (x < p or x <= p; a NaN is never lower:
 * ordered, quiet compares), so the two sides hold the same keys as the
 * scalar partition gives, in another order within each side; NumPy's sort
 * of each side then gives the same bytes (the caller leaves to NumPy any
 * data whose equal keys differ in bits: both zeros, NaN payloads).
 *
 * Measured on a 2-CPU AMD EPYC VM (AVX2): the scalar block partition took
 * about a quarter of a threaded np.sort of 1e7 float64.
 */
#ifndef NCLX_NCL_VPART_H
#define NCLX_NCL_VPART_H
#include <stdint.h>
#include <string.h>
#include <numpy/npy_common.h>
#include "ncl_order.h"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define NCL_HAVE_VPART 1

/* for a 4-bit mask of lower lanes: 32-bit lane indices putting the lower
 * 64-bit lanes first, then the others, each in lane order */
static const int32_t ncl_vpart_perm[16][8] = {
    {0, 1, 2, 3, 4, 5, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7},
    {2, 3, 0, 1, 4, 5, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7},
    {4, 5, 0, 1, 2, 3, 6, 7},
    {0, 1, 4, 5, 2, 3, 6, 7},
    {2, 3, 4, 5, 0, 1, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7},
    {6, 7, 0, 1, 2, 3, 4, 5},
    {0, 1, 6, 7, 2, 3, 4, 5},
    {2, 3, 6, 7, 0, 1, 4, 5},
    {0, 1, 2, 3, 6, 7, 4, 5},
    {4, 5, 6, 7, 0, 1, 2, 3},
    {0, 1, 4, 5, 6, 7, 2, 3},
    {2, 3, 4, 5, 6, 7, 0, 1},
    {0, 1, 2, 3, 4, 5, 6, 7},
};

#define NCL_VPART_STEP(x, MASK)                                                      \
    {                                                                                 \
        int m = MASK(x, P, S), c = __builtin_popcount((unsigned)m);                   \
        __m256i y = _mm256_permutevar8x32_epi32(                                      \
            x, _mm256_loadu_si256((const __m256i *)ncl_vpart_perm[m]));               \
        _mm256_storeu_si256((__m256i *)(v + lw), y);                                  \
        _mm256_storeu_si256((__m256i *)(v + rw - 4), y);                              \
        lw += c;                                                                      \
        rw -= 4 - c;                                                                  \
    }

/* eight keys a step (two vectors from one end); eight kept back at each end */
#define NCL_VPART_DEF(NAME, T, MASK, LOWER)                                           \
__attribute__((target("avx2,popcnt")))                                                \
static npy_intp NAME(T *v, npy_intp n, T p)                                           \
{                                                                                     \
    const __m256i P = _mm256_set1_epi64x(ncl_vpart_bits_##NAME(p));                    \
    const __m256i S = _mm256_set1_epi64x((int64_t)0x8000000000000000ull);              \
    __m256i k0 = _mm256_loadu_si256((const __m256i *)v);                              \
    __m256i k1 = _mm256_loadu_si256((const __m256i *)(v + 4));                        \
    __m256i k2 = _mm256_loadu_si256((const __m256i *)(v + n - 8));                    \
    __m256i k3 = _mm256_loadu_si256((const __m256i *)(v + n - 4));                    \
    npy_intp l = 8, r = n - 8, lw = 0, rw = n, i;                                     \
    T buf[24];                                                                        \
    int k = 0;                                                                        \
    (void)S;                                                                          \
    while (r - l >= 8) {                                                              \
        __m256i x0, x1;                                                               \
        if (l - lw <= rw - r) {                                                       \
            x0 = _mm256_loadu_si256((const __m256i *)(v + l));                        \
            x1 = _mm256_loadu_si256((const __m256i *)(v + l + 4));                    \
            l += 8;                                                                   \
        } else {                                                                      \
            r -= 8;                                                                   \
            x0 = _mm256_loadu_si256((const __m256i *)(v + r));                        \
            x1 = _mm256_loadu_si256((const __m256i *)(v + r + 4));                    \
        }                                                                             \
        NCL_VPART_STEP(x0, MASK)                                                      \
        NCL_VPART_STEP(x1, MASK)                                                      \
    }                                                                                 \
    for (i = l; i < r; i++) buf[k++] = v[i];                                          \
    _mm256_storeu_si256((__m256i *)(buf + k), k0);                                    \
    _mm256_storeu_si256((__m256i *)(buf + k + 4), k1);                                \
    _mm256_storeu_si256((__m256i *)(buf + k + 8), k2);                                \
    _mm256_storeu_si256((__m256i *)(buf + k + 12), k3);                               \
    k += 16;                                                                          \
    for (i = 0; i < k; i++) {                                                         \
        T x = buf[i];                                                                 \
        if (LOWER(x)) v[lw++] = x; else v[--rw] = x;                                  \
    }                                                                                 \
    return lw;                                                                        \
}

/* the pivot's bits in a 64-bit lane */
static inline int64_t ncl_vpart_f64_bits(double p) { int64_t b; memcpy(&b, &p, 8); return b; }
#define ncl_vpart_bits_ncl_vpart_f64_lt(p) ncl_vpart_f64_bits(p)
#define ncl_vpart_bits_ncl_vpart_f64_le(p) ncl_vpart_f64_bits(p)
#define ncl_vpart_bits_ncl_vpart_i64_lt(p) ((int64_t)(p))
#define ncl_vpart_bits_ncl_vpart_i64_le(p) ((int64_t)(p))
#define ncl_vpart_bits_ncl_vpart_u64_lt(p) ((int64_t)((p) ^ 0x8000000000000000ull))
#define ncl_vpart_bits_ncl_vpart_u64_le(p) ((int64_t)((p) ^ 0x8000000000000000ull))

/* lower-lane masks: ordered quiet compares for floats (a NaN is never
 * lower); signed 64-bit compares for integers, uint64 with the sign bit
 * flipped on both sides (P is stored flipped) */
#define NCL_VM_F64_LT(x, P, S) _mm256_movemask_pd(_mm256_cmp_pd(                      \
    _mm256_castsi256_pd(x), _mm256_castsi256_pd(P), _CMP_LT_OQ))
#define NCL_VM_F64_LE(x, P, S) _mm256_movemask_pd(_mm256_cmp_pd(                      \
    _mm256_castsi256_pd(x), _mm256_castsi256_pd(P), _CMP_LE_OQ))
#define NCL_VM_I64_LT(x, P, S) _mm256_movemask_pd(_mm256_castsi256_pd(                \
    _mm256_cmpgt_epi64(P, x)))
#define NCL_VM_I64_LE(x, P, S) (0xF & ~_mm256_movemask_pd(_mm256_castsi256_pd(        \
    _mm256_cmpgt_epi64(x, P))))
#define NCL_VM_U64_LT(x, P, S) NCL_VM_I64_LT(_mm256_xor_si256(x, S), P, S)
#define NCL_VM_U64_LE(x, P, S) NCL_VM_I64_LE(_mm256_xor_si256(x, S), P, S)

#define NCL_VLT(x) ((x) < p)
#define NCL_VLE(x) ((x) <= p)
NCL_VPART_DEF(ncl_vpart_f64_lt, double, NCL_VM_F64_LT, NCL_VLT)
NCL_VPART_DEF(ncl_vpart_f64_le, double, NCL_VM_F64_LE, NCL_VLE)
NCL_VPART_DEF(ncl_vpart_i64_lt, int64_t, NCL_VM_I64_LT, NCL_VLT)
NCL_VPART_DEF(ncl_vpart_i64_le, int64_t, NCL_VM_I64_LE, NCL_VLE)
NCL_VPART_DEF(ncl_vpart_u64_lt, uint64_t, NCL_VM_U64_LT, NCL_VLT)
NCL_VPART_DEF(ncl_vpart_u64_le, uint64_t, NCL_VM_U64_LE, NCL_VLE)
#undef NCL_VLT
#undef NCL_VLE

/* 1 when this processor runs AVX2 (ncl_order.h asks once; AVX2 processors
 * all have popcnt) */
static int ncl_vpart_isa(void) { return ncl_i64_isa() == 2; }
#else
#define NCL_HAVE_VPART 0
#endif

#endif
