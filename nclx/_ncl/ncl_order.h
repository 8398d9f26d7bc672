/*
 * nclx's checks before a sort moves anything (nclx._ncl.sortrun): is the
 * data already in NumPy's order, are an argsort's indices 0..n-1, and what
 * in an unstable float sort NumPy alone may order (both zeros, NaNs of
 * different bits).  Each reads the data once, without a branch per
 * element, prefetching a block ahead.
 */
#ifndef NCLX_NCL_ORDER_H
#define NCLX_NCL_ORDER_H
#include <stdint.h>
#include <string.h>
#include <numpy/npy_common.h>
#include "ncl_dtswitch.h"
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

/* 1 when v[0:n) is in order (NumPy's order: NaNs last).  Blocks of 2,048
 * elements are scanned without a branch, stopping after the first block
 * with a descent (unsorted data costs one block).  Floats' compare with
 * its NaN cases (x[i] < x[i-1], or x[i-1] a NaN and x[i] not) ran at 3.8 ns
 * an element as scalar code here (GCC does not vectorise it): with SSE2 it
 * is four vector compares per two (four) elements, at memory speed. */
#define NCL_BLT_INT(a, b) ((a) < (b))
#define NCL_BLT_FLT(a, b) (((a) < (b)) | (((b) != (b)) & ((a) == (a))))
#if defined(__x86_64__) && defined(__SSE2__)
#define NCL_SSE_SORTED(W, VT, LOAD, LT, UNORD, ORD, OR, AND, MASK, ZERO)                 \
static npy_intp ncl_sorted_prefix_##W(const void *v, npy_intp s, npy_intp e)          \
{   /* the first i in [s, e) where a block of vector steps saw a descent, or e */    \
    const char *p = (const char *)v;                                                 \
    const npy_intp step = 16 / sizeof(p[0]) / (W);                                    \
    VT bad = ZERO();                                                                 \
    npy_intp i = s;                                                                  \
    for (; i + step <= e; i += step) {                                               \
        VT a = LOAD((const void *)(p + i * (W))), b = LOAD((const void *)(p + (i - 1) * (W))); \
        bad = OR(bad, OR(LT(a, b), AND(UNORD(b, b), ORD(a, a))));                     \
    }                                                                                \
    return MASK(bad) ? s : i;                                                        \
}
#define NCL_LOADPD(q) _mm_loadu_pd((const double *)(q))
#define NCL_LOADPS(q) _mm_loadu_ps((const float *)(q))
NCL_SSE_SORTED(8, __m128d, NCL_LOADPD, _mm_cmplt_pd, _mm_cmpunord_pd, _mm_cmpord_pd, _mm_or_pd,
               _mm_and_pd, _mm_movemask_pd, _mm_setzero_pd)
NCL_SSE_SORTED(4, __m128, NCL_LOADPS, _mm_cmplt_ps, _mm_cmpunord_ps, _mm_cmpord_ps, _mm_or_ps,
               _mm_and_ps, _mm_movemask_ps, _mm_setzero_ps)
#undef NCL_LOADPD
#undef NCL_LOADPS
#define NCL_VEC_START(NAME, x, s, e) NCL_VEC_##NAME(x, s, e)
#define NCL_VEC_float64(x, s, e) ncl_sorted_prefix_8((const void *)(x), s, e)
#define NCL_VEC_float32(x, s, e) ncl_sorted_prefix_4((const void *)(x), s, e)
#else
#define NCL_VEC_START(NAME, x, s, e) (s)
#endif
/* 64-bit integers: a vector compare of 64-bit lanes needs SSE4.2
 * (pcmpgtq), so the block's scan is built for AVX2 and SSE4.2 and picked
 * at run time; without either, the scalar scan below.  On an AMD EPYC VM
 * the scalar scan of 1e5 sorted int64 took 53 us, NumPy's timsort run
 * check 42 us. */
