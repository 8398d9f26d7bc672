/*
 * nclx's parallel sort of few distinct values: a counting sort through a
 * collision-free hash table of the keys a sample shows.
 *
 * A sort of values (no argsort) whose elements take a few distinct bit
 * patterns is given by how many times each pattern occurs, whatever the
 * kind, as long as distinct patterns are distinct values (no NaN, not both
 * signs of zero): equal keys are then the same bits, so NumPy's stable and
 * unstable orders write the same bytes.  The keys come from a sample; a
 * multiplier `mul` with no two keys on one slot of (k * mul) >> shift is
 * searched for, and each element then costs a multiply, the load of its
 * slot's key and the increment of its slot's counter.  An element whose
 * bits are not its slot's key stops the count at the end of its block
 * (the data untouched: the sort goes another way); one whose slot holds no
 * key is caught when the counts do not add up to the chunk's length.  Each
 * thread counts its chunk, then writes its own equal slice of the output
 * (non-temporal stores for large slices where SSE2 has them).
 */
#ifndef NCLX_NCL_FEW_H
#define NCLX_NCL_FEW_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <numpy/npy_common.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define NCL_FEW_MAX 256                 /* most distinct keys */
#define NCL_FEW_BITS_MAX 14             /* most slots: 1 << 14 */
#define NCL_FEW_BLOCK 4096              /* elements between checks for a miss */
#define NCL_FEW_HISTS 4                 /* interleaved counters per slot */
/* elements per pass of the 32-bit counters (no counter can wrap in one) */
#define NCL_FEW_PASS ((npy_intp)1 << 30)

#if defined(__GNUC__)
#define NCL_FEW_PREFETCH(p) __builtin_prefetch(p)
#else
#define NCL_FEW_PREFETCH(p) ((void)0)
#endif


typedef struct {
    int isz;                            /* bytes per element: 2, 4 or 8 */
    int shift;                          /* 64 - log2(slots) */
    int nkeys;
    npy_intp slots;
    uint64_t mul;
    uint64_t keys[NCL_FEW_MAX];         /* in NumPy's order */
    uint64_t kslot[1 << NCL_FEW_BITS_MAX];  /* each slot's key; empty: a key of another slot */
    /* scratch of ncl_few_build: the sample's distinct bits, the try stamps */
    uint64_t set[1024];
    unsigned char used[1024];
    uint16_t stamp[1 << NCL_FEW_BITS_MAX];
} ncl_few_table;

static inline uint64_t ncl_few_load(const char *p, int isz)
{
    if (isz == 8) { uint64_t x; memcpy(&x, p, 8); return x; }
    if (isz == 4) { uint32_t x; memcpy(&x, p, 4); return x; }
    uint16_t x; memcpy(&x, p, 2); return x;
}

static inline uint64_t ncl_few_mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline npy_intp ncl_few_slot(const ncl_few_table *t, uint64_t k)
{
    return (npy_intp)((k * t->mul) >> t->shift);
}

/* NumPy's order of two keys' bits of ncl dtype dt (no NaN among them). */
static int ncl_few_less(int dt, uint64_t a, uint64_t b)
{
    switch (dt) {
    case 2: return (int16_t)a < (int16_t)b;
    case 3: return (int32_t)a < (int32_t)b;
    case 4: return (int64_t)a < (int64_t)b;
    case 9: { float x, y; uint32_t p = (uint32_t)a, q = (uint32_t)b;
              memcpy(&x, &p, 4); memcpy(&y, &q, 4); return x < y; }
    case 10: { double x, y; memcpy(&x, &a, 8); memcpy(&y, &b, 8); return x < y; }
    default: return a < b;              /* the unsigned integers */
    }
}

