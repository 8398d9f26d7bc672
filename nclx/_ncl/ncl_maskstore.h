/*
 * putmask's and place's vector bodies (included by ncl_mask.h, after the
 * mask-word helpers): a mixed word of eight mask bytes stores its selected elements
 * with masked stores, which write the selected lanes only -- the
 * unselected elements are never written, as in the scalar bit scan, but
 * without a branch per selected element.  AVX-512 (F, VL, BW: byte masks
 * in k registers) for 1-, 2-, 4- and 8-byte elements; AVX2 (vpmaskmovd/q)
 * for 4- and 8-byte ones (place: AVX-512, 4- and 8-byte elements).  In
 * putmask element i takes v[i % nv]; a word whose eight values wrap around
 * the end of v is stored element by element (so in place).  Picked at
 * run time; without either ISA (or off x86-64 GCC/Clang) the scalar
 * kernels run.  The caller finishes the tail (fewer than eight elements).
 */
#ifndef NCLX_NCL_MASKSTORE_H
#define NCLX_NCL_MASKSTORE_H
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define NCL_MASKSTORE_VEC 1

/* 2: AVX-512 F+VL+BW, 1: AVX2, 0: neither (asked once; a race writes the same) */
static int ncl_maskstore_detected(void)
{
    static int isa = -1;
    int k = __atomic_load_n(&isa, __ATOMIC_RELAXED);
    if (k < 0) {
        __builtin_cpu_init();
        k = (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
             && __builtin_cpu_supports("avx512bw")) ? 2
            : __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&isa, k, __ATOMIC_RELAXED);
    }
    return k;
}

/* the ISA in use: the detected one, or a lower one a test asked for */
static int ncl_maskstore_limit = 2;
static int ncl_maskstore_isa(void)
{
    int k = ncl_maskstore_detected(), lim = __atomic_load_n(&ncl_maskstore_limit, __ATOMIC_RELAXED);
    return k < lim ? k : lim;
}

/* tests: use at most ISA k (0-2; the scalar kernels at 0); the previous limit */
static int ncl_maskstore_set_limit(int k)
{
    return __atomic_exchange_n(&ncl_maskstore_limit, k, __ATOMIC_RELAXED);
}

/* bit k set when mask byte k of w is nonzero */
static inline unsigned ncl_maskstore_bits(uint64_t w)
{
    return (unsigned)(((ncl_mask_nz(w) >> 7) * 0x0102040810204080ULL) >> 56);
}

#define NCL_A512 "avx512f,avx512vl,avx512bw"
#define NCL_VEC_FN(TGT) __attribute__((target(TGT))) static inline

/* AVX-512: one register of eight elements, stored under the word's k mask */
NCL_VEC_FN(NCL_A512) __m512i ncl_v8_set(const ncl_w8 *p) { return _mm512_set1_epi64((long long)*p); }
NCL_VEC_FN(NCL_A512) __m512i ncl_v8_load(const ncl_w8 *p) { return _mm512_loadu_si512(p); }
NCL_VEC_FN(NCL_A512) void ncl_v8_store(ncl_w8 *p, uint64_t w, __m512i a)
{ _mm512_mask_storeu_epi64(p, (__mmask8)ncl_maskstore_bits(w), a); }
NCL_VEC_FN(NCL_A512) __m256i ncl_v4_set(const ncl_w4 *p) { return _mm256_set1_epi32((int)*p); }
NCL_VEC_FN(NCL_A512) __m256i ncl_v4_load(const ncl_w4 *p) { return _mm256_loadu_si256((const __m256i *)p); }
NCL_VEC_FN(NCL_A512) void ncl_v4_store(ncl_w4 *p, uint64_t w, __m256i a)
{ _mm256_mask_storeu_epi32(p, (__mmask8)ncl_maskstore_bits(w), a); }
NCL_VEC_FN(NCL_A512) __m128i ncl_v2_set(const ncl_w2 *p) { return _mm_set1_epi16((short)*p); }
NCL_VEC_FN(NCL_A512) __m128i ncl_v2_load(const ncl_w2 *p) { return _mm_loadu_si128((const __m128i *)p); }
NCL_VEC_FN(NCL_A512) void ncl_v2_store(ncl_w2 *p, uint64_t w, __m128i a)
{ _mm_mask_storeu_epi16(p, (__mmask8)ncl_maskstore_bits(w), a); }
NCL_VEC_FN(NCL_A512) __m128i ncl_v1_set(const ncl_w1 *p) { return _mm_set1_epi8((char)*p); }
NCL_VEC_FN(NCL_A512) __m128i ncl_v1_load(const ncl_w1 *p) { return _mm_loadl_epi64((const __m128i *)p); }
NCL_VEC_FN(NCL_A512) void ncl_v1_store(ncl_w1 *p, uint64_t w, __m128i a)
{ _mm_mask_storeu_epi8(p, (__mmask16)ncl_maskstore_bits(w), a); }

