# nclx's random permutation (nclx._ncl.rngperm), run by nclx._ncl.rng's kernel.
from libc.stdint cimport int64_t, uint64_t
from nclx._ncl.ncl cimport npy_intp

cdef void ncl_permutation(uint64_t k0, uint64_t k1, uint64_t call, npy_intp block,
                          npy_intp *scratch, int64_t *out, npy_intp n) noexcept nogil
cdef npy_intp ncl_perm_scratch(npy_intp n, npy_intp block) noexcept nogil