#if defined(__GNUC__) && defined(__x86_64__)
#define NCL_I64_PREFIX(NAME, TGT, FLIP)                                               \
__attribute__((target(TGT))) static npy_intp NAME(const void *v, npy_intp s, npy_intp e) \
{   /* s when x[s:e) has a descent (x[s - 1] included), else e */                    \
    const int64_t *x = (const int64_t *)v;                                            \
    int64_t bad = 0;                                                                  \
    for (npy_intp i = s; i < e; i++)                                                  \
        bad |= -(int64_t)((x[i] ^ (FLIP)) < (x[i - 1] ^ (FLIP)));                     \
    return bad ? s : e;                                                               \
}
NCL_I64_PREFIX(ncl_sorted_prefix_i64_avx2, "avx2", (int64_t)0)
NCL_I64_PREFIX(ncl_sorted_prefix_i64_sse42, "sse4.2", (int64_t)0)
NCL_I64_PREFIX(ncl_sorted_prefix_u64_avx2, "avx2", INT64_MIN)
NCL_I64_PREFIX(ncl_sorted_prefix_u64_sse42, "sse4.2", INT64_MIN)
#undef NCL_I64_PREFIX
/* 2: AVX2, 1: SSE4.2, 0: neither (asked once; a race writes the same) */
static int ncl_i64_isa(void)
{
    static int isa = -1;
    int k = __atomic_load_n(&isa, __ATOMIC_RELAXED);
    if (k < 0) {
        __builtin_cpu_init();
        k = __builtin_cpu_supports("avx2") ? 2 : __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&isa, k, __ATOMIC_RELAXED);
    }
    return k;
}
#define NCL_VEC_I64(T, x, s, e)                                                       \
    (ncl_i64_isa() == 2 ? ncl_sorted_prefix_##T##_avx2((const void *)(x), s, e)       \
     : ncl_i64_isa() == 1 ? ncl_sorted_prefix_##T##_sse42((const void *)(x), s, e) : (s))
#define NCL_VEC_int64(x, s, e) NCL_VEC_I64(i64, x, s, e)
#define NCL_VEC_uint64(x, s, e) NCL_VEC_I64(u64, x, s, e)
#else
#define NCL_VEC_int64(x, s, e) (s)
#define NCL_VEC_uint64(x, s, e) (s)
#endif
#define NCL_VEC_bool(x, s, e) (s)
#define NCL_VEC_int8(x, s, e) (s)
#define NCL_VEC_int16(x, s, e) (s)
#define NCL_VEC_int32(x, s, e) (s)
#define NCL_VEC_uint8(x, s, e) (s)
#define NCL_VEC_uint16(x, s, e) (s)
#define NCL_VEC_uint32(x, s, e) (s)
#define NCL_VEC_float32nn(x, s, e) (s)
#define NCL_VEC_float64nn(x, s, e) (s)
/* The next block's lines, asked for before this block is read: an Intel
 * VM's hardware prefetcher left a light streaming loop waiting on memory
 * (an in-order check of 1e7 int64 ran in 11.1 ms without, 8.8 ms with; the
 * float scan 9.6 / 8.5 ms).  Only for data larger than a core's L2: on
 * data in the cache the prefetches cost (1e5 int64: 25.4 -> 29.1 us).  A
 * prefetch past the end never faults.  On an AMD EPYC VM the in-order
 * check ran slower with them (1e7 int64, 2 threads: 4.6-5.0 ms with,
 * 3.5-3.9 ms without; 1 thread 6.9-7.8 / 6.3-6.4 ms), so there it does
 * not prefetch (ncl_order_prefetch; sortrun.in_order_prefetch sets it). */
#define NCL_PREFETCH_MIN ((npy_intp)2 << 20)
/* 1: the in-order check prefetches, 0: not, -1: not decided yet (then on,
 * except on AMD processors) */
static int ncl_order_pf = -1;
static inline int ncl_order_prefetch(void)
{
    int k = __atomic_load_n(&ncl_order_pf, __ATOMIC_RELAXED);
    if (k < 0) {
#if defined(__GNUC__) && defined(__x86_64__)
        __builtin_cpu_init();
        k = !__builtin_cpu_is("amd");
#else
        k = 1;
#endif
        __atomic_store_n(&ncl_order_pf, k, __ATOMIC_RELAXED);
    }
    return k;
}
static inline void ncl_order_set_prefetch(int on) { __atomic_store_n(&ncl_order_pf, on != 0, __ATOMIC_RELAXED); }
#if defined(__GNUC__)
#define NCL_PREFETCH_BLOCK(p, bytes)                                                   \
    for (npy_intp q_ = 0; q_ < (npy_intp)(bytes); q_ += 64)                            \
        __builtin_prefetch((const char *)(p) + q_)
#else
#define NCL_PREFETCH_BLOCK(p, bytes) ((void)0)
#endif

static int ncl_is_sorted(int dt, const char *v, npy_intp n)
{
    int r = 1;
    /* each block: the vector steps (floats, SSE2), then the rest one by one */
#define NCL_S(NAME, T) { const T *x = (const T *)v;                                    \
        const int pf = n * (npy_intp)sizeof(T) >= NCL_PREFETCH_MIN && ncl_order_prefetch(); \
        for (npy_intp s = 1; s < n && r; s += 2048) {                                 \
            npy_intp e = n - s < 2048 ? n : s + 2048;                                  \
            uint64_t bad = 0;                                                         \
            if (pf) NCL_PREFETCH_BLOCK(x + e, 2048 * sizeof(T));                      \
            for (npy_intp i = NCL_VEC_START(NAME, x, s, e); i < e; i++)                \
                bad |= NCL_BLT_##NAME(x[i], x[i - 1]);                                 \
            r = !NCL_BAD_##NAME(bad);                                                 \
        } }
#define NCL_BLT_bool NCL_BLT_INT
#define NCL_BLT_int8 NCL_BLT_INT
#define NCL_BLT_int16 NCL_BLT_INT
#define NCL_BLT_int32 NCL_BLT_INT
/* int64: a < b is the sign of a - b corrected for overflow, accumulated
 * as whole words (no compare: GCC's emulated 64-bit vector compare without
 * SSE4.2 made this scan 11% slower than NumPy's timsort run check) */
#define NCL_BLT_int64(a, b) (((uint64_t)(a) - (uint64_t)(b)) ^ (((uint64_t)(a) ^ (uint64_t)(b)) \
                             & (((uint64_t)(a) - (uint64_t)(b)) ^ (uint64_t)(a))))