/* AVX2: 0xFF in byte k (k < 8) when mask byte k of w is nonzero, widened
 * to the lanes' sign bits */
NCL_VEC_FN("avx2") __m128i ncl_a2_sel(uint64_t w)
{
    __m128i zero = _mm_cmpeq_epi8(_mm_cvtsi64_si128((long long)w), _mm_setzero_si128());
    return _mm_andnot_si128(zero, _mm_set1_epi64x(-1));
}
typedef struct { __m256i lo, hi; } ncl_a2_pair;
NCL_VEC_FN("avx2") ncl_a2_pair ncl_a2v8_set(const ncl_w8 *p)
{ ncl_a2_pair r; r.lo = r.hi = _mm256_set1_epi64x((long long)*p); return r; }
NCL_VEC_FN("avx2") ncl_a2_pair ncl_a2v8_load(const ncl_w8 *p)
{
    ncl_a2_pair r;
    r.lo = _mm256_loadu_si256((const __m256i *)p);
    r.hi = _mm256_loadu_si256((const __m256i *)(p + 4));
    return r;
}
NCL_VEC_FN("avx2") void ncl_a2v8_store(ncl_w8 *p, uint64_t w, ncl_a2_pair a)
{
    __m128i s = ncl_a2_sel(w);
    _mm256_maskstore_epi64((long long *)p, _mm256_cvtepi8_epi64(s), a.lo);
    _mm256_maskstore_epi64((long long *)(p + 4), _mm256_cvtepi8_epi64(_mm_srli_si128(s, 4)), a.hi);
}
NCL_VEC_FN("avx2") __m256i ncl_a2v4_set(const ncl_w4 *p) { return _mm256_set1_epi32((int)*p); }
NCL_VEC_FN("avx2") __m256i ncl_a2v4_load(const ncl_w4 *p) { return _mm256_loadu_si256((const __m256i *)p); }
NCL_VEC_FN("avx2") void ncl_a2v4_store(ncl_w4 *p, uint64_t w, __m256i a)
{ _mm256_maskstore_epi32((int *)p, _mm256_cvtepi8_epi32(ncl_a2_sel(w)), a); }

/* d[i] = v[i % nv] where m[i], for i in [lo, lo + 8k); returns lo + 8k.
 * A word of no selected element is skipped; one whose values lie in one
 * run of v (every word when nv == 1 or nv >= hi) takes one masked store
 * (a store under a full mask writes the eight elements, as the scalar
 * kernel's full-word copy). */
#define NCL_PUTMASK_VEC(NAME, TGT, T, V, PFX)                                       \
__attribute__((target(TGT))) static npy_intp                                        \
NAME(const uint8_t *m, const T *v, npy_intp nv, T *d, npy_intp lo, npy_intp hi)      \
{                                                                                   \
    npy_intp i = lo, j = nv == 1 ? 0 : lo % nv;                                     \
    const V one = PFX##_set(v);                                                     \
    for (; hi - i >= 8; i += 8) {                                                   \
        uint64_t w = ncl_mask_word(m + i);                                          \
        if (w != 0) {                                                               \
            if (nv == 1) {                                                          \
                PFX##_store(d + i, w, one);                                         \
            } else if (nv - j >= 8) {                                               \
                PFX##_store(d + i, w, PFX##_load(v + j));                           \
            } else {                    /* the values wrap: one by one */           \
                NCL_MASK_WRAP_WORD(d, v, nv, i, j, w);                              \
            }                                                                       \
        }                                                                           \
        if (nv > 1) {                                                               \
            j += 8;                                                                 \
            while (j >= nv) j -= nv;                                                \
        }                                                                           \
    }                                                                               \
    return i;                                                                       \
}
NCL_PUTMASK_VEC(ncl_putmask_512_8, NCL_A512, ncl_w8, __m512i, ncl_v8)
NCL_PUTMASK_VEC(ncl_putmask_512_4, NCL_A512, ncl_w4, __m256i, ncl_v4)
NCL_PUTMASK_VEC(ncl_putmask_512_2, NCL_A512, ncl_w2, __m128i, ncl_v2)
NCL_PUTMASK_VEC(ncl_putmask_512_1, NCL_A512, ncl_w1, __m128i, ncl_v1)
NCL_PUTMASK_VEC(ncl_putmask_avx2_8, "avx2", ncl_w8, ncl_a2_pair, ncl_a2v8)
NCL_PUTMASK_VEC(ncl_putmask_avx2_4, "avx2", ncl_w4, __m256i, ncl_a2v4)
#undef NCL_PUTMASK_VEC

