/*
 * The loops nclx hands out for NumPy's copies of a dtype to itself while
 * nobody watches (nclx._ncl.copyloop).  A call of fewer than NCL_COPY_FEW
 * items is copied here as NumPy's own loop for the same alignment and
 * strides copies it (numpy/_core/src/multiarray/lowlevel_strided_loops.c.src,
 * chosen by PyArray_GetStridedCopyFn); a longer one goes to ncl_copy_long
 * (NumPy's loop, or a call of the copy op where it may be split).
 *
 * A copy made of many short calls (NumPy calls the loop once a row) must
 * cost what NumPy's costs: these are leaves that save no register, and the
 * calls out of them (the long path, memmove) are jumps.  Each copies as the
 * NumPy loop of its class copies, so the bytes written are the same even
 * when source and destination overlap:
 *   cc  both strides the item size: one memmove of n items
 *       (NumPy's _contig_to_contig; the strides of the call are not read)
 *   sc  destination contiguous: item after item, forward, each item read
 *       whole before it is written; the destination steps by the item size
 *   cs  source contiguous: the same, the source stepping by the item size
 *   ss  both strides of the call
 *   fc  aligned, source stride 0, destination contiguous: the source item
 *       read once, then written n times (NumPy's srcstride0 loops)
 *   fs  the same with the destination's stride
 * An unaligned copy with a source stride of 0 gets NumPy's loop through
 * copyloop's _loop_quiet (whether NumPy's loop reads the item once then
 * depends on how NumPy was built: NPY_USE_UNALIGNED_ACCESS).
 */
#ifndef NCLX_NCL_COPYLEAF_H
#define NCLX_NCL_COPYLEAF_H
#include <stdint.h>
#include <string.h>
#include <numpy/dtype_api.h>

/* The loop data of a wrapped copy loop (copyloop's table: one entry per
 * type, NumPy loop and quiet loop, never freed) */
typedef struct {
    NpyAuxData base;
    PyArrayMethod_StridedLoop *loop;    /* NumPy's loop (its data was NULL) */
    int k;                              /* the copy call slot */
    npy_intp itemsize;
    PyArrayMethod_StridedLoop *quiet;   /* the loop while nobody watches */
    int claimed;                        /* a writer took the entry (it publishes loop last) */
} ncl_copy_aux;

/* the path of a call that may split (copyloop's _loop_quiet), and the
 * bytes below which a call is never split (copyrun's, tunable) */
static PyArrayMethod_StridedLoop *ncl_copy_long;
static const npy_intp *ncl_copy_split;

static void ncl_copy_leaf_init(PyArrayMethod_StridedLoop *long_path, const npy_intp *split) {
    ncl_copy_long = long_path;
    ncl_copy_split = split;
}

/* called last (a jump): the contiguous leaves save no register */
NPY_NOINLINE int ncl_copy_memmove(char *d, const char *s, npy_intp bytes) {
    memmove(d, s, (size_t)bytes);
    return 0;
}
NPY_NOINLINE int ncl_copy_memset(char *d, int v, npy_intp bytes) {
    memset(d, v, (size_t)bytes);
    return 0;
}


/* NumPy's strided copy loops are built with GCC's loop unrolling (its
 * NPY_GCC_UNROLL_LOOPS); so are these */
#if defined(__GNUC__) && !defined(__clang__)
#define NCL_COPY_UNROLL __attribute__((optimize("unroll-loops")))
#else
#define NCL_COPY_UNROLL
#endif

/* A call of fewer items is copied by BODY with its length known to be
 * short (the compiler lays the items out one after another: an unrolled
 * loop's first compares go to its remainder); a longer one by BODY
 * unrolled.  Calls of fewer than 16 items are never split: the team's
 * pieces are cut on multiples of 512 items (copyrun), so such a call would
 * be one piece, NumPy's loop, anyway. */
#define NCL_COPY_FEW 16

/* NAME: a leaf copying a call too short to split by BODY (which reads n,
 * data, strides and returns 0), the short ones apart */
#define NCL_COPY_CLASS(NAME, SZ, BODY)                                             \
static NCL_COPY_UNROLL int NAME(PyArrayMethod_Context *ctx, char *const *data,      \
                                const npy_intp *dims, const npy_intp *strides,      \
                                NpyAuxData *aux) {                                 \
    npy_intp n = dims[0];                                                          \
    if (n < NCL_COPY_FEW) {                                                        \
        BODY                                                                       \
    }                                                                              \
    if (NPY_UNLIKELY(n * SZ >= *ncl_copy_split))                                   \
        return ncl_copy_long(ctx, data, dims, strides, aux);                       \
    BODY                                                                           \
}

/* NAME: a leaf copying any call too short to split by BODY */
#define NCL_COPY_WHOLE(NAME, SZ, BODY)                                             \
static int NAME(PyArrayMethod_Context *ctx, char *const *data, const npy_intp *dims,\
                const npy_intp *strides, NpyAuxData *aux) {                        \
    npy_intp n = dims[0];                                                          \
    if (NPY_UNLIKELY(n * SZ >= *ncl_copy_split))                                   \
        return ncl_copy_long(ctx, data, dims, strides, aux);                       \
    BODY                                                                           \
}

/* item after item, forward, each item read whole before it is written */
#define NCL_COPY_ITEMS(SZ, T, SSTEP, DSTEP)                                        \
    {                                                                              \
        char *s = data[0], *d = data[1];                                           \
        npy_intp ss = strides[0], ds = strides[1];                                 \
        (void)ss; (void)ds;                                                        \
        for (; n > 0; n--, s += (SSTEP), d += (DSTEP)) {                           \
            T v;                                                                   \
            memcpy(&v, s, SZ);                                                     \
            memcpy(d, &v, SZ);                                                     \
        }                                                                          \
        return 0;                                                                  \
    }

