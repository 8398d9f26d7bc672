/*
 * nclx's parallel sort: the pieces that depend on the element type.
 *
 * A threaded sort (nclx._ncl.sorting) sorts runs of the data with NumPy's own
 * sort function, one run per thread, then merges runs pairwise, each merge
 * split across the threads by the merge path (the co-rank of an output
 * position is found by binary search, so every thread writes its own slice
 * of the output).  Ties take the left run's element first: stable runs give
 * the stable order.  The order is NumPy's: for floats a NaN is greater than
 * every number and equal to every NaN (NumPy's FLOAT_LT), so NaNs go last.
 */
#ifndef NCLX_NCL_SORT_H
#define NCLX_NCL_SORT_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <numpy/npy_common.h>
#include "ncl_dtswitch.h"

/* Merge scratch.  A large one is mapped on 2 MiB boundaries and asked for
 * huge pages (a fresh 80 MB buffer costs 20,000 4 KiB page faults, more than
 * the merge itself), and the last one, up to ncl_scratch_keep bytes, is kept
 * for the next sort (ncl_scratch_release unmaps it).  The cache is taken
 * with a try-lock: a sort that finds it busy maps its own buffer (no thread
 * ever waits, and a child forked while the lock was held never deadlocks). */
#define NCL_HUGE ((size_t)2 << 20)
typedef struct { void *base; size_t size; char *ptr; size_t usable; } ncl_scratch;
static ncl_scratch ncl_cached = {NULL, 0, NULL, 0};
static int ncl_cache_lock = 0;
static size_t ncl_scratch_keep = (size_t)256 << 20;

static int ncl_cache_try(void) { return __atomic_exchange_n(&ncl_cache_lock, 1, __ATOMIC_ACQUIRE) == 0; }
static void ncl_cache_unlock(void) { __atomic_store_n(&ncl_cache_lock, 0, __ATOMIC_RELEASE); }

static void ncl_scratch_unmap(ncl_scratch *s)
{
    if (s->size) munmap(s->base, s->size);
    else free(s->base);
    s->base = NULL; s->size = 0; s->ptr = NULL; s->usable = 0;
}

static int ncl_scratch_get(ncl_scratch *s, size_t n)
{
    if (n < 2 * NCL_HUGE) {
        s->size = 0;
        s->base = malloc(n ? n : 1);
        s->ptr = (char *)s->base;
        s->usable = n;
        return s->base != NULL;
    }
    if (ncl_cache_try()) {
        if (ncl_cached.base != NULL && ncl_cached.usable >= n) {
            *s = ncl_cached;
            ncl_cached.base = NULL; ncl_cached.size = 0; ncl_cached.ptr = NULL; ncl_cached.usable = 0;
            ncl_cache_unlock();
            return 1;
        }
        ncl_cache_unlock();
    }
    s->usable = (n + NCL_HUGE - 1) & ~(NCL_HUGE - 1);
    s->size = s->usable + NCL_HUGE;
    s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s->base == MAP_FAILED) {
        s->base = NULL; s->size = 0;
        return 0;
    }
    s->ptr = (char *)(((uintptr_t)s->base + NCL_HUGE - 1) & ~(uintptr_t)(NCL_HUGE - 1));
#ifdef MADV_HUGEPAGE
    madvise(s->ptr, s->usable, MADV_HUGEPAGE);
#endif
    return 1;
}

static void ncl_scratch_put(ncl_scratch *s)
{
    if (s->size && s->usable <= ncl_scratch_keep && ncl_cache_try()) {
        ncl_scratch old = ncl_cached;
        if (old.base == NULL || old.usable < s->usable) {
            ncl_cached = *s;
            s->base = NULL; s->size = 0;
            *s = old;
        }
        ncl_cache_unlock();
    }
    if (s->base != NULL) ncl_scratch_unmap(s);
}

/* Unmap the kept scratch; returns the bytes released (0 if none or busy). */
static size_t ncl_scratch_release(void)
{
    ncl_scratch old = {NULL, 0, NULL, 0};
    size_t n = 0;
    if (ncl_cache_try()) {
        old = ncl_cached;
        ncl_cached.base = NULL; ncl_cached.size = 0; ncl_cached.ptr = NULL; ncl_cached.usable = 0;
        ncl_cache_unlock();
    }
    if (old.base != NULL) { n = old.size; ncl_scratch_unmap(&old); }
    return n;
}

