# cython: wraparound=True, boundscheck=True
"""The ledger's C funnel hook: per-(signature, elementwise|reduce) counters
of calls, elements and nanoseconds, added to with atomic adds (chunks of one
call may run on several threads); the call slots of the Sort, Mask, RNG and
Create subsystems (nclx._ncl.callops) follow the entries' slots."""
from libc.stdint cimport int64_t
from libc.stdlib cimport calloc, free

from nclx._ncl.ncl cimport ncl_node, ncl_call, NCL_NSLOTS, NCL_NCALLSLOTS, NCL_SUB_REDUCE
from nclx._ncl.walk cimport ncl_call_next
from nclx._ncl import entries, callops
from nclx._ncl.dtypes import fixed_width


cdef extern from *:
    """
    #include <time.h>
    static inline void ncl_led_add(int64_t *p, int64_t v) { __atomic_add_fetch(p, v, __ATOMIC_RELAXED); }
    static inline int64_t ncl_led_now_ns(void) {
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    /* > 0 while this thread runs calls no ledger may count (a trace's probes) */
    static __thread int ncl_led_muted = 0;
    """
    int ncl_led_muted
    void ncl_led_add(int64_t *p, int64_t v) nogil
    int64_t ncl_led_now_ns() nogil


cdef struct ledger_rec:
    int64_t calls
    int64_t elements
    int64_t ns


cdef class LedgerTable:
    """Per-(signature, elementwise|reduce) counters a ledger node adds to."""
    cdef ledger_rec *recs

    def __cinit__(self):
        self.recs = <ledger_rec *>calloc(2 * (NCL_NSLOTS + NCL_NCALLSLOTS), sizeof(ledger_rec))
        if self.recs == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.recs)

    @property
    def address(self):
        """Address of the counters: the ledger node's data."""
        return <size_t>self.recs

    def rows(self):
        """(op, kind, dtypes, calls, elements, ns) for every counter used;
        kind is "elementwise" or "reduce" for a loop, "call" for a call
        slot; dtypes are fixed-width names, the written operand last."""
        cdef int k, r
        out = []
        for k in range(NCL_NSLOTS + NCL_NCALLSLOTS):
            for r in range(2):
                rec = self.recs[2 * k + r]
                if rec.calls:
                    if k < NCL_NSLOTS:
                        op, chars, _ = entries.slot_info(k)
                        kind = "reduce" if r else "elementwise"
                        dtypes = tuple(fixed_width(c) for c in chars)
                    else:
                        op, dtypes = callops.slot_info(k - NCL_NSLOTS)
                        kind = "call"
                    out.append((op, kind, dtypes, rec.calls, rec.elements, rec.ns))
        return out

    def clear(self):
        cdef int k
        for k in range(2 * (NCL_NSLOTS + NCL_NCALLSLOTS)):
            self.recs[k].calls = self.recs[k].elements = self.recs[k].ns = 0


cdef int _ledger_fn(ncl_node *node, ncl_call *call) noexcept nogil:
    if ncl_led_muted > 0:
        return ncl_call_next(node, call)
    cdef int64_t t0 = ncl_led_now_ns()
    cdef int rc = ncl_call_next(node, call)
    cdef int64_t dt = ncl_led_now_ns() - t0
    cdef ledger_rec *rec = &(<ledger_rec *>node.data)[2 * call.slot + (call.subsystem == NCL_SUB_REDUCE)]
    ncl_led_add(&rec.calls, 1)
    ncl_led_add(&rec.elements, call.dimensions[0])
    ncl_led_add(&rec.ns, dt)
    return rc


def mute(int delta):
    """Add ``delta`` (1 or -1) to this thread's mute count: while it is
    above 0, ledgers count none of this thread's calls (the fused tracer's
    one-element probe calls, which the traced function makes only once)."""
    global ncl_led_muted
    if delta not in (1, -1):
        raise ValueError(f"delta must be 1 or -1, not {delta}")
    if delta < 0 and ncl_led_muted <= 0:
        raise RuntimeError("nclx ledger: unmuted more often than muted")
    ncl_led_muted += delta


def muted():
    """This thread's mute count (0: its calls are counted)."""
    return ncl_led_muted


def unmute_to(int depth):
    """Bring this thread's mute count back to ``depth`` if it is above it:
    the end of a muted section whatever stopped its ``mute(1)`` or its work
    (a Ctrl-C between the two left the thread muted for good; review 25)."""
    global ncl_led_muted
    if ncl_led_muted > depth:
        ncl_led_muted = depth if depth > 0 else 0


def ledger_hook_address():
    """Address of the ledger's C funnel hook (its data: a LedgerTable's counters)."""
    return <size_t>_ledger_fn
