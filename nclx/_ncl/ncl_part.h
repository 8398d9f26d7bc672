/*
 * nclx's parallel unstable sort: the type-dependent pieces of a partition.
 *
 * An unstable sort of values (NumPy's quicksort and heapsort kinds) only has
 * to give NumPy's values in order, so the threads split the data by value
 * instead of merging sorted runs: a pivot from a sorted sample, each thread
 * partitions its chunk in place (block partition: the offsets of misplaced
 * elements of a left and a right block are gathered without branches, then
 * swapped in pairs), the misplaced elements of the chunks are swapped across
 * the global boundary, and each side is sorted by NumPy's own function on
 * its share of the threads.  No scratch, no merge, no copy back.
 *
 * "Lower" is x < p, or x <= p: whichever of the two puts the sample's split
 * nearer the wanted quantile (many equal keys).  A NaN is never lower (the
 * pivot is never a NaN), so NaNs stay on the upper side, where NumPy's sort
 * puts them last.
 */
#ifndef NCLX_NCL_PART_H
#define NCLX_NCL_PART_H
#include <stdint.h>
#include <string.h>
#include <numpy/npy_common.h>
#include "ncl_dtswitch.h"
#include "ncl_vpart.h"

#define NCL_PB 128      /* block length (offsets fit in an unsigned char) */

#define NCL_PART_BODY(T, LOWER)                                                        \
{                                                                                      \
    npy_intp l = 0, r = n, w;                                                          \
    unsigned char offl[NCL_PB], offr[NCL_PB];                                          \
    int nl = 0, nr = 0, sl = 0, sr = 0, i, k;                                          \
    while (r - l > 2 * NCL_PB) {                                                       \
        if (nl == 0) {                                                                 \
            sl = 0;                                                                    \
            for (i = 0; i < NCL_PB; i++) { offl[nl] = (unsigned char)i;                \
                                           nl += !(LOWER(v[l + i])); }                 \
        }                                                                              \
        if (nr == 0) {                                                                 \
            sr = 0;                                                                    \
            for (i = 0; i < NCL_PB; i++) { offr[nr] = (unsigned char)i;                \
                                           nr += (LOWER(v[r - 1 - i])) != 0; }         \
        }                                                                              \
        k = nl < nr ? nl : nr;                                                         \
        for (i = 0; i < k; i++) {                                                      \
            T *a = v + l + offl[sl + i], *b = v + r - 1 - offr[sr + i], t = *a;        \
            *a = *b; *b = t;                                                           \
        }                                                                              \
        nl -= k; nr -= k; sl += k; sr += k;                                            \
        if (nl == 0) l += NCL_PB;                                                      \
        if (nr == 0) r -= NCL_PB;                                                      \
    }                                                                                  \
    /* the rest (under three blocks): a branch-free Lomuto pass over [l, r) */         \
    for (w = l; l < r; l++) {                                                          \
        T x = v[l];                                                                    \
        v[l] = v[w]; v[w] = x;                                                         \
        w += (LOWER(x)) != 0;                                                          \
    }                                                                                  \
    return w;                                                                          \
}

#define NCL_LOWER_LT(x) ((x) < p)
#define NCL_LOWER_LE(x) ((x) <= p)

#define NCL_PART_DEFS(NAME, T)                                                         \
static npy_intp ncl_part_lt_##NAME(T *v, npy_intp n, T p) NCL_PART_BODY(T, NCL_LOWER_LT) \
static npy_intp ncl_part_le_##NAME(T *v, npy_intp n, T p) NCL_PART_BODY(T, NCL_LOWER_LE) \
/* The pivot s[want] of a sorted sample s[0:m) and its predicate: 0 when     */       \
/* it is a NaN or neither predicate splits within m/5 of want (no split).    */       \
static int ncl_pick_##NAME(const T *s, npy_intp m, npy_intp want, T *pivot, int *le)  \
{                                                                                      \
    T p = s[want];                                                                     \
    npy_intp lt = want, ge = want + 1, got;                                            \
    if (p != p) return 0;                                                              \
    while (lt > 0 && s[lt - 1] == p) lt--;                                           \
    while (ge < m && s[ge] == p) ge++;                                               \
    *le = (ge - want) < (want - lt);                                                   \
    got = *le ? ge : lt;                                                               \
    *pivot = p;                                                                        \
    return got > 0 && got < m && got - want <= m / 5 && want - got <= m / 5;           \
}

