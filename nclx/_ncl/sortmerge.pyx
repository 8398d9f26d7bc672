# cython: wraparound=False, boundscheck=False
"""NCLib's Sort subsystem, the merge of a threaded sort (nclx._ncl.sortrun
decides when): a stable sort or an argsort is sorted in runs, one per
thread, by NumPy's function, and the runs are merged on all threads by the
merge path (ncl_sort.h): ties take the left run's element first, so a
stable sort gives NumPy's stable order exactly.  The merge scratch is
mapped for huge pages and the last one is kept for the next sort
(``release()`` unmaps it).
"""
from libc.string cimport memcpy

from nclx._ncl.ncl cimport npy_intp
from nclx._ncl.team cimport ncl_team_run
from nclx._ncl.sortjob cimport sort_job, ncl_stock, ncl_part


cdef extern from "ncl_sort.h" nogil:
    void ncl_merge_part(int dt, const char *keys, char *kout, const npy_intp *isrc,
                        npy_intp *iout, npy_intp a0, npy_intp la, npy_intp b0, npy_intp lb,
                        npy_intp o0, npy_intp d0, npy_intp d1)
    void ncl_gather(int isz, const char *v, const npy_intp *idx, npy_intp lo, npy_intp hi,
                    char *keys)
    npy_intp ncl_nan_start(int dt, const char *v, const npy_intp *idx, npy_intp lo, npy_intp hi)
    int ncl_runs_ordered(int dt, const char *v, const npy_intp *idx, const npy_intp *b, int nruns)
    ctypedef struct ncl_scratch:
        char *ptr
    int ncl_scratch_get(ncl_scratch *s, size_t n)
    void ncl_scratch_put(ncl_scratch *s)
    size_t ncl_scratch_release()
    size_t ncl_scratch_keep


# ------------------------------------------------------------ team pieces

cdef void _t_runs(void *ctx, int tid, int nth) noexcept nogil:
    cdef sort_job *j = <sort_job *>ctx
    cdef int r, rc
    cdef npy_intp lo, hi, i
    r = tid
    while r < j.nruns:
        lo = j.b[r]
        hi = j.b[r + 1]
        if j.idx != NULL:
            # NumPy's argsorts take indices into the data they are given,
            # 0..n-1 (radix sort counts data[0:n]): a run sorts its own
            for i in range(lo, hi):
                j.idx[i] = i - lo
            rc = ncl_stock(j, j.v + lo * j.isz, j.idx + lo, hi - lo)
            for i in range(lo, hi):
                j.idx[i] += lo
        else:
            rc = ncl_stock(j, j.v + lo * j.isz, NULL, hi - lo)
        if rc < 0:
            j.failed = 1
        r += nth


cdef inline void _copy_part(sort_job *j, npy_intp src0, npy_intp out0, npy_intp len_,
                            npy_intp s, npy_intp e) noexcept nogil:
    """Output positions [out0, out0 + len_) come from src[src0:...): copy
    the part of them inside [s, e)."""
    cdef npy_intp a = out0 if out0 > s else s
    cdef npy_intp z = out0 + len_ if out0 + len_ < e else e
    if a < z:
        memcpy(j.dst + a * j.esz, j.src + (src0 + a - out0) * j.esz, (z - a) * j.esz)
        if j.isrc != NULL:
            memcpy(j.idst + a, j.isrc + (src0 + a - out0), (z - a) * sizeof(npy_intp))


