# One sort call through nclx's sort ArrayMethod, NumPy 2.5 (nclx._ncl.sortcall):
# the functions nclx._ncl.sortmeth puts in the methods it makes.
cdef void *ncl_sortcall_slot(int which) noexcept
