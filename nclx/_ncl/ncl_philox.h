/*
 * Philox4x64-10, the counter-based generator of Salmon, Moraes, Dror and
 * Shaw ("Parallel random numbers: as easy as 1, 2, 3", SC 2011): a 256-bit
 * counter and a 128-bit key give four 64-bit words through ten rounds of two
 * 64x64->128 multiplies, the key bumped by Weyl constants between rounds.
 * It is the generator numpy.random.Philox runs; nclx uses the same counter
 * layout, so a position in a stream names the same words in both.
 *
 * A stream (ncl_stream) is a key and the upper three counter words; its
 * lowest counter word counts blocks of four words.  Words come out in block
 * order, and a 32-bit draw takes the low half of a word, then its high half.
 */
#ifndef NCLX_NCL_PHILOX_H
#define NCLX_NCL_PHILOX_H
#include <stdint.h>

#define NCL_PH_M0 0xD2E7470EE14C6C93ULL     /* round multipliers */
#define NCL_PH_M1 0xCA5A826395121157ULL
#define NCL_PH_W0 0x9E3779B97F4A7C15ULL     /* key bumps (golden ratio, sqrt(3)-1) */
#define NCL_PH_W1 0xBB67AE8584CAA73BULL

typedef unsigned __int128 ncl_u128;

#define NCL_PH_ROUND(k0, k1) do {                                              \
        ncl_u128 p0_ = (ncl_u128)NCL_PH_M0 * x0, p1_ = (ncl_u128)NCL_PH_M1 * x2; \
        x0 = (uint64_t)(p1_ >> 64) ^ x1 ^ (k0);                                \
        x1 = (uint64_t)p1_;                                                    \
        x2 = (uint64_t)(p0_ >> 64) ^ x3 ^ (k1);                                \
        x3 = (uint64_t)p0_;                                                    \
    } while (0)

/* The four words of counter (c0, c1, c2, c3) under key (k0, k1). */
static inline __attribute__((always_inline)) void
ncl_philox(uint64_t c0, uint64_t c1, uint64_t c2, uint64_t c3,
           uint64_t k0, uint64_t k1, uint64_t *out)
{
    uint64_t x0 = c0, x1 = c1, x2 = c2, x3 = c3;
    NCL_PH_ROUND(k0, k1);
    NCL_PH_ROUND(k0 + 1 * NCL_PH_W0, k1 + 1 * NCL_PH_W1);
    NCL_PH_ROUND(k0 + 2 * NCL_PH_W0, k1 + 2 * NCL_PH_W1);
    NCL_PH_ROUND(k0 + 3 * NCL_PH_W0, k1 + 3 * NCL_PH_W1);
    NCL_PH_ROUND(k0 + 4 * NCL_PH_W0, k1 + 4 * NCL_PH_W1);
    NCL_PH_ROUND(k0 + 5 * NCL_PH_W0, k1 + 5 * NCL_PH_W1);
    NCL_PH_ROUND(k0 + 6 * NCL_PH_W0, k1 + 6 * NCL_PH_W1);
    NCL_PH_ROUND(k0 + 7 * NCL_PH_W0, k1 + 7 * NCL_PH_W1);
    NCL_PH_ROUND(k0 + 8 * NCL_PH_W0, k1 + 8 * NCL_PH_W1);
    NCL_PH_ROUND(k0 + 9 * NCL_PH_W0, k1 + 9 * NCL_PH_W1);
    out[0] = x0; out[1] = x1; out[2] = x2; out[3] = x3;
}

/* A stream of words: key, upper counter words, the next block's c0. */
typedef struct {
    uint64_t k0, k1, c1, c2, c3;
    uint64_t c0;            /* counter of the next block */
    uint64_t buf[4];
    int pos;                /* next word of buf; 4: empty */
    int has_half;           /* a high half is waiting for next32 */
    uint32_t half;
} ncl_stream;

static inline void
ncl_stream_init(ncl_stream *s, uint64_t k0, uint64_t k1, uint64_t c0, uint64_t c1,
                uint64_t c2, uint64_t c3)
{
    s->k0 = k0; s->k1 = k1; s->c0 = c0; s->c1 = c1; s->c2 = c2; s->c3 = c3;
    s->pos = 4; s->has_half = 0; s->half = 0;
}

static inline uint64_t ncl_next64(ncl_stream *s)
{
    if (__builtin_expect(s->pos == 4, 0)) {
        ncl_philox(s->c0++, s->c1, s->c2, s->c3, s->k0, s->k1, s->buf);
        s->pos = 0;
    }
    return s->buf[s->pos++];
}

/* 32-bit draws: a word's low half, then (next time) its high half. */
static inline uint32_t ncl_next32(ncl_stream *s)
{
    uint64_t w;
    if (s->has_half) {
        s->has_half = 0;
        return s->half;
    }
    w = ncl_next64(s);
    s->has_half = 1;
    s->half = (uint32_t)(w >> 32);
    return (uint32_t)w;
}

/* double in [0, 1) from a word: its top 53 bits (numpy's next_double) */
static inline double ncl_u01(uint64_t w) { return (double)(w >> 11) * (1.0 / 9007199254740992.0); }
/* float in [0, 1) from a 32-bit draw: its top 24 bits (numpy's next_float) */
static inline float ncl_u01f(uint32_t h) { return (float)(h >> 8) * (1.0f / 16777216.0f); }
/* double in (0, 1]: a logarithm's argument */
static inline double ncl_u01_open0(uint64_t w) { return (double)((w >> 11) + 1) * (1.0 / 9007199254740992.0); }

#endif