NCL_PART_DEFS(bool, npy_ubyte)
NCL_PART_DEFS(int8, int8_t)
NCL_PART_DEFS(int16, int16_t)
NCL_PART_DEFS(int32, int32_t)
NCL_PART_DEFS(int64, int64_t)
NCL_PART_DEFS(uint8, uint8_t)
NCL_PART_DEFS(uint16, uint16_t)
NCL_PART_DEFS(uint32, uint32_t)
NCL_PART_DEFS(uint64, uint64_t)
NCL_PART_DEFS(float32, float)
NCL_PART_DEFS(float64, double)


#define NCL_PART_SWITCH(dt, CALL) switch (dt) { NCL_DT_CASES(CALL) default: break; }

/* Partition v[0:n) of ncl dtype dt in place by the pivot (its bits at
 * `pivot`): returns the number of lower elements, now at the front.  With
 * `vec`, 64-bit keys go through the vector partition where it runs. */
static npy_intp ncl_partition(int dt, char *v, npy_intp n, const char *pivot, int le, int vec)
{
    npy_intp r = 0;
#if NCL_HAVE_VPART
    /* 64-bit keys with AVX2: the vector partition (ncl_vpart.h) */
    if (vec && n >= 64 && (dt == 4 || dt == 8 || dt == 10) && ncl_vpart_isa()) {
        uint64_t b;
        memcpy(&b, pivot, 8);
        if (dt == 10) {
            double p;
            memcpy(&p, pivot, 8);
            return le ? ncl_vpart_f64_le((double *)v, n, p) : ncl_vpart_f64_lt((double *)v, n, p);
        }
        if (dt == 4)
            return le ? ncl_vpart_i64_le((int64_t *)v, n, (int64_t)b)
                      : ncl_vpart_i64_lt((int64_t *)v, n, (int64_t)b);
        return le ? ncl_vpart_u64_le((uint64_t *)v, n, b) : ncl_vpart_u64_lt((uint64_t *)v, n, b);
    }
#endif
#define NCL_P(NAME, T) { T p; memcpy(&p, pivot, sizeof(T)); \
        r = le ? ncl_part_le_##NAME((T *)v, n, p) : ncl_part_lt_##NAME((T *)v, n, p); }
    (void)vec;
    NCL_PART_SWITCH(dt, NCL_P)
#undef NCL_P
    return r;
}

/* 1 when ncl_partition's vector partition runs here (built, and AVX2) */
static int ncl_vpart_here(void)
{
#if NCL_HAVE_VPART
    return ncl_vpart_isa();
#else
    return 0;
#endif
}

/* The pivot of a sorted sample (see ncl_pick_*): 1 when it splits. */
static int ncl_pick_pivot(int dt, const char *s, npy_intp m, npy_intp want, char *pivot, int *le)
{
    int ok = 0;
#define NCL_K(NAME, T) { T p; ok = ncl_pick_##NAME((const T *)s, m, want, &p, le); \
        memcpy(pivot, &p, sizeof(T)); }
    NCL_PART_SWITCH(dt, NCL_K)
#undef NCL_K
    return ok;
}

/* Swap the equal-length, disjoint byte ranges a[0:len) and b[0:len). */
static void ncl_swap_ranges(char *a, char *b, size_t len)
{
    char t[4096];
    while (len > 0) {
        size_t c = len < sizeof(t) ? len : sizeof(t);
        memcpy(t, a, c); memcpy(a, b, c); memcpy(b, t, c);
        a += c; b += c; len -= c;
    }
}

#endif
