/* The floating-point status as NumPy's NPY_FPE_* bits (divide 1, overflow 2,
 * underflow 4, invalid 8), read with fetestexcept: x87 and SSE both (NumPy's
 * integer loops raise theirs through feraiseexcept).  Shared by the cast
 * entries (nclx._ncl.casts) and the block executor (nclx._ncl.blockrun). */
#ifndef NCL_FPE_H
#define NCL_FPE_H
#include <fenv.h>
#include <numpy/npy_common.h>

static inline int ncl_fpe_flags(void) {
    int f = fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID), r = 0;
    if (f & FE_DIVBYZERO) r |= 1;
    if (f & FE_OVERFLOW) r |= 2;
    if (f & FE_UNDERFLOW) r |= 4;
    if (f & FE_INVALID) r |= 8;
    return r;
}

static inline void ncl_fpe_clear(void) { feclearexcept(FE_ALL_EXCEPT); }

/* Whether the loop f, called once on (args, dims, steps, data), ends with no
 * flag up when all four were up before it: NumPy's comparison, maximum/
 * minimum, absolute, negative ... loops clear the status at their end, so
 * flags raised before them (an input cast in NumPy's buffers) are dropped;
 * the caller's flags are restored afterwards.  On x86 the flags are set in
 * MXCSR directly (no trap even where a mask is off). */
#if defined(__x86_64__) && defined(__SSE2__)
#include <xmmintrin.h>
#endif
typedef void (*ncl_fpe_loop)(char **, const npy_intp *, const npy_intp *, void *);
static int ncl_fpe_loop_clears(ncl_fpe_loop f, char **args, const npy_intp *dims,
                               const npy_intp *steps, void *data)
{
    const int all = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID;
    fexcept_t saved;
    int after;
    fegetexceptflag(&saved, FE_ALL_EXCEPT);
#if defined(__x86_64__) && defined(__SSE2__)
    _mm_setcsr(_mm_getcsr() | (unsigned int)all);
#else
    feraiseexcept(all);
#endif
    f(args, dims, steps, data);
    after = fetestexcept(all);
    fesetexceptflag(&saved, FE_ALL_EXCEPT);
    return after == 0;
}

#endif
