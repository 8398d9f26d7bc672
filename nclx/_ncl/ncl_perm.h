/*
 * The pieces of nclx's random permutation (nclx._ncl.rng), over the block
 * streams and bounded draws of ncl_rng.h: a Fisher-Yates shuffle of one
 * block, and the two passes of Sanders' parallel shuffle ("Random
 * permutations on distributed, external and hierarchical memory", IPL
 * 1998) -- each chunk counts, then scatters, its elements into uniformly
 * random buckets with the same draws -- after which each bucket is
 * shuffled.  nclx._ncl.rng runs them on the thread team.
 */
#ifndef NCLX_NCL_PERM_H
#define NCLX_NCL_PERM_H
#include "ncl_rng.h"

/* Fisher-Yates: a uniformly random order of a[0..n) */
static void ncl_shuffle(int64_t *a, npy_intp n, ncl_stream *s)
{
    npy_intp i, j;
    int64_t t;
    ncl_cur p = ncl_cur_get(s);
    for (i = n - 1; i > 0; i--) {
        if ((uint64_t)i < 0xFFFFFFFFULL)
            j = (npy_intp)ncl_bounded32_lazy(s, &p, (uint32_t)i + 1);
        else
            j = (npy_intp)ncl_bounded64_lazy(s, &p, (uint64_t)i + 1);
        t = a[i]; a[i] = a[j]; a[j] = t;
    }
    s->pos = p.p;
}

/* counts[k] += elements of this chunk (n of them) that fall in bucket k
 * (of 2^lg, lg in 1..16: the top lg bits of a 32-bit draw) */
static void ncl_perm_count(npy_intp *counts, npy_intp n, ncl_stream *s, int lg)
{
    npy_intp i;
    ncl_cur p = ncl_cur_get(s);
    for (i = 0; i < n; i++) counts[ncl_take32(s, &p) >> (32 - lg)]++;
    s->pos = p.p;
}

/* element first + i goes to out[next[bucket]++] (the same draws as count) */
static void ncl_perm_scatter(int64_t *out, npy_intp *next, npy_intp first, npy_intp n,
                             ncl_stream *s, int lg)
{
    npy_intp i;
    ncl_cur p = ncl_cur_get(s);
    for (i = 0; i < n; i++) out[next[ncl_take32(s, &p) >> (32 - lg)]++] = (int64_t)(first + i);
    s->pos = p.p;
}

#endif