#define NCL_LT_INT(a, b) ((a) < (b))
#define NCL_LT_FLT(a, b) ((a) < (b) || ((b) != (b) && (a) == (a)))

/* For each type: corank/merge of values, and of indices by their values. */
#define NCL_SORT_DEFS(NAME, T, LT)                                                      \
static npy_intp ncl_corank_##NAME(const T *A, npy_intp la, const T *B, npy_intp lb,    \
                                  npy_intp d)                                          \
{                                                                                      \
    npy_intp lo = d > lb ? d - lb : 0, hi = d < la ? d : la;                           \
    while (lo < hi) {                                                                  \
        npy_intp i = lo + (hi - lo) / 2, j = d - i;                                    \
        if (j > 0 && i < la && !LT(B[j - 1], A[i])) lo = i + 1; else hi = i;           \
    }                                                                                  \
    return lo;                                                                         \
}                                                                                      \
static void ncl_merge_##NAME(const T *A, npy_intp la, const T *B, npy_intp lb,         \
                             npy_intp d0, npy_intp d1, T *out)                         \
{                                                                                      \
    /* two merges in one loop (output halves [d0, dm) and [dm, d1)): each step   */    \
    /* waits on its own compare, so two independent chains run twice as fast    */    \
    npy_intp dm = d0 + (d1 - d0) / 2;                                                  \
    npy_intp i = ncl_corank_##NAME(A, la, B, lb, d0), j = d0 - i;                      \
    npy_intp p = ncl_corank_##NAME(A, la, B, lb, dm), q = dm - p;                      \
    npy_intp i1 = p, j1 = q;                                                           \
    npy_intp p1 = ncl_corank_##NAME(A, la, B, lb, d1), q1 = d1 - p1;                   \
    T *o = out + d0, *r = out + dm;                                                    \
    while (i < i1 && j < j1 && p < p1 && q < q1) {                                     \
        T a = A[i], b = B[j], c = A[p], e = B[q];                                      \
        int tb = LT(b, a), te = LT(e, c);                                              \
        *o++ = tb ? b : a;                                                             \
        *r++ = te ? e : c;                                                             \
        j += tb; i += !tb;                                                             \
        q += te; p += !te;                                                             \
    }                                                                                  \
    while (i < i1 && j < j1) {                                                         \
        T a = A[i], b = B[j];                                                          \
        int tb = LT(b, a);                                                             \
        *o++ = tb ? b : a;                                                             \
        j += tb; i += !tb;                                                             \
    }                                                                                  \
    if (i < i1) memcpy(o, A + i, (size_t)(i1 - i) * sizeof(T));                        \
    else if (j < j1) memcpy(o, B + j, (size_t)(j1 - j) * sizeof(T));                   \
    while (p < p1 && q < q1) {                                                         \
        T c = A[p], e = B[q];                                                          \
        int te = LT(e, c);                                                             \
        *r++ = te ? e : c;                                                             \
        q += te; p += !te;                                                             \
    }                                                                                  \
    if (p < p1) memcpy(r, A + p, (size_t)(p1 - p) * sizeof(T));                        \
    else if (q < q1) memcpy(r, B + q, (size_t)(q1 - q) * sizeof(T));                   \
}                                                                                      \
static int ncl_ordered_##NAME(const T *v, const npy_intp *idx, const npy_intp *b,      \
                              int nruns)                                               \
{                                                                                      \
    for (int r = 1; r < nruns; r++) {                                                  \
        npy_intp k = b[r];                                                             \
        if (b[r - 1] == k || b[r + 1] == k) continue;                                  \
        if (idx ? LT(v[idx[k]], v[idx[k - 1]]) : LT(v[k], v[k - 1])) return 0;         \
    }                                                                                  \
    return 1;                                                                          \
}

/* argsort runs carry their keys: merging (key, index) pairs reads memory in
 * order (merging indices by v[index] reads v at random, a cache miss each) */
