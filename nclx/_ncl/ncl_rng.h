/*
 * nclx's random fills over Philox streams (ncl_philox.h): each function
 * fills one contiguous piece of an output, so a threaded call runs them on
 * disjoint pieces (nclx._ncl.rng).
 *
 * - random / uniform read the generator's main stream at a position: word
 *   p of the stream is word p % 4 of counter p / 4 + 1, one word per double,
 *   one 32-bit half per float -- numpy.random.Philox's order.
 * - normal, exponential, integers, permutation consume a variable number of
 *   words (rejection); each fixed-size block of the output draws from its
 *   own stream, so a piece's values depend on its block alone.
 *
 * Normal and exponential use 256-layer ziggurats (Marsaglia and Tsang,
 * "The ziggurat method for generating random variables", JSS 2000); the
 * tables (ncl_zig) are computed by nclx._ncl.rng at import.
 */
#ifndef NCLX_NCL_RNG_H
#define NCLX_NCL_RNG_H
#include <math.h>
#include <stdint.h>
#include <numpy/npy_common.h>
#include "ncl_philox.h"

/* ------------------------------------------------------ the main stream */

/* out[i] = lo + scale * u(word p + i), plain u when !affine */
static void
ncl_fill_u01_f64(double *out, npy_intp n, uint64_t p, uint64_t k0, uint64_t k1,
                 int affine, double lo, double scale)
{
    uint64_t w[4], q = p >> 2;
    npy_intp i = 0;
    int j = (int)(p & 3);
    while (i < n) {
        ncl_philox(q + 1, 0, 0, 0, k0, k1, w);
        q++;
        if (j == 0 && i + 4 <= n) {
            if (affine) {
                out[i] = lo + scale * ncl_u01(w[0]); out[i + 1] = lo + scale * ncl_u01(w[1]);
                out[i + 2] = lo + scale * ncl_u01(w[2]); out[i + 3] = lo + scale * ncl_u01(w[3]);
            } else {
                out[i] = ncl_u01(w[0]); out[i + 1] = ncl_u01(w[1]);
                out[i + 2] = ncl_u01(w[2]); out[i + 3] = ncl_u01(w[3]);
            }
            i += 4;
            continue;
        }
        for (; j < 4 && i < n; j++, i++)
            out[i] = affine ? lo + scale * ncl_u01(w[j]) : ncl_u01(w[j]);
        j = 0;
    }
}

/* out[i] = lo + scale * u(half h + i): half h is the low (h even) or high
 * half of word h / 2 */
static void
ncl_fill_u01_f32(float *out, npy_intp n, uint64_t h, uint64_t k0, uint64_t k1,
                 int affine, float lo, float scale)
{
    uint64_t w[4], q = h >> 3;
    uint32_t v[8];
    npy_intp i = 0;
    int j = (int)(h & 7), t;
    while (i < n) {
        ncl_philox(q + 1, 0, 0, 0, k0, k1, w);
        q++;
        for (t = 0; t < 4; t++) {
            v[2 * t] = (uint32_t)w[t];
            v[2 * t + 1] = (uint32_t)(w[t] >> 32);
        }
        if (j == 0 && i + 8 <= n) {
            for (t = 0; t < 8; t++)
                out[i + t] = affine ? lo + scale * ncl_u01f(v[t]) : ncl_u01f(v[t]);
            i += 8;
            continue;
        }
        for (; j < 8 && i < n; j++, i++)
            out[i] = affine ? lo + scale * ncl_u01f(v[j]) : ncl_u01f(v[j]);
        j = 0;
    }
}

/* ------------------------------------------------------------ ziggurats */

/* Layer i (0..255) of a ziggurat under a decreasing density f on [0, inf):
 * x[0] = v / f(r) (the base strip's width, its tail folded in), x[1] = r,
 * x[i+1] < x[i], x[256] = 0, every layer of area v.  A draw picks a layer
 * and a point m of the layer's width on a grid of 2^bits: inside the core
 * (m < k[i], i.e. x < x[i+1]) it is accepted at once; otherwise the base
 * layer goes to the tail and the others to the wedge test. */
typedef struct {
    double r;
    double w[256];          /* x[i] / 2^bits of the 64-bit variant */
    uint64_t k[256];        /* x[i+1] / x[i] * 2^bits */
    double f[257];          /* f(x[i]); f[256] = f(0) = 1 */
    float wf[256];          /* the 32-bit variant's */
    uint32_t kf[256];
} ncl_zig;

/* accepted |x| of a draw that missed the core, or -1 (draw again) */
static __attribute__((noinline)) double
ncl_normal_slow(ncl_stream *s, const ncl_zig *z, int i, double x)
{
    if (i == 0) {           /* the tail beyond r (Marsaglia 1964) */
        double a, b;
        do {
            a = -log(ncl_u01_open0(ncl_next64(s))) / z->r;
            b = -log(ncl_u01_open0(ncl_next64(s)));
        } while (b + b < a * a);
        return z->r + a;
    }
    if (z->f[i] + ncl_u01(ncl_next64(s)) * (z->f[i + 1] - z->f[i]) < exp(-0.5 * x * x))
        return x;
    return -1.0;
}

