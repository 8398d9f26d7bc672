# cython: wraparound=True, boundscheck=True
"""The calling thread's modes: ``nclx.checked()``'s thread-local state.

A thread inside ``checked()`` has a depth here; the loop entries read it on
their slow path (``ncl_caller_flags``) and hand it to each call
(``call.caller_flags``), so hooks on worker threads see the caller's mode and
threads that never entered a mode are not affected by another thread's.  A
checked kernel that finds wrap-around records (op, dtype, count) here and
raises FE_OVERFLOW; ``nclx.checked``'s errstate writer takes the record.

The entries' gate counts the threads inside ``checked()`` too: the entries
module lends this module its gate counter once (``ncl_watch_modes``), as it
lends the registry the same counter for user nodes.
"""
from nclx._ncl import spec
from nclx._ncl.dtypes import DTYPES

cdef extern from *:
    """
    #include <fenv.h>
    static int ncl_checked_threads = 0;            /* threads inside nclx.checked() */
    static int *ncl_modes_gate = 0;                /* the entries' gate, once lent */
    static __thread int ncl_tls_checked = 0;       /* depth of checked() in this thread */
    static __thread int ncl_tls_rec_op = -1;       /* the last checked overflow here */
    static __thread int ncl_tls_rec_dtype = -1;
    static __thread long ncl_tls_rec_count = 0;
    static inline void ncl_modes_rec_clear(void) {
        ncl_tls_rec_op = -1; ncl_tls_rec_dtype = -1; ncl_tls_rec_count = 0;
    }
    /* The caller's modes; a pending overflow record whose FE_OVERFLOW flag
     * NumPy has cleared since (a new ufunc call began after an ignored
     * overflow) is stale: drop it. */
    static inline int ncl_modes_caller_flags(void) {
        if (!__atomic_load_n(&ncl_checked_threads, __ATOMIC_RELAXED) || !ncl_tls_checked) return 0;
        if (ncl_tls_rec_op >= 0 && !fetestexcept(FE_OVERFLOW)) ncl_modes_rec_clear();
        return 1;   /* NCL_CALLER_CHECKED */
    }
    static inline void ncl_modes_record(int op, int dtype, long count) {
        ncl_tls_rec_op = op; ncl_tls_rec_dtype = dtype; ncl_tls_rec_count += count;
        feraiseexcept(FE_OVERFLOW);
    }
    static void ncl_modes_enter(void) {
        if (ncl_tls_checked++ == 0) {
            __atomic_add_fetch(&ncl_checked_threads, 1, __ATOMIC_RELAXED);
            if (ncl_modes_gate) __atomic_add_fetch(ncl_modes_gate, 1, __ATOMIC_RELEASE);
        }
    }
    static void ncl_modes_leave(void) {
        if (ncl_tls_checked > 0 && --ncl_tls_checked == 0) {
            __atomic_sub_fetch(&ncl_checked_threads, 1, __ATOMIC_RELAXED);
            if (ncl_modes_gate) __atomic_sub_fetch(ncl_modes_gate, 1, __ATOMIC_RELEASE);
            ncl_modes_rec_clear();
        }
    }
    static void ncl_modes_lend_gate(int *gate) {
        __atomic_add_fetch(gate, __atomic_load_n(&ncl_checked_threads, __ATOMIC_RELAXED), __ATOMIC_RELEASE);
        ncl_modes_gate = gate;
    }
    static int ncl_modes_depth(void) { return ncl_tls_checked; }
    static int ncl_modes_rec_op(void) { return ncl_tls_rec_op; }
    static int ncl_modes_rec_dtype(void) { return ncl_tls_rec_dtype; }
    static long ncl_modes_rec_count(void) { return ncl_tls_rec_count; }
    """
    int ncl_modes_caller_flags() nogil
    void ncl_modes_record(int op, int dtype, long count) nogil
    void ncl_modes_enter() nogil
    void ncl_modes_leave() nogil
    void ncl_modes_lend_gate(int *gate) nogil
    int ncl_modes_depth() nogil
    int ncl_modes_rec_op() nogil
    int ncl_modes_rec_dtype() nogil
    long ncl_modes_rec_count() nogil
    void ncl_modes_rec_clear() nogil


cdef int ncl_caller_flags() noexcept nogil:
    return ncl_modes_caller_flags()


cdef void ncl_checked_record(int op, int dtype, long count) noexcept nogil:
    ncl_modes_record(op, dtype, count)


cdef void ncl_watch_modes(int *counter):
    """From now on keep ``*counter`` raised by the threads inside checked()
    (one watcher: the loop entries' gate)."""
    ncl_modes_lend_gate(counter)


def checked_enter():
    """This thread enters nclx.checked() (counted; GIL held)."""
    ncl_modes_enter()


def checked_leave():
    ncl_modes_leave()


def checked_depth():
    """How deep this thread is inside nclx.checked() blocks."""
    return ncl_modes_depth()


def take_checked_overflow():
    """(op, dtype, count) of the integer overflows flagged in this thread since
    the last call, or None; clears the record."""
    op = ncl_modes_rec_op()
    if op < 0:
        return None
    result = (list(spec.OPS)[op], DTYPES[ncl_modes_rec_dtype()], ncl_modes_rec_count())
    ncl_modes_rec_clear()
    return result


def hold_checked_record():
    """Take this thread's pending checked overflow record as it is stored
    (op index, dtype index, count), or None; clears it.  A Python hook holds
    it while it runs: its own NumPy calls begin by clearing the FP flags, and
    a record without FE_OVERFLOW counts as stale (ncl_modes_caller_flags),
    so the overflows of the call's earlier pieces were dropped."""
    op = ncl_modes_rec_op()
    if op < 0:
        return None
    held = (op, ncl_modes_rec_dtype(), ncl_modes_rec_count())
    ncl_modes_rec_clear()
    return held


def give_back_checked_record(held):
    """Put back what hold_checked_record() took (FE_OVERFLOW raised again)."""
    if held is not None:
        ncl_modes_record(held[0], held[1], held[2])
