# cython: wraparound=True, boundscheck=True
"""The OpenMP team that runs split loop calls, and nclx's thread count.

``ncl_run_team(want, fn, ctx)`` runs ``fn`` on ``want`` threads (the caller
is thread 0) and raises again on the caller the floating-point flags the
other threads raised, where NumPy looks for them.  The team is OpenMP's
(visible to threadpoolctl, limited by ``threadpool_limits``); nclx's
thread count is its own setting and never changes OpenMP's process-wide
count.  After ``os.fork()`` a child whose parent had started the team runs
single-threaded (libgomp's team does not survive fork).

What is split, and how, is nclx._ncl.threader's business.
"""
cimport numpy as cnp
from libc.string cimport memcpy

from nclx._ncl.ncl cimport npy_intp

cnp.import_array()

cdef extern from *:
    """
    #include <fenv.h>
    #include <pthread.h>
    #if defined(__x86_64__) && defined(__SSE2__)
    #include <xmmintrin.h>
    #endif
    #ifdef _OPENMP
    #include <omp.h>
    #endif
    typedef void (*ncl_team_fn)(void *ctx, int tid, int nthreads);
    static int ncl_setting = 1;          /* nclx's own thread count */
    static int ncl_omp_default = 1;      /* omp_get_max_threads() at import */
    static int ncl_team_started = 0;     /* a parallel region ran in this process */
    static int ncl_team_lost = 0;        /* forked after that: stay on one thread */
    static void ncl_after_fork_child(void) { if (ncl_team_started) ncl_team_lost = 1; }
    static int ncl_threader_init(void)
    {
    #ifdef _OPENMP
        ncl_omp_default = omp_get_max_threads();
    #endif
        return pthread_atfork(NULL, NULL, ncl_after_fork_child);
    }
    /* Run fn on a team of `want` threads (the caller is thread 0).  The
     * workers take the caller's floating-point environment (rounding mode,
     * FTZ/DAZ); FP flags raised on them are raised again on the caller,
     * where NumPy looks for them. */
    static void ncl_run_team(int want, ncl_team_fn fn, void *ctx)
    {
        int flags = 0;
        fenv_t env;             /* the caller's rounding mode, FTZ/DAZ, masks */
        if (want <= 1 || ncl_team_lost) {
            fn(ctx, 0, 1);      /* one thread runs every piece, in order */
            return;
        }
    #ifdef _OPENMP
        ncl_team_started = 1;
        fegetenv(&env);
        #pragma omp parallel num_threads(want)
        {
            int tid = omp_get_thread_num();
            int nth = omp_get_num_threads();
            if (tid != 0) {
                /* a worker computes under the caller's mode (a pooled thread
                 * keeps whatever mode it last had), with no flag up */
                fesetenv(&env);
                feclearexcept(FE_ALL_EXCEPT);
            }
            fn(ctx, tid, nth);
            if (tid != 0) {
                int mine = fetestexcept(FE_ALL_EXCEPT);
                if (mine) __atomic_or_fetch(&flags, mine, __ATOMIC_RELAXED);
            }
        }
    #else
        fn(ctx, 0, 1);
    #endif
        flags &= FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID;
        if (flags) {
    #if defined(__x86_64__) && defined(__SSE2__)
            /* set them in MXCSR, where SSE code (nclx's kernels, NumPy's
             * loops) keeps its flags: glibc's feraiseexcept raises overflow
             * and underflow in the x87 unit, which a reader of MXCSR alone
             * (nclx.convert's fast path) would miss.  On x86 the FE_* bits
             * are MXCSR's flag bits. */
            _mm_setcsr(_mm_getcsr() | (unsigned int)flags);
    #else
            feraiseexcept(flags);
    #endif
        }
    }
    /* Threads a split call uses now: nclx's setting, unless threadpoolctl
     * (omp_set_num_threads in this thread) lowered OpenMP's limit below the
     * default, which then caps it. */
    static int ncl_threads_now_c(void)
    {
        if (ncl_team_lost) return 1;
    #ifdef _OPENMP
        {
            int n = ncl_setting;
            int cap = omp_get_max_threads();
            int limit = omp_get_thread_limit();     /* OMP_THREAD_LIMIT (review 23) */
            if (cap < ncl_omp_default && cap < n) n = cap;
            if (limit > 0 && limit < n) n = limit;
            return n;
        }
    #else
        return 1;
    #endif
    }
    """
    int ncl_setting
    int ncl_omp_default
    int ncl_threader_init() nogil
    void ncl_run_team(int want, ncl_team_fn fn, void *ctx) nogil
    int ncl_threads_now_c() nogil
    int ncl_team_lost