static inline double ncl_normal(ncl_stream *s, const ncl_zig *z)
{
    for (;;) {
        uint64_t u = ncl_next64(s), m = u >> 11;
        int i = (int)(u & 0xff);
        double x = (double)m * z->w[i];
        if (__builtin_expect(m >= z->k[i], 0)) {
            x = ncl_normal_slow(s, z, i, x);
            if (x < 0)
                continue;
        }
        return (u & 0x100) ? -x : x;
    }
}

static inline float ncl_normal_f(ncl_stream *s, const ncl_zig *z)
{
    for (;;) {
        uint32_t u = ncl_next32(s), m = u >> 9;
        int i = (int)(u & 0xff);
        float x = (float)m * z->wf[i];
        if (__builtin_expect(m >= z->kf[i], 0)) {
            double d = ncl_normal_slow(s, z, i, (double)x);
            if (d < 0)
                continue;
            x = (float)d;
        }
        return (u & 0x100) ? -x : x;
    }
}

static __attribute__((noinline)) double
ncl_exponential_slow(ncl_stream *s, const ncl_zig *z, int i, double x)
{
    if (i == 0)             /* the tail: r plus a fresh exponential */
        return z->r - log(ncl_u01_open0(ncl_next64(s)));
    if (z->f[i] + ncl_u01(ncl_next64(s)) * (z->f[i + 1] - z->f[i]) < exp(-x))
        return x;
    return -1.0;
}

static inline double ncl_exponential(ncl_stream *s, const ncl_zig *z)
{
    for (;;) {
        uint64_t u = ncl_next64(s), m = u >> 11;
        int i = (int)(u & 0xff);
        double x = (double)m * z->w[i];
        if (__builtin_expect(m >= z->k[i], 0)) {
            x = ncl_exponential_slow(s, z, i, x);
            if (x < 0)
                continue;
        }
        return x;
    }
}

static inline float ncl_exponential_f(ncl_stream *s, const ncl_zig *z)
{
    for (;;) {
        uint32_t u = ncl_next32(s), m = u >> 8;
        int i = (int)(u & 0xff);
        float x = (float)m * z->wf[i];
        if (__builtin_expect(m >= z->kf[i], 0)) {
            double d = ncl_exponential_slow(s, z, i, (double)x);
            if (d < 0)
                continue;
            x = (float)d;
        }
        return x;
    }
}

static void ncl_fill_normal_f64(double *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                int affine, double loc, double scale)
{
    npy_intp i;
    if (affine)
        for (i = 0; i < n; i++) out[i] = loc + scale * ncl_normal(s, z);
    else
        for (i = 0; i < n; i++) out[i] = ncl_normal(s, z);
}

static void ncl_fill_normal_f32(float *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                int affine, float loc, float scale)
{
    npy_intp i;
    if (affine)
        for (i = 0; i < n; i++) out[i] = loc + scale * ncl_normal_f(s, z);
    else
        for (i = 0; i < n; i++) out[i] = ncl_normal_f(s, z);
}

static void ncl_fill_exponential_f64(double *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                     double scale)
{
    npy_intp i;
    for (i = 0; i < n; i++) out[i] = scale * ncl_exponential(s, z);
}

static void ncl_fill_exponential_f32(float *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                     float scale)
{
    npy_intp i;
    for (i = 0; i < n; i++) out[i] = scale * ncl_exponential_f(s, z);
}

/* --------------------------------------------------- bounded integers */

/* uniform in [0, span) by Lemire's multiply-and-reject ("Fast random
 * integer generation in an interval", TOMS 2019); thresh = 2^32 % span */
static inline uint32_t ncl_bounded32(ncl_stream *s, uint32_t span, uint32_t thresh)
{
    uint64_t m = (uint64_t)ncl_next32(s) * span;
    while (__builtin_expect((uint32_t)m < thresh, 0))
        m = (uint64_t)ncl_next32(s) * span;
    return (uint32_t)(m >> 32);
}

static inline uint64_t ncl_bounded64(ncl_stream *s, uint64_t span, uint64_t thresh)
{
    ncl_u128 m = (ncl_u128)ncl_next64(s) * span;
    while (__builtin_expect((uint64_t)m < thresh, 0))
        m = (ncl_u128)ncl_next64(s) * span;
    return (uint64_t)(m >> 64);
}

