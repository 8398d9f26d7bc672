/*
 * The kernels of NCLib's Mask subsystem, one piece of a call at a time
 * (nclx._ncl.masking splits a call into pieces and runs them on the team).
 *
 * A mask element is selected when its byte is nonzero (NumPy's rule for bool
 * arrays, whatever byte a view put there).  Elements move as 1, 2, 4 or 8
 * byte words: the kernels never look at values, so every fixed-width dtype
 * of that size shares one kernel.  Mask bytes are read eight at a time: a
 * word of zeros skips eight elements, a word without a zero byte moves
 * eight at once; in a mixed word extract moves them one by one without
 * branches (into its own output), place and putmask store its selected
 * elements only (the array's other elements are never written).
 */
#ifndef NCLX_NCL_MASK_H
#define NCLX_NCL_MASK_H
#include <stdint.h>
#include <string.h>
#include <numpy/npy_common.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* element words that may alias any type (the data are floats, ints, bools) */
typedef uint8_t ncl_w1 __attribute__((may_alias));
typedef uint16_t ncl_w2 __attribute__((may_alias));
typedef uint32_t ncl_w4 __attribute__((may_alias));
typedef uint64_t ncl_w8 __attribute__((may_alias));

#define NCL_ONES8 0x0101010101010101ULL
#define NCL_HIGH8 0x8080808080808080ULL

static inline uint64_t ncl_mask_word(const uint8_t *m)
{
    uint64_t w;
    memcpy(&w, m, 8);
    return w;
}

/* no byte of w is zero (the classic zero-byte test, exact as a whole-word test) */
static inline int ncl_mask_full(uint64_t w)
{
    return ((w - NCL_ONES8) & ~w & NCL_HIGH8) == 0;
}

/* the high bit of every nonzero byte of w, exactly (no carry crosses a byte) */
static inline uint64_t ncl_mask_nz(uint64_t w)
{
    return (((w & ~NCL_HIGH8) + ~NCL_HIGH8) | w) & NCL_HIGH8;
}

/* the first element (0..7, memory order) whose bit is in nz, cleared from nz */
static inline int ncl_mask_pop(uint64_t *nz)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    int b = __builtin_clzll(*nz);
    *nz ^= (uint64_t)1 << (63 - b);
    return b >> 3;
#else
    int b = __builtin_ctzll(*nz);
    *nz &= *nz - 1;
    return b >> 3;
#endif
}

/* putmask's word whose values wrap around v's end: d[i + t] = v[(j + t) %
 * nv] for each selected byte t of w, one by one (j < nv: element i's value) */
#define NCL_MASK_WRAP_WORD(d, v, nv, i, j, w)                                       \
    do {                                                                            \
        uint64_t nz_ = ncl_mask_nz(w);                                              \
        npy_intp jj_ = (j);             /* the value of element i + pt_ */          \
        int t_, pt_ = 0;                                                            \
        while (nz_) {                                                               \
            t_ = ncl_mask_pop(&nz_);                                                \
            jj_ += t_ - pt_;                                                        \
            pt_ = t_;                                                               \
            while (jj_ >= (nv)) jj_ -= (nv);                                        \
            (d)[(i) + t_] = (v)[jj_];                                               \
        }                                                                           \
    } while (0)

#include "ncl_maskstore.h"

/* nonzero bytes of m[0:n] */
static npy_intp ncl_mask_count(const uint8_t *m, npy_intp n)
{
    npy_intp zeros = 0, i = 0;
#if defined(__SSE2__)
    const __m128i z = _mm_setzero_si128();
    while (n - i >= 32) {
        /* byte counters hold at most 255 blocks before they are summed */
        npy_intp blocks = (n - i) / 32, b;
        __m128i acc0 = z, acc1 = z, s;
        if (blocks > 255) blocks = 255;
        for (b = 0; b < blocks; b++, i += 32) {
            __m128i v0 = _mm_loadu_si128((const __m128i *)(m + i));
            __m128i v1 = _mm_loadu_si128((const __m128i *)(m + i + 16));
            acc0 = _mm_sub_epi8(acc0, _mm_cmpeq_epi8(v0, z));
            acc1 = _mm_sub_epi8(acc1, _mm_cmpeq_epi8(v1, z));
        }
        s = _mm_add_epi64(_mm_sad_epu8(acc0, z), _mm_sad_epu8(acc1, z));
        zeros += (npy_intp)_mm_cvtsi128_si64(s) + (npy_intp)_mm_cvtsi128_si64(_mm_unpackhi_epi64(s, s));
    }
#endif
    for (; i < n; i++) {
        zeros += (m[i] == 0);
    }
    return n - zeros;
}

