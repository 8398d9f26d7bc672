/* The floating-point status as NumPy's NPY_FPE_* bits (divide 1, overflow 2,
 * underflow 4, invalid 8), read with fetestexcept: x87 and SSE both (NumPy's
 * integer loops raise theirs through feraiseexcept).  Shared by the cast
 * entries (nclx._ncl.casts) and the block executor (nclx._ncl.blockrun). */
#ifndef NCL_FPE_H
#define NCL_FPE_H
#include <fenv.h>

static inline int ncl_fpe_flags(void) {
    int f = fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID), r = 0;
    if (f & FE_DIVBYZERO) r |= 1;
    if (f & FE_OVERFLOW) r |= 2;
    if (f & FE_UNDERFLOW) r |= 4;
    if (f & FE_INVALID) r |= 8;
    return r;
}

static inline void ncl_fpe_clear(void) { feclearexcept(FE_ALL_EXCEPT); }

#endif