/* 1 when the bits are a NaN (floats); a zero sets bit 1 (+0.0) or 2 (-0.0) of *zero. */
static int ncl_few_nan(int dt, uint64_t k, int *zero)
{
    if (dt == 9) {
        if ((k & 0x7fffffffu) == 0) *zero |= (k ? 2 : 1);
        return (k & 0x7f800000u) == 0x7f800000u && (k & 0x007fffffu);
    }
    if (dt == 10) {
        if ((k & 0x7fffffffffffffffull) == 0) *zero |= (k ? 2 : 1);
        return (k & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (k & 0x000fffffffffffffull);
    }
    return 0;
}

/*
 * The table of the distinct keys of m elements v[0], v[step], ...: 1 when
 * built (at most `maxkeys` keys, no NaN, not both zeros, a collision-free
 * multiplier found), 0 when the sort should go another way.
 */
static int ncl_few_build(ncl_few_table *t, int dt, int isz, const char *v, npy_intp m,
                         npy_intp step, int maxkeys)
{
    enum { SET = 1024 };                /* the sample's distinct bits: open addressing */
    uint64_t *set = t->set;
    unsigned char *used = t->used;
    uint16_t *stamp = t->stamp;
    int d = 0, zero = 0;
    uint64_t seed = 0x6E636C78ull;      /* fixed: the same table for the same data */
    if (maxkeys > NCL_FEW_MAX) maxkeys = NCL_FEW_MAX;
    memset(used, 0, SET);
    for (npy_intp i = 0; i < m; i++) {
        uint64_t k = ncl_few_load(v + i * step * isz, isz);
        unsigned h = (unsigned)((k * 0x9E3779B97F4A7C15ull) >> 54);
        while (used[h] && set[h] != k) h = (h + 1) & (SET - 1);
        if (!used[h]) {
            if (d == maxkeys || ncl_few_nan(dt, k, &zero)) return 0;
            used[h] = 1;
            set[h] = k;
            t->keys[d++] = k;
        }
    }
    if (zero == 3 || d == 0) return 0;
    /* in NumPy's order (insertion sort of at most 256 keys) */
    for (int i = 1; i < d; i++) {
        uint64_t k = t->keys[i];
        int p = i;
        while (p > 0 && ncl_few_less(dt, k, t->keys[p - 1])) { t->keys[p] = t->keys[p - 1]; p--; }
        t->keys[p] = k;
    }
    t->nkeys = d;
    t->isz = isz;
    /* the fewest slots (from 4 per key) with a multiplier that puts no
       two keys on one slot, 256 tries a size; a try stops at its first
       collision, and the stamps spare clearing the slots between tries */
    int bits = 8;
    while ((1 << bits) < 4 * d) bits++;
    memset(stamp, 0, sizeof t->stamp);
    uint16_t try_no = 0;
    for (; bits <= NCL_FEW_BITS_MAX; bits++) {
        for (int tries = 0; tries < 256; tries++) {
            uint64_t mul = ncl_few_mix(&seed) | 1;
            int ok = 1;
            if (++try_no == 0) { memset(stamp, 0, sizeof t->stamp); try_no = 1; }
            for (int i = 0; i < d; i++) {
                unsigned h = (unsigned)((t->keys[i] * mul) >> (64 - bits));
                if (stamp[h] == try_no) { ok = 0; break; }
                stamp[h] = try_no;
            }
            if (ok) {
                npy_intp slots = (npy_intp)1 << bits;
                t->mul = mul;
                t->shift = 64 - bits;
                t->slots = slots;
                /* an empty slot holds the first key, whose own slot is
                   another: no element hashing there equals it */
                for (npy_intp s = 0; s < slots; s++) t->kslot[s] = t->keys[0];
                for (int i = 0; i < d; i++) t->kslot[ncl_few_slot(t, t->keys[i])] = t->keys[i];
                return 1;
            }
        }
    }
    return 0;
}

/*
 * Counts of v[0:n) per slot into tot[slot] (npy_intp), through
 * NCL_FEW_HISTS interleaved 32-bit histograms `h` (slots each, zeroed,
 * left zeroed).  Returns 0 at the first block holding an element that is
 * not its slot's key, or when *stop is set (another thread found one;
 * this one then sets it too), else 1.
 */
#define NCL_FEW_COUNT(T)                                                                \
static int ncl_few_count_##T(const ncl_few_table *t, const T *v, npy_intp n,           \
                             uint32_t *h, npy_intp *tot, volatile int *stop)            \
{                                                                                       \
    const uint64_t mul = t->mul;                                                        \
    const int sh = t->shift;                                                            \
    const npy_intp S = t->slots;                                                        \
    const uint64_t *ks = t->kslot;                                                      \
    uint32_t *h0 = h, *h1 = h + S, *h2 = h + 2 * S, *h3 = h + 3 * S;                    \
    /* prefetched only past a core's L2: on data in the cache it costs */               \
    const int pf = n * (npy_intp)sizeof(T) >= ((npy_intp)2 << 20);                      \
    int ok = 1;                                                                         \
    for (npy_intp p = 0; p < n && ok; p += NCL_FEW_PASS) {                              \
        npy_intp pe = n - p < NCL_FEW_PASS ? n : p + NCL_FEW_PASS;                      \
        for (npy_intp b = p; b < pe; b += NCL_FEW_BLOCK) {                              \
            npy_intp e = pe - b < NCL_FEW_BLOCK ? pe : b + NCL_FEW_BLOCK, i = b;        \
            uint64_t bad = 0;                                                           \
            for (; i + 4 <= e; i += 4) {                                                \
                if (pf) NCL_FEW_PREFETCH(v + i + 2048 / sizeof(T));                     \
                uint64_t k0 = v[i], k1 = v[i + 1], k2 = v[i + 2], k3 = v[i + 3];        \
                npy_intp s0 = (npy_intp)((k0 * mul) >> sh);                             \
                npy_intp s1 = (npy_intp)((k1 * mul) >> sh);                             \
                npy_intp s2 = (npy_intp)((k2 * mul) >> sh);                             \
                npy_intp s3 = (npy_intp)((k3 * mul) >> sh);                             \
                bad |= (ks[s0] ^ k0) | (ks[s1] ^ k1) | (ks[s2] ^ k2) | (ks[s3] ^ k3);   \
                h0[s0]++; h1[s1]++; h2[s2]++; h3[s3]++;                                 \
            }                                                                           \
            for (; i < e; i++) {                                                        \
                uint64_t k = v[i];                                                      \
                npy_intp s = (npy_intp)((k * mul) >> sh);                               \
                bad |= ks[s] ^ k;                                                       \
                h0[s]++;                                                                \
            }                                                                           \
            if (bad) *stop = 1;                                                         \
            if (*stop) { ok = 0; break; }                                               \
        }                                                                               \
        for (npy_intp s = 0; s < S; s++) {                                              \
            tot[s] += (npy_intp)h0[s] + h1[s] + h2[s] + h3[s];                          \
            h0[s] = h1[s] = h2[s] = h3[s] = 0;                                          \
        }                                                                               \
    }                                                                                   \
    return ok;                                                                          \
}                                                                                       \
static void ncl_few_fill_##T(T *out, npy_intp a, npy_intp b, uint64_t k)                \
{                                                                                       \
    const T x = (T)k;                                                                   \
    for (npy_intp i = a; i < b; i++) out[i] = x;                                        \
}