/* the source item read once (none when n is 0), then written n times */
#define NCL_COPY_FILL(SZ, T, DSTEP)                                                \
    {                                                                              \
        char *d = data[1];                                                         \
        npy_intp ds = strides[1];                                                  \
        T v;                                                                       \
        (void)ds;                                                                  \
        if (n == 0)                                                                \
            return 0;                                                              \
        memcpy(&v, data[0], SZ);                                                   \
        for (; n > 0; n--, d += (DSTEP))                                           \
            memcpy(d, &v, SZ);                                                     \
        return 0;                                                                  \
    }

/* the same into contiguous items: 16 bytes at a time (the item repeated);
 * the last 16 bytes written last, over bytes already written with the same
 * values (16 is a multiple of the item size: the items stay in phase);
 * fewer than 16 bytes the same way with 8, 4, 2 or 1; 256 bytes or more
 * of a 1-byte item by memset, as NumPy's loop */
#define NCL_COPY_FILL_CONTIG(SZ, T)                                                \
    {                                                                              \
        char *d = data[1], *end;                                                   \
        uint64_t w[2];                                                             \
        T v;                                                                       \
        int i;                                                                     \
        if (n == 0)                                                                \
            return 0;                                                              \
        memcpy(&v, data[0], SZ);                                                   \
        if (SZ == 1 && n >= 256)  /* NumPy's loop: memset */                      \
            return ncl_copy_memset(d, (int)*(uint8_t *)&v, n);                     \
        for (i = 0; i < 16 / SZ; i++)                                              \
            memcpy((char *)w + i * SZ, &v, SZ);                                    \
        end = d + n * SZ;                                                          \
        if (n * SZ < 16) {                                                         \
            /* two stores of b bytes, b <= n * SZ < 2 b: SZ divides b */           \
            if (n * SZ >= 8) { memcpy(d, w, 8); memcpy(end - 8, w, 8); }           \
            else if (n * SZ >= 4) { memcpy(d, w, 4); memcpy(end - 4, w, 4); }      \
            else if (n * SZ >= 2) { memcpy(d, w, 2); memcpy(end - 2, w, 2); }      \
            else memcpy(d, w, 1);                                                  \
            return 0;                                                              \
        }                                                                          \
        for (; end - d >= 32; d += 32) {                                           \
            memcpy(d, w, 16);                                                      \
            memcpy(d + 16, w, 16);                                                 \
        }                                                                          \
        if (end - d > 16)                                                          \
            memcpy(d, w, 16);                                                      \
        if (end - d > 0)                                                           \
            memcpy(end - 16, w, 16);                                               \
        return 0;                                                                  \
    }

#define NCL_COPY_LEAVES(SZ, T)                                                     \
NCL_COPY_WHOLE(ncl_copy_cc##SZ, SZ, return ncl_copy_memmove(data[1], data[0], n * SZ);)  \
NCL_COPY_CLASS(ncl_copy_sc##SZ, SZ, NCL_COPY_ITEMS(SZ, T, ss, SZ))                 \
NCL_COPY_CLASS(ncl_copy_cs##SZ, SZ, NCL_COPY_ITEMS(SZ, T, SZ, ds))                 \
NCL_COPY_CLASS(ncl_copy_ss##SZ, SZ, NCL_COPY_ITEMS(SZ, T, ss, ds))                 \
NCL_COPY_WHOLE(ncl_copy_fc##SZ, SZ, NCL_COPY_FILL_CONTIG(SZ, T))                   \
NCL_COPY_CLASS(ncl_copy_fs##SZ, SZ, NCL_COPY_FILL(SZ, T, ds))

NCL_COPY_LEAVES(1, uint8_t)
NCL_COPY_LEAVES(2, uint16_t)
NCL_COPY_LEAVES(4, uint32_t)
NCL_COPY_LEAVES(8, uint64_t)

/* The leaf that copies as NumPy's loop for (aligned, source stride,
 * destination stride) does, for items of isz bytes; NULL where none does
 * (another item size; a source stride of 0 unaligned: whether NumPy's loop
 * then reads the item once depends on how NumPy was built). */
static PyArrayMethod_StridedLoop *ncl_copy_leaf(int aligned, npy_intp s0, npy_intp s1, npy_intp isz) {
#define NCL_COPY_BY_SIZE(C) {ncl_copy_##C##1, ncl_copy_##C##2, ncl_copy_##C##4, ncl_copy_##C##8}
    PyArrayMethod_StridedLoop *const cc[4] = NCL_COPY_BY_SIZE(cc), *const sc[4] = NCL_COPY_BY_SIZE(sc),
        *const cs[4] = NCL_COPY_BY_SIZE(cs), *const ss[4] = NCL_COPY_BY_SIZE(ss),
        *const fc[4] = NCL_COPY_BY_SIZE(fc), *const fs[4] = NCL_COPY_BY_SIZE(fs);
#undef NCL_COPY_BY_SIZE
    int k = isz == 1 ? 0 : isz == 2 ? 1 : isz == 4 ? 2 : isz == 8 ? 3 : -1;
    if (k < 0)
        return NULL;
    if (s0 == 0)              /* NumPy's aligned srcstride0 loops */
        return !aligned ? NULL : s1 == isz ? fc[k] : fs[k];
    if (s0 == isz && s1 == isz)
        return cc[k];
    if (s1 == isz)
        return sc[k];
    if (s0 == isz)
        return cs[k];
    return ss[k];
}
#endif