/* one past the last selected element of m[lo:hi] (lo when none) */
static inline npy_intp ncl_mask_end(const uint8_t *m, npy_intp lo, npy_intp hi)
{
    while (hi - lo >= 8 && ncl_mask_word(m + hi - 8) == 0) {
        hi -= 8;
    }
    while (hi > lo && m[hi - 1] == 0) {
        hi--;
    }
    return hi;
}

/*
 * extract: d[0:] = s[lo:hi][m[lo:hi] != 0], at most cap elements (the count
 * this piece had when the output was sized: a mask another thread changes
 * meanwhile cannot make it write past its share).  Every element up to the
 * last selected one is stored at the next free slot before the slot
 * advances, so no store lands past the piece's own count either.
 */
#define NCL_MASK_EXTRACT(NAME, T)                                                   \
static void ncl_extract_##NAME(const uint8_t *m, const T *s, T *d,                  \
                               npy_intp lo, npy_intp hi, npy_intp cap)              \
{                                                                                   \
    npy_intp i = lo, k = 0, end = ncl_mask_end(m, lo, hi), stop;                    \
    int j;                                                                          \
    while (end - i >= 8) {                                                          \
        /* a block of at most 256 elements stores at most 256 */                   \
        stop = end - i > 256 ? i + 256 : i + ((end - i) & ~(npy_intp)7);            \
        if (cap - k < stop - i) break;                                              \
        for (; i < stop; i += 8) {                                                  \
            uint64_t w = ncl_mask_word(m + i);                                      \
            if (w == 0) continue;                                                   \
            if (ncl_mask_full(w)) {                                                 \
                memcpy(d + k, s + i, 8 * sizeof(T));                                \
                k += 8;                                                             \
                continue;                                                           \
            }                                                                       \
            for (j = 0; j < 8; j++) {                                               \
                d[k] = s[i + j];                                                    \
                k += (m[i + j] != 0);                                               \
            }                                                                       \
        }                                                                           \
    }                                                                               \
    for (; end - i >= 8 && cap - k >= 8; i += 8) {                                  \
        uint64_t w = ncl_mask_word(m + i);                                          \
        if (w == 0) continue;                                                       \
        for (j = 0; j < 8; j++) {                                                   \
            d[k] = s[i + j];                                                        \
            k += (m[i + j] != 0);                                                   \
        }                                                                           \
    }                                                                               \
    for (; i < end && k < cap; i++) {                                               \
        d[k] = s[i];                                                                \
        k += (m[i] != 0);                                                           \
    }                                                                               \
}

/*
 * place: the selected elements of d[lo:hi] take v[j], v[j+1], ... in turn,
 * wrapping to v[0] after v[nv-1] (j: the values used before this piece,
 * modulo nv).  Only selected elements are stored, as NumPy stores them:
 * another Python thread may be writing the others meanwhile (a store of
 * an unselected element's old value would undo its write).  A mixed word
 * visits its selected bytes only (no branch per element).
 */
#define NCL_MASK_PLACE(NAME, T)                                                     \
static void ncl_place_##NAME(const uint8_t *m, const T *v, npy_intp nv, T *d,        \
                             npy_intp lo, npy_intp hi, npy_intp j)                  \
{                                                                                   \
    npy_intp i = lo;                                                                \
    for (; hi - i >= 8; i += 8) {                                                   \
        uint64_t w = ncl_mask_word(m + i), nz;                                      \
        int t;                                                                      \
        if (w == 0) continue;                                                       \
        if (ncl_mask_full(w) && nv - j >= 8) {                                      \
            memcpy(d + i, v + j, 8 * sizeof(T));                                    \
            j += 8;                                                                 \
            if (j == nv) j = 0;                                                     \
            continue;                                                               \
        }                                                                           \
        nz = ncl_mask_nz(w);                                                        \
        while (nz) {                                                                \
            t = ncl_mask_pop(&nz);                                                  \
            d[i + t] = v[j];                                                        \
            j = j + 1 == nv ? 0 : j + 1;                                            \
        }                                                                           \
    }                                                                               \
    for (; i < hi; i++) {                                                           \
        if (m[i]) {                                                                 \
            d[i] = v[j];                                                            \
            j = j + 1 == nv ? 0 : j + 1;                                            \
        }                                                                           \
    }                                                                               \
}