/* lo + a uniform integer of [0, rng] (rng = high - low, inclusive), as T */
#define NCL_FILL_INTEGERS(NAME, T)                                               \
static void ncl_fill_integers_##NAME(T *out, npy_intp n, ncl_stream *s,        \
                                     uint64_t lo, uint64_t rng)                 \
{                                                                                \
    npy_intp i;                                                                  \
    if (rng == 0) {                                                              \
        for (i = 0; i < n; i++) out[i] = (T)lo;                                  \
    } else if (rng == 0xFFFFFFFFULL) {                                           \
        for (i = 0; i < n; i++) out[i] = (T)(lo + ncl_next32(s));                \
    } else if (rng < 0xFFFFFFFFULL) {                                            \
        uint32_t span = (uint32_t)rng + 1, thresh = (uint32_t)(-span) % span;    \
        for (i = 0; i < n; i++) out[i] = (T)(lo + ncl_bounded32(s, span, thresh)); \
    } else if (rng == UINT64_MAX) {                                              \
        for (i = 0; i < n; i++) out[i] = (T)(lo + ncl_next64(s));                \
    } else {                                                                     \
        uint64_t span = rng + 1, thresh = (-span) % span;                        \
        for (i = 0; i < n; i++) out[i] = (T)(lo + ncl_bounded64(s, span, thresh)); \
    }                                                                            \
}
NCL_FILL_INTEGERS(int8, int8_t)
NCL_FILL_INTEGERS(int16, int16_t)
NCL_FILL_INTEGERS(int32, int32_t)
NCL_FILL_INTEGERS(int64, int64_t)

/* per-element bounds: out[i] = lo[i] + a uniform integer of [0, rng[i]] */
static inline uint64_t ncl_bounded_any(ncl_stream *s, uint64_t rng)
{
    if (rng < 0xFFFFFFFFULL) {
        uint32_t span = (uint32_t)rng + 1;
        uint64_t m = (uint64_t)ncl_next32(s) * span;
        if ((uint32_t)m < span) {       /* the threshold only when it may matter */
            uint32_t thresh = (uint32_t)(-span) % span;
            while ((uint32_t)m < thresh)
                m = (uint64_t)ncl_next32(s) * span;
        }
        return m >> 32;
    }
    if (rng == 0xFFFFFFFFULL)
        return ncl_next32(s);
    if (rng == UINT64_MAX)
        return ncl_next64(s);
    {
        uint64_t span = rng + 1;
        ncl_u128 m = (ncl_u128)ncl_next64(s) * span;
        if ((uint64_t)m < span) {
            uint64_t thresh = (-span) % span;
            while ((uint64_t)m < thresh)
                m = (ncl_u128)ncl_next64(s) * span;
        }
        return (uint64_t)(m >> 64);
    }
}

#define NCL_FILL_INTEGERS_ARR(NAME, T)                                           \
static void ncl_fill_integers_arr_##NAME(T *out, npy_intp n, ncl_stream *s,    \
                                         const uint64_t *lo, const uint64_t *rng) \
{                                                                                \
    npy_intp i;                                                                  \
    for (i = 0; i < n; i++)                                                      \
        out[i] = (T)(lo[i] + (rng[i] ? ncl_bounded_any(s, rng[i]) : 0));         \
}
NCL_FILL_INTEGERS_ARR(int8, int8_t)
NCL_FILL_INTEGERS_ARR(int16, int16_t)
NCL_FILL_INTEGERS_ARR(int32, int32_t)
NCL_FILL_INTEGERS_ARR(int64, int64_t)

/* ---------------------------------------------------------- permutation */

/* Fisher-Yates: a uniformly random order of a[0..n) */
static void ncl_shuffle(int64_t *a, npy_intp n, ncl_stream *s)
{
    npy_intp i, j;
    int64_t t;
    for (i = n - 1; i > 0; i--) {
        uint64_t span = (uint64_t)i + 1;
        if (span <= 0xFFFFFFFFULL)
            j = (npy_intp)ncl_bounded32(s, (uint32_t)span, (uint32_t)(-(uint32_t)span) % (uint32_t)span);
        else
            j = (npy_intp)ncl_bounded64(s, span, (-span) % span);
        t = a[i]; a[i] = a[j]; a[j] = t;
    }
}

/* the bucket (of 2^lg, lg in 1..16) of each element, in order */
static inline uint32_t ncl_bucket(ncl_stream *s, int lg) { return ncl_next32(s) >> (32 - lg); }

/* counts[k] += elements of this chunk (n of them) that fall in bucket k */
static void ncl_perm_count(npy_intp *counts, npy_intp n, ncl_stream *s, int lg)
{
    npy_intp i;
    for (i = 0; i < n; i++) counts[ncl_bucket(s, lg)]++;
}

/* element first + i goes to out[next[bucket]++] (the same draws as count) */
static void ncl_perm_scatter(int64_t *out, npy_intp *next, npy_intp first, npy_intp n,
                             ncl_stream *s, int lg)
{
    npy_intp i;
    for (i = 0; i < n; i++) out[next[ncl_bucket(s, lg)]++] = (int64_t)(first + i);
}

#endif