/* place: the selected elements of a word take the next values of v in
 * turn; AVX-512 expands eight values loaded from v + j into the selected
 * lanes (vpexpandd/q) and stores those lanes.  A word whose values would
 * run past the end of v goes element by element.  j: the value index,
 * carried in and out. */
#define NCL_PLACE_VEC(NAME, T, V, LOADU, EXPAND, STORE)                             \
__attribute__((target(NCL_A512))) static npy_intp                                   \
NAME(const uint8_t *m, const T *v, npy_intp nv, T *d, npy_intp lo, npy_intp hi,      \
     npy_intp *jp)                                                                  \
{                                                                                   \
    npy_intp i = lo, j = *jp;                                                       \
    for (; hi - i >= 8; i += 8) {                                                   \
        uint64_t w = ncl_mask_word(m + i), nz;                                      \
        unsigned k;                                                                 \
        if (w == 0) continue;                                                       \
        if (nv - j >= 8) {                                                          \
            k = ncl_maskstore_bits(w);                                              \
            STORE(d + i, (__mmask8)k, EXPAND((__mmask8)k, LOADU(v + j)));           \
            j += __builtin_popcount(k);                                             \
            if (j == nv) j = 0;                                                     \
            continue;                                                               \
        }                                                                           \
        nz = ncl_mask_nz(w);                                                        \
        while (nz) {                                                                \
            d[i + ncl_mask_pop(&nz)] = v[j];                                        \
            j = j + 1 == nv ? 0 : j + 1;                                            \
        }                                                                           \
    }                                                                               \
    *jp = j;                                                                        \
    return i;                                                                       \
}
NCL_PLACE_VEC(ncl_place_512_8, ncl_w8, __m512i, _mm512_loadu_si512, _mm512_maskz_expand_epi64,
              _mm512_mask_storeu_epi64)
#define NCL_LOAD256(p) _mm256_loadu_si256((const __m256i *)(p))
NCL_PLACE_VEC(ncl_place_512_4, ncl_w4, __m256i, NCL_LOAD256, _mm256_maskz_expand_epi32,
              _mm256_mask_storeu_epi32)
#undef NCL_LOAD256
#undef NCL_PLACE_VEC

/* place's vector body for itemsize isz where there is one (see above) */
static npy_intp ncl_place_vec(int isz, const uint8_t *m, const char *v, npy_intp nv,
                              char *d, npy_intp lo, npy_intp hi, npy_intp *j)
{
    if (ncl_maskstore_isa() < 2)
        return lo;
    if (isz == 8)
        return ncl_place_512_8(m, (const ncl_w8 *)v, nv, (ncl_w8 *)d, lo, hi, j);
    if (isz == 4)
        return ncl_place_512_4(m, (const ncl_w4 *)v, nv, (ncl_w4 *)d, lo, hi, j);
    return lo;
}

/* the vector body for itemsize isz where there is one; returns the first
 * element left to the scalar kernel */
static npy_intp ncl_putmask_vec(int isz, const uint8_t *m, const char *v, npy_intp nv,
                                char *d, npy_intp lo, npy_intp hi)
{
    switch (ncl_maskstore_isa() * 16 + isz) {
    case 32 + 8: return ncl_putmask_512_8(m, (const ncl_w8 *)v, nv, (ncl_w8 *)d, lo, hi);
    case 32 + 4: return ncl_putmask_512_4(m, (const ncl_w4 *)v, nv, (ncl_w4 *)d, lo, hi);
    case 32 + 2: return ncl_putmask_512_2(m, (const ncl_w2 *)v, nv, (ncl_w2 *)d, lo, hi);
    case 32 + 1: return ncl_putmask_512_1(m, (const ncl_w1 *)v, nv, (ncl_w1 *)d, lo, hi);
    case 16 + 8: return ncl_putmask_avx2_8(m, (const ncl_w8 *)v, nv, (ncl_w8 *)d, lo, hi);
    case 16 + 4: return ncl_putmask_avx2_4(m, (const ncl_w4 *)v, nv, (ncl_w4 *)d, lo, hi);
    default: return lo;
    }
}
#undef NCL_VEC_FN
#else
#define NCL_MASKSTORE_VEC 0
static int ncl_maskstore_isa(void) { return 0; }
static int ncl_maskstore_set_limit(int k) { (void)k; return 0; }
#endif
#endif