if ncl_threader_init() != 0:
    raise RuntimeError("pthread_atfork failed: nclx cannot protect forked children")


cdef int ncl_threads_now() noexcept nogil:
    """Threads a split call uses now: nclx's setting, capped by a lower
    OpenMP limit (threadpoolctl), 1 in a forked child of a threaded parent."""
    return ncl_threads_now_c()


cdef bint ncl_team_gone() noexcept nogil:
    """True in a forked child of a threaded parent: every call runs on one thread."""
    return ncl_team_lost != 0


cdef void ncl_team_run(int want, ncl_team_fn fn, void *ctx) noexcept nogil:
    ncl_run_team(want, fn, ctx)


# ------------------------------------------------------------- settings

def _default_threads():
    import os
    env = os.environ.get("NCLX_NUM_THREADS", "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            raise ValueError(f"NCLX_NUM_THREADS must be a positive integer, not {env!r}") from None
        if n < 1:
            raise ValueError(f"NCLX_NUM_THREADS must be a positive integer, not {env!r}")
        return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        return os.cpu_count() or 1


def set_num_threads(int n):
    """nclx's thread count (OpenMP's process-wide count is left alone)."""
    global ncl_setting
    if n < 1:
        raise ValueError(f"number of threads must be >= 1, not {n}")
    ncl_setting = min(n, MAX_THREADS)


def get_num_threads():
    """Threads a split call uses now (1 in a forked child of a threaded parent)."""
    return ncl_threads_now_c()


def get_setting():
    """nclx's own setting (:func:`set_num_threads`), before the caps
    :func:`get_num_threads` applies (threadpoolctl restores this one)."""
    return ncl_setting


ncl_setting = min(_default_threads(), MAX_THREADS)


# ------------------------------------------------- the bandwidth reference

cdef struct copy_job:
    char *dst
    const char *src
    npy_intp nbytes


cdef void _copy_body(void *ctx, int tid, int nthreads) noexcept nogil:
    cdef copy_job *job = <copy_job *>ctx
    cdef npy_intp per = (job.nbytes + nthreads - 1) // nthreads
    cdef npy_intp lo, hi
    per = ((per + 4095) // 4096) * 4096
    lo = min(<npy_intp>tid * per, job.nbytes)
    hi = min(lo + per, job.nbytes)
    if hi > lo:
        memcpy(job.dst + lo, job.src + lo, hi - lo)


def threaded_copy(cnp.ndarray dst, cnp.ndarray src):
    """memcpy ``src`` into ``dst`` (contiguous, same size) on nclx's threads:
    the memory-bandwidth reference of ``python -m nclx bench``."""
    cdef copy_job job
    cdef int t = ncl_threads_now_c()
    if not (dst.flags.c_contiguous and src.flags.c_contiguous) or dst.nbytes != src.nbytes:
        raise ValueError("threaded_copy needs contiguous arrays of the same size in bytes")
    if not dst.flags.writeable:
        raise ValueError("threaded_copy: dst is read-only")
    job.dst = <char *>cnp.PyArray_DATA(dst)
    job.src = <const char *>cnp.PyArray_DATA(src)
    job.nbytes = dst.nbytes
    with nogil:
        ncl_run_team(t, _copy_body, &job)
