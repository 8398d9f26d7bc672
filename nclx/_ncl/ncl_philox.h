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

/* A stream of words: key, upper counter words, the next block's c0, and
 * the words of the last blocks made (at most NCL_STREAM_WORDS).  A 64-bit
 * draw takes the next whole word (skipping a half a 32-bit draw left), a
 * 32-bit draw the next half (low, then high).  How many blocks a refill
 * makes (nblocks: fewer for a short fill) changes no value. */
#define NCL_STREAM_WORDS 32
typedef struct {
    uint64_t k0, k1, c1, c2, c3;
    uint64_t c0;                        /* counter of the next block to make */
    unsigned pos;                       /* next 32-bit half of buf */
    unsigned end;                       /* halves made */
    unsigned nblocks;                   /* blocks per refill */
    uint64_t buf[NCL_STREAM_WORDS];
} ncl_stream;

/* where a fill loop reads: kept in locals (registers), stored back into
 * the stream around the out-of-line refill and slow paths */
typedef struct { unsigned p, e; } ncl_cur;

static inline void
ncl_stream_init(ncl_stream *s, uint64_t k0, uint64_t k1, uint64_t c0, uint64_t c1,
                uint64_t c2, uint64_t c3, uint64_t expect_words)
{
    uint64_t nb = (expect_words + 3) / 4;
    s->k0 = k0; s->k1 = k1; s->c0 = c0; s->c1 = c1; s->c2 = c2; s->c3 = c3;
    s->pos = s->end = 0;
    s->nblocks = nb < 1 ? 1 : nb > NCL_STREAM_WORDS / 4 ? NCL_STREAM_WORDS / 4 : (unsigned)nb;
}

static __attribute__((noinline)) void ncl_stream_refill(ncl_stream *s)
{
    unsigned b;
    for (b = 0; b < s->nblocks; b++)
        ncl_philox(s->c0 + (uint64_t)b, s->c1, s->c2, s->c3, s->k0, s->k1, s->buf + 4 * b);
    s->c0 += s->nblocks;
    s->end = 8 * s->nblocks;
    s->nblocks = NCL_STREAM_WORDS / 4;      /* a fill that goes on wants many */
}

static inline ncl_cur ncl_cur_get(const ncl_stream *s) { ncl_cur c = {s->pos, s->end}; return c; }

static inline uint64_t ncl_take64(ncl_stream *s, ncl_cur *c)
{
    unsigned p = (c->p + 1) & ~1u;
    if (__builtin_expect(p >= c->e, 0)) {
        ncl_stream_refill(s);
        p = 0;
        c->e = s->end;
    }
    c->p = p + 2;
    return s->buf[p >> 1];
}

static inline uint32_t ncl_take32(ncl_stream *s, ncl_cur *c)
{
    unsigned p = c->p;
    if (__builtin_expect(p >= c->e, 0)) {
        ncl_stream_refill(s);
        p = 0;
        c->e = s->end;
    }
    c->p = p + 1;
    return (uint32_t)(s->buf[p >> 1] >> ((p & 1) * 32));
}

static inline uint64_t ncl_next64(ncl_stream *s)
{
    ncl_cur c = ncl_cur_get(s);
    uint64_t w = ncl_take64(s, &c);
    s->pos = c.p;
    return w;
}

/* double in [0, 1) from a word: its top 53 bits (numpy's next_double; the
 * signed conversion is one instruction, the unsigned one a branch) */
static inline double ncl_u01(uint64_t w) { return (double)(int64_t)(w >> 11) * (1.0 / 9007199254740992.0); }
/* float in [0, 1) from a 32-bit draw: its top 24 bits (numpy's next_float) */
static inline float ncl_u01f(uint32_t h) { return (float)(int32_t)(h >> 8) * (1.0f / 16777216.0f); }
/* double in (0, 1]: a logarithm's argument */
static inline double ncl_u01_open0(uint64_t w) { return (double)(int64_t)((w >> 11) + 1) * (1.0 / 9007199254740992.0); }

#endif
