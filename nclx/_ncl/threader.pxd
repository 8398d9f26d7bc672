# The threader: how a loop call may be split (the team that runs it: team.pxd).
from nclx._ncl.ncl cimport npy_intp, ncl_call, ncl_node

cdef enum:
    NCL_SPLIT_NONE = 0       # reductions stay whole (NumPy's order is sequential)
    NCL_SPLIT_EXACT = 1      # per-thread partials, combined in order: exact (ints, bools)
    NCL_SPLIT_PAIRWISE = 2   # NumPy's pairwise-sum tree: exact for float add
    NCL_SPLIT_REASSOC = 3    # per-thread partials, only with config(reassociate=True)

# Per signature, owned by the loop entries (nclx._ncl.entries); a call
# carries a pointer to its signature's policy.
cdef struct ncl_policy:
    npy_intp threshold[2]    # [reduce]: split calls of at least this many elements
    int reduce_split         # NCL_SPLIT_* for its reductions
    int prefer[2][2]         # [reduce][per-thread chunk]: NumPy's loop measured faster
    int whole_only           # never split: NumPy's loop may set a Python error (spec.WHOLE_ONLY)
    int clears_flags         # NumPy's loop ends with no FP flag up (entries' probe)

cdef int ncl_team_size(ncl_call *call, int reduce) noexcept nogil
cdef void ncl_run_split(ncl_call *call, ncl_node *node, int reduce, int nthreads) noexcept nogil