#define NCL_BAD_int64(bad) ((bad) >> 63)
#define NCL_BLT_uint8 NCL_BLT_INT
#define NCL_BLT_uint16 NCL_BLT_INT
#define NCL_BLT_uint32 NCL_BLT_INT
#define NCL_BLT_uint64 NCL_BLT_INT
#define NCL_BLT_float32 NCL_BLT_FLT
#define NCL_BLT_float64 NCL_BLT_FLT
#define NCL_BLT_float32nn NCL_BLT_INT
#define NCL_BLT_float64nn NCL_BLT_INT
#define NCL_BAD_bool(bad) (bad)
#define NCL_BAD_int8(bad) (bad)
#define NCL_BAD_int16(bad) (bad)
#define NCL_BAD_int32(bad) (bad)
#define NCL_BAD_uint8(bad) (bad)
#define NCL_BAD_uint16(bad) (bad)
#define NCL_BAD_uint32(bad) (bad)
#define NCL_BAD_uint64(bad) (bad)
#define NCL_BAD_float32(bad) (bad)
#define NCL_BAD_float64(bad) (bad)
#define NCL_BAD_float32nn(bad) (bad)
#define NCL_BAD_float64nn(bad) (bad)
    NCL_SORT_SWITCH(dt, NCL_S)
#undef NCL_S
    return r;
}

/* 1 when idx[0:n) is 0..n-1 */
static int ncl_is_iota(const npy_intp *idx, npy_intp n)
{
    for (npy_intp i = 0; i < n; i++) if (idx[i] != i) return 0;
    return 1;
}

/* What an unstable sort of floats may order differently from NumPy's: both
 * signs of zero (equal, different bits), or NaNs of different bits.  Bits
 * 1: +0.0 seen, 2: -0.0 seen, 4: a NaN seen; *lo / *hi get the least and
 * greatest NaN bit pattern (NaNs differ when lo < hi).  Branch-free
 * reductions, built for AVX-512, AVX2 and the baseline: the scan runs at
 * memory speed. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define NCL_SCAN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define NCL_SCAN_CLONES
#endif
#define NCL_SCAN_DEF(NAME, U, SIGN, NANLIM)                                             \
NCL_SCAN_CLONES static int NAME(const U *x, npy_intp n, uint64_t *lo, uint64_t *hi)    \
{                                                                                      \
    U zp = 0, zn = 0, mn = (U)~(U)0, mx = 0;                                           \
    for (npy_intp i = 0; i < n; i++) {                                                 \
        U u = x[i], a = (U)(u << 1);                                                   \
        U isn = (U)((U)0 - (U)(a > (U)NANLIM));                                        \
        zp |= (U)(u == 0);                                                             \
        zn |= (U)(u == (U)SIGN);                                                       \
        U cm = (U)((u & isn) | (U)~isn), cx = (U)(u & isn);                            \
        mn = mn < cm ? mn : cm;                                                        \
        mx = mx > cx ? mx : cx;                                                        \
    }                                                                                  \
    *lo = mn;                                                                          \
    *hi = mx;                                                                          \
    return (int)(zp | (zn << 1) | ((mn <= mx) << 2));                                  \
}
NCL_SCAN_DEF(ncl_scan_u64, uint64_t, 0x8000000000000000ull, 0xFFE0000000000000ull)
NCL_SCAN_DEF(ncl_scan_u32, uint32_t, 0x80000000u, 0xFF000000u)

/* in blocks of 2,048 elements, each prefetching the next */
static int ncl_scan_float(int isz, const char *x, npy_intp n, uint64_t *lo, uint64_t *hi)
{
    const npy_intp B = 2048;
    int flags = 0;
    uint64_t l = ~(uint64_t)0, h = 0, bl, bh;
    const int pf = n * isz >= NCL_PREFETCH_MIN;
    for (npy_intp s = 0; s < n; s += B) {
        npy_intp m = n - s < B ? n - s : B;
        int r;
        if (pf) NCL_PREFETCH_BLOCK(x + (s + B) * isz, B * isz);
        if (isz == 8) r = ncl_scan_u64((const uint64_t *)x + s, m, &bl, &bh);
        else r = ncl_scan_u32((const uint32_t *)x + s, m, &bl, &bh);
        if (r & 4) {                /* a NaN in this block: its least and greatest */
            l = bl < l ? bl : l;
            h = bh > h ? bh : h;
        }
        flags |= r;
    }
    *lo = (flags & 4) ? l : ~(uint64_t)0;
    *hi = (flags & 4) ? h : 0;
    return flags;
}

#endif
