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
 * tables (ncl_zig) are computed by nclx._ncl.rng at import.  The
 * permutation's pieces are in ncl_perm.h.
 */
#ifndef NCLX_NCL_RNG_H
#define NCLX_NCL_RNG_H
#include <math.h>
#include <stdint.h>
#include <numpy/npy_common.h>
#include "ncl_philox.h"

/* upper counter word of the block streams: the main stream's counter
 * never gets there */
#define NCL_RNG_TAG 0x6E636C7800000000ULL

/* the stream of block (or chunk, bucket) b of call number `call`, for a
 * phase (0: fills; 1, 2: a permutation's scatter and shuffle); expect:
 * about how many words it will give */
static inline void
ncl_block_stream(ncl_stream *s, uint64_t k0, uint64_t k1, npy_intp b, uint64_t call,
                 uint64_t phase, npy_intp expect)
{
    ncl_stream_init(s, k0, k1, 0, (uint64_t)b, call, NCL_RNG_TAG | phase, (uint64_t)expect);
}

/* pieces are claimed in turn: a thread that starts late (the machine busy
 * elsewhere) takes fewer, and no piece waits for it */
static inline npy_intp ncl_claim(npy_intp *next)
{
    return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------ the main stream */

/* out[i] = lo + scale * u(word p + i), plain u when !affine */
static void
ncl_fill_u01_f64(double *out, npy_intp n, uint64_t p, uint64_t k0, uint64_t k1,
                 int affine, double lo, double scale)
{
    uint64_t w[4], q = p >> 2;
    npy_intp i = 0, whole;
    int j = (int)(p & 3);
    if (j) {                        /* the rest of a block a former piece began */
        ncl_philox(++q, 0, 0, 0, k0, k1, w);
        for (; j < 4 && i < n; j++, i++)
            out[i] = affine ? lo + scale * ncl_u01(w[j]) : ncl_u01(w[j]);
    }
    whole = i + (n - i) / 4 * 4;
    if (affine) {
        for (; i < whole; i += 4) {
            ncl_philox(++q, 0, 0, 0, k0, k1, w);
            out[i] = lo + scale * ncl_u01(w[0]); out[i + 1] = lo + scale * ncl_u01(w[1]);
            out[i + 2] = lo + scale * ncl_u01(w[2]); out[i + 3] = lo + scale * ncl_u01(w[3]);
        }
    } else {
        for (; i < whole; i += 4) {
            ncl_philox(++q, 0, 0, 0, k0, k1, w);
            out[i] = ncl_u01(w[0]); out[i + 1] = ncl_u01(w[1]);
            out[i + 2] = ncl_u01(w[2]); out[i + 3] = ncl_u01(w[3]);
        }
    }
    if (i < n) {
        ncl_philox(++q, 0, 0, 0, k0, k1, w);
        for (j = 0; i < n; j++, i++)
            out[i] = affine ? lo + scale * ncl_u01(w[j]) : ncl_u01(w[j]);
    }
}

/* out[i] = lo + scale * u(the i-th half from the low (odd = 0) or high
 * half of word p): word and half apart, as a half index 2p + odd would
 * overflow from p = 2^63 */
static void
ncl_fill_u01_f32(float *out, npy_intp n, uint64_t p, int odd, uint64_t k0, uint64_t k1,
                 int affine, float lo, float scale)
{
    uint64_t w[4], q = p >> 2;
    uint32_t v[8];
    npy_intp i = 0;
    int j = (int)((p & 3) * 2) + odd, t;
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

/* x with the sign of bit 8 of u: no branch (a random sign mispredicts) */
static inline double ncl_signed(double x, uint64_t u)
{
    union { double d; uint64_t b; } v;
    v.d = x;
    v.b ^= (u & 0x100) << 55;
    return v.d;
}

static inline float ncl_signedf(float x, uint32_t u)
{
    union { float f; uint32_t b; } v;
    v.f = x;
    v.b ^= (u & 0x100) << 23;
    return v.f;
}

static inline double ncl_normal(ncl_stream *s, ncl_cur *pp, const ncl_zig *z)
{
    for (;;) {
        uint64_t u = ncl_take64(s, pp), m = u >> 11;
        int i = (int)(u & 0xff);
        double x = (double)(int64_t)m * z->w[i];
        if (__builtin_expect(m >= z->k[i], 0)) {
            s->pos = pp->p;
            x = ncl_normal_slow(s, z, i, x);
            *pp = ncl_cur_get(s);
            if (x < 0)
                continue;
        }
        return ncl_signed(x, u);
    }
}

static inline float ncl_normal_f(ncl_stream *s, ncl_cur *pp, const ncl_zig *z)
{
    for (;;) {
        uint32_t u = ncl_take32(s, pp), m = u >> 9;
        int i = (int)(u & 0xff);
        float x = (float)(int32_t)m * z->wf[i];
        if (__builtin_expect(m >= z->kf[i], 0)) {
            double d;
            s->pos = pp->p;
            d = ncl_normal_slow(s, z, i, (double)x);
            *pp = ncl_cur_get(s);
            if (d < 0)
                continue;
            x = (float)d;
        }
        return ncl_signedf(x, u);
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

static inline double ncl_exponential(ncl_stream *s, ncl_cur *pp, const ncl_zig *z)
{
    for (;;) {
        uint64_t u = ncl_take64(s, pp), m = u >> 11;
        int i = (int)(u & 0xff);
        double x = (double)(int64_t)m * z->w[i];
        if (__builtin_expect(m >= z->k[i], 0)) {
            s->pos = pp->p;
            x = ncl_exponential_slow(s, z, i, x);
            *pp = ncl_cur_get(s);
            if (x < 0)
                continue;
        }
        return x;
    }
}

static inline float ncl_exponential_f(ncl_stream *s, ncl_cur *pp, const ncl_zig *z)
{
    for (;;) {
        uint32_t u = ncl_take32(s, pp), m = u >> 8;
        int i = (int)(u & 0xff);
        float x = (float)(int32_t)m * z->wf[i];
        if (__builtin_expect(m >= z->kf[i], 0)) {
            double d;
            s->pos = pp->p;
            d = ncl_exponential_slow(s, z, i, (double)x);
            *pp = ncl_cur_get(s);
            if (d < 0)
                continue;
            x = (float)d;
        }
        return x;
    }
}

/* out[i] = EXPR(sampler) for i < n, the position kept in a register */
#define NCL_FILL_LOOP(EXPR) do {                                                 \
        npy_intp i_;                                                           \
        ncl_cur p_ = ncl_cur_get(s);                                           \
        for (i_ = 0; i_ < n; i_++) out[i_] = EXPR;                             \
        s->pos = p_.p;                                                         \
    } while (0)

static void ncl_fill_normal_f64(double *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                int affine, double loc, double scale)
{
    if (affine)
        NCL_FILL_LOOP(loc + scale * ncl_normal(s, &p_, z));
    else
        NCL_FILL_LOOP(ncl_normal(s, &p_, z));
}

static void ncl_fill_normal_f32(float *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                int affine, float loc, float scale)
{
    if (affine)
        NCL_FILL_LOOP(loc + scale * ncl_normal_f(s, &p_, z));
    else
        NCL_FILL_LOOP(ncl_normal_f(s, &p_, z));
}

static void ncl_fill_exponential_f64(double *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                     double scale)
{
    NCL_FILL_LOOP(scale * ncl_exponential(s, &p_, z));
}

static void ncl_fill_exponential_f32(float *out, npy_intp n, ncl_stream *s, const ncl_zig *z,
                                     float scale)
{
    NCL_FILL_LOOP(scale * ncl_exponential_f(s, &p_, z));
}

/* --------------------------------------------------- bounded integers */

/* uniform in [0, span) by Lemire's multiply-and-reject ("Fast random
 * integer generation in an interval", TOMS 2019); thresh = 2^32 % span */
static inline uint32_t ncl_bounded32(ncl_stream *s, ncl_cur *pp, uint32_t span, uint32_t thresh)
{
    uint64_t m = (uint64_t)ncl_take32(s, pp) * span;
    while (__builtin_expect((uint32_t)m < thresh, 0))
        m = (uint64_t)ncl_take32(s, pp) * span;
    return (uint32_t)(m >> 32);
}

static inline uint64_t ncl_bounded64(ncl_stream *s, ncl_cur *pp, uint64_t span, uint64_t thresh)
{
    ncl_u128 m = (ncl_u128)ncl_take64(s, pp) * span;
    while (__builtin_expect((uint64_t)m < thresh, 0))
        m = (ncl_u128)ncl_take64(s, pp) * span;
    return (uint64_t)(m >> 64);
}

/* the same with the threshold computed only when a draw may be rejected
 * (for a span that changes every draw) */
static inline uint32_t ncl_bounded32_lazy(ncl_stream *s, ncl_cur *pp, uint32_t span)
{
    uint64_t m = (uint64_t)ncl_take32(s, pp) * span;
    if (__builtin_expect((uint32_t)m < span, 0)) {
        uint32_t thresh = (uint32_t)(-span) % span;
        while ((uint32_t)m < thresh)
            m = (uint64_t)ncl_take32(s, pp) * span;
    }
    return (uint32_t)(m >> 32);
}

static inline uint64_t ncl_bounded64_lazy(ncl_stream *s, ncl_cur *pp, uint64_t span)
{
    ncl_u128 m = (ncl_u128)ncl_take64(s, pp) * span;
    if (__builtin_expect((uint64_t)m < span, 0)) {
        uint64_t thresh = (-span) % span;
        while ((uint64_t)m < thresh)
            m = (ncl_u128)ncl_take64(s, pp) * span;
    }
    return (uint64_t)(m >> 64);
}

/* a uniform integer of [0, rng]: 32-bit draws while rng < 2^32 - 1 */
static inline uint64_t ncl_bounded_any(ncl_stream *s, ncl_cur *pp, uint64_t rng)
{
    if (rng < 0xFFFFFFFFULL)
        return rng ? ncl_bounded32_lazy(s, pp, (uint32_t)rng + 1) : 0;
    if (rng == 0xFFFFFFFFULL)
        return ncl_take32(s, pp);
    if (rng == UINT64_MAX)
        return ncl_take64(s, pp);
    return ncl_bounded64_lazy(s, pp, rng + 1);
}

/* lo + a uniform integer of [0, rng] (rng = high - low, inclusive), as T;
 * or per element (lo_arr, rng_arr) */
#define NCL_FILL_INTEGERS(NAME, T)                                               \
static void ncl_fill_integers_##NAME(T *out, npy_intp n, ncl_stream *s,        \
                                     uint64_t lo, uint64_t rng)                 \
{                                                                                \
    if (rng == 0) {                                                              \
        npy_intp i;                                                              \
        for (i = 0; i < n; i++) out[i] = (T)lo;                                  \
    } else if (rng == 0xFFFFFFFFULL) {                                           \
        NCL_FILL_LOOP((T)(lo + ncl_take32(s, &p_)));                             \
    } else if (rng < 0xFFFFFFFFULL) {                                            \
        uint32_t span = (uint32_t)rng + 1, thresh = (uint32_t)(-span) % span;    \
        npy_intp i = 0;                                                          \
        ncl_cur c = ncl_cur_get(s);                                              \
        while (i < n) {                                                          \
            /* two draws from one word when neither is rejected: the same      \
             * values as one draw at a time, without the half bookkeeping */    \
            if (i + 2 <= n && !(c.p & 1) && c.p + 2 <= c.e) {                    \
                uint64_t w = s->buf[c.p >> 1];                                   \
                uint64_t m0 = (uint64_t)(uint32_t)w * span, m1 = (w >> 32) * span; \
                if ((uint32_t)m0 >= thresh && (uint32_t)m1 >= thresh) {          \
                    out[i] = (T)(lo + (m0 >> 32));                               \
                    out[i + 1] = (T)(lo + (m1 >> 32));                           \
                    c.p += 2;                                                    \
                    i += 2;                                                      \
                    continue;                                                    \
                }                                                                \
            }                                                                    \
            out[i++] = (T)(lo + ncl_bounded32(s, &c, span, thresh));             \
        }                                                                        \
        s->pos = c.p;                                                            \
    } else if (rng == UINT64_MAX) {                                              \
        NCL_FILL_LOOP((T)(lo + ncl_take64(s, &p_)));                             \
    } else {                                                                     \
        uint64_t span = rng + 1, thresh = (-span) % span;                        \
        NCL_FILL_LOOP((T)(lo + ncl_bounded64(s, &p_, span, thresh)));            \
    }                                                                            \
}                                                                                \
static void ncl_fill_integers_arr_##NAME(T *out, npy_intp n, ncl_stream *s,    \
                                         const uint64_t *lo, const uint64_t *rng) \
{                                                                                \
    NCL_FILL_LOOP((T)(lo[i_] + ncl_bounded_any(s, &p_, rng[i_])));               \
}
NCL_FILL_INTEGERS(int8, int8_t)
NCL_FILL_INTEGERS(int16, int16_t)
NCL_FILL_INTEGERS(int32, int32_t)
NCL_FILL_INTEGERS(int64, int64_t)

#endif
