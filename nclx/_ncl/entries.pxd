# The loop entry points NumPy calls after install(), one per (op, signature).
from nclx._ncl.ncl cimport ncl_call
from nclx._ncl.threader cimport ncl_policy

cdef ncl_policy *ncl_slot_policy(int k) noexcept nogil
cdef ncl_call *ncl_slot_proto(int k) noexcept nogil
cdef bint ncl_slot_installed(int k) noexcept nogil
cdef bint ncl_slot_reducible(int k) noexcept nogil
cdef bint ncl_entries_quiet() noexcept nogil     # the gate is open: no hook, no mode
cdef const int *ncl_entries_gate() noexcept nogil  # where the gate lives
