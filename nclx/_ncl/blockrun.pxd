"""The block executor's run loop (blockrun.pyx): the run's C description,
filled by nclx._ncl.blockexec (the Python-facing setup), run here without
the GIL."""
from libc.stdint cimport int64_t

from nclx._ncl.ncl cimport npy_intp, ncl_loop_fn
from nclx._ncl.team cimport MAX_THREADS

cdef enum:
    MAXSLOTS = 64
    MAXSTEPS = 64
    RED_NONE = 0
    RED_TREE = 1        # leaves of NumPy's pairwise tree (or any split: ints)
    RED_SEQ = 2         # one thread, in order (float products)

cdef struct xstep:
    ncl_loop_fn fn
    void *data
    int nin
    int slot[4]

cdef struct xrun:
    int nsteps
    int nflags                  # nsteps + 1 (the reduction's)
    xstep steps[MAXSTEPS]
    char *base[MAXSLOTS]        # operand / result data (NULL: a scratch slot)
    npy_intp stride[MAXSLOTS]   # byte stride of base (0: a 0-d operand)
    npy_intp soff[MAXSLOTS]     # scratch slot: byte offset in a thread's scratch
    npy_intp isz[MAXSLOTS]
    char narrow[MAXSLOTS]       # one value for every element: a 0-d operand, or a
                                # temporary of 0-d operands alone (computed once a
                                # block, read with stride 0, as eager NumPy's scalar)
    int result
    npy_intp stream_off         # >= 0: the last step writes the result's block here
                                # (scratch), then ncl_stream_copy puts it in place
    npy_intp n
    npy_intp B
    int prefault                # each thread's range of a fresh result is mapped
                                # before it is written (ncl_prefault.h)
    int npieces
    char *scratch[MAX_THREADS]
    int *flags                  # [tid][nflags]
    int64_t *ns                 # [tid][nflags] loop time, or NULL (not timed)
    # the final reduction
    int red
    ncl_loop_fn rfn             # the loop in reduce mode (accumulator, stride 0)
    ncl_loop_fn cfn             # the same loop, elementwise (combining partials)
    void *rdata
    npy_intp risz
    npy_intp *leaf              # leaf boundaries, nleaves + 1
    npy_intp nleaves
    char *partials              # one value per leaf (RED_TREE)
    const char *seed            # a leaf's starting value
    char *acc                   # the running value (RED_SEQ)
    npy_intp chunk              # RED_TREE: NumPy reduces in chunks of this many
                                # elements (acc += pairwise(chunk)), 0: one pass


cdef class Scratch:
    """Per-thread scratch of one running call (blockexec keeps a pool)."""
    cdef char *buf[MAX_THREADS]
    cdef npy_intp size[MAX_THREADS]
    cdef int flags[MAX_THREADS * (MAXSTEPS + 1)]
    cdef int64_t ns[MAX_THREADS * (MAXSTEPS + 1)]
    cdef int ensure(self, int nthreads, npy_intp nbytes) except -1


cdef int64_t bx_run(xrun *r, int want) noexcept nogil
cdef int bx_plan_leaves(xrun *r, npy_intp bufsize, bint chunked) noexcept nogil
cdef ncl_loop_fn bx_direct(int k, int reduce, ncl_loop_fn entry, bint recorded) noexcept nogil
cdef npy_intp bx_leaves(npy_intp lo, npy_intp m, npy_intp B, npy_intp *out, npy_intp k) noexcept nogil
