/*
 * A copy of n bytes whose destination bypasses the caches (non-temporal
 * stores), for nclx's large contiguous copies (nclx._ncl.copyrun): a copy
 * bigger than the last-level cache evicts what it writes anyway, and
 * ordinary stores first read each destination line (read-for-ownership),
 * so a third of the memory traffic goes.  Measured on a 2-CPU AMD EPYC VM
 * (docs/benchmarks.md): 76 MiB into mapped memory on two threads 7.2 ms
 * against memmove's 10.7; 7.6 MiB on one thread 0.81 against 1.24 ms.
 *
 * The bytes written are memcpy's: source and destination must not overlap
 * (the caller keeps overlapping copies on NumPy's memmove).  Head and tail
 * (to the destination's next 64-byte boundary, and what is left under 64
 * bytes) are memcpy; the stores are ordered by an sfence before return, so
 * another thread that synchronises with this one afterwards sees them.
 * Without SSE2 it is memcpy.
 */
#ifndef NCLX_NCL_STREAM_H
#define NCLX_NCL_STREAM_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline void ncl_stream_copy(char *d, const char *s, size_t n)
{
#if defined(__SSE2__)
    size_t head = (size_t)(-(uintptr_t)d) & 63;
    if (n < head + 256) {
        memcpy(d, s, n);
        return;
    }
    memcpy(d, s, head);
    d += head;
    s += head;
    n -= head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    _mm_sfence();
    memcpy(d, s, n);
#else
    memcpy(d, s, n);
#endif
}

#endif
