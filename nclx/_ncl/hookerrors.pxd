"""What a hook raised inside a loop (hookerrors.pyx): kept per node for its
Handle, reported through sys.unraisablehook."""
from nclx._ncl.ncl cimport ncl_node

cdef void ncl_hook_report(ncl_node *node, object hook, str what) noexcept
cdef tuple ncl_hook_record(size_t address)