/*
 * putmask: the selected elements of d[lo:hi] take v[i % nv] (by position);
 * only selected elements are stored (as place).
 */
#define NCL_MASK_PUTMASK(NAME, T)                                                   \
static void ncl_putmask_##NAME(const uint8_t *m, const T *v, npy_intp nv, T *d,      \
                               npy_intp lo, npy_intp hi)                            \
{                                                                                   \
    npy_intp i = lo, j;                                                             \
    uint64_t w, nz;                                                                 \
    int t;                                                                          \
    if (nv == 1) {                                                                  \
        const T v0 = v[0];                                                          \
        for (; hi - i >= 8; i += 8) {                                               \
            w = ncl_mask_word(m + i);                                               \
            if (w == 0) continue;                                                   \
            if (ncl_mask_full(w)) {                                                 \
                for (t = 0; t < 8; t++) d[i + t] = v0;                              \
                continue;                                                           \
            }                                                                       \
            nz = ncl_mask_nz(w);                                                    \
            while (nz) {                                                            \
                t = ncl_mask_pop(&nz);                                              \
                d[i + t] = v0;                                                      \
            }                                                                       \
        }                                                                           \
        for (; i < hi; i++) {                                                       \
            if (m[i]) d[i] = v0;                                                    \
        }                                                                           \
        return;                                                                     \
    }                                                                               \
    if (nv >= hi) {                                                                 \
        for (; hi - i >= 8; i += 8) {                                               \
            w = ncl_mask_word(m + i);                                               \
            if (w == 0) continue;                                                   \
            if (ncl_mask_full(w)) {                                                 \
                memcpy(d + i, v + i, 8 * sizeof(T));                                \
                continue;                                                           \
            }                                                                       \
            nz = ncl_mask_nz(w);                                                    \
            while (nz) {                                                            \
                t = ncl_mask_pop(&nz);                                              \
                d[i + t] = v[i + t];                                                \
            }                                                                       \
        }                                                                           \
        for (; i < hi; i++) {                                                       \
            if (m[i]) d[i] = v[i];                                                  \
        }                                                                           \
        return;                                                                     \
    }                                                                               \
    j = lo % nv;                /* the value of element i */                        \
    for (; hi - i >= 8; i += 8) {                                                   \
        w = ncl_mask_word(m + i);                                                   \
        if (w != 0)                                                                 \
            NCL_MASK_WRAP_WORD(d, v, nv, i, j, w);                                  \
        j += 8;                                                                     \
        while (j >= nv) j -= nv;                                                    \
    }                                                                               \
    for (; i < hi; i++) {                                                           \
        if (m[i]) d[i] = v[j];                                                      \
        j = j + 1 == nv ? 0 : j + 1;                                                \
    }                                                                               \
}

/*
 * compress along an axis: output rows r0..r1-1 of a (pre, count, row) copy
 * of the (pre, S, row) source, row j of each block being source row idx[j].
 */
#define NCL_MASK_GATHER(NAME, SZ)                                                   \
static void ncl_gather_##NAME(const char *s, char *d, const npy_intp *idx,          \
                              npy_intp cnt, npy_intp S, npy_intp rowbytes,          \
                              npy_intp r0, npy_intp r1)                             \
{                                                                                   \
    npy_intp p = r0 / cnt, j = r0 % cnt, r;                                         \
    const char *blk = s + p * S * rowbytes;                                         \
    for (r = r0; r < r1; r++) {                                                     \
        memcpy(d + r * rowbytes, blk + idx[j] * rowbytes, SZ);                      \
        if (++j == cnt) {                                                           \
            j = 0;                                                                  \
            blk += S * rowbytes;                                                    \
        }                                                                           \
    }                                                                               \
}