cdef void _t_merge(void *ctx, int tid, int nth) noexcept nogil:
    """One round: runs 2p and 2p+1 merged from src into dst; this thread
    writes output positions [s, e) of the whole array.  A float pair merges
    its NaN-free prefixes, then its NaN tails follow (left run's first)."""
    cdef sort_job *j = <sort_job *>ctx
    cdef npy_intp s = ncl_part(j.n, tid, nth), e = ncl_part(j.n, tid + 1, nth)
    cdef npy_intp lo, mid, hi, d0, d1, pa, pb
    cdef int p
    for p in range(0, j.nruns, 2):
        lo = j.b[p]
        hi = j.b[p + 2] if p + 2 <= j.nruns else j.b[p + 1]
        if hi <= s or lo >= e:
            continue
        if p + 1 == j.nruns:      # an odd run out: copied as it is
            _copy_part(j, lo, lo, hi - lo, s, e)
            continue
        mid = j.b[p + 1]
        pa = j.pa[p // 2]
        pb = j.pb[p // 2]
        d0 = (s if s > lo else lo) - lo
        d1 = (e if e < lo + pa + pb else lo + pa + pb) - lo
        if d0 < d1:
            ncl_merge_part(j.dt, j.src, j.dst, j.isrc, j.idst, lo, pa, mid, pb, lo, d0, d1)
        _copy_part(j, lo + pa, lo + pa + pb, mid - lo - pa, s, e)
        _copy_part(j, mid + pb, mid + pb, hi - mid - pb, s, e)


cdef void _t_copy(void *ctx, int tid, int nth) noexcept nogil:
    """The merged result back where NumPy wants it: values, or indices."""
    cdef sort_job *j = <sort_job *>ctx
    cdef npy_intp s = ncl_part(j.n, tid, nth), e = ncl_part(j.n, tid + 1, nth)
    if j.isrc != NULL:
        memcpy(j.idx + s, j.isrc + s, (e - s) * sizeof(npy_intp))
    else:
        memcpy(j.v + s * j.esz, j.src + s * j.esz, (e - s) * j.esz)


cdef void _t_gather(void *ctx, int tid, int nth) noexcept nogil:
    cdef sort_job *j = <sort_job *>ctx
    ncl_gather(j.isz, j.v, j.idx, ncl_part(j.n, tid, nth), ncl_part(j.n, tid + 1, nth), j.src)


cdef int ncl_sort_merged(sort_job *j, int nruns, int nth) noexcept nogil:
    """Sort j.v (or j.idx by j.v) in ``nruns`` runs on the team, each by
    NumPy's function, then merge them on ``nth`` threads; -1 when a run's
    sort failed.  Without scratch memory, NumPy's function on the whole."""
    cdef char *tmp
    cdef npy_intp keybytes
    cdef ncl_scratch scratch
    cdef int r
    j.esz = j.isz
    keybytes = ((j.n * j.isz + 63) // 64) * 64
    if not ncl_scratch_get(&scratch, keybytes * 2 + j.n * sizeof(npy_intp) if j.idx != NULL
                           else j.n * j.isz):
        return ncl_stock(j, j.v, j.idx, j.n)
    tmp = scratch.ptr
    j.failed = 0
    ncl_team_run(nruns, _t_runs, j)
    if j.failed:
        ncl_scratch_put(&scratch)
        return -1
    if ncl_runs_ordered(j.dt, j.v, j.idx, j.b, nruns):
        ncl_scratch_put(&scratch)
        return 0
    if j.idx != NULL:
        j.src = tmp
        j.dst = tmp + keybytes
        j.isrc = j.idx
        j.idst = <npy_intp *>(tmp + 2 * keybytes)
        ncl_team_run(nth, _t_gather, j)
    else:
        j.src = j.v
        j.dst = tmp
        j.isrc = NULL
        j.idst = NULL
    while j.nruns > 1:
        for r in range(0, j.nruns - 1, 2):
            if j.dt >= 9:         # float keys: each run's NaNs are at its end
                j.pa[r // 2] = ncl_nan_start(j.dt, j.src, NULL, j.b[r], j.b[r + 1]) - j.b[r]
                j.pb[r // 2] = ncl_nan_start(j.dt, j.src, NULL, j.b[r + 1], j.b[r + 2]) - j.b[r + 1]
            else:
                j.pa[r // 2] = j.b[r + 1] - j.b[r]
                j.pb[r // 2] = j.b[r + 2] - j.b[r + 1]
        ncl_team_run(nth, _t_merge, j)
        j.src, j.dst = j.dst, j.src
        j.isrc, j.idst = j.idst, j.isrc
        for r in range((j.nruns + 1) // 2):
            j.b[r] = j.b[2 * r]
        j.nruns = (j.nruns + 1) // 2
        j.b[j.nruns] = j.n
    if (j.isrc != NULL and j.isrc != j.idx) or (j.isrc == NULL and j.src != j.v):
        ncl_team_run(nth, _t_copy, j)
    ncl_scratch_put(&scratch)
    return 0



def release():
    """Unmap the merge scratch kept for the next sort; returns its bytes."""
    return ncl_scratch_release()


def scratch_keep(n=None):
    """Largest merge scratch (bytes) kept between sorts; with ``n``, set it
    (0 keeps none)."""
    global ncl_scratch_keep
    if n is not None:
        if int(n) < 0:
            raise ValueError(f"scratch_keep must be >= 0, not {n}")
        ncl_scratch_keep = int(n)
    return ncl_scratch_keep