NCL_FEW_COUNT(uint16_t)
NCL_FEW_COUNT(uint32_t)
NCL_FEW_COUNT(uint64_t)

static int ncl_few_count(const ncl_few_table *t, const char *v, npy_intp n, uint32_t *h,
                         npy_intp *tot, volatile int *stop)
{
    if (t->isz == 8) return ncl_few_count_uint64_t(t, (const uint64_t *)v, n, h, tot, stop);
    if (t->isz == 4) return ncl_few_count_uint32_t(t, (const uint32_t *)v, n, h, tot, stop);
    return ncl_few_count_uint16_t(t, (const uint16_t *)v, n, h, tot, stop);
}

/* out[a:b) = the bits k; with `stream` (the output is larger than the
   caches) through non-temporal stores where SSE2 has them: no read for
   ownership of the lines written */
static void ncl_few_fill(int isz, char *out, npy_intp a, npy_intp b, uint64_t k, int stream)
{
    (void)stream;
#if defined(__SSE2__)
    /* (2-byte slices never get here: a 16-bit sort that long is counted
       over the whole range, ncl_sort_counting) */
    if (stream && isz >= 4 && (b - a) * isz >= 64) {
        char *p = out + a * isz, *end = out + b * isz;
        uint64_t w = k;
        if (isz == 4) w = (k & 0xffffffffull) * 0x0000000100000001ull;
        while (((uintptr_t)p & 15) && p < end) { memcpy(p, &w, (size_t)isz); p += isz; }
        __m128i x = _mm_set1_epi64x((long long)w);
        for (; p + 64 <= end; p += 64) {
            _mm_stream_si128((__m128i *)p, x);
            _mm_stream_si128((__m128i *)(p + 16), x);
            _mm_stream_si128((__m128i *)(p + 32), x);
            _mm_stream_si128((__m128i *)(p + 48), x);
        }
        for (; p + 16 <= end; p += 16) _mm_stream_si128((__m128i *)p, x);
        for (; p < end; p += isz) memcpy(p, &w, (size_t)isz);
        _mm_sfence();
        return;
    }
#endif
    if (isz == 8) ncl_few_fill_uint64_t((uint64_t *)out, a, b, k);
    else if (isz == 4) ncl_few_fill_uint32_t((uint32_t *)out, a, b, k);
    else ncl_few_fill_uint16_t((uint16_t *)out, a, b, k);
}

#endif
