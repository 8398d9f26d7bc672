/*
 * nclx's parallel sort of integers of a small range: a counting sort.
 *
 * Equal integers are indistinguishable, so a sort of integer values (any
 * kind: stable or not, the output is the same) is fully given by how many
 * times each value occurs.  Each thread counts the values of its chunk in
 * its own histogram of the window [lo, lo + range] (a value outside the
 * window lands in the extra last bin, and the sort then goes another way:
 * the data has not been touched), and each thread then writes its own
 * equal slice of the output from the summed histogram.  Two passes over
 * memory, no compare, no scratch of the data's size.
 */
#ifndef NCLX_NCL_COUNT_H
#define NCLX_NCL_COUNT_H
#include <stdint.h>
#include <numpy/npy_common.h>
#include "ncl_dtswitch.h"
#include <string.h>

/* hist[0 .. range] counts v - lo, hist[range + 1] the values outside */
#define NCL_COUNT_DEFS(NAME, T, U)                                                     \
static void ncl_hist_##NAME(const T *v, npy_intp n, T lo, npy_intp range, npy_intp *hist) \
{                                                                                      \
    const U ulo = (U)lo, ur = (U)range;                                                \
    for (npy_intp i = 0; i < n; i++) {                                                 \
        U k = (U)((U)v[i] - ulo);                                                      \
        hist[k > ur ? range + 1 : (npy_intp)k]++;                                      \
    }                                                                                  \
}                                                                                      \
static void ncl_fill_##NAME(T *out, npy_intp a, npy_intp b, T value)                   \
{                                                                                      \
    for (npy_intp i = a; i < b; i++) out[i] = value;                                   \
}

NCL_COUNT_DEFS(bool, npy_ubyte, npy_ubyte)
NCL_COUNT_DEFS(int8, int8_t, uint8_t)
NCL_COUNT_DEFS(int16, int16_t, uint16_t)
NCL_COUNT_DEFS(int32, int32_t, uint32_t)
NCL_COUNT_DEFS(int64, int64_t, uint64_t)
NCL_COUNT_DEFS(uint8, uint8_t, uint8_t)
NCL_COUNT_DEFS(uint16, uint16_t, uint16_t)
NCL_COUNT_DEFS(uint32, uint32_t, uint32_t)
NCL_COUNT_DEFS(uint64, uint64_t, uint64_t)

#define NCL_COUNT_SWITCH(dt, CALL) switch (dt) { NCL_INT_CASES(CALL) default: break; }

/* The histogram of v[0:n) over [lo, lo + range] (lo's bits at `lo`). */
static void ncl_count_hist(int dt, const char *v, npy_intp n, const char *lo, npy_intp range,
                           npy_intp *hist)
{
#define NCL_H(NAME, T) { T l; memcpy(&l, lo, sizeof(T)); ncl_hist_##NAME((const T *)v, n, l, range, hist); }
    NCL_COUNT_SWITCH(dt, NCL_H)
#undef NCL_H
}

/* out[a:b) = lo + k (the value k bins above lo). */
static void ncl_count_fill(int dt, char *out, npy_intp a, npy_intp b, const char *lo, npy_intp k)
{
#define NCL_F(NAME, T) { T l; memcpy(&l, lo, sizeof(T)); \
        ncl_fill_##NAME((T *)out, a, b, (T)((T)l + (T)k)); }
    NCL_COUNT_SWITCH(dt, NCL_F)
#undef NCL_F
}

/* The least and greatest of `m` elements at v[0], v[step], ... (bits to lo, hi). */
static void ncl_count_sample(int dt, const char *v, npy_intp m, npy_intp step, char *lo, char *hi)
{
#define NCL_S(NAME, T) { const T *x = (const T *)v; T a = x[0], z = x[0]; \
        for (npy_intp i = 1; i < m; i++) { T e = x[i * step]; a = e < a ? e : a; z = e > z ? e : z; } \
        memcpy(lo, &a, sizeof(T)); memcpy(hi, &z, sizeof(T)); }
    NCL_COUNT_SWITCH(dt, NCL_S)
#undef NCL_S
}

/* hi - lo as a count (both of dtype dt, hi >= lo), saturated at `cap`. */
static npy_intp ncl_count_span(int dt, const char *lo, const char *hi, npy_intp cap)
{
    uint64_t d = 0;
#define NCL_D(NAME, T) { T a, z; memcpy(&a, lo, sizeof(T)); memcpy(&z, hi, sizeof(T)); \
        d = (uint64_t)z - (uint64_t)a; if (sizeof(T) < 8) d &= ((uint64_t)1 << (8 * sizeof(T))) - 1; }
    NCL_COUNT_SWITCH(dt, NCL_D)
#undef NCL_D
    return d > (uint64_t)cap ? cap : (npy_intp)d;
}

#endif