NCL_MASK_EXTRACT(1, ncl_w1)
NCL_MASK_EXTRACT(2, ncl_w2)
NCL_MASK_EXTRACT(4, ncl_w4)
NCL_MASK_EXTRACT(8, ncl_w8)
NCL_MASK_PLACE(1, ncl_w1)
NCL_MASK_PLACE(2, ncl_w2)
NCL_MASK_PLACE(4, ncl_w4)
NCL_MASK_PLACE(8, ncl_w8)
NCL_MASK_PUTMASK(1, ncl_w1)
NCL_MASK_PUTMASK(2, ncl_w2)
NCL_MASK_PUTMASK(4, ncl_w4)
NCL_MASK_PUTMASK(8, ncl_w8)
NCL_MASK_GATHER(1, 1)
NCL_MASK_GATHER(2, 2)
NCL_MASK_GATHER(4, 4)
NCL_MASK_GATHER(8, 8)
NCL_MASK_GATHER(any, rowbytes)

/* itemsize -> kernel (sizes 1, 2, 4, 8) */
static void ncl_extract_piece(int isz, const uint8_t *m, const char *s, char *d,
                              npy_intp lo, npy_intp hi, npy_intp cap)
{
    switch (isz) {
    case 1: ncl_extract_1(m, (const ncl_w1 *)s, (ncl_w1 *)d, lo, hi, cap); break;
    case 2: ncl_extract_2(m, (const ncl_w2 *)s, (ncl_w2 *)d, lo, hi, cap); break;
    case 4: ncl_extract_4(m, (const ncl_w4 *)s, (ncl_w4 *)d, lo, hi, cap); break;
    default: ncl_extract_8(m, (const ncl_w8 *)s, (ncl_w8 *)d, lo, hi, cap); break;
    }
}

static void ncl_place_piece(int isz, const uint8_t *m, const char *v, npy_intp nv, char *d,
                            npy_intp lo, npy_intp hi, npy_intp j)
{
#if NCL_MASKSTORE_VEC
    lo = ncl_place_vec(isz, m, v, nv, d, lo, hi, &j);    /* ncl_maskstore.h */
#endif
    switch (isz) {
    case 1: ncl_place_1(m, (const ncl_w1 *)v, nv, (ncl_w1 *)d, lo, hi, j); break;
    case 2: ncl_place_2(m, (const ncl_w2 *)v, nv, (ncl_w2 *)d, lo, hi, j); break;
    case 4: ncl_place_4(m, (const ncl_w4 *)v, nv, (ncl_w4 *)d, lo, hi, j); break;
    default: ncl_place_8(m, (const ncl_w8 *)v, nv, (ncl_w8 *)d, lo, hi, j); break;
    }
}

static void ncl_putmask_piece(int isz, const uint8_t *m, const char *v, npy_intp nv, char *d,
                              npy_intp lo, npy_intp hi)
{
#if NCL_MASKSTORE_VEC
    lo = ncl_putmask_vec(isz, m, v, nv, d, lo, hi);  /* ncl_maskstore.h */
#endif
    switch (isz) {
    case 1: ncl_putmask_1(m, (const ncl_w1 *)v, nv, (ncl_w1 *)d, lo, hi); break;
    case 2: ncl_putmask_2(m, (const ncl_w2 *)v, nv, (ncl_w2 *)d, lo, hi); break;
    case 4: ncl_putmask_4(m, (const ncl_w4 *)v, nv, (ncl_w4 *)d, lo, hi); break;
    default: ncl_putmask_8(m, (const ncl_w8 *)v, nv, (ncl_w8 *)d, lo, hi); break;
    }
}

static void ncl_gather_piece(npy_intp rowbytes, const char *s, char *d, const npy_intp *idx,
                             npy_intp cnt, npy_intp S, npy_intp r0, npy_intp r1)
{
    switch (rowbytes) {
    case 1: ncl_gather_1(s, d, idx, cnt, S, 1, r0, r1); break;
    case 2: ncl_gather_2(s, d, idx, cnt, S, 2, r0, r1); break;
    case 4: ncl_gather_4(s, d, idx, cnt, S, 4, r0, r1); break;
    case 8: ncl_gather_8(s, d, idx, cnt, S, 8, r0, r1); break;
    default: ncl_gather_any(s, d, idx, cnt, S, rowbytes, r0, r1); break;
    }
}

#endif
