# The RNG kernels (nclx._ncl.rng): what a caller fills in for one call.
from libc.stdint cimport uint32_t, uint64_t
from nclx._ncl.ncl cimport npy_intp

cdef enum:
    K_RANDOM = 0
    K_UNIFORM = 1
    K_STANDARD_NORMAL = 2
    K_NORMAL = 3
    K_EXPONENTIAL = 4
    K_INTEGERS = 5
    K_PERMUTATION = 6

cdef struct rng_call:
    int kind
    int itemsize             # of the output's elements
    uint64_t k0, k1          # the key
    uint64_t pos             # main stream: word of the first element drawn there
                             # (float32: its low half)
    int lead                 # float32: out[0] is the leftover high half `half`
    uint32_t half
    uint64_t call            # block streams: the call number
    npy_intp block
    double a, b              # loc, scale / low, high - low
    uint64_t lo, rng         # integers: low as bits, high - low (inclusive)
    const uint64_t *lo_arr   # ... or one of each per element (NULL: the scalars)
    const uint64_t *rng_arr
    npy_intp *scratch        # permutation: chunk x bucket counts, bucket starts

cdef void ncl_rng_kernel(char **args, const npy_intp *dims, const npy_intp *steps,
                         void *data) noexcept nogil
cdef uint64_t ncl_rng_word(uint64_t k0, uint64_t k1, uint64_t p) noexcept nogil