#define NCL_KMERGE_DEFS(NAME, T, LT)                                                    \
static void ncl_kmerge_##NAME(const T *KA, const npy_intp *IA, npy_intp la,            \
                              const T *KB, const npy_intp *IB, npy_intp lb,            \
                              npy_intp d0, npy_intp d1, T *KO, npy_intp *IO)           \
{                                                                                      \
    npy_intp dm = d0 + (d1 - d0) / 2;                                                  \
    npy_intp i = ncl_corank_##NAME(KA, la, KB, lb, d0), j = d0 - i;                    \
    npy_intp p = ncl_corank_##NAME(KA, la, KB, lb, dm), q = dm - p;                    \
    npy_intp i1 = p, j1 = q;                                                           \
    npy_intp p1 = ncl_corank_##NAME(KA, la, KB, lb, d1), q1 = d1 - p1;                 \
    npy_intp o = d0, r = dm;                                                           \
    while (i < i1 && j < j1 && p < p1 && q < q1) {                                     \
        T a = KA[i], b = KB[j], c = KA[p], e = KB[q];                                  \
        npy_intp ia = IA[i], ib = IB[j], ic = IA[p], ie = IB[q];                       \
        int tb = LT(b, a), te = LT(e, c);                                              \
        KO[o] = tb ? b : a; IO[o] = tb ? ib : ia; o++;                                 \
        KO[r] = te ? e : c; IO[r] = te ? ie : ic; r++;                                 \
        j += tb; i += !tb;                                                             \
        q += te; p += !te;                                                             \
    }                                                                                  \
    while (i < i1 && j < j1) {                                                         \
        T a = KA[i], b = KB[j];                                                        \
        int tb = LT(b, a);                                                             \
        KO[o] = tb ? b : a; IO[o] = tb ? IB[j] : IA[i]; o++;                           \
        j += tb; i += !tb;                                                             \
    }                                                                                  \
    for (; i < i1; i++, o++) { KO[o] = KA[i]; IO[o] = IA[i]; }                         \
    for (; j < j1; j++, o++) { KO[o] = KB[j]; IO[o] = IB[j]; }                         \
    while (p < p1 && q < q1) {                                                         \
        T c = KA[p], e = KB[q];                                                        \
        int te = LT(e, c);                                                             \
        KO[r] = te ? e : c; IO[r] = te ? IB[q] : IA[p]; r++;                           \
        q += te; p += !te;                                                             \
    }                                                                                  \
    for (; p < p1; p++, r++) { KO[r] = KA[p]; IO[r] = IA[p]; }                         \
    for (; q < q1; q++, r++) { KO[r] = KB[q]; IO[r] = IB[q]; }                         \
}

NCL_SORT_DEFS(bool, npy_ubyte, NCL_LT_INT)
NCL_SORT_DEFS(int8, int8_t, NCL_LT_INT)
NCL_SORT_DEFS(int16, int16_t, NCL_LT_INT)
NCL_SORT_DEFS(int32, int32_t, NCL_LT_INT)
NCL_SORT_DEFS(int64, int64_t, NCL_LT_INT)
NCL_SORT_DEFS(uint8, uint8_t, NCL_LT_INT)
NCL_SORT_DEFS(uint16, uint16_t, NCL_LT_INT)
NCL_SORT_DEFS(uint32, uint32_t, NCL_LT_INT)
NCL_SORT_DEFS(uint64, uint64_t, NCL_LT_INT)
NCL_SORT_DEFS(float32, float, NCL_LT_FLT)
NCL_SORT_DEFS(float64, double, NCL_LT_FLT)
/* merges of runs' NaN-free prefixes (a sorted run keeps its NaNs at its end) */
NCL_SORT_DEFS(float32nn, float, NCL_LT_INT)
NCL_SORT_DEFS(float64nn, double, NCL_LT_INT)
NCL_KMERGE_DEFS(bool, npy_ubyte, NCL_LT_INT)
NCL_KMERGE_DEFS(int8, int8_t, NCL_LT_INT)
NCL_KMERGE_DEFS(int16, int16_t, NCL_LT_INT)
NCL_KMERGE_DEFS(int32, int32_t, NCL_LT_INT)
NCL_KMERGE_DEFS(int64, int64_t, NCL_LT_INT)
NCL_KMERGE_DEFS(uint8, uint8_t, NCL_LT_INT)
NCL_KMERGE_DEFS(uint16, uint16_t, NCL_LT_INT)
NCL_KMERGE_DEFS(uint32, uint32_t, NCL_LT_INT)
NCL_KMERGE_DEFS(uint64, uint64_t, NCL_LT_INT)
NCL_KMERGE_DEFS(float32, float, NCL_LT_FLT)
NCL_KMERGE_DEFS(float64, double, NCL_LT_FLT)
NCL_KMERGE_DEFS(float32nn, float, NCL_LT_INT)
NCL_KMERGE_DEFS(float64nn, double, NCL_LT_INT)


/* Merge output positions [d0, d1) of the runs A = keys[a0:a0+la) and
 * B = keys[b0:b0+lb) into kout[o0:...), with their indices (isrc -> iout)
 * when isrc is not NULL.  Float runs hold no NaN here (the caller merges
 * their NaN tails apart). */
static void ncl_merge_part(int dt, const char *keys, char *kout, const npy_intp *isrc,
                           npy_intp *iout, npy_intp a0, npy_intp la, npy_intp b0, npy_intp lb,
                           npy_intp o0, npy_intp d0, npy_intp d1)
{
    if (dt == 9) dt = 11;          /* float32 -> float32nn */
    else if (dt == 10) dt = 12;    /* float64 -> float64nn */
    if (isrc != NULL) {
#define NCL_KM(NAME, T) ncl_kmerge_##NAME((const T *)keys + a0, isrc + a0, la, (const T *)keys + b0, \
                                          isrc + b0, lb, d0, d1, (T *)kout + o0, iout + o0)
        NCL_SORT_SWITCH(dt, NCL_KM)
#undef NCL_KM
    }
    else {
#define NCL_M(NAME, T) ncl_merge_##NAME((const T *)keys + a0, la, (const T *)keys + b0, lb, \
                                        d0, d1, (T *)kout + o0)
        NCL_SORT_SWITCH(dt, NCL_M)
#undef NCL_M
    }
}

/* keys[i] = v[idx[i]] for i in [lo, hi) (an argsort run's keys, in order) */
static void ncl_gather(int isz, const char *v, const npy_intp *idx, npy_intp lo, npy_intp hi,
                       char *keys)
{
    npy_intp i;
    switch (isz) {
    case 1: for (i = lo; i < hi; i++) keys[i] = v[idx[i]]; break;
    case 2: for (i = lo; i < hi; i++) ((uint16_t *)keys)[i] = ((const uint16_t *)v)[idx[i]]; break;
    case 4: for (i = lo; i < hi; i++) ((uint32_t *)keys)[i] = ((const uint32_t *)v)[idx[i]]; break;
    case 8: for (i = lo; i < hi; i++) ((uint64_t *)keys)[i] = ((const uint64_t *)v)[idx[i]]; break;
    default: break;
    }
}

/* First position in [lo, hi) of a sorted run holding a NaN (hi if none). */
static npy_intp ncl_nan_start(int dt, const char *v, const npy_intp *idx, npy_intp lo, npy_intp hi)
{
    while (lo < hi) {
        npy_intp m = lo + (hi - lo) / 2, k = idx ? idx[m] : m;
        int nan = dt == 9 ? ((const float *)v)[k] != ((const float *)v)[k]
                          : ((const double *)v)[k] != ((const double *)v)[k];
        if (nan) hi = m; else lo = m + 1;
    }
    return lo;
}

/* 1 when each run's first element is not below the previous run's last. */
static int ncl_runs_ordered(int dt, const char *v, const npy_intp *idx, const npy_intp *b,
                            int nruns)
{
    int r = 0;
#define NCL_O(NAME, T) r = ncl_ordered_##NAME((const T *)v, idx, b, nruns)
    NCL_SORT_SWITCH(dt, NCL_O)
#undef NCL_O
    return r;
}

#endif
